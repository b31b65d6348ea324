"""One turn of the story, stage by stage: the only module that knows the stage order.

::

    result = run_turn(story, "I climb the stairs.", backends, listener=print, trace=writer)

Stages, in order:

1. **lore**: world-info activation over the planning window, the state summary and the user's
   input (a key typed this turn fires this turn); tools and ``[mvu_update]`` rules whose keys
   match become active (``lore.stage.run_lore``: the whole stage lives in ``lore/``).
2. **mode**: ``merged`` when no planning tool is active and text recall is off, ``serial``
   otherwise (with the bundled 135M model as writer, ``auto`` is ``merged`` even with planning
   tools: the story streams first; the turn's notes say so); ``parallel``
   (``pipeline.parallel`` or ``--mode parallel``) is the serial path with the analysis
   overlapping the independent post-pipeline tools (with the flag on, merged turns overlap
   them too). ``--mode merged|serial|parallel`` forces a path.
3. **planning** (serial): JSON writing guide, tool calls, text-recall turns.
4. **tools** (serial): the planner's tool calls: dice, sandboxed code, llm tools.
5. **recall**: the named turns' original text for ``<text_recall>`` (serial), and in every
   mode the passages the story's text index finds for the planner's ``recall_terms`` and the
   input's rare words (``pipeline.search_recall``, issue #17).
6. **writing**: the writer (or the merged writer) streams the story to the listener.
7. **analysis**: events and a summary entry, applied through the state engine (rejected events
   kept with their reasons); then post-pipeline tools and ``mvu_extract`` (when the lore has
   ``[InitVar]`` or ``[mvu_update]`` entries and the writer's reply carried no MVU update, which
   ``writing`` already applied: ``pipeline.mvu_step``), see ``pipeline.post``.
8. **compaction** (issue #17): when the next turn is a cut of the writers' window and the
   summary block is over ``pipeline.summary_budget``, old entries are folded into chapters
   (``pipeline.compaction``).

Calls: merged 2, serial 3, plus one per llm tool (planning or post) and one for mvu_extract
(when it runs), plus one corrective retry per JSON reply that does not parse.

``run_turn`` never changes ``story``: it returns a ``TurnResult`` holding the new snapshot,
and the caller commits it (store) and then calls ``story.advance(result)``. Failures:

- a backend error in the writer raises that ``BackendError`` (nothing to commit);
  ``StreamInterrupted`` is raised as is, with the partial text, so the caller can offer /retry;
- Ctrl-C anywhere raises ``TurnCancelled``; once story text has streamed, its ``partial``
  holds the turn with the text shown so far and its analysis pending (``/keep`` stores it);
- everything else (a plan or analysis that will not parse, a tool error, an analysis backend
  error) is a visible ``TurnWarning`` and the turn goes on.

In each failure case the trace still gets every call made and a ``turn-NNNN.md`` saying the
turn was not committed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from narrative_cli.agents.table import streaming_agents
from narrative_cli.context.expand import apply_macros
from narrative_cli.errors import BackendError, BadInput, TurnCancelled
from narrative_cli.lore.notes import note_words
from narrative_cli.lore.results import ScanContext
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.routing import TOOL
from narrative_cli.lore.stage import LoreScan, run_lore
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.calls import CallRunner
from narrative_cli.pipeline.compaction import compact_at_cut
from narrative_cli.pipeline.events import Listener, PipelineEvent, TextDelta, ignore
from narrative_cli.pipeline.lore_budget import budget_warnings, lore_settings
from narrative_cli.pipeline.mvu_step import apply_input
from narrative_cli.pipeline.post import finish_turn
from narrative_cli.pipeline.records import LoreHit
from narrative_cli.pipeline.samplers import preset_samplers
from narrative_cli.pipeline.scene import (
    choose_scene_speakers,
    kept_speakers,
    scene_inputs,
    scene_writing,
)
from narrative_cli.pipeline.search_recall import search_stage
from narrative_cli.pipeline.stages import (
    apply_reply,
    clean_narrative,
    planning_stage,
    recall_stage,
    tools_stage,
    writing_stage,
)
from narrative_cli.pipeline.story import Story, TurnRecord, TurnResult, ensure_mvu
from narrative_cli.pipeline.templating import apply_templates
from narrative_cli.pipeline.trace import TraceWriter
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.tools.definitions import builtin_dice_tool, tool_list_text
from narrative_cli.tools.dice_rules import describes_checks

MODES = ("auto", "merged", "serial", "parallel")
WRITERS = streaming_agents()
UNFINISHED = "unfinished reply (Ctrl-C)"
SKIPPED_PLANNING = (
    "planning skipped for the bundled 135M model (auto mode): the story streams first and"
    " the planner's tools did not run; --mode serial runs them"
)  # the analysis_pending reason of a kept partial turn


@dataclass(frozen=True)
class Mode:
    """The path a turn takes: ``merged`` or ``serial`` writing, and whether post work overlaps."""

    path: str  # merged | serial
    concurrent_post: bool = False

    @property
    def label(self) -> str:
        """The mode name of traces and records: merged, serial or parallel."""
        return "parallel" if self.path == "serial" and self.concurrent_post else self.path


def choose_mode(setting: str, parallel: bool, planning_tools: bool, text_recall: bool) -> Mode:
    """The design's mode rule, with ``--mode`` able to force a path."""
    if setting not in MODES:
        raise BadInput(f"--mode must be one of {', '.join(MODES)}; got {setting!r}")
    if setting == "merged":
        return Mode("merged", parallel)
    if setting == "serial":
        return Mode("serial", False)
    if setting == "parallel":
        return Mode("serial", True)
    path = "serial" if planning_tools or text_recall else "merged"
    return Mode(path, parallel)


