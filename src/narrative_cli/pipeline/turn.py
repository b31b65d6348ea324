"""The working state of one turn while the orchestrator runs it, and the texts stages share.

A ``TurnState`` starts from the story's snapshot (game state, MVU variables, summaries, timed
lore effects, RNG, macro variables: all copies, so the story is never changed) and collects
what each stage produces. ``prompt_inputs`` turns it into the context builders'
``PromptInputs``; ``tool_context`` gives the llm-tool context keys; ``snapshot_after`` the
snapshot to commit.
"""

from __future__ import annotations

import operator
import random
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from narrative_cli.agents.guide import writing_guide_text
from narrative_cli.agents.replies import Plan
from narrative_cli.agents.table import WINDOWS
from narrative_cli.config import PipelineSettings
from narrative_cli.context import parts
from narrative_cli.context.inputs import (
    HistoryTurn,
    PromptInputs,
    SummaryEntry,
    WindowSettings,
    effective_preset_mode,
)
from narrative_cli.context.window import window_first
from narrative_cli.dataclass_copy import replaced
from narrative_cli.domain import LoreEntry
from narrative_cli.group.scene_state import SceneState
from narrative_cli.lore.engine import ActivationResult, RoutedLore, TimedEffects
from narrative_cli.pipeline.calls import CallRunner
from narrative_cli.pipeline.events import StageFinished, StageStarted, TurnWarning
from narrative_cli.pipeline.records import BudgetCut, Spoken, TurnRecord
from narrative_cli.pipeline.regex_templates import turn_renderer
from narrative_cli.pipeline.story import PlayedTurn, Snapshot, Story
from narrative_cli.regex import prompt as regex_prompt
from narrative_cli.regex.scripts import AI_OUTPUT, USER_INPUT
from narrative_cli.regex.templated import Renderer
from narrative_cli.rng import rng_from_state, rng_state, stream_rng
from narrative_cli.state.engine import EventRecord, GameState, known_context, state_summary
from narrative_cli.state.mvu import PatchRecord, mvu_summary
from narrative_cli.state.summaries import SummaryStore
from narrative_cli.tools.definitions import ToolDef
from narrative_cli.tools.llm_tools import LazyContext, world_full
from narrative_cli.tools.runner import ToolResult, code_state, dice_results_text


