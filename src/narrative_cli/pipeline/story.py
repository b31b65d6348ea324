"""A story being played: what was loaded, the turns so far, and the snapshot to continue from.

``open_story(card_path, ...)`` loads the card, its lore, preset and persona and returns a
``Story`` whose history holds the chosen greeting as turn 0. ``run_turn`` (orchestrator) reads
a story and returns a ``TurnResult`` without changing the story; the caller commits it to the
session store and then calls ``story.advance(result)``::

    story = open_story("card.png", settings=load_settings())
    result = run_turn(story, "I light the lamp.", BackendSet.from_settings(story.settings))
    store.commit_turn(session_id, result.to_record(), result.snapshot.to_dict())
    story.advance(result)

Resuming, regenerating and undoing restore a story from stored turns: ``story.restore(turns,
snapshot)`` sets the history (``PlayedTurn.from_record`` reads each stored record) and the
snapshot.

Turn records and snapshots (``Snapshot``, ``PlayedTurn``, ``TurnRecord``, ``TurnResult``)
are defined, written and read in ``pipeline.records``; they are re-exported here.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from narrative_cli.config import Settings, default_authors_note
from narrative_cli.context.ejs import has_template
from narrative_cli.context.text_search import TextIndex
from narrative_cli.domain import Card, LoreEntry, RegexScript
from narrative_cli.domain_chat import AuthorsNote, Persona, Preset
from narrative_cli.errors import BadInput, CardError
from narrative_cli.group.greetings import lore_owners, scene_greeting
from narrative_cli.group.model import Group
from narrative_cli.i18n import t
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.timed import TimedEffects
from narrative_cli.pipeline.opening import load_parts
from narrative_cli.pipeline.records import (
    PlayedTurn,
    Snapshot,
    TurnRecord,
    TurnResult,
    greeting_record,
)
from narrative_cli.regex.scripts import RegexScripts, scripts_for
from narrative_cli.rng import new_rng, rng_state
from narrative_cli.state.engine import GameState, sync_from_lore
from narrative_cli.state.mvu_commands import strip_update_blocks
from narrative_cli.state.mvu_init import initialise, is_initvar
from narrative_cli.state.summaries import SummaryStore
from narrative_cli.tools.definitions import ToolSet
from narrative_cli.tools.templates import TemplateContext, TemplateJob, render_templates

__all__ = [
    "PlayedTurn",
    "Snapshot",
    "Story",
    "TurnRecord",
    "TurnResult",
    "ensure_mvu",
    "initial_snapshot",
    "with_mvu",
    "open_story",
]

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
    authors_note: AuthorsNote | None = None  # the chat's (play sets it from the session)
    global_regex: list[RegexScript] = field(default_factory=list)  # run before the card's
    # A group scene (issue 19): ``card`` is then the first member's; ``lore_owner`` maps
    # id(entry) of each member's own book to that member's key (``pipeline.group_story``).
    group: Group | None = None
    lore_owner: dict[int, str] = field(default_factory=dict, repr=False)
    _prompt_regex: RegexScripts | None = field(default=None, repr=False)
    # The story's full-text index (issue #17; play sets the session database's); None: the
    # turns search nothing (``pipeline.search_recall``).
    text_index: TextIndex | None = field(default=None, repr=False, compare=False)

    @property
    def prompt_regex(self) -> RegexScripts:
        """The card's regex scripts for prompts, built once per session (a script that runs
        past its time limit stays skipped for the rest of it)."""
        if self._prompt_regex is None:
            self._prompt_regex = scripts_for(self.card, self.persona, self.lang, target="prompt",
                                             global_scripts=self.global_regex)
        return self._prompt_regex

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
        return routes_for(self.entries).uses_mvu

    def advance(self, result: TurnResult) -> None:
        """Append a finished (and committed) turn and move to its snapshot."""
        if result.number != self.next_turn:
            raise BadInput(f"turn {result.number} does not follow turn {self.snapshot.turn}")
        self.history.append(result.history_turn())
        self.snapshot = result.snapshot

    def restore(self, played: Sequence[PlayedTurn], snapshot: Snapshot) -> None:
        """Continue from stored turns: set the history and the snapshot."""
        turns = sorted(played, key=lambda turn: turn.number)
        greeting = [t for t in self.history if t.number == 0]
        if not any(t.number == 0 for t in turns):
            turns = greeting + turns
        self.snapshot = snapshot
        self.history = [t for t in turns if t.number <= self.snapshot.turn]

    def greeting_record(self) -> dict[str, Any]:
        """Turn 0 (the greeting) as a record, for a new session in the store."""
        greeting = next((t for t in self.history if t.number == 0), None)
        return greeting_record(greeting.narrative if greeting else "", self.greeting_index)


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
        problems += [t("mvu.greeting_rejected", lang, patch=r.patch, reason=r.reason)
                     for r in update.rejected]
    data = result.data
    return replace(snapshot, mvu=data.stat_data, mvu_data=data.to_dict()), problems


def open_story(
    card_path: str | Path | Card,
    lorebooks: Sequence[str | Path] = (),
    preset: str | Path | Preset | None = None,
    persona: str | Persona | None = None,
    settings: Settings | None = None,
    greeting_index: int = 0,
    seed: int | None = None,
    lang: str = "auto",
    user_name: str | None = None,
    regex: Sequence[RegexScript] = (),
    group: Group | None = None,
) -> Story:
    """Load a card (or take a loaded one) and everything it plays with; the greeting becomes
    turn 0. ``regex``: global regex scripts (an ``--st-data`` folder's), before the config's.
    ``group``: a group scene (``card_path`` is then ignored: the first member's card leads,
    every member's book is loaded, the greeting is each member's in turn)."""
    books = [] if group is None else [m.card.character_book for m in group.members[1:]]
    if group is not None:
        card_path = group.members[0].card
    parts = load_parts(card_path, lorebooks, preset, persona, settings, lang, user_name, regex,
                       member_books=[book for book in books if book is not None])
    seed = _pick_seed(seed, parts.settings)
    if group is None:
        rendered = parts.render(_greeting(parts.card, greeting_index))
    else:
        rendered = scene_greeting(group, parts.persona, parts.lang, greeting_index)
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
        authors_note=default_authors_note(parts.settings.pipeline),
        global_regex=parts.global_regex,
        group=group,
        lore_owner={} if group is None else lore_owners(group, parts.entries),
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