def run_turn(
    story: Story,
    user_input: str,
    backends: BackendSet,
    listener: Listener | None = None,
    trace: TraceWriter | None = None,
    *,
    rng_stream: int = 0,
    next_speaker: str | None = None,
    keep: TurnRecord | None = None,
) -> TurnResult:
    """Play one turn of ``story`` for ``user_input`` and return its result (not committed).

    ``rng_stream`` 0 continues the snapshot's random numbers; n > 0 is try n of the turn (a
    regenerate or a retry), with fresh dice from its own stream (``rng.stream_rng``).
    ``next_speaker``: in a group scene, the member who answers (``/next NAME``); ``keep``:
    a group turn played before, of which only the last speaker is written again (``/regen``:
    its plan, planning tool results and earlier replies are kept)."""
    if not user_input.strip():
        raise BadInput("the turn has no input: type what your character says or does")
    snapshot, problem = ensure_mvu(story, story.snapshot)
    shown = _ShownText(listener or ignore)
    calls = CallRunner(
        backends,
        turn=snapshot.turn + 1,
        mode="?",
        lang=story.lang,
        listener=shown,
        trace=trace,
        samplers=preset_samplers(story.preset),
    )
    state = TurnState.start(story, user_input, snapshot, calls, rng_stream)
    state.next_speaker = next_speaker
    state.keep = keep
    if problem:
        state.warn("lore", problem)
    apply_input(state)
    notes: list[str] = []
    try:
        _run_stages(state, notes)
    except (KeyboardInterrupt, TurnCancelled) as stop:
        _trace_failure(trace, state, str(stop) or "cancelled (Ctrl-C)")
        cancelled = (
            stop
            if isinstance(stop, TurnCancelled)
            else TurnCancelled(f"turn {state.number} cancelled; nothing was saved")
        )
        cancelled.partial = _unfinished(state, shown.text(), notes)
        raise cancelled from None
    except BackendError as error:
        _trace_failure(trace, state, str(error))
        raise
    result = _result(state, notes)
    if trace is not None:
        trace.finish_turn(result)
    return result


