"""A story being played: what was loaded, the turns so far, and the snapshot to continue from.

``open_story(card_path, ...)`` loads the card, its lore, preset and persona and returns a
``Story`` whose history holds the chosen greeting as turn 0. ``run_turn`` (orchestrator) reads
a story and returns a ``TurnResult`` without changing the story; the caller commits it to the
session store and then calls ``story.advance(result)``::

    story = open_story("card.png", settings=load_settings())
    result = run_turn(story, "I light the lamp.", BackendSet.from_settings(story.settings))
    store.commit_turn(session_id, result.to_record(), result.snapshot.to_dict())
    story.advance(result)

Resuming, regenerating and undoing restore a story from stored JSON: ``story.restore(records,
snapshot_dict)`` rebuilds the history from turn records and sets the snapshot.

A ``Snapshot`` is everything needed to continue from a turn, as plain JSON: the game state,
MVU variables (``stat_data``, built from ``[InitVar]`` entries and the greeting when the story
opens; ``mvu_data`` keeps MVU's schema, display_data and delta_data), the summary
store, timed lore effects, the RNG state, the turn counter and each agent's window start.
Turn records (``TurnResult.to_record()``) and snapshots are owned by this module; the store
keeps them as opaque JSON dicts.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from narrative_cli.config import Settings
from narrative_cli.context.ejs import has_template
from narrative_cli.domain import Card, LoreEntry, Persona, Preset
from narrative_cli.errors import BadInput, CardError
from narrative_cli.lore.routing import MVU_UPDATE, formatting_kind
from narrative_cli.lore.timed import TimedEffects
from narrative_cli.pipeline.accounting import TurnAccount
from narrative_cli.pipeline.opening import load_parts
from narrative_cli.rng import new_rng, rng_state
from narrative_cli.state.engine import GameState, sync_from_lore
from narrative_cli.state.mvu_commands import strip_update_blocks
from narrative_cli.state.mvu_init import initialise, is_initvar
from narrative_cli.state.summaries import SummaryStore
from narrative_cli.tools.definitions import ToolSet
from narrative_cli.tools.templates import TemplateContext, TemplateJob, render_templates

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
        )


@dataclass(frozen=True)
class PlayedTurn:
    """A completed turn as later prompts see it (turn 0 is the greeting, without user input)."""

    number: int
    user_input: str | None
    narrative: str
    post_outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class TurnResult:
    """Everything one turn produced, plus the snapshot after it. Nothing here is committed yet."""

    number: int
    user_input: str
    narrative: str
    mode: str
    snapshot: Snapshot
    rng_stream: int = 0  # which try of the turn drew the random numbers (rng.stream_rng)
    plan: dict[str, Any] | None = None
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    post_outputs: dict[str, str] = field(default_factory=dict)
    events_applied: list[dict[str, Any]] = field(default_factory=list)
    events_rejected: list[dict[str, Any]] = field(default_factory=list)
    summary_entries: list[str] = field(default_factory=list)
    mvu_applied: list[dict[str, Any]] = field(default_factory=list)
    mvu_rejected: list[dict[str, Any]] = field(default_factory=list)
    mvu_block: str = ""  # the reply's <UpdateVariable> block(s), kept out of the shown story
    lore: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    budget_cuts: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    state_text: str = ""
    usage: TurnAccount = field(default_factory=TurnAccount)

    def history_turn(self) -> PlayedTurn:
        """The turn as the history of later prompts holds it."""
        return PlayedTurn(self.number, self.user_input, self.narrative, dict(self.post_outputs))

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
            "plan": self.plan,
            "tool_results": self.tool_results,
            "post_outputs": self.post_outputs,
            "events_applied": self.events_applied,
            "events_rejected": self.events_rejected,
            "summary_entries": self.summary_entries,
            "mvu_applied": self.mvu_applied,
            "mvu_rejected": self.mvu_rejected,
            **({"mvu_block": self.mvu_block} if self.mvu_block else {}),
            "lore": self.lore,
            "warnings": self.warnings,
            "budget_cuts": self.budget_cuts,
            "notes": self.notes,
            "state_text": self.state_text,
            "usage": self.usage.to_dict(),
        }

    @classmethod
    def from_record(cls, record: dict[str, Any], snapshot: dict[str, Any]) -> TurnResult:
        """Rebuild a result from a stored record and its snapshot."""
        if not isinstance(record, dict) or not isinstance(record.get("number"), int):
            raise BadInput("turn record: not a narrative-cli turn (no number)")
        simple = {
            name: record[name]
            for name in cls.__dataclass_fields__
            if name in record and name not in ("snapshot", "usage")
        }
        simple.setdefault("user_input", "")
        simple.setdefault("narrative", "")
        simple.setdefault("mode", "")
        usage = TurnAccount.from_dict(record.get("usage") or {})
        return cls(snapshot=Snapshot.from_dict(snapshot), usage=usage, **simple)


def history_from_record(record: dict[str, Any]) -> PlayedTurn:
    """The history turn of a stored record (turn 0 records have no user input)."""
    number = int(record["number"])
    user = record.get("user_input")
    return PlayedTurn(
        number=number,
        user_input=None if number == 0 else str(user or ""),
        narrative=str(record.get("narrative") or ""),
        post_outputs={str(k): str(v) for k, v in (record.get("post_outputs") or {}).items()},
    )


@dataclass
class Story:
    """A card with its lore, tools, settings and the turns played so far."""

    card: Card
    entries: list[LoreEntry]
    tools: ToolSet
    settings: Settings
    persona: Persona
    preset: Preset | None
    lang: str
    seed: int
    history: list[PlayedTurn]
    snapshot: Snapshot
    greeting_index: int = 0
    problems: list[str] = field(default_factory=list)
    clock: Callable[[], datetime] = datetime.now

    @property
    def next_turn(self) -> int:
        """The number the next turn will get."""
        return self.snapshot.turn + 1

    @property
    def names(self) -> tuple[str, str]:
        """The user's and the character's names (MVU fills them in for <user> and <char>)."""
        return (self.persona.name or "User", self.card.name)

    @property
    def uses_mvu(self) -> bool:
        """True when the lore has an [InitVar] entry (enabled or not, as MagVarUpdate reads
        them) or an enabled [mvu_update] entry."""
        return any(
            is_initvar(e) or (not e.disabled and formatting_kind(e) == MVU_UPDATE)
            for e in self.entries
        )

    def advance(self, result: TurnResult) -> None:
        """Append a finished (and committed) turn and move to its snapshot."""
        if result.number != self.next_turn:
            raise BadInput(f"turn {result.number} does not follow turn {self.snapshot.turn}")
        self.history.append(result.history_turn())
        self.snapshot = result.snapshot

    def restore(self, records: Sequence[dict[str, Any]], snapshot: dict[str, Any]) -> None:
        """Continue from stored turns: rebuild the history and set the snapshot."""
        turns = [history_from_record(r) for r in sorted(records, key=lambda r: int(r["number"]))]
        greeting = [t for t in self.history if t.number == 0]
        if not any(t.number == 0 for t in turns):
            turns = greeting + turns
        self.snapshot = Snapshot.from_dict(snapshot)
        self.history = [t for t in turns if t.number <= self.snapshot.turn]

    def greeting_record(self) -> dict[str, Any]:
        """Turn 0 (the greeting) as a record, for a new session in the store."""
        greeting = next((t for t in self.history if t.number == 0), None)
        return {
            "version": RECORD_VERSION,
            "number": 0,
            "user_input": None,
            "narrative": greeting.narrative if greeting else "",
            "greeting_index": self.greeting_index,
        }


def ensure_mvu(story: Story, snapshot: Snapshot) -> tuple[Snapshot, str | None]:
    """Initialise MVU variables when the snapshot has none yet (a session saved before the
    variables were set up at the greeting); returns the snapshot and a warning, if any."""
    if snapshot.mvu is not None or not story.uses_mvu:
        return snapshot, None
    greeting = next((t.narrative for t in story.history if t.number == 0), "")
    fresh, problems = with_mvu(snapshot, story.entries, greeting, story.names, story.lang)
    return fresh, ("; ".join(problems) or None)


def with_mvu(
    snapshot: Snapshot,
    entries: Sequence[LoreEntry],
    greeting: str,
    names: tuple[str, str],
    lang: str,
) -> tuple[Snapshot, list[str]]:
    """``snapshot`` with the MVU variables MagVarUpdate builds at the greeting (see
    ``state.mvu_init``), and the problems met, one line each."""
    result = initialise(entries, greeting, user=names[0], char=names[1], lang=lang)
    problems = list(result.problems)
    update = result.greeting_update
    if update is not None and update.rejected:
        problems += [f"greeting: {r.patch} rejected ({r.reason})" for r in update.rejected]
    data = result.data
    return replace(snapshot, mvu=data.stat_data, mvu_data=data.to_dict()), problems


def open_story(
    card_path: str | Path,
    lorebooks: Sequence[str | Path] = (),
    preset: str | Path | Preset | None = None,
    persona: str | Persona | None = None,
    settings: Settings | None = None,
    greeting_index: int = 0,
    seed: int | None = None,
    lang: str = "auto",
    user_name: str | None = None,
) -> Story:
    """Load a card and everything it plays with; the greeting becomes turn 0."""
    parts = load_parts(card_path, lorebooks, preset, persona, settings, lang, user_name)
    seed = _pick_seed(seed, parts.settings)
    greeting = _greeting(parts.card, greeting_index)
    rendered = parts.render(greeting)
    shown = strip_update_blocks(rendered)
    history = [PlayedTurn(0, None, shown)] if shown.strip() else []
    snapshot = initial_snapshot(seed, parts.lang, parts.entries)
    names = (parts.persona.name or "User", parts.card.name)
    problems = list(parts.problems)
    if any(is_initvar(e) for e in parts.entries):
        snapshot, mvu_problems = with_mvu(snapshot, parts.entries, rendered, names, parts.lang)
        problems += [f"MVU: {problem}" for problem in mvu_problems]
    if history and has_template(shown):
        text, warnings = _greeting_templates(shown, snapshot, names, seed, parts.lang)
        history = [PlayedTurn(0, None, text)] if text else []
        problems += warnings
    return Story(
        card=parts.card,
        entries=parts.entries,
        tools=parts.tools,
        settings=parts.settings,
        persona=parts.persona,
        preset=parts.preset,
        lang=parts.lang,
        seed=seed,
        history=history,
        snapshot=snapshot,
        greeting_index=greeting_index,
        problems=problems,
    )


def _greeting_templates(
    text: str, snapshot: Snapshot, names: tuple[str, str], seed: int, lang: str
) -> tuple[str, list[str]]:
    """The greeting with its templates rendered against the variables it starts with, and
    the warnings (a greeting whose template fails is left empty rather than sent as code)."""
    stat = {"stat_data": snapshot.mvu} if snapshot.mvu is not None else {}
    context = TemplateContext(local=snapshot.variables, message=stat, user=names[0],
                              char=names[1], seed=seed, lang=lang)
    batch = render_templates([TemplateJob("greeting", text)], context)
    return (batch.outputs[0] or "").strip(), batch.warnings


def initial_snapshot(seed: int, lang: str = "en", entries: Sequence[LoreEntry] = ()) -> Snapshot:
    """The snapshot of turn 0: a fresh state knowing the lore's [QUEST]/[LOCATION]/[NPC]
    entries, no summaries, no MVU variables yet, the seeded RNG."""
    state = sync_from_lore(GameState.initial(lang), entries, lang)
    return Snapshot(
        turn=0,
        state=state.to_dict(),
        mvu=None,
        summaries=SummaryStore(lang=lang).to_dict(),
        timed=TimedEffects().to_dict(),
        rng=rng_state(new_rng(seed)),
    )


def _pick_seed(seed: int | None, settings: Settings) -> int:
    if seed is None:
        seed = settings.pipeline.seed
    return int(seed) if seed is not None else secrets.randbelow(2**31)


def _greeting(card: Card, index: int) -> str:
    greetings = card.greetings
    if not 0 <= index < len(greetings):
        raise CardError(
            f"{card.path or card.name}: no greeting {index} (the card has {len(greetings)}: "
            f"0 to {len(greetings) - 1})"
        )
    return greetings[index]
