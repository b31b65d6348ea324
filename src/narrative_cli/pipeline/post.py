"""After the story text: merged analysis, state update, post-pipeline tools and mvu_extract.

Serial order (the default): analysis → apply events and summary entries → every post-pipeline
tool in entry order → ``mvu_extract``. Parallel (``concurrent_post``): the analysis, each
*independent* llm tool and ``mvu_extract`` run at the same time in worker threads, on the
context from before the analysis (mvu_extract reads only the MVU variables, which the
analysis never changes); independent code tools run meanwhile in this thread, in order, as
they draw from the session RNG. Then the events are applied and the *dependent* tools (those
declaring ``story_summary``, ``state_summary`` or ``known_context``) run on the fresh state.
Outputs keep that order: independent first (in entry order), then dependent.

Speculation (issue #17): each dependent llm tool is also sent at once, beside the analysis, on
the context from before it (``CallRunner.guess``). When the analysis and mvu_extract are done
and the tool's real prompt is built, that guess is kept if it was sent with exactly this
prompt (nothing the tool reads changed), else it is dropped and the tool called again: the
result is always the call the serial order makes, and only a kept guess saves time. A dropped
guess costs its tokens (counted in the turn's usage); recorded replay sends none. The pipeline
setting ``speculative_post_tools: false`` turns guessing off (a paid API where a dropped call
costs more than the wait it may save): the dependent tools then wait for the analysis.

An analysis failure is never silent: a backend error or a reply that stays unparseable after
the corrective retry becomes a visible warning, the turn goes on (its story text was already
shown) and is stored marked ``analysis_pending``, so ``/retry`` can run the analysis alone.
Events the reply schema rejected (one holding NaN, say) are shown as rejected events with
their reasons, like those the state engine rejects.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from narrative_cli.agents.replies import Analysis
from narrative_cli.agents.validation import Dropped
from narrative_cli.context.router import build_analysis
from narrative_cli.domain_chat import Message
from narrative_cli.errors import BackendError
from narrative_cli.pipeline.calls import Guess, JsonOutcome
from narrative_cli.pipeline.fitting import fit_prompt
from narrative_cli.pipeline.mvu_step import run_mvu_extract
from narrative_cli.pipeline.stages import (
    declared,
    llm_tool_call,
    report_tools,
    runs_code,
    warn_cuts,
)
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.safetext import finite_copy
from narrative_cli.state.engine import EventRecord, apply_events
from narrative_cli.tools.definitions import ToolDef
from narrative_cli.tools.llm_tools import LazyContext, tool_history, tool_messages
from narrative_cli.tools.runner import LlmCall, ToolResult, run_post_pipeline, split_independent

AnalysisOutcome = JsonOutcome | BackendError


def finish_turn(state: TurnState) -> None:
    """Analysis, state update and post-pipeline work, serially or in parallel."""
    tools = [t for t in state.active_tools if t.trigger == "post_pipeline"]
    mvu = state.story.uses_mvu
    if state.concurrent_post and (tools or mvu):
        _parallel(state, tools, mvu)
        return
    apply_analysis(state, run_analysis(state))
    run_post_tools(state, tools)
    if mvu:
        run_mvu_extract(state)


def _tool_inputs(state: TurnState, tools: list[ToolDef]) -> tuple[LazyContext, dict[str, Any]]:
    """What the post tools ``tools`` read: their context (the keys they declare taken now,
    this turn's story in it) and a code tool's state, made only when one of them runs code."""
    context = state.tool_context(narrative=state.prompt_narrative, keys=declared(tools))
    return context, state.code_state() if runs_code(tools) else {}


def _parallel(state: TurnState, tools: list[ToolDef], mvu: bool) -> None:
    """Analysis ‖ independent llm tools ‖ mvu_extract; code tools here, in order (they draw
    from the session RNG, so they never run concurrently); then the dependent tools."""
    independent, dependent = split_independent(tools)
    context, code_state = _tool_inputs(state, tools)
    llm = [tool for tool in independent if tool.type == "llm"]
    # built here, before any worker runs: mvu_extract changes the variables they render
    guessing = state.story.settings.pipeline.speculative_post_tools
    ahead = {t.name: _guess_messages(state, t, context)
             for t in dependent if t.type == "llm" and guessing}
    workers = 1 + len(llm) + int(mvu) + len(ahead)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="post")
    try:
        analysis: Future[AnalysisOutcome] = pool.submit(run_analysis, state)
        variables = pool.submit(run_mvu_extract, state) if mvu else None
        jobs = {
            tool.name: pool.submit(_results, state, [tool], context, code_state) for tool in llm
        }
        guesses = {
            name: pool.submit(state.calls.guess, f"tool:{name}", messages)
            for name, messages in ahead.items()
        }
        with state.stage("post"):
            code = _results(state, [t for t in independent if t.type != "llm"], context, code_state)
            done = iter(code)
            results = [
                jobs[t.name].result()[0] if t.name in jobs else next(done) for t in independent
            ]
            _record(state, results)
        if variables is not None:
            variables.result()
        outcome = analysis.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    apply_analysis(state, outcome)
    run_post_tools(state, dependent, guesses)


def _guess_messages(state: TurnState, tool: ToolDef, context: Mapping[str, str]) -> list[Message]:
    """``tool``'s messages on the context from before the analysis (the prompt the runner
    builds from a context: same history, same blocks)."""
    past = _reachable_outputs(state, [tool])
    history = tool_history(past, tool.output_tag, tool.tag_lookback, state.number, state.lang)
    return tool_messages(tool, context, history, state.lang)


def _guessing_call(state: TurnState, guesses: dict[str, Future[Guess | None]]) -> LlmCall:
    """The tools runner's ``llm_call``: a tool's guess when it was sent with these very
    messages, else a real call."""
    real = llm_tool_call(state)

    def call(tool: ToolDef, messages: list[Message]) -> str:
        guess = _pop(guesses, tool.name)
        if guess is not None:
            reply = state.calls.take(guess, messages)
            if reply is not None:
                return reply.text
        return real(tool, messages)

    return call


def _pop(guesses: dict[str, Future[Guess | None]], name: str) -> Guess | None:
    future = guesses.pop(name, None)
    if future is None or future.cancelled():
        return None
    return future.result()


def run_analysis(state: TurnState) -> AnalysisOutcome:
    """The merged analysis call: events and summary entries (errors returned, not raised)."""
    with state.stage("analysis"):
        prompt = fit_prompt(state, lambda i: build_analysis(i, state.prompt_narrative), "analysis")
        try:
            return state.calls.complete_json(
                "analysis",
                prompt.messages,
                cache_breakpoints=prompt.cache_breakpoints,
                scene=state.scene is not None,
            )
        except BackendError as error:
            return error


def analysis_failure(outcome: AnalysisOutcome) -> str | None:
    """Why the analysis gave nothing usable (None: it did)."""
    if isinstance(outcome, BackendError):
        return f"analysis failed ({outcome.message})"
    if outcome.value is None:
        errors = "; ".join(outcome.errors)
        return f"analysis reply unusable after a corrective retry ({errors})"
    return None


def apply_analysis(state: TurnState, outcome: AnalysisOutcome) -> None:
    """Apply the analysis: events through the state engine, entries into the summary store.

    When it gave nothing usable the turn is still stored, marked ``analysis_pending`` with
    the reason; ``/retry`` then runs only the analysis (``pipeline.analysis_retry``).
    """
    with state.stage("state"):
        failure = analysis_failure(outcome)
        if failure is not None or isinstance(outcome, BackendError):
            state.analysis_pending = failure
            state.warn(
                "analysis",
                f"{failure}; this turn's state events and summary were NOT recorded "
                "(analysis pending: /retry runs the analysis again)",
            )
            return
        assert outcome.value is not None
        reported = {reason for item in outcome.dropped for reason in item.reasons}
        errors = [error for error in outcome.errors if error not in reported]
        if errors:
            state.warn("analysis", "analysis reply partly invalid: " + "; ".join(errors))
        if outcome.truncated:
            state.warn("analysis", "analysis reply was cut off; what was complete was kept")
        warn_cuts(state, "analysis", outcome)
        _apply(state, Analysis.from_json(outcome.value))
        state.events_rejected.extend(_dropped_events(state, outcome.dropped))


def _apply(state: TurnState, analysis: Analysis) -> None:
    entries = list(analysis.summary_entries)
    result = apply_events(state.game, analysis.events, lang=state.lang, turn=state.number)
    state.game = result.state
    state.events_applied.extend(result.applied)
    state.events_rejected.extend(result.rejected)
    if state.scene is not None and state.story.group is not None:  # each member's ledger
        events = [record.event for record in result.applied]
        state.scene = state.scene.with_events(events, state.story.group)
    state.summaries = state.summaries.add(state.number, entries)
    if not state.summaries.lines(turn=state.number):
        state.warn("analysis", "analysis gave no summary entry for this turn")


def _dropped_events(state: TurnState, dropped: list[Dropped]) -> list[EventRecord]:
    """Events that failed the reply schema, as rejected events with their reasons (a NaN in
    a ``set_flag`` value or a relationship delta ends here, written as the text "NaN")."""
    records = []
    for item in dropped:
        if not item.path.startswith("events"):
            continue
        event = finite_copy(item.value)
        kind = str(event.get("type") or "?") if isinstance(event, dict) else "?"
        records.append(
            EventRecord(kind, event, False, state.game.time, item.reason, turn=state.number)
        )
    return records


def run_post_tools(
    state: TurnState,
    tools: list[ToolDef],
    guesses: dict[str, Future[Guess | None]] | None = None,
) -> None:
    """Run post-pipeline tools in order; outputs become part of the visible message. With
    ``guesses`` (parallel mode), a tool's speculative call is used when it still fits."""
    guesses = dict(guesses or {})
    try:
        if not tools:
            return
        with state.stage("post"):
            context, code_state = _tool_inputs(state, tools)
            call = _guessing_call(state, guesses) if guesses else None
            _record(state, _results(state, tools, context, code_state, call))
    finally:
        for future in guesses.values():  # a tool that never got to its call: guess spent
            if not future.cancelled() and future.exception() is None:
                spent = future.result()
                if spent is not None:
                    state.calls.drop(spent)


