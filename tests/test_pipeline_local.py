"""A whole turn of the sample card on the real embedded llama.cpp model (SmolLM2-135M).

The model is tiny, so the test checks what must hold whatever it writes: every agent was
really called with real usage figures, the story text is non-empty, the JSON agents' replies
were either applied or produced a visible warning (never a silent loss), the trace has every
call, and the result and snapshot are plain JSON. Replies are kept short with max_tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.config import AgentSettings, Settings
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.events import TextDelta
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import open_story
from narrative_cli.pipeline.trace import TraceWriter, read_calls

from . import servers
from .pipeline_support import LANTERN

local_model = servers.local_model

pytestmark = [pytest.mark.local_model, pytest.mark.slow]


def short_settings() -> Settings:
    settings = Settings()  # the default profile is the embedded model
    limits = {"planning": 96, "writing": 64, "analysis": 96, "tool": 32, "mvu_extract": 64}
    for agent, tokens in limits.items():
        settings.agents[agent] = AgentSettings(max_tokens=tokens, temperature=0.2)
    return settings


def test_a_lantern_turn_on_the_local_model(local_model: Any, tmp_path: Path) -> None:
    settings = short_settings()
    settings.pipeline.mode = "serial"  # every agent on the real model (auto writes merged: #18)
    story = open_story(LANTERN, settings=settings, seed=1)
    streamed: list[str] = []

    def listener(event: object) -> None:
        if isinstance(event, TextDelta):
            streamed.append(event.text)

    with BackendSet.from_settings(settings) as backends:
        result = run_turn(
            story, "I trim the wick of the lamp.", backends, listener, TraceWriter(tmp_path)
        )

    assert result.mode == "serial"
    assert result.narrative.strip()
    assert "".join(streamed).strip()
    agents = result.usage.agents
    for agent in ("planning", "writing", "analysis", "tool:keeper_log", "mvu_extract"):
        assert agents[agent].calls >= 1, agent
        assert agents[agent].prompt_tokens > 0 and not agents[agent].estimated, agent
    recorded = result.summary_entries or result.events_applied or result.events_rejected
    assert recorded or any(w.startswith("analysis") for w in result.warnings)
    assert all(entry.startswith("[Turn 1] ") for entry in result.summary_entries)

    calls = read_calls(tmp_path)
    assert len(calls) == result.usage.total().calls
    assert [c["agent"] for c in calls[:2]] == ["planning", "writing"]
    assert all(c["request"]["model"] and c["usage"]["prompt_tokens"] > 0 for c in calls)
    json.dumps(result.to_record())
    assert result.snapshot.mvu is not None and "keeper" in result.snapshot.mvu
