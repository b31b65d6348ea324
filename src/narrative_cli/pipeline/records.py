"""Turn records and snapshots: the JSON the store keeps, written and read in one place.

A ``Snapshot`` is everything needed to continue from a turn, as plain JSON: the game state,
MVU variables (``stat_data``, built from ``[InitVar]`` entries and the greeting when the story
opens; ``mvu_data`` keeps MVU's schema, display_data and delta_data), the summary store, timed
lore effects, the RNG state, the turn counter and each agent's window start.

A ``TurnRecord`` is what a turn produced, typed: the plan (``agents.replies.Plan``), tool
results (``tools.runner.ToolResult``), state events (``state.engine.EventRecord``), MVU
patches (``state.mvu.PatchRecord``), activated lore (``LoreHit``), budget cuts
(``BudgetCut``), warnings, notes and usage. ``TurnResult`` adds the snapshot after the turn.

The writers are ``TurnRecord.to_record()``, ``greeting_record`` (turn 0) and
``Snapshot.to_dict()``; the readers are ``TurnRecord.read``, ``TurnResult.from_record``,
``PlayedTurn.from_record`` (the history view of a record) and ``Snapshot.from_dict``.
Readers are lenient about records written by earlier versions; a record written by the
reader's own version comes back unchanged by a read and a write. The store keeps records as
opaque JSON; nothing else reads their keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from narrative_cli.agents.replies import Plan
from narrative_cli.context.budget import Cut
from narrative_cli.errors import BadInput
from narrative_cli.pipeline.accounting import TurnAccount
from narrative_cli.state.engine import EventRecord
from narrative_cli.state.mvu import PatchRecord
from narrative_cli.tools.runner import ToolResult

SNAPSHOT_VERSION = 1
RECORD_VERSION = 1


@dataclass
class Snapshot:
    """Everything needed to continue the story from a turn, as JSON-ready data."""

    turn: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    mvu: dict[str, Any] | None = None
    summaries: dict[str, Any] = field(default_factory=dict)
    timed: dict[str, Any] = field(default_factory=dict)
    rng: list[Any] = field(default_factory=list)
    windows: dict[str, int] = field(default_factory=dict)
    variables: dict[str, Any] = field(default_factory=dict)  # {{setvar}} / {{getvar}} macros
    # MagVarUpdate's companions of stat_data (``mvu``): schema, display_data, delta_data
    mvu_data: dict[str, Any] = field(default_factory=dict)
    global_variables: dict[str, Any] = field(default_factory=dict)  # {{setglobalvar}}: per session
    # A group scene's state (issue 19: ``pipeline.cast``): muted members, who spoke, each
    # member's own relationships and flags. Empty for a single card.
    group: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as a JSON object (the store saves it as is)."""
        extra = {"mvu_data": self.mvu_data} if self.mvu_data else {}
        return {
            "version": SNAPSHOT_VERSION,
            "turn": self.turn,
            "state": self.state,
            "mvu": self.mvu,
            "summaries": self.summaries,
            "timed": self.timed,
            "rng": self.rng,
            "windows": dict(self.windows),
            "variables": self.variables,
            **extra,
            # only when set: snapshots of stories without global variables stay as they were
            **({"global_variables": self.global_variables} if self.global_variables else {}),
            **({"group": self.group} if self.group else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Snapshot:
        """Rebuild a snapshot saved by ``to_dict``."""
        if not isinstance(data, dict) or not isinstance(data.get("turn"), int):
            raise BadInput("snapshot: not a narrative-cli snapshot (no turn number)")
        return cls(
            turn=data["turn"],
            state=dict(data.get("state") or {}),
            mvu=data.get("mvu"),
            summaries=dict(data.get("summaries") or {}),
            timed=dict(data.get("timed") or {}),
            rng=list(data.get("rng") or []),
            windows={str(k): int(v) for k, v in (data.get("windows") or {}).items()},
            variables=dict(data.get("variables") or {}),
            mvu_data=dict(data.get("mvu_data") or {}),
            global_variables=dict(data.get("global_variables") or {}),
            group=dict(data.get("group") or {}) if isinstance(data.get("group"), dict) else {},
        )


_NO_OUTPUTS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)  # one per turn, held for the whole story: no __dict__
class PlayedTurn:
    """A completed turn as later prompts see it (turn 0 is the greeting, without user input)."""

    number: int
    user_input: str | None
    narrative: str
    post_outputs: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PlayedTurn:
        """The history turn of a stored record (turn 0 records have no user input)."""
        number = int(record["number"])
        user = record.get("user_input")
        return cls(
            number=number,
            user_input=None if number == 0 else str(user or ""),
            narrative=str(record.get("narrative") or ""),
            post_outputs=_texts_by_name(record.get("post_outputs")),
        )


@dataclass(frozen=True)
class Spoken:
    """One speaker's reply in a group turn: the member (name and key) and its text."""

    name: str
    key: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "key": self.key, "text": self.text}

    @classmethod
    def from_dict(cls, data: object) -> Spoken:
        item = _mapping(data)
        return cls(str(item.get("name") or ""), str(item.get("key") or ""),
                   str(item.get("text") or ""))


