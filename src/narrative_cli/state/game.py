"""The game state's data: clock, quests, the event log's records and ``GameState`` itself.

Its own module so that the event rules (``state.events``) and the engine (``state.engine``)
both build on it without importing each other. Reading a saved state checks every field and
raises ``StoreError`` naming the bad one.
"""

from __future__ import annotations

import copy
import operator
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.errors import StoreError
from narrative_cli.safetext import finite_copy
from narrative_cli.shared_items import KnownJson, compact_json
from narrative_cli.state.slide import Slide

EVENT_LOG_LIMIT = 200
START_LOCATION = {"zh": "起点", "en": "Start"}
QUEST_STATUSES = ("available", "active", "completed", "failed")


@dataclass
class Clock:
    """The in-game clock: day 1 00:00 at the start; no months or years."""

    day: int = 1
    hour: int = 0
    minute: int = 0

    def advanced(self, minutes: int) -> Clock:
        """The clock ``minutes`` later, carrying minutes into hours and hours into days."""
        total = self.minute + minutes
        hours = self.hour + total // 60
        return Clock(day=self.day + hours // 24, hour=hours % 24, minute=total % 60)

    def label(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}"


@dataclass
class Quest:
    """A quest: ``active``, ``completed`` or ``failed``, at a free-text stage."""

    status: str = "active"
    stage: str = "start"
    outcome: str | None = None



def _json_copy(value: Any) -> Any:
    """A copy of JSON-shaped data (dicts and lists copied, everything else shared), several
    times faster than ``copy.deepcopy``: 200 logged events are copied a few times a turn."""
    if isinstance(value, dict):
        return {key: _json_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_copy(item) for item in value]
    return value

class StoredEvent(KnownJson):
    """An event record's JSON object as ``EventRecord.to_dict`` gives it, remembering the record
    it came from: reading it back (the next turn starts from the last snapshot's state) gives
    that record again, unless the object was changed since, without copying and checking its
    event once more; writing it takes the record's JSON, made once (the snapshot's 200-event
    log was encoded anew every turn: #17, session five). It is a plain ``dict`` to JSON and
    to everything else.

    A change to the object is noted as it happens (its methods that change a dict), and so is
    a change to its ``time`` and ``notes``, which are its own ``_Noted`` copies that tell it
    (#17, session seven: comparing them with the record's was most of the 600 checks a turn,
    4% of a replayed turn). A copy (``copy``, ``deepcopy``, pickle) counts as changed: it is
    not the object the record gave."""

    # weak-referenceable: its record and its ``time`` and ``notes`` refer to it weakly, so a
    # record and its object make no reference cycle (#17: the two records sliding out of the
    # log each turn were cyclic garbage, kept until the next full collection, whose interval
    # grows with the story: 1 MB of dead records at 2,000 turns)
    __slots__ = ("record", "touched", "__weakref__")

    record: EventRecord
    touched: bool

    def known_json(self) -> bytes | None:
        return None if getattr(self, "touched", True) else self.record.json_bytes()

    def unchanged(self) -> bool:
        """Still what ``to_dict`` gave: not changed itself, nor its ``time`` and ``notes``."""
        return not getattr(self, "touched", True)

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        return None, {"record": getattr(self, "record", None), "touched": True}

    def __setitem__(self, key: str, value: Any) -> None:
        self.touched = True
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.touched = True
        super().__delitem__(key)

    def __ior__(self, other: Any) -> StoredEvent:  # type: ignore[override,misc]
        self.touched = True
        super().__ior__(other)
        return self

    def clear(self) -> None:
        self.touched = True
        super().clear()

    def pop(self, *args: Any) -> Any:
        self.touched = True
        return super().pop(*args)

    def popitem(self) -> tuple[str, Any]:
        self.touched = True
        return super().popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.touched = True
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.touched = True
        super().update(*args, **kwargs)


def _note(noted: _NotedDict | _NotedList) -> None:
    """Mark the ``StoredEvent`` holding ``noted`` as changed (none yet while being copied)."""
    ref = getattr(noted, "owner", None)
    owner = ref() if ref is not None else None
    if owner is not None:
        owner.touched = True


class _NotedDict(dict[str, Any]):
    """A ``StoredEvent``'s ``time``: a dict that marks its owner changed when it changes."""

    __slots__ = ("owner",)

    owner: weakref.ref[StoredEvent] | None

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        return None, {"owner": None}  # a copy is nobody's

    def __setitem__(self, key: str, value: Any) -> None:
        _note(self)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        _note(self)
        super().__delitem__(key)

    def __ior__(self, other: Any) -> _NotedDict:  # type: ignore[override,misc]
        _note(self)
        super().__ior__(other)
        return self

    def clear(self) -> None:
        _note(self)
        super().clear()

    def pop(self, *args: Any) -> Any:
        _note(self)
        return super().pop(*args)

    def popitem(self) -> tuple[str, Any]:
        _note(self)
        return super().popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        _note(self)
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        _note(self)
        super().update(*args, **kwargs)


class _NotedList(list[Any]):
    """A ``StoredEvent``'s ``notes``: a list that marks its owner changed when it changes."""

    __slots__ = ("owner",)

    owner: weakref.ref[StoredEvent] | None

    def __getstate__(self) -> tuple[None, dict[str, Any]]:
        return None, {"owner": None}  # a copy is nobody's

    def __setitem__(self, index: Any, value: Any) -> None:
        _note(self)
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        _note(self)
        super().__delitem__(index)

    def __iadd__(self, other: Any) -> _NotedList:  # type: ignore[misc]
        _note(self)
        super().__iadd__(other)
        return self

    def __imul__(self, count: Any) -> _NotedList:  # type: ignore[misc]
        _note(self)
        super().__imul__(count)
        return self

    def append(self, item: Any) -> None:
        _note(self)
        super().append(item)

    def extend(self, items: Any) -> None:
        _note(self)
        super().extend(items)

    def insert(self, index: Any, item: Any) -> None:
        _note(self)
        super().insert(index, item)

    def pop(self, *args: Any) -> Any:
        _note(self)
        return super().pop(*args)

    def remove(self, item: Any) -> None:
        _note(self)
        super().remove(item)

    def clear(self) -> None:
        _note(self)
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        _note(self)
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        _note(self)
        super().reverse()


def _noted(container: _NotedDict | _NotedList, owner: StoredEvent) -> Any:
    container.owner = weakref.ref(owner)
    return container


@dataclass(frozen=True)
class EventRecord:
    """One proposed event and what became of it; ``time`` is the clock before it.

    Records are never changed once made (``GameState.copy`` shares them), so their JSON form is
    built once: a turn writes the 200-entry event log into its snapshot and into each code
    tool's state, and copying every event each time was a third of a replayed turn (#17). The
    object ``to_dict`` returns is the same one each time, and shares the record's JSON event:
    read it, do not change it (a changed one is noticed and replaced, never written as the
    record's)."""

    type: str
    event: Any
    accepted: bool
    time: Clock
    reason: str = ""
    notes: tuple[str, ...] = ()
    turn: int | None = None
    _stored: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)
    _bytes: bytes | None = field(default=None, init=False, repr=False, compare=False)
    # the object given last, weakly (see ``StoredEvent``): the snapshot holding it keeps it
    _given: weakref.ref[StoredEvent] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def to_dict(self) -> dict[str, Any]:
        """The record's JSON object: the one given last time while it is unchanged (every
        turn's snapshot holds the 200-record log: making each anew was 5% of a replayed turn,
        #17 session five), else a new one."""
        ref = self._given
        given = ref() if ref is not None else None
        if given is not None and not given.touched:
            return given
        stored = self._json()
        data = StoredEvent(stored)
        data["time"] = _noted(_NotedDict(stored["time"]), data)
        if self.notes:
            data["notes"] = _noted(_NotedList(self.notes), data)
        data.record = self
        data.touched = False
        object.__setattr__(self, "_given", weakref.ref(data))
        return data

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the object given last (a copy gives its own)."""
        return {**self.__dict__, "_given": None}

    def json_bytes(self) -> bytes:
        """``compact_json`` of the record's JSON object, made on first use."""
        if self._bytes is None:
            object.__setattr__(self, "_bytes", compact_json(self._json()))
        assert self._bytes is not None
        return self._bytes

    def _json(self) -> dict[str, Any]:
        """The record's JSON object, made on first use (the event copied: the caller's object
        may change later; NaN and Infinity written as strings, so a rejected NaN stays
        storable)."""
        if self._stored is not None:
            return self._stored
        data: dict[str, Any] = {
            "type": self.type,
            "event": finite_copy(_json_copy(self.event)),
            "accepted": self.accepted,
            "time": _clock_dict(self.time),
        }
        if self.reason:
            data["reason"] = self.reason
        if self.notes:
            data["notes"] = list(self.notes)
        if self.turn is not None:
            data["turn"] = self.turn
        object.__setattr__(self, "_stored", data)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> EventRecord:
        if type(data) is StoredEvent and not getattr(data, "touched", True):
            return data.record  # unchanged since this process wrote it
        record = _mapping(data, "event_log record")
        return cls(
            type=str(record.get("type", "")),
            event=_json_copy(record.get("event", record.get("params"))),
            accepted=bool(record.get("accepted", False)),
            time=_clock(record.get("time", record.get("timestamp", {}))),
            reason=str(record.get("reason") or ""),
            notes=tuple(str(note) for note in record.get("notes") or ()),
            turn=record.get("turn") if isinstance(record.get("turn"), int) else None,
        )


