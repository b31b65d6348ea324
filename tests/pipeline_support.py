"""Helpers for the pipeline tests: small real card files, settings on the scripted server,
and a reply script that answers each agent (by the ``X-Narrative-Agent`` header)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative_cli.config import AgentSettings, PipelineSettings, Settings
from narrative_cli.pipeline.backendset import BackendSet

from .servers import RecordedRequest, Reply, ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
LANTERN = ROOT / "sample_cards" / "lantern-keeper.png"
FOG_HARBOR = ROOT / "sample_cards" / "fog-harbor-zh.json"


def entry(
    uid: int,
    content: str,
    *,
    keys: tuple[str, ...] = (),
    constant: bool = False,
    position: int = 1,
    comment: str = "",
    order: int = 10,
) -> dict[str, Any]:
    """A card-book entry (character_book.entries item)."""
    names = {0: "before_char", 1: "after_char"}
    return {
        "id": uid,
        "keys": list(keys),
        "secondary_keys": [],
        "comment": comment,
        "content": content,
        "constant": constant,
        "selective": False,
        "insertion_order": order,
        "enabled": True,
        "position": names.get(position, "after_char"),
        "extensions": {"position": position, "probability": 100, "useProbability": False},
    }


def tool_entry(uid: int, definition: dict[str, Any], keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """A [TOOL:name] entry holding ``definition`` as JSON."""
    name = definition["function"]["name"]
    return entry(
        uid,
        json.dumps(definition, ensure_ascii=False),
        keys=keys,
        constant=not keys,
        comment=f"[TOOL:{name}]",
        order=100 + uid,
    )


DICE_TOOL = {
    "type": "code",
    "trigger": "planning",
    "function": {
        "name": "roll_dice",
        "description": "Roll dice for a risky action.",
        "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}},
    },
}


def llm_tool(name: str, trigger: str, context: list[str], **extra: Any) -> dict[str, Any]:
    """An llm tool definition."""
    return {
        "type": "llm",
        "trigger": trigger,
        "function": {"name": name, "description": f"the {name} tool"},
        "context": context,
        "system_prompt": f"You are the {name} tool.",
        **extra,
    }


def write_card(
    folder: Path, entries: list[dict[str, Any]], *, name: str = "Mira", **fields: Any
) -> Path:
    """A V2 JSON card file with an embedded book; returns its path."""
    data = {
        "name": name,
        "description": "{{char}} keeps the ferry between two foggy islands.",
        "personality": "patient, dry humour",
        "scenario": "{{user}} boards {{char}}'s ferry at dusk.",
        "first_mes": "The ferry bell rings. {{char}} waves {{user}} aboard.",
        "mes_example": "",
        "alternate_greetings": ["Rain drums on the ferry roof."],
        "tags": [],
        "extensions": {},
        **fields,
    }
    if entries:
        data["character_book"] = {"name": "Ferry", "entries": entries}
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}
    path = folder / f"{name.lower()}.json"
    path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    return path


def settings_for(server: ScriptedServer, **pipeline: Any) -> Settings:
    """Settings whose every agent calls the scripted server."""
    settings = Settings(pipeline=PipelineSettings(**pipeline))
    settings.profiles["scripted"] = server.profile()
    settings.default_profile = "scripted"
    settings.agents["writing"] = AgentSettings(max_tokens=300)
    return settings


def backends_for(server: ScriptedServer, settings: Settings | None = None) -> BackendSet:
    return BackendSet.from_settings(settings or settings_for(server))


PLAN: dict[str, Any] = {
    "narrative_direction": "The ferry leaves the pier; the fog thickens around the bow.",
    "scene_setting": "The ferry deck at dusk, lanterns swinging.",
    "key_points": ["the bell", "the fog"],
    "tone": "calm",
    "pacing": "slow",
    "continuity_notes": [],
    "tool_calls": [],
    "text_recall": [],
}
NARRATIVE = "The ferry slides away from the pier. Fog closes behind you."
ANALYSIS: dict[str, Any] = {
    "events": [{"type": "move", "params": {"location": "ferry deck"}}],
    "summary_entries": ["The ferry left the pier in fog."],
}

Answer = Any  # str | dict | Reply | Callable[[RecordedRequest], str | dict | Reply]


@dataclass
class Script:
    """Replies per agent: a fixed answer, or a list consumed one call at a time."""

    answers: dict[str, Any] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        defaults = {
            "planning": PLAN,
            "writing": NARRATIVE,
            "merged_writing": NARRATIVE,
            "analysis": ANALYSIS,
            "mvu_extract": "<UpdateVariable></UpdateVariable>",
            "tool:*": "tool output",
        }
        self.answers = {**defaults, **self.answers}

    def install(self, server: ScriptedServer) -> Script:
        server.reply_with(self.hook)
        return self

    def hook(self, body: Any, request: RecordedRequest) -> Reply | str | dict[str, Any] | None:
        agent = request.agent
        with self.lock:
            self.seen.append(agent)
            key = agent if agent in self.answers else "tool:*" if agent.startswith("tool:") else ""
            answer = self.answers.get(key)
            if isinstance(answer, list):
                answer = answer.pop(0) if len(answer) > 1 else answer[0]
        if callable(answer):
            answer = answer(request)
        return answer  # type: ignore[no-any-return]


def requests_of(server: ScriptedServer, agent: str) -> list[RecordedRequest]:
    return [r for r in server.requests if r.agent == agent]


def message(request: RecordedRequest, role: str) -> str:
    """The content of the request's first message with ``role``."""
    return next(str(m["content"]) for m in request.messages if m["role"] == role)


def block(text: str, tag: str) -> str | None:
    """The inside of ``<tag>…</tag>`` in ``text``, or None when absent."""
    start, end = f"<{tag}>\n", f"\n</{tag}>"
    if start not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0]


def collect() -> tuple[list[Any], Callable[[Any], None]]:
    events: list[Any] = []
    return events, events.append