@dataclass
class TurnRecord:
    """Everything one turn produced, as the store keeps it (the snapshot is stored beside it).

    ``to_record`` is the one writer of a stored turn record and ``read`` its one reader
    (``TurnResult.from_record`` adds the snapshot); every other module reads the fields.
    """

    number: int
    user_input: str
    narrative: str
    mode: str
    rng_stream: int = 0  # which try of the turn drew the random numbers (rng.stream_rng)
    plan: Plan | None = None
    tool_results: list[ToolResult] = field(default_factory=list)
    post_outputs: dict[str, str] = field(default_factory=dict)
    events_applied: list[EventRecord] = field(default_factory=list)
    events_rejected: list[EventRecord] = field(default_factory=list)
    summary_entries: list[str] = field(default_factory=list)
    mvu_applied: list[PatchRecord] = field(default_factory=list)
    mvu_rejected: list[PatchRecord] = field(default_factory=list)
    mvu_block: str = ""  # the reply's <UpdateVariable> block(s), kept out of the shown story
    lore: list[LoreHit] = field(default_factory=list)
    # entries that would have fired but did not: no route, the reason ("budget: …" for the
    # lore budget's), for /lore
    lore_rejected: list[LoreHit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    budget_cuts: list[BudgetCut] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    state_text: str = ""
    usage: TurnAccount = field(default_factory=TurnAccount)
    analysis_pending: str | None = None  # the analysis failed (why): stored, /retry runs it
    speakers: list[Spoken] = field(default_factory=list)  # a group turn's replies, in order

    def history_turn(self) -> PlayedTurn:
        """The turn as the history of later prompts holds it."""
        # the result's own outputs, not a copy: nothing changes a finished turn's (#17: the
        # history holds one per turn for the whole story)
        outputs = self.post_outputs or _NO_OUTPUTS  # one read-only empty mapping for all
        return PlayedTurn(self.number, self.user_input, self.narrative, outputs)

    def message_text(self) -> str:
        """The visible message: the narrative, then every post-pipeline tool output."""
        parts = [self.narrative, *(text for text in self.post_outputs.values() if text.strip())]
        return "\n\n".join(part for part in parts if part)

    def to_record(self) -> dict[str, Any]:
        """The turn record saved by the store (the snapshot is saved beside it)."""
        return {
            "version": RECORD_VERSION,
            "number": self.number,
            "user_input": self.user_input,
            "narrative": self.narrative,
            "mode": self.mode,
            "rng_stream": self.rng_stream,
            "plan": None if self.plan is None else self.plan.to_json(),
            "tool_results": [r.to_dict() for r in self.tool_results],
            "post_outputs": self.post_outputs,
            "events_applied": [e.to_dict() for e in self.events_applied],
            "events_rejected": [e.to_dict() for e in self.events_rejected],
            "summary_entries": self.summary_entries,
            "mvu_applied": [p.to_dict() for p in self.mvu_applied],
            "mvu_rejected": [p.to_dict() for p in self.mvu_rejected],
            **({"mvu_block": self.mvu_block} if self.mvu_block else {}),
            "lore": [hit.to_dict() for hit in self.lore],
            **({"lore_rejected": [hit.to_dict() for hit in self.lore_rejected]}
               if self.lore_rejected else {}),
            "warnings": self.warnings,
            "budget_cuts": [cut.to_dict() for cut in self.budget_cuts],
            "notes": self.notes,
            "state_text": self.state_text,
            "usage": self.usage.to_dict(),
            **({"analysis_pending": self.analysis_pending} if self.analysis_pending else {}),
            **({"speakers": [s.to_dict() for s in self.speakers]} if self.speakers else {}),
        }

    @classmethod
    def read(
        cls, record: Mapping[str, Any], fields: frozenset[str] | None = None
    ) -> TurnRecord:
        """A stored turn record (any record version) as typed values; ``fields``: only these
        are read (the rest keep their defaults), by the same readers (a replay's report
        reads nine of the 23 for every turn: #17, session seven)."""
        if not isinstance(record, Mapping) or not isinstance(record.get("number"), int):
            raise BadInput("turn record: not a narrative-cli turn (no number)")
        chosen = _READERS if fields is None else {k: _READERS[k] for k in fields}
        return TurnRecord(
            number=record["number"], **{name: read(record) for name, read in chosen.items()}
        )


def _plan(record: Mapping[str, Any]) -> Plan | None:
    plan = record.get("plan")
    return Plan.from_json(plan) if isinstance(plan, Mapping) else None


# Each field of a stored record and its reader (``TurnRecord.read``), in the record's order.
_READERS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "user_input": lambda r: str(r.get("user_input") or ""),
    "narrative": lambda r: str(r.get("narrative") or ""),
    "mode": lambda r: str(r.get("mode") or ""),
    "rng_stream": lambda r: _stream(r.get("rng_stream")),
    "plan": _plan,
    "tool_results": lambda r: [ToolResult.from_dict(x) for x in _items(r, "tool_results")],
    "post_outputs": lambda r: _texts_by_name(r.get("post_outputs")),
    "events_applied": lambda r: [EventRecord.from_dict(e) for e in _items(r, "events_applied")],
    "events_rejected": lambda r: [EventRecord.from_dict(e) for e in _items(r, "events_rejected")],
    "summary_entries": lambda r: [str(e) for e in _items(r, "summary_entries")],
    "mvu_applied": lambda r: [PatchRecord.from_dict(p) for p in _items(r, "mvu_applied")],
    "mvu_rejected": lambda r: [PatchRecord.from_dict(p) for p in _items(r, "mvu_rejected")],
    "mvu_block": lambda r: str(r.get("mvu_block") or ""),
    "lore": lambda r: [LoreHit.from_dict(hit) for hit in _items(r, "lore")],
    "lore_rejected": lambda r: [LoreHit.from_dict(hit) for hit in _items(r, "lore_rejected")],
    "warnings": lambda r: [str(w) for w in _items(r, "warnings")],
    "budget_cuts": lambda r: [BudgetCut.from_dict(cut) for cut in _items(r, "budget_cuts")],
    "notes": lambda r: [str(n) for n in _items(r, "notes")],
    "state_text": lambda r: str(r.get("state_text") or ""),
    "usage": lambda r: TurnAccount.from_dict(r.get("usage") or {}),
    "analysis_pending": lambda r: _pending(r.get("analysis_pending")),
    "speakers": lambda r: [Spoken.from_dict(item) for item in _items(r, "speakers")],
}


