"""A preset's sampler settings on the writer's requests (issue #15).

SillyTavern sends the preset's temperature, top_p, penalties and reply limit with every Chat
Completion request; a preset the user gives does the same for our writer (``writing`` and
``merged_writing``). The config still wins: a value set in the config's ``agents:`` entry for
the writer is kept. The planner, tools and analysis keep their own settings: their replies
are JSON or bookkeeping, not story text, and the design gives the preset only to the writer.

Values the request type has no field for (``top_k``, ``min_p``, ``top_a``,
``repetition_penalty``, ``seed``, ``reasoning_effort``) travel as provider body fields, and
only when they differ from the value that means "off" (SillyTavern's defaults), because
OpenAI's own API refuses fields it does not know.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from narrative_cli.agents.table import preset_agents
from narrative_cli.backends import ChatRequest
from narrative_cli.config import AgentSettings
from narrative_cli.domain_chat import Preset
from narrative_cli.pipeline.trace import PRESET_EXTRA_KEYS

WRITER_AGENTS = preset_agents()  # the agents a preset's samplers go with
# preset key -> ChatRequest field
_FIELDS = {"temperature": "temperature", "top_p": "top_p", "openai_max_tokens": "max_tokens",
           "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty"}
# preset key -> the value that means "off" (then nothing is sent)
_EXTRA_OFF: dict[str, Any] = {"top_k": 0, "min_p": 0, "top_a": 0, "repetition_penalty": 1,
                              "seed": -1, "reasoning_effort": "auto"}
assert tuple(_EXTRA_OFF) == PRESET_EXTRA_KEYS  # the trace shows exactly these


def preset_samplers(preset: Preset | None) -> dict[str, Any]:
    """``{request field: value}`` and ``{"extra": {...}}`` of a preset's sampler settings."""
    if preset is None:
        return {}
    values: dict[str, Any] = {}
    source = {**preset.extra, **preset.samplers}
    for key, name in _FIELDS.items():
        value = source.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values[name] = int(value) if name == "max_tokens" else float(value)
    stop = source.get("stop")
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop) and stop:
        values["stop"] = list(stop)
    extra = {k: v for k, v in source.items()
             if k in _EXTRA_OFF and v != _EXTRA_OFF[k] and v is not None and v != ""}
    if extra:
        values["extra"] = extra
    return values


def with_preset_samplers(request: ChatRequest, samplers: dict[str, Any],
                         configured: AgentSettings | None) -> ChatRequest:
    """``request`` with the preset's values, except those the config sets for the agent."""
    if request.agent not in WRITER_AGENTS or not samplers:
        return request
    changes: dict[str, Any] = {}
    for name, value in samplers.items():
        if name == "extra":
            changes["extra"] = {**value, **request.extra}
        elif getattr(request, name) is None and getattr(configured, name, None) is None:
            changes[name] = value
    return replace(request, **changes)


def reply_tokens(agent: str, samplers: dict[str, Any], configured: AgentSettings | None,
                 default: int | None) -> int | None:
    """The ``max_tokens`` a request of ``agent`` will carry: the config's, else (writer) the
    preset's, else the default; the prompt budget must leave this much room."""
    if configured is not None and configured.max_tokens is not None:
        return configured.max_tokens
    preset = samplers.get("max_tokens") if agent in WRITER_AGENTS else None
    return int(preset) if isinstance(preset, int) else default