@dataclass
class TurnState:
    """Everything one turn has read and produced so far."""

    story: Story
    number: int
    user_input: str
    lang: str
    calls: CallRunner
    rng: random.Random
    game: GameState
    mvu: dict[str, Any] | None
    mvu_data: dict[str, Any]
    summaries: SummaryStore
    timed: TimedEffects
    variables: dict[str, Any]
    global_variables: dict[str, Any] = field(default_factory=dict)  # {{setglobalvar}}, templates
    world_entries: list[LoreEntry] | None = None  # story entries with templates rendered
    mode: str = "merged"
    rng_stream: int = 0  # 0: the snapshot's stream; n: try n of this turn (rng.stream_rng)
    concurrent_post: bool = False
    lore: ActivationResult | None = None
    routed: RoutedLore = field(default_factory=RoutedLore)
    active_tools: list[ToolDef] = field(default_factory=list)
    dice_rules: bool = False  # the card's lore describes checks
    mvu_rules: list[str] = field(default_factory=list)
    base_inputs: PromptInputs | None = None
    plan: Plan | None = None
    tool_results: list[ToolResult] = field(default_factory=list)
    recall: list[HistoryTurn] = field(default_factory=list)
    narrative: str = ""
    events_applied: list[EventRecord] = field(default_factory=list)
    events_rejected: list[EventRecord] = field(default_factory=list)
    post_results: list[ToolResult] = field(default_factory=list)
    mvu_applied: list[PatchRecord] = field(default_factory=list)
    mvu_rejected: list[PatchRecord] = field(default_factory=list)
    mvu_block: str = ""  # the writer's update block(s), kept out of the shown story
    mvu_from_writer: bool = False  # the writer's reply carried MVU commands
    warnings: list[str] = field(default_factory=list)
    budget_cuts: list[BudgetCut] = field(default_factory=list)
    analysis_pending: str | None = None  # why the analysis failed; /retry runs it alone
    scene: SceneState | None = None  # a group scene's state (None: a single card)
    speakers: list[Spoken] = field(default_factory=list)  # a group turn's replies, in order
    next_speaker: str | None = None  # /next NAME: the member who answers this turn
    keep: TurnRecord | None = None  # a group /regen: the turn whose last speaker is redone

    @classmethod
    def start(
        cls,
        story: Story,
        user_input: str,
        snapshot: Snapshot,
        calls: CallRunner,
        rng_stream: int = 0,
    ) -> TurnState:
        """A turn's state from the snapshot it continues (copies: the story is not changed).

        ``rng_stream`` above 0 is a later try of the turn: its own stream of random numbers."""
        rng = rng_from_state(snapshot.rng) if snapshot.rng else random.Random(story.seed)
        if rng_stream > 0:
            rng = stream_rng(story.seed, snapshot.turn + 1, rng_stream)
        return cls(
            rng_stream=rng_stream,
            story=story,
            number=snapshot.turn + 1,
            user_input=user_input,
            lang=story.lang,
            calls=calls,
            rng=rng,
            game=GameState.from_dict(snapshot.state)
            if snapshot.state
            else GameState.initial(story.lang),
            mvu=None if snapshot.mvu is None else dict(snapshot.mvu),
            mvu_data=dict(snapshot.mvu_data),
            summaries=SummaryStore.from_dict(snapshot.summaries or {}, story.lang),
            timed=TimedEffects.from_dict(snapshot.timed or {}),
            variables=dict(snapshot.variables),
            global_variables=dict(snapshot.global_variables),
            scene=SceneState.from_dict(snapshot.group, story.group) if story.group else None,
        )

    # -- listener helpers -------------------------------------------------------------------

    def warn(self, stage: str, message: str) -> None:
        """A visible warning: kept in the result and the trace, shown by the REPL."""
        self.warnings.append(message)
        self.calls.emit(TurnWarning(stage, message))

    def stage(self, name: str) -> _Stage:
        """Announce a stage and its elapsed time to the listener (a ``with`` block)."""
        return _Stage(self.calls, name)

    # -- shared texts -----------------------------------------------------------------------

    @cached_property
    def history(self) -> list[HistoryTurn]:
        """The finished turns as the prompt builders see them (greeting = turn 0), after the
        card's prompt-side regex scripts. Depth counts messages back from this turn's input
        (0), as SillyTavern counts them when it builds a prompt.

        Built once per turn (the story's history does not change while a turn runs). Without
        prompt-side scripts the text of a past turn never changes, so the list is extended from
        the last turn's (cost flat with length); scripts with a depth range must see every turn
        at its new depth, so with scripts the whole history goes through one sandbox call."""
        scripts = self.story.prompt_regex
        if not (scripts.applies_to(AI_OUTPUT) or scripts.applies_to(USER_INPUT)):
            return prompt_history(self.story)
        return regex_prompt.prompt_history(self.story.history, scripts, self.regex_render)

    @property
    def prompt_input(self) -> str:
        """This turn's input as the model is sent it (prompt-side regex scripts, depth 0)."""
        scripts = self.story.prompt_regex
        return regex_prompt.prompt_input(self.user_input, scripts, self.regex_render)

    @property
    def prompt_narrative(self) -> str:
        """This turn's story as later agents are sent it (prompt-side scripts, depth 0)."""
        scripts = self.story.prompt_regex
        return regex_prompt.prompt_text(scripts.ai_output(self.narrative, 0, self.regex_render))

    def lore_text(self, entry: LoreEntry) -> str:
        """A lore entry's content as the model is sent it (world-info regex scripts)."""
        return regex_prompt.lore_text(entry, self.story.prompt_regex, self.regex_render)

    @cached_property
    def regex_render(self) -> Renderer:
        """Renders the templates regex replacements write (``pipeline.regex_templates``)."""
        return turn_renderer(self)

    def window(self, agent: str) -> list[HistoryTurn]:
        """The n+m window of ``agent`` (planning, or the writers' window otherwise)."""
        history = self.history
        n, m = self.window_settings(agent)
        return history[window_first(len(history), n, m) :]

    def window_settings(self, agent: str) -> tuple[int, int]:
        return window_of(self.story.settings.pipeline, agent)

    def state_text(self) -> str:
        """``<state_summary>``: the MVU variables when there are any, else the game state."""
        if self.mvu:
            return mvu_summary(self.mvu, self.lang)
        return state_summary(self.game, self.lang)

    def summary_entries(self) -> list[SummaryEntry]:
        if self.summaries.lang != self.lang:
            return [SummaryEntry(e.turn, e.labelled(self.lang)) for e in self.summaries.entries]
        return summary_entries(self.summaries.labelled_entries)

    def prompt_inputs(self, base: PromptInputs | None = None) -> PromptInputs:
        """The builders' inputs with this turn's plan, tool results and recalled turns
        (``base``: other inputs than the turn's, as a group scene's writer has)."""
        base = base or self.base_inputs
        assert base is not None, "lore stage first"
        return replaced(  # a copy per agent's prompt: dataclasses.replace was 1.2% of a turn
            base,
            plan=self.plan,
            tool_results_text="\n".join(r.text for r in self.tool_results if r.kind != "warning"),
            dice_rules=self.dice_rules,
            dice_in_results=any(r.kind == "dice" and r.ok for r in self.tool_results),
            text_recall=list(self.recall),
        )

    def make_base_inputs(self, tool_list_text: str) -> PromptInputs:
        """Inputs for every prompt of the turn, built once after lore activation."""
        story, pipeline = self.story, self.story.settings.pipeline
        return PromptInputs(
            card=regex_prompt.prompt_card(story.card),
            persona=story.persona,
            lang="zh" if self.lang == "zh" else "en",
            turn=self.number,
            user_input=self.prompt_input,
            history=self.history,
            planning_window=WindowSettings(*self.window_settings("planning")),
            writing_window=WindowSettings(*self.window_settings("writing")),
            summaries=self.summary_entries(),
            chapters=list(self.summaries.chapters),
            state_summary=self.state_text(),
            worldinfo1=[self.lore_text(e) for e in self.routed.worldinfo1],
            worldinfo2=[self.lore_text(e) for e in self.routed.worldinfo2],
            worldinfo3=[self.lore_text(e) for e in self.routed.worldinfo3],
            outlets={k: [self.lore_text(e) for e in v] for k, v in self.routed.outlets.items()},
            preset=story.preset,
            authors_note=story.authors_note,
            preset_mode=effective_preset_mode(pipeline.preset_mode, story.preset),
            tool_list_text=tool_list_text,
            dice_offered=bool(tool_list_text) and any(
                t.is_dice and t.trigger == "planning" for t in self.active_tools
            ),
            mvu_rules=list(self.mvu_rules),
            clock=story.clock(),
            rng=self.rng,
            variables=self.variables,
            global_variables=self.global_variables,
            message_variables=self.message_variables(),
            pick_seed=str(story.seed),
            text_search=story.text_index is not None,
        )

    def message_variables(self) -> dict[str, Any]:
        """MVU's trees as the message variables macros and templates read (``stat_data``,
        ``display_data``, ``delta_data``); empty when the card does not use MVU."""
        if self.mvu is None:
            return {}
        meta = self.mvu_data
        return {"stat_data": self.mvu, "display_data": meta.get("display_data") or {},
                "delta_data": meta.get("delta_data") or {}}

    def tool_context(
        self, *, narrative: str = "", keys: Collection[str] | None = None
    ) -> LazyContext:
        """The llm-tool context keys (CANONICAL_CONTEXT_ORDER) as they stand now.

        The world, the summary, the window and the persona are rendered only when a tool
        reads them (``world_full`` renders the whole world); what a concurrent stage may still
        change (state, dice results, plan) is taken now, as before, for the ``keys`` the tools
        given this context declare (None: every key). A key no tool declares is read by none,
        so it is made only if read: the game state's known names, the dice lines and the
        guide made for every turn were most of the post tools' own cost (#17, session nine)."""
        state = self._taken("state_summary", keys, self.state_text)
        known = self._taken("known_context", keys, lambda: known_context(self.game))
        dice = self._taken("dice_results", keys,
                           lambda: dice_results_text(self.tool_results, self.lang))
        guide = self._taken("writing_guide", keys,
                            lambda: writing_guide_text(self.plan, self.lang))
        summaries, window = self.summaries, self.window("writing")
        entries = self.world_entries or self.story.entries
        return LazyContext(
            {
                "world_full": lambda: world_full(entries, self.lang),
                "story_summary": summaries.render,
                "recent_turns": lambda: parts.recent_turns(window, self.lang).text,
                "narrative_text": lambda: narrative,
                "writing_guide": guide,
                "state_summary": state,
                "user_persona": lambda: parts.persona(self.prompt_inputs()).text,
                "user_input": lambda: self.user_input,
                "dice_results": dice,
                "known_context": known,
            }
        )

    @staticmethod
    def _taken(
        key: str, keys: Collection[str] | None, make: Callable[[], str]
    ) -> Callable[[], str]:
        """``make``'s text taken now when ``key`` is one of ``keys`` (None: all), else ``make``
        itself (run only if someone reads the key)."""
        if keys is not None and key not in keys:
            return make
        text = make()
        return lambda: text

    def code_state(self) -> dict[str, Any]:
        """What a code tool's ``state`` sees: the game state and the MVU variables (sent to
        the sandbox as JSON, so the event log's records are shared, not copied)."""
        return code_state(self.game.to_dict(shared=True), self.mvu)

    def snapshot_after(self) -> Snapshot:
        """The snapshot of the finished turn (``windows``: each agent's first window turn next
        time; one past this turn when the window is empty, as with n = m = 0)."""
        history = self.story.history
        length = len(history) + 1  # the finished turns and this one
        windows = {}
        for window in WINDOWS:
            first = window_first(length, *self.window_settings(window))
            if first < len(history):
                windows[window] = history[first].number
            else:
                windows[window] = self.number if first == len(history) else self.number + 1
        return Snapshot(
            turn=self.number,
            state=self.game.to_dict(),
            mvu=None if self.mvu is None else dict(self.mvu),
            summaries=self.summaries.to_dict(),
            timed=self.timed.to_dict(),
            rng=rng_state(self.rng),
            windows=windows,
            variables=dict(self.variables),
            mvu_data=dict(self.mvu_data),
            global_variables=dict(self.global_variables),
            group={} if self.scene is None else self.scene.to_dict(),
        )