def _run_stages(state: TurnState, notes: list[str]) -> None:
    _lore_stage(state)
    if state.scene is not None:
        _run_scene(state, notes)
        return
    pipeline = state.story.settings.pipeline
    planning_tools = any(t.trigger == "planning" for t in state.active_tools)
    if pipeline.mode == "auto" and planning_tools and small_local_writer(state.calls.backends):
        planning_tools = False  # the bundled model: the story first, no planning call (#18)
        notes.append(SKIPPED_PLANNING)
    mode = choose_mode(pipeline.mode, pipeline.parallel, planning_tools, pipeline.text_recall)
    state.mode, state.concurrent_post = mode.label, mode.concurrent_post
    state.calls.mode = mode.label
    tool_text = tool_list_text(state.active_tools, state.lang) if mode.path == "serial" else ""
    state.base_inputs = apply_templates(state, apply_macros(state.make_base_inputs(tool_text)))
    if mode.path == "serial":
        planning_stage(state)
        tools_stage(state)
        recall_stage(state, notes)
    search_stage(state, notes)
    writing_stage(state, merged=mode.path == "merged")
    finish_turn(state)
    compact_at_cut(state)


def _run_scene(state: TurnState, notes: list[str]) -> None:
    """A group scene's turn: always planned (the planner may choose the speakers), then a
    writer per speaker and one analysis (``pipeline.scene``)."""
    pipeline = state.story.settings.pipeline
    mode = choose_mode(pipeline.mode, pipeline.parallel, True, pipeline.text_recall)
    if mode.path == "merged":
        state.warn("planning", "--mode merged: a group scene always plans; played serial")
        mode = Mode("serial", mode.concurrent_post)
    state.mode, state.concurrent_post = mode.label, mode.concurrent_post
    state.calls.mode = mode.label
    tool_text = tool_list_text(state.active_tools, state.lang)
    base = apply_templates(state, apply_macros(state.make_base_inputs(tool_text)))
    state.base_inputs = scene_inputs(state, base)
    if state.keep is not None:
        speakers = kept_speakers(state, state.keep)
    else:
        planning_stage(state)
        speakers = choose_scene_speakers(state)
        tools_stage(state)
    recall_stage(state, notes)
    search_stage(state, notes)
    scene_writing(state, speakers)
    finish_turn(state)
    compact_at_cut(state)


def small_local_writer(backends: BackendSet) -> bool:
    """True when the writer is the bundled 135M model (a ``LocalBackend`` without a
    ``model_path`` says ``small_model``): on two cores a planning call before the story costs
    more time than the first story text may take, so ``auto`` writes merged and skips the
    planning tools. A replayed recording is not the model, whatever the settings say."""
    backend, _ = backends.get("merged_writing")
    return bool(getattr(backend, "small_model", False))


def _lore_stage(state: TurnState) -> None:
    story = state.story
    with state.stage("lore"):
        window = state.window("planning")
        settings = lore_settings(story, state.calls.backends)  # the budget: the writer's room
        scan = LoreScan(
            history=[text for turn in window for text in (turn.user, turn.narrative) if text],
            user_input=state.user_input,
            extra_text=state.state_text(),
            turn=state.number,
            clock=_message_clock(story, state.number),
            settings=settings,
            context=ScanContext(
                user_name=story.persona.name or "User",
                char_name=story.card.name,
                character_tags=tuple(story.card.tags),
                sources=_scan_sources(story),
            ),
        )
        lore = run_lore(story.entries, scan, rng=state.rng, timed=state.timed)
        state.lore, state.timed, state.routed = lore.result, lore.result.timed, lore.routed
        for problem in lore.result.timeouts:  # a user regex that ran out of time: skipped now on
            state.warn("lore", note_words(problem, story.lang))
        for warning in budget_warnings(lore.result, settings):
            state.warn("lore", warning)
        state.active_tools = [t for t in story.tools.tools if lore.switched_on(t.keys, t.constant)]
        state.dice_rules = card_describes_checks(story)
        has_dice = any(t.is_dice and t.trigger == "planning" for t in state.active_tools)
        if state.dice_rules and not has_dice:
            state.active_tools.append(builtin_dice_tool())
        state.mvu_rules = lore.mvu_rules


def _message_clock(story: Story, number: int) -> int:
    """SillyTavern's timed-effect clock: the chat's messages when turn ``number`` is scanned
    (the greeting, two per earlier turn, this input); one fewer without a greeting."""
    has_greeting = any(turn.number == 0 for turn in story.history)
    return 2 * number - (0 if has_greeting else 1)