@dataclass
class GameState:
    """Clock, location, inventory, relationships (-100..100), quests, flags and event log."""

    time: Clock = field(default_factory=Clock)
    location: str = START_LOCATION["zh"]
    inventory: dict[str, int] = field(default_factory=dict)
    relationships: dict[str, int] = field(default_factory=dict)
    quests: dict[str, Quest] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)
    event_log: list[EventRecord] = field(default_factory=list)
    known_locations: list[str] = field(default_factory=list)
    known_npcs: list[str] = field(default_factory=list)

    @classmethod
    def initial(cls, lang: str = "zh") -> GameState:
        """A new game: day 1 00:00 at the starting location (``起点`` or ``Start``)."""
        return cls(location=START_LOCATION["zh" if lang == "zh" else "en"])

    def copy(self) -> GameState:
        """An independent copy. The event log's records are frozen and never changed in place,
        so the list is copied, not each record's event (deep-copying 200 records was most of
        the state step of a turn)."""
        return GameState(
            time=copy.copy(self.time),
            location=self.location,
            inventory=dict(self.inventory),
            relationships=dict(self.relationships),
            quests=copy.deepcopy(self.quests),
            flags=copy.deepcopy(self.flags),
            event_log=list(self.event_log),
            known_locations=list(self.known_locations),
            known_npcs=list(self.known_npcs),
        )

    def to_dict(self, *, shared: bool = False) -> dict[str, Any]:
        """The state as JSON data. ``shared``: the event log's records are their own JSON
        objects, not copies, for a reader that only encodes them (a code tool's ``state``,
        sent to the sandbox as JSON three times a turn: copying 200 records each time was 6%
        of a replayed turn; #17, session five); such a reader never changes them."""
        log = self.event_log[-EVENT_LOG_LIMIT:]
        return {
            "time": _clock_dict(self.time),
            "location": self.location,
            "inventory": dict(self.inventory),
            "relationships": dict(self.relationships),
            "quests": {key: _quest_dict(quest) for key, quest in self.quests.items()},
            "flags": copy.deepcopy(self.flags),
            "event_log": _SHARED.map(log, EventRecord._json) if shared else _given(log),
            "known_locations": list(self.known_locations),
            "known_npcs": list(self.known_npcs),
        }

    @classmethod
    def from_dict(cls, data: Any) -> GameState:
        """A state from ``to_dict`` output (the original's camelCase keys are read too)."""
        state = _mapping(data, "game state")
        log = state.get("event_log", state.get("eventLog", []))
        return cls(
            time=_clock(state.get("time", {})),
            location=_text(state.get("location", START_LOCATION["zh"]), "location"),
            inventory=_counts(state.get("inventory", {}), "inventory"),
            relationships=_counts(state.get("relationships", {}), "relationships"),
            quests={
                str(key): _quest(value, key)
                for key, value in _mapping(state.get("quests", {}), "quests").items()
            },
            flags=dict(copy.deepcopy(_mapping(state.get("flags", {}), "flags"))),
            event_log=_records(_list(log, "event_log"))[-EVENT_LOG_LIMIT:],
            known_locations=_names(state, "known_locations", "knownLocations"),
            known_npcs=_names(state, "known_npcs", "knownNpcs"),
        )