class _Stage:
    """``TurnState.stage``: a plain context manager (a turn enters nine stages; a generator
    made for each with ``contextlib`` cost twice as much)."""

    __slots__ = ("calls", "name", "started")

    def __init__(self, calls: CallRunner, name: str) -> None:
        self.calls, self.name, self.started = calls, name, 0.0

    def __enter__(self) -> None:
        self.calls.emit(StageStarted(self.name))
        self.started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        elapsed = (time.perf_counter() - self.started) * 1000
        self.calls.emit(StageFinished(self.name, elapsed))


_BUILT: dict[int, tuple[Story, list[PlayedTurn], list[HistoryTurn]]] = {}  # by id(story)


def _history_turn(turn: PlayedTurn) -> HistoryTurn:
    """A past turn as prompts see it: without the MVU placeholder and update blocks."""
    clean = regex_prompt.prompt_text
    return HistoryTurn(turn.number, clean(turn.user_input or ""), clean(turn.narrative))


def prompt_history(story: Story) -> list[HistoryTurn]:
    """``story.history`` as ``HistoryTurn``s, extending the list built for the last turn when
    the turns before are the same objects (the usual next turn), else built afresh."""
    played = story.history
    cached = _BUILT.get(id(story))
    if cached is not None and cached[0] is story:
        _, seen, built = cached
        if len(seen) <= len(played) and all(map(operator.is_, seen, played)):
            new = played[len(seen) :]
            added = [_history_turn(t) for t in new]
            built += added  # this memo's own lists, grown in place (#17: no list as long as
            seen += new  # the story made and dropped every turn); handed out as a copy
            return list(built)
    built = [_history_turn(t) for t in played]
    if len(_BUILT) > 32:
        _BUILT.clear()
    _BUILT[id(story)] = (story, list(played), built)
    return list(built)


def window_of(pipeline: PipelineSettings, window: str) -> tuple[int, int]:
    """The n+m settings of ``window`` (``planning``; anything else is the writers')."""
    if window == "planning":
        return pipeline.recent_turns_for_planning, pipeline.planning_growth_margin
    return pipeline.recent_turns_for_writing, pipeline.writing_growth_margin


def summary_entries(labelled: tuple[SummaryEntry, ...]) -> list[SummaryEntry]:
    """The prompt's ``SummaryEntry``s: the store's labelled lines themselves (#17: one object
    per line for the whole story, not a copy per layer)."""
    return list(labelled)