def _scan_sources(story: Story) -> dict[str, str]:
    """The texts an entry may opt into scanning (SillyTavern's match* flags)."""
    card, depth = story.card, story.card.depth_prompt
    return {
        "persona_description": story.persona.description,
        "character_description": card.description,
        "character_personality": card.personality,
        "character_depth_prompt": depth.prompt if depth else "",
        "scenario": card.scenario,
        "creator_notes": card.creator_notes,
    }


def _lore_hits(state: TurnState) -> list[LoreHit]:
    if state.lore is None:
        return []
    return [LoreHit(a.entry.uid, a.entry.comment, a.route, a.reason) for a in state.lore.activated]


def _lore_rejected(state: TurnState) -> list[LoreHit]:
    """Entries that would have fired but did not (no route; the reason says why)."""
    if state.lore is None:
        return []
    return [LoreHit(r.entry.uid, r.entry.comment, "", r.reason) for r in state.lore.rejected]


def _result(state: TurnState, notes: list[str]) -> TurnResult:
    post_outputs = {r.tool: r.text for r in state.post_results if r.ok and r.text.strip()}
    return TurnResult(
        number=state.number,
        user_input=state.user_input,
        narrative=state.narrative,
        mode=state.mode,
        snapshot=state.snapshot_after(),
        rng_stream=state.rng_stream,
        plan=state.plan,
        tool_results=[*state.tool_results, *state.post_results],
        post_outputs=post_outputs,
        events_applied=list(state.events_applied),
        events_rejected=list(state.events_rejected),
        summary_entries=state.summaries.lines(turn=state.number),
        mvu_applied=list(state.mvu_applied),
        mvu_rejected=list(state.mvu_rejected),
        mvu_block=state.mvu_block,
        lore=_lore_hits(state),
        lore_rejected=_lore_rejected(state),
        warnings=list(state.warnings),
        budget_cuts=list(state.budget_cuts),
        notes=notes,
        state_text=state.state_text(),
        usage=state.calls.account,
        analysis_pending=state.analysis_pending,
        speakers=list(state.speakers),
    )


class _ShownText:
    """The listener of a turn, remembering the story text the writers streamed to it."""

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.pieces: list[str] = []

    def __call__(self, event: PipelineEvent) -> None:
        if isinstance(event, TextDelta) and event.agent in WRITERS:
            self.pieces.append(event.text)
        self.listener(event)

    def text(self) -> str:
        return "".join(self.pieces)


def _unfinished(state: TurnState, streamed: str, notes: list[str]) -> TurnResult | None:
    """The turn as far as the player saw it when Ctrl-C came: the text shown so far (the
    whole reply when the writer had finished), its analysis pending; None before any text.

    The player may keep it (stored like a turn whose analysis failed: ``/retry`` analyses
    it, ``/continue`` extends it), so nothing already read is lost."""
    if not state.narrative:
        text = clean_narrative(streamed)
        if not text.strip():
            return None
        state.narrative = apply_reply(state, text)
    state.analysis_pending = UNFINISHED
    return _result(state, notes)


def _trace_failure(trace: TraceWriter | None, state: TurnState, error: str) -> None:
    if trace is not None:
        trace.fail_turn(state.number, state.mode, error)


def card_describes_checks(story: Story) -> bool:
    """Does the card or its lore (tool definitions aside) describe dice checks?"""
    card = story.card
    texts = [card.description, card.personality, card.scenario, card.system_prompt]
    routes = routes_for(story.entries)
    tools = set(map(id, routes.enabled(TOOL)))
    texts += [e.content for e in story.entries if not e.disabled and id(e) not in tools]
    return _describes_checks(tuple(texts))


@functools.lru_cache(maxsize=16)
def _describes_checks(texts: tuple[str, ...]) -> bool:
    """``describes_checks`` once per card and lore: the same texts are asked about every turn,
    and searching a large book's every entry for check words took 2% of a replayed turn."""
    return describes_checks(texts)
