"""A group scene's state between turns: who is muted, who spoke, each member's own ledger.

Stored in the snapshot (``Snapshot.group``), so undo, swipes, branches and resume carry it like
the rest of the story state. The world state (``state.game``) stays the one state the player
sees; a member's ledger adds what the analysis attributed to that member (an event with
``"character": NAME``): its relationships toward others (``set_relationship`` /
``modify_relationship``: the member's feeling toward ``npc``, clamped to -100..100 as the world's
are), its flags (``set_flag``) and how many events it caused.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from narrative_cli.group.model import Group

MUTED_KEY = "narrative_group_muted"  # the session's chat_metadata: muted members' keys
SPOKEN_KEPT = 40  # speaker keys remembered, oldest dropped (natural order reads the last ones)


@dataclass(frozen=True)
class SceneState:
    """Muted members, the speakers so far (member keys, oldest first), the ledgers by name."""

    muted: frozenset[str] = frozenset()
    spoken: tuple[str, ...] = ()
    ledgers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def start(cls, group: Group) -> SceneState:
        return cls(muted=frozenset(group.muted))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], group: Group) -> SceneState:
        """The state a snapshot keeps. Muting is the group's as it is now (``/mute`` changes
        it between turns; the session keeps it): the snapshot's list records who was muted
        when that turn was played."""
        if not data:
            return cls.start(group)
        spoken = data.get("spoken")
        ledgers = data.get("characters")
        return cls(
            muted=frozenset(group.muted),
            spoken=tuple(str(k) for k in spoken) if isinstance(spoken, list) else (),
            ledgers=dict(ledgers) if isinstance(ledgers, Mapping) else {},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "muted": sorted(self.muted),
            "spoken": list(self.spoken[-SPOKEN_KEPT:]),
            "characters": {name: dict(ledger) for name, ledger in self.ledgers.items()},
        }

    def applied_to(self, group: Group) -> Group:
        """``group`` with this state's muted members."""
        return replace(group, muted=self.muted)

    def after_speakers(self, keys: Iterable[str]) -> SceneState:
        return replace(self, spoken=(*self.spoken, *keys)[-SPOKEN_KEPT:])

    def with_events(self, events: Iterable[Any], group: Group) -> SceneState:
        """The ledgers after the turn's applied events (``EventRecord.event`` objects)."""
        ledgers = {name: _copy(ledger) for name, ledger in self.ledgers.items()}
        for event in events:
            if not isinstance(event, Mapping):
                continue
            member = group.member(str(event.get("character") or ""))
            if member is None:
                continue
            ledger = ledgers.setdefault(member.name, _copy({}))
            _record(ledger, event)
        return replace(self, ledgers=ledgers)


def _copy(ledger: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "relationships": dict(ledger.get("relationships") or {}),
        "flags": dict(ledger.get("flags") or {}),
        "events": int(ledger.get("events") or 0),
    }


def _params(event: Mapping[str, Any]) -> Mapping[str, Any]:
    params = event.get("params")
    return params if isinstance(params, Mapping) else event


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _clamp(value: float) -> int:
    return max(-100, min(100, round(value)))


def _record(ledger: dict[str, Any], event: Mapping[str, Any]) -> None:
    ledger["events"] += 1
    kind, params = str(event.get("type") or ""), _params(event)
    npc = str(params.get("npc") or "").strip()
    relations: dict[str, int] = ledger["relationships"]
    if kind == "set_relationship" and npc:
        value = _number(params.get("value"))
        if value is not None:
            relations[npc] = _clamp(value)
    elif kind == "modify_relationship" and npc:
        delta = _number(params.get("delta"))
        if delta is not None:
            relations[npc] = _clamp(relations.get(npc, 0) + delta)
    elif kind == "set_flag":
        flag = str(params.get("flag") or "").strip()
        if flag:
            ledger["flags"][flag] = params.get("value")


def with_stored_muting(group: Group, metadata: Mapping[str, Any]) -> Group:
    """``group`` muted as its session last left it (``/mute``; the group's own otherwise)."""
    stored = metadata.get(MUTED_KEY)
    if not isinstance(stored, list):
        return group
    keys = {m.key for m in group.members}
    return replace(group, muted=frozenset(str(k) for k in stored if str(k) in keys))
