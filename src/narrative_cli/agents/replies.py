"""The JSON agents' replies as typed values: the plan and the analysis.

``agents.parsing`` recovers a reply and checks it against its schema; the stage that asked
for it turns the checked JSON into one of these once (``Plan.from_json`` …), and every later
step reads fields, never keys. Readers are lenient (a wrong-typed field is read as empty), so
the same constructors read turn records stored by any earlier version.

Each value keeps ``source``, the checked JSON object exactly as it came: turn records and
state-event logs store what the model proposed (unknown keys included), and keeping it is
what lets a record written today be byte-identical to one written before these types. The
copies are ``safetext.json_copy``: a reply is JSON, and ``copy.deepcopy`` of each plan, event
and tool call was 0.5% of a replayed turn (#17, session eight).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.safetext import json_copy


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _texts(value: object) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def _object(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: object) -> Sequence[object]:
    return value if isinstance(value, list) else ()


@dataclass(frozen=True)
class ToolCall:
    """One tool call the planner asked for; ``params`` is free-form, as the tool defines it.

    ``params`` is None when the call gave none and ``params_ok`` False when it gave something
    that is not an object (the tools runner reports that as the call's error).
    """

    tool: str
    params: Mapping[str, Any] = field(default_factory=dict)
    params_ok: bool = True

    @classmethod
    def from_json(cls, data: object) -> ToolCall:
        """A call from ``{"tool": …, "params": {…}}`` (``name``/``arguments`` are read too)."""
        call = _object(data)
        name = call.get("tool") or call.get("name") or ""
        params = call.get("params", call.get("arguments"))
        if params is None:
            return cls(str(name).strip())
        if not isinstance(params, Mapping):
            return cls(str(name).strip(), params_ok=False)
        return cls(str(name).strip(), json_copy(dict(params)))


@dataclass(frozen=True)
class PlannedSpeaker:
    """A member the planner chose to speak in a group scene, and what it wants this turn."""

    name: str
    intent: str = ""


@dataclass(frozen=True)
class Plan:
    """The planner's writing guide, tool calls and text-recall turns (PLAN_SCHEMA)."""

    narrative_direction: str = ""
    scene_setting: str = ""
    key_points: tuple[str, ...] = ()
    tone: str = ""
    pacing: str = ""
    continuity_notes: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    text_recall: tuple[int, ...] = ()
    recall_terms: tuple[str, ...] = ()  # words to search the story's text for (issue #17)
    speakers: tuple[PlannedSpeaker, ...] = ()  # group scenes only (issue 19)
    source: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        """The plan of a checked reply (or of a stored record's ``plan``)."""
        recall = _items(data.get("text_recall"))
        return cls(
            narrative_direction=_text(data.get("narrative_direction")),
            scene_setting=_text(data.get("scene_setting")),
            key_points=_texts(data.get("key_points")),
            tone=_text(data.get("tone")),
            pacing=_text(data.get("pacing")),
            continuity_notes=_texts(data.get("continuity_notes")),
            tool_calls=tuple(ToolCall.from_json(c) for c in _items(data.get("tool_calls"))),
            text_recall=tuple(n for n in recall if isinstance(n, int) and not isinstance(n, bool)),
            recall_terms=tuple(t.strip() for t in _texts(data.get("recall_terms")) if t.strip()),
            speakers=tuple(
                PlannedSpeaker(_text(s.get("name")).strip(), _text(s.get("intent")).strip())
                for s in _items(data.get("speakers"))
                if isinstance(s, Mapping) and _text(s.get("name")).strip()
            ),
            source=json_copy(dict(data)),
        )

    def to_json(self) -> dict[str, Any]:
        """The plan as the turn record stores it: the checked reply, unchanged."""
        copied: dict[str, Any] = json_copy(dict(self.source))
        return copied


@dataclass(frozen=True)
class StateEvent:
    """One state event the analysis proposed; the state engine decides whether it applies.

    ``params`` is the ``params`` object, or the event's other keys when it has none (both
    shapes are in use). ``source`` is the event as proposed, kept in the event log.
    """

    type: str
    params: Mapping[str, Any] | None
    source: object = field(default=None, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: object) -> StateEvent:
        """An event from its JSON object; a non-object gives type "" (the engine rejects it)."""
        if not isinstance(data, Mapping):
            return cls("", None, json_copy(data))
        params = data.get("params")
        if params is None:
            params = {key: value for key, value in data.items() if key != "type"}
        shaped = dict(params) if isinstance(params, Mapping) else None
        return cls(_text(data.get("type")).strip(), shaped, json_copy(dict(data)))


@dataclass(frozen=True)
class Analysis:
    """The merged analysis: proposed state events and this turn's summary entries."""

    events: tuple[StateEvent, ...] = ()
    summary_entries: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Analysis:
        events = tuple(StateEvent.from_json(e) for e in _items(data.get("events")))
        return cls(events, _texts(data.get("summary_entries")))