# The event log's records as JSON objects and back, remembered for the very same records
# (``state.slide``): the log slides by one record a turn.

_SHARED: Slide[EventRecord, dict[str, Any]] = Slide()  # a record → its own JSON object
_GIVEN: Slide[EventRecord, StoredEvent] = Slide()  # a record → the object to_dict gave
_READ: Slide[Any, EventRecord] = Slide()  # an object to_dict gave → its record
_TOUCHED = operator.attrgetter("touched")


def _given(log: list[EventRecord]) -> list[dict[str, Any]]:
    """``[r.to_dict() for r in log]``: the objects given last time for the same records
    while none of them was changed (``to_dict`` gives a changed one's record a new one)."""
    known = _GIVEN.known(log)
    if any(map(_TOUCHED, known)):
        known = []
    made = known + [record.to_dict() for record in log[len(known) :]]
    _GIVEN.keep(log, made)  # type: ignore[arg-type]  # to_dict gives a StoredEvent
    return made


def _records(items: list[Any]) -> list[EventRecord]:
    """``[EventRecord.from_dict(item) for item in items]``: the records of the objects read
    last time, for the very same objects none of which was changed since."""
    known = _READ.known(items)
    if any(map(_TOUCHED, items[: len(known)])):
        known = []
    made = known + [EventRecord.from_dict(item) for item in items[len(known) :]]
    if set(map(type, items)) <= {StoredEvent}:  # what is kept is only for these objects
        _READ.keep(items, made)
    else:
        _READ.keep((), [])
    return made