def _results(
    state: TurnState,
    tools: list[ToolDef],
    context: Mapping[str, str],
    code_state: dict[str, Any],
    llm_call: LlmCall | None = None,
) -> list[ToolResult]:
    """One result per tool (code tools as sandboxed code, llm tools as calls)."""
    if not tools:
        return []
    past = _reachable_outputs(state, tools)
    return run_post_pipeline(
        tools,
        context,
        code_state,
        state.rng,
        llm_call or llm_tool_call(state),
        state.lang,
        past_outputs=past,
        current_turn=state.number,
    )


def _reachable_outputs(state: TurnState, tools: list[ToolDef]) -> dict[int, str]:
    """The message text of the past turns some tool's ``tag_lookback`` reaches (newest first
    from the end: reading every past turn made each turn cost more as the story grew)."""
    reach = max((t.tag_lookback for t in tools if t.type == "llm" and t.output_tag), default=0)
    past: dict[int, str] = {}
    for turn in reversed(state.story.history):
        if turn.number < state.number - reach:
            break
        past[turn.number] = _message_text(turn.narrative, turn.post_outputs)
    return past


def _record(state: TurnState, results: list[ToolResult]) -> None:
    state.post_results.extend(results)
    report_tools(state, results, "post")


def _message_text(narrative: str, outputs: Mapping[str, str]) -> str:
    return "\n\n".join([narrative, *outputs.values()])
