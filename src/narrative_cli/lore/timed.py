"""Timed lore effects (sticky, cooldown, delay), kept per session (compat §3.9).

The clock is SillyTavern's: the number of chat messages when the scan runs. One turn adds two
messages (the input and the reply), so turn ``t`` of a chat that opened with a greeting scans
``2 * t`` messages. Records are keyed ``"<source>.<uid>"`` and carry a hash of the entry, so an
edited or removed entry loses its effect once the effect's time is up. ``to_dict`` has the shape
of SillyTavern's ``chat_metadata.timedWorldInfo``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.domain import LoreEntry


def clock_for_turn(turn: int) -> int:
    """SillyTavern's message count for turn ``turn`` (1-based): greeting + two per turn."""
    return max(0, 2 * turn)


def entry_key(entry: LoreEntry) -> str:
    """The key of an entry's timed effects: ``"<source>.<uid>"``."""
    return f"{entry.source}.{entry.uid}"


def entry_hash(entry: LoreEntry) -> str:
    """A stable fingerprint of what the entry says and when it fires."""
    data = [
        entry.uid,
        entry.keys,
        entry.secondary_keys,
        entry.content,
        entry.comment,
        entry.constant,
        entry.position,
        entry.order,
        entry.sticky,
        entry.cooldown,
        entry.delay,
    ]
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, default=str)
    import hashlib  # here, not at the top: OpenSSL's module is slow to load, few entries are timed

    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Effect:
    """One running effect: active from message ``start`` until message ``end``."""

    hash: str
    start: int
    end: int
    protected: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "start": self.start,
            "end": self.end,
            "protected": self.protected,
        }


@dataclass
class TimedEffects:
    """Running sticky and cooldown effects of one session, keyed ``"<source>.<uid>"``."""

    sticky: dict[str, Effect] = field(default_factory=dict)
    cooldown: dict[str, Effect] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sticky": {key: effect.to_dict() for key, effect in self.sticky.items()},
            "cooldown": {key: effect.to_dict() for key, effect in self.cooldown.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TimedEffects:
        """Read a saved state (or SillyTavern's ``timedWorldInfo``), dropping malformed records."""
        data = data if isinstance(data, Mapping) else {}
        return cls(_read_kind(data.get("sticky")), _read_kind(data.get("cooldown")))

    def copy(self) -> TimedEffects:
        return TimedEffects(dict(self.sticky), dict(self.cooldown))


def _read_kind(raw: Any) -> dict[str, Effect]:
    effects: dict[str, Effect] = {}
    if not isinstance(raw, Mapping):
        return effects
    for key, value in raw.items():
        if not isinstance(value, Mapping):
            continue
        try:
            start, end = int(value.get("start", 0)), int(value.get("end", 0))
        except (TypeError, ValueError):
            continue
        effects[str(key)] = Effect(
            str(value.get("hash", "")), start, end, bool(value.get("protected", False))
        )
    return effects


@dataclass
class ActiveEffects:
    """Which entries (by key) are sticky or cooling down during this scan."""

    sticky: set[str] = field(default_factory=set)
    cooldown: set[str] = field(default_factory=set)
    cooldown_end: dict[str, int] = field(default_factory=dict)


def check_effects(
    timed: TimedEffects, entries: Mapping[str, LoreEntry], clock: int
) -> ActiveEffects:
    """Expire, drop or keep each record (mutating ``timed``); return the active ones.

    ``entries`` maps timed-effect keys to the entries taking part in this scan.
    """
    active = ActiveEffects()
    for key, effect in list(timed.sticky.items()):
        entry = entries.get(key)
        status = _status(effect, entry, "sticky", clock)
        if status == "keep":
            active.sticky.add(key)
        if status in ("keep", "waiting"):
            continue
        del timed.sticky[key]
        if status == "ended" and entry is not None and entry.cooldown:
            timed.cooldown[key] = Effect(effect.hash, clock, clock + entry.cooldown, True)
    for key, effect in list(timed.cooldown.items()):
        status = _status(effect, entries.get(key), "cooldown", clock)
        if status == "keep":
            active.cooldown.add(key)
            active.cooldown_end[key] = effect.end
        elif status != "waiting":
            del timed.cooldown[key]
    return active


def _status(effect: Effect, entry: LoreEntry | None, kind: str, clock: int) -> str:
    """``keep``, ``ended`` (time is up), ``dropped`` or ``waiting`` (entry gone, time not up)."""
    if clock <= effect.start and not effect.protected:
        return "dropped"  # the chat did not advance (regenerate, swipe, undo)
    if entry is None or entry_hash(entry) != effect.hash:
        return "dropped" if clock >= effect.end else "waiting"
    if not getattr(entry, kind):
        return "dropped"  # the entry no longer has this effect
    return "ended" if clock >= effect.end else "keep"


def delay_active(entry: LoreEntry, clock: int) -> bool:
    """Delay is stateless: active while the chat has fewer than ``delay`` messages."""
    return bool(entry.delay) and clock < (entry.delay or 0)


def start_effects(timed: TimedEffects, activated: Iterable[LoreEntry], clock: int) -> None:
    """Record new sticky/cooldown effects for activated entries; running ones are not extended."""
    for entry in activated:
        key = entry_key(entry)
        if entry.sticky and entry.sticky > 0 and key not in timed.sticky:
            timed.sticky[key] = Effect(entry_hash(entry), clock, clock + entry.sticky)
        if entry.cooldown and entry.cooldown > 0 and key not in timed.cooldown:
            timed.cooldown[key] = Effect(entry_hash(entry), clock, clock + entry.cooldown)
