"""The deterministic game state: the model proposes events, this code checks and applies them.

``apply_events(state, events)`` never changes its input: it returns a new state plus a record
of every event, applied (with notes such as "clamped to 100") or rejected (with the reason).
The rules for each event type are in ``narrative_cli.state.events``. Unlike the original, the
event log is capped at 200 records in memory as well as on save, it survives snapshots, and
``move`` / relationship events grow the known locations and NPCs.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from narrative_cli.agents.replies import StateEvent
from narrative_cli.domain import LoreEntry
from narrative_cli.state.events import (
    EVENT_TYPES,
    HANDLERS,
    Context,
    Rejected,
    read_event,
)
from narrative_cli.state.game import EVENT_LOG_LIMIT, Clock, EventRecord, GameState, Quest

__all__ = [
    "EVENT_LOG_LIMIT",
    "EVENT_TYPES",
    "ApplyResult",
    "Clock",
    "EventRecord",
    "GameState",
    "Quest",
    "apply_events",
    "known_context",
    "state_diff",
    "state_summary",
    "sync_from_lore",
]


@dataclass(frozen=True)
class ApplyResult:
    """The new state and the records of the applied and the rejected events, in order."""

    state: GameState
    applied: list[EventRecord]
    rejected: list[EventRecord]


def apply_events(
    state: GameState,
    events: Iterable[StateEvent | object],
    *,
    lang: str = "zh",
    turn: int | None = None,
) -> ApplyResult:
    """Check and apply ``events`` in order to a copy of ``state``; reasons are in ``lang``.

    The pipeline passes the analysis's ``StateEvent``s; an event's JSON object (as a test or
    an embedder has it) is read with ``StateEvent.from_json`` first.
    """
    work = state.copy()
    applied: list[EventRecord] = []
    rejected: list[EventRecord] = []
    for proposed in events:
        event = proposed if isinstance(proposed, StateEvent) else StateEvent.from_json(proposed)
        record = _apply_one(work, event, lang, turn)
        (applied if record.accepted else rejected).append(record)
        work.event_log.append(record)
    del work.event_log[:-EVENT_LOG_LIMIT]
    return ApplyResult(state=work, applied=applied, rejected=rejected)


def _apply_one(work: GameState, event: StateEvent, lang: str, turn: int | None) -> EventRecord:
    before = copy.copy(work.time)
    raw = copy.deepcopy(event.source)
    kind = event.type
    try:
        kind, params = read_event(event, lang)
        ctx = Context(params=params, lang=lang, notes=[])
        HANDLERS[kind](work, ctx)
    except Rejected as problem:
        return EventRecord(kind, raw, False, before, reason=str(problem), turn=turn)
    return EventRecord(kind, raw, True, before, notes=tuple(ctx.notes), turn=turn)


# Text for prompts and the UI.

_LABELS = {
    "zh": ("时间", "地点", "物品", "NPC关系", "任务", "标记", "无"),
    "en": ("Time", "Location", "Items", "Relationships", "Quests", "Flags", "none"),
}


def clock_text(clock: Clock, lang: str) -> str:
    """``第2天 08:05`` or ``Day 2 08:05``."""
    if lang == "zh":
        return f"第{clock.day}天 {clock.label()}"
    return f"Day {clock.day} {clock.label()}"


def state_summary(state: GameState, lang: str = "zh") -> str:
    """The six-line state text for ``<state_summary>`` (the original's wording in Chinese)."""
    time, place, items, npcs, quests, flags, empty = _LABELS["zh" if lang == "zh" else "en"]
    sep = "：" if lang == "zh" else ": "

    def joined(parts: list[str]) -> str:
        return ", ".join(parts) if parts else empty

    times = "x" if lang == "zh" else " x"
    lines = [
        f"{time}{sep}{clock_text(state.time, lang)}",
        f"{place}{sep}{state.location}",
        f"{items}{sep}{joined([f'{name}{times}{n}' for name, n in state.inventory.items()])}",
        f"{npcs}{sep}{joined([f'{npc}: {value}' for npc, value in state.relationships.items()])}",
        f"{quests}{sep}{joined([f'{key}({_quest_text(q)})' for key, q in state.quests.items()])}",
        f"{flags}{sep}{joined([f'{key}={value_text(v)}' for key, v in state.flags.items()])}",
    ]
    return "\n".join(lines)


def state_diff(before: GameState, after: GameState, lang: str = "zh") -> list[str]:
    """What changed between two states, one readable line per change (for the UI)."""
    zh = lang == "zh"
    sep = "：" if zh else ": "
    lines: list[str] = []
    if before.time != after.time:
        lines.append(
            f"{'时间' if zh else 'Time'}{sep}"
            f"{clock_text(before.time, lang)} → {clock_text(after.time, lang)}"
        )
    if before.location != after.location:
        lines.append(f"{'地点' if zh else 'Location'}{sep}{before.location} → {after.location}")
    sections: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = [
        ("物品" if zh else "Item", before.inventory, after.inventory),
        ("关系" if zh else "Relationship", before.relationships, after.relationships),
        ("任务" if zh else "Quest", _quest_texts(before), _quest_texts(after)),
        ("标记" if zh else "Flag", before.flags, after.flags),
    ]
    for label, old, new in sections:
        lines.extend(_mapping_diff(label, old, new, sep, zero=label in ("物品", "Item")))
    return lines


def value_text(value: Any) -> str:
    """A flag or variable value as text: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def known_context(state: GameState) -> str:
    """The ``known_context`` tool key: compact sorted JSON of locations, NPCs, items, quests."""
    data = {
        "locations": sorted(set(state.known_locations)),
        "npcs": sorted(set(state.known_npcs)),
        "items": sorted(state.inventory),
        "quests": sorted(state.quests),
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def sync_from_lore(state: GameState, entries: Sequence[LoreEntry], lang: str = "zh") -> GameState:
    """A copy of ``state`` knowing the ``[QUEST]``, ``[LOCATION]`` and ``[NPC]`` entries.

    A quest found this way is ``available`` (not yet started), so ``start_quest`` can start it.
    """
    work = state.copy()
    for entry in entries:
        if entry.disabled or not entry.keys or not entry.keys[0].strip():
            continue
        name, tag = entry.keys[0].strip(), entry.comment.strip().upper()
        if tag.startswith("[QUEST]") and name not in work.quests:
            work.quests[name] = Quest(status="available", stage="未开始" if lang == "zh" else "")
        elif tag.startswith("[LOCATION]") and name not in work.known_locations:
            work.known_locations.append(name)
        elif tag.startswith("[NPC]") and name not in work.known_npcs:
            work.known_npcs.append(name)
    return work


def _quest_text(quest: Quest) -> str:
    return f"{quest.status}@{quest.stage}"


def _quest_texts(state: GameState) -> dict[str, str]:
    return {key: _quest_text(quest) for key, quest in state.quests.items()}


def _mapping_diff(
    label: str, old: Mapping[str, Any], new: Mapping[str, Any], sep: str, *, zero: bool
) -> list[str]:
    absent = "0" if zero else "—"
    lines = []
    for key in [*old, *(key for key in new if key not in old)]:
        if key in old and key in new and old[key] == new[key]:
            continue
        was = value_text(old[key]) if key in old else absent
        now = value_text(new[key]) if key in new else absent
        lines.append(f"{label} {key}{sep}{was} → {now}")
    return lines