# Reading saved states.


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise StoreError(f"saved game state: {what} must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise StoreError(f"saved game state: {what} must be a list, got {type(value).__name__}")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise StoreError(f"saved game state: {what} must be text, got {type(value).__name__}")
    return value


def _clock(value: Any) -> Clock:
    data = _mapping(value, "time")
    parts = [data.get(name, default) for name, default in (("day", 1), ("hour", 0), ("minute", 0))]
    day, hour, minute = parts
    valid = all(isinstance(part, int) and not isinstance(part, bool) for part in parts)
    if not valid or day < 1 or not 0 <= hour < 24 or not 0 <= minute < 60:
        raise StoreError(f"saved game state: time {dict(data)} is not a valid day/hour/minute")
    return Clock(day=day, hour=hour, minute=minute)


def _clock_dict(clock: Clock) -> dict[str, int]:
    return {"day": clock.day, "hour": clock.hour, "minute": clock.minute}


def _counts(value: Any, what: str) -> dict[str, int]:
    counts = {}
    for key, count in _mapping(value, what).items():
        if not isinstance(count, (int, float)) or isinstance(count, bool):
            raise StoreError(f"saved game state: {what}[{key!r}] must be a number")
        counts[str(key)] = int(count)
    return counts


def _quest(value: Any, key: str) -> Quest:
    data = _mapping(value, f"quests[{key!r}]")
    status = data.get("status", "active")
    if status not in QUEST_STATUSES:
        raise StoreError(f"saved game state: quest {key!r} has unknown status {status!r}")
    outcome = data.get("outcome")
    return Quest(status=status, stage=str(data.get("stage", "")), outcome=outcome)


def _quest_dict(quest: Quest) -> dict[str, Any]:
    data: dict[str, Any] = {"status": quest.status, "stage": quest.stage}
    if quest.outcome is not None:
        data["outcome"] = quest.outcome
    return data


def _names(state: Mapping[str, Any], key: str, legacy: str) -> list[str]:
    values = _list(state.get(key, state.get(legacy, [])), key)
    return [str(value) for value in values]
