"""Everything the prompt builders read, as plain data: the builders never call other stages.

The pipeline fills a :class:`PromptInputs` each turn from the outputs of the other stages (the
lore engine's routed lists, the state engine's summary text, the summary store's entries, the
tool list and tool results text) and hands it to ``context.router``'s builders.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from narrative_cli.agents.replies import Plan
from narrative_cli.domain import Card
from narrative_cli.domain_chat import AuthorsNote, Persona, Preset
from narrative_cli.errors import ConfigError
from narrative_cli.state.chapters import Chapter, Fold
from narrative_cli.state.summaries import Labelled

Lang = Literal["zh", "en"]
# One summary line of the story so far (``[第3轮] 叙事要点：…``) and its turn: the summary
# store's own labelled lines, not copies of them (#17).
SummaryEntry = Labelled
PresetMode = Literal["none", "split"]
PRESET_MODES: tuple[str, ...] = ("none", "split")


@dataclass(frozen=True, slots=True)  # one per turn, held for the whole story: no __dict__
class HistoryTurn:
    """One finished turn: its stable number, what the user said, what the story said.

    The chosen greeting is turn 0 with an empty ``user``.
    """

    number: int
    user: str
    narrative: str


@dataclass(frozen=True)
class WindowSettings:
    """The n+m stable window: at least ``n`` recent turns, growing by up to ``m`` more."""

    n: int
    m: int


PLANNING_WINDOW = WindowSettings(4, 4)
WRITING_WINDOW = WindowSettings(3, 4)


@dataclass
class PromptInputs:
    """One turn's inputs for every agent's prompt."""

    card: Card
    persona: Persona = field(default_factory=Persona)
    lang: Lang = "en"
    turn: int = 1  # the number of the turn being played
    user_input: str = ""
    history: list[HistoryTurn] = field(default_factory=list)  # finished turns, oldest first
    planning_window: WindowSettings = PLANNING_WINDOW
    writing_window: WindowSettings = WRITING_WINDOW
    summaries: list[SummaryEntry] = field(default_factory=list)
    chapters: list[Chapter] = field(default_factory=list)  # folds of old entries (#17)
    state_summary: str = ""
    worldinfo1: list[str] = field(default_factory=list)
    worldinfo2: list[str] = field(default_factory=list)
    worldinfo3: list[str] = field(default_factory=list)
    outlets: dict[str, list[str]] = field(default_factory=dict)
    preset: Preset | None = None
    preset_mode: PresetMode = "none"
    authors_note: AuthorsNote | None = None  # the chat's Author's Note (domain.AuthorsNote)
    plan: Plan | None = None  # the planner's checked reply, for <writing_guide>
    tool_list_text: str = ""  # tools.definitions.tool_list_text(...) for the planner
    tool_results_text: str = ""  # the lines of <tool_results>, without the tags
    dice_rules: bool = False  # the card's lore describes checks (tools.dice_rules)
    dice_in_results: bool = False  # the engine rolled dice this turn
    dice_offered: bool = False  # the planner was offered a dice tool this turn
    text_recall: list[HistoryTurn] = field(default_factory=list)  # context.recall output
    mvu_rules: list[str] = field(default_factory=list)  # [mvu_update] texts for mvu_extract
    fold: Fold | None = None  # what the compaction agent is asked to fold (issue #17)
    text_search: bool = False  # the story has a text index the planner's recall_terms search
    # Group scenes (issue 19); all empty for a single card, whose prompts stay as they were.
    cast: tuple[Card, ...] = ()  # the planner's <character>: every member's card
    scene_note: str = ""  # the planner's group rules (members, muted, the speakers field)
    speaker_note: str = ""  # the writer's: whom it writes for, with what intent
    scene_so_far: str = ""  # the writer's: the earlier speakers' replies this turn
    analysis_note: str = ""  # the analyst's: who spoke, attribute events to members
    # Macro environment (compat §6): injected clock and the session rng keep prompts reproducible.
    clock: datetime | None = None
    rng: random.Random | None = None
    variables: dict[str, Any] = field(default_factory=dict)  # {{getvar}} / {{setvar}}
    global_variables: dict[str, Any] = field(default_factory=dict)  # {{getglobalvar}}
    message_variables: dict[str, Any] = field(default_factory=dict)  # MVU: stat_data, …
    pick_seed: str = ""  # {{pick}} is stable per session: pass the session id
    # Budget cuts (context.budget sets these; builders honour them).
    window_trim: int = 0  # oldest turns removed from every window
    macros_applied: bool = False  # set by context.expand.apply_macros

    def window_settings(self, window: str | None) -> WindowSettings:
        """The n+m settings of a window (``agents.table.WINDOWS``); the writers' by default."""
        return self.planning_window if window == "planning" else self.writing_window


def effective_preset_mode(configured: str, preset: Preset | None) -> PresetMode:
    """``split`` whenever the user gave a preset: a preset given is always used (issue #15).
    ``none`` in the config now only means "no preset"; other values are refused."""
    if configured not in PRESET_MODES:
        raise ConfigError(f"preset_mode must be none or split, got {configured!r}")
    return "split" if preset is not None else "none"