@dataclass
class TurnResult(TurnRecord):
    """A turn record plus the snapshot after it: what ``run_turn`` returns, not committed yet."""

    snapshot: Snapshot = field(default_factory=Snapshot)

    @classmethod
    def from_record(cls, record: Mapping[str, Any], snapshot: Mapping[str, Any]) -> TurnResult:
        """Rebuild a result from a stored record and its snapshot."""
        read = TurnRecord.read(record)
        values = {f.name: getattr(read, f.name) for f in fields(TurnRecord)}
        return cls(**values, snapshot=Snapshot.from_dict(dict(snapshot)))


def greeting_record(narrative: str, greeting_index: int) -> dict[str, Any]:
    """Turn 0 (the chosen greeting) as the store keeps it; ``PlayedTurn.from_record`` reads it."""
    return {
        "version": RECORD_VERSION,
        "number": 0,
        "user_input": None,
        "narrative": narrative,
        "greeting_index": greeting_index,
    }


def _stream(value: object) -> int:
    """The record's random stream (records before dice tries had none: stream 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _pending(value: object) -> str | None:
    """Why the turn's analysis is still pending (a non-empty text), or None when it ran."""
    return str(value) if value else None


def _items(record: Mapping[str, Any], key: str) -> list[Any]:
    value = record.get(key)
    return value if isinstance(value, list) else []


def _texts_by_name(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _mapping(data: object) -> Mapping[str, Any]:
    return data if isinstance(data, Mapping) else {}


@dataclass(frozen=True)
class LoreHit:
    """One world-info entry the turn activated: which, where it went and why."""

    uid: Any  # the entry's uid as the world file has it (a number, sometimes text)
    comment: str
    route: str
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {
            "uid": self.uid, "comment": self.comment, "route": self.route, "reason": self.reason,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: object) -> LoreHit:
        hit = _mapping(data)
        return cls(
            hit.get("uid"),
            str(hit.get("comment") or ""),
            str(hit.get("route") or ""),
            str(hit.get("reason") or ""),
        )


@dataclass(frozen=True)
class BudgetCut:
    """What was cut from one agent's prompt to fit the model's context (``limit`` tokens)."""

    agent: str
    limit: int
    cuts: tuple[Cut, ...]

    def to_dict(self) -> dict[str, object]:
        return {"agent": self.agent, "limit": self.limit, "cuts": [c.to_dict() for c in self.cuts]}

    @classmethod
    def from_dict(cls, data: object) -> BudgetCut:
        cut = _mapping(data)
        items = cut.get("cuts")
        return cls(
            str(cut.get("agent") or ""),
            int(cut.get("limit") or 0),
            tuple(_cut(item) for item in items) if isinstance(items, list) else (),
        )


def _cut(data: object) -> Cut:
    item = _mapping(data)
    block, detail = str(item.get("block") or ""), str(item.get("detail") or "")
    return Cut(block, detail, int(item.get("tokens") or 0))
