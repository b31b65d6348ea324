"""The stages before the story text is final: planning, planning tools, text recall, writing.

Each stage reads and writes a ``TurnState``; the orchestrator decides which run and in what
order. Every prompt goes through ``fit_prompt`` (``pipeline.fitting``) first, which shrinks it
to the model's context when the profile states one and records the cuts for the trace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from narrative_cli.agents.replies import Plan, ToolCall
from narrative_cli.context.recall import recall_turns
from narrative_cli.context.router import build_merged_writing, build_planning, build_writing
from narrative_cli.domain_chat import Message
from narrative_cli.errors import BackendError
from narrative_cli.pipeline.calls import JsonOutcome
from narrative_cli.pipeline.events import ToolResultEvent
from narrative_cli.pipeline.fitting import fit_prompt
from narrative_cli.pipeline.mvu_step import apply_reply as apply_mvu
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.tools.definitions import ToolDef, ToolSet
from narrative_cli.tools.dice_rules import invented_roll_warnings
from narrative_cli.tools.runner import ToolResult, run_planning_calls

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>\s*", re.DOTALL | re.IGNORECASE)
_ECHOED_BLOCKS = (
    "story_summary", "state_summary", "recent_turns", "writing_guide", "tool_results",
    r"worldinfo\d*", "user_input", "user_persona", "user_preset", "character",
    "character_note", "authors_note", "post_history_instructions", "text_recall",
    "narrative_output", "narrative_text", "tool_history",
)  # fmt: skip
_ECHOED = re.compile(r"<(" + "|".join(_ECHOED_BLOCKS) + r")>.*?</\1>\s*", re.DOTALL | re.IGNORECASE)
_SUMMARY_LINE = re.compile(
    r"^\s*[\[【](?:第\s*\d+\s*轮|轮\s*\d+|Turn\s+\d+)[\]】].*$\n?", re.MULTILINE
)
_CONTEXT = re.compile(r"<context>(.*?)</context>", re.DOTALL | re.IGNORECASE)


def clean_narrative(text: str) -> str:
    """The story text of a writer's reply, without what must never reach the story.

    Drops reasoning blocks (``<think>…</think>``, also an unclosed one at the end), prompt
    blocks the model echoed (``<story_summary>…``), and summary lines such as ``[第3轮] …``
    copied from the prompt; a ``<context>…</context>`` wrapper is unwrapped.
    """
    body = _THINK.sub("", text)
    opened = re.search(r"<(think|thinking|reasoning)>", body, re.IGNORECASE)
    if opened:
        body = body[: opened.start()]
    wrapped = _CONTEXT.search(body)
    if wrapped:
        body = wrapped.group(1)
    body = _ECHOED.sub("", body)
    body = _SUMMARY_LINE.sub("", body)
    return re.sub(r"\n{3,}", "\n\n", body).strip()


def planning_stage(state: TurnState) -> None:
    """The planner: a JSON writing guide, tool calls and text-recall requests."""
    with state.stage("planning"):
        prompt = fit_prompt(state, build_planning, "planning")
        outcome = state.calls.complete_json(
            "planning",
            prompt.messages,
            cache_breakpoints=prompt.cache_breakpoints,
            scene=state.scene is not None,
        )
        errors = "; ".join(outcome.errors)
        if outcome.value is None:
            state.warn(
                "planning",
                f"planning: no usable plan even after a corrective retry ({errors}); "
                "the writer goes on without a writing guide",
            )
        elif outcome.errors:
            state.warn("planning", f"planning: parts of the plan were invalid ({errors})")
        warn_cuts(state, "planning", outcome)
        state.plan = None if outcome.value is None else Plan.from_json(outcome.value)


def warn_cuts(state: TurnState, agent: str, outcome: JsonOutcome) -> None:
    """A visible warning for each text or list cut to the reply schema's length limits."""
    for cut in outcome.cuts:
        state.warn(agent, f"{agent}: {cut}")


def _planning_toolset(state: TurnState) -> ToolSet:
    return ToolSet(tools=[t for t in state.active_tools if t.trigger == "planning"])


def _tool_kinds(calls: Sequence[object], toolset: ToolSet) -> tuple[list[ToolDef] | None, bool]:
    """The llm tools the planner's ``calls`` run (None: any may run), and whether they run
    code that is not the dice tool: only an llm tool reads the tool context, only code the
    state; made for every turn whose plan rolls dice, both were most of the tools stage's own
    cost (#17, session nine). A call that is not a ``ToolCall`` may be anything."""
    llm: list[ToolDef] = []
    code = False
    for call in calls:
        if not isinstance(call, ToolCall):
            return None, True
        tool = toolset.get(call.tool) if call.tool else None
        if tool is None:  # no tool: the runner warns, nothing runs
            continue
        if tool.type == "code":
            code = code or not tool.is_dice
        else:
            llm.append(tool)
    return llm, code


def declared(tools: Sequence[ToolDef]) -> set[str]:
    """The context keys ``tools`` read (an llm tool's message and a code tool's parameters
    hold only the keys its definition declares)."""
    return {key for tool in tools for key in tool.context}


def _read_by(tools: Sequence[ToolDef] | None) -> set[str] | None:
    """The keys the planning stage's context is read for: the tools' own (None: any) and
    the dice lines, which the stage reads itself."""
    return None if tools is None else {"dice_results", *declared(tools)}


def runs_code(tools: Sequence[ToolDef]) -> bool:
    """Does one of ``tools`` run code in the sandbox (the dice tool runs none), which is what
    reads the state a code tool sees?"""
    return any(tool.type == "code" and not tool.is_dice for tool in tools)


def llm_tool_call(state: TurnState) -> Callable[[ToolDef, list[Message]], str]:
    """The ``llm_call`` the tools runner uses: one call as agent ``tool:<name>``."""

    def call(tool: ToolDef, messages: list[Message]) -> str:
        return state.calls.complete(f"tool:{tool.name}", messages).text

    return call


def report_tools(state: TurnState, results: list[ToolResult], stage: str) -> None:
    """Tell the listener about tool results; warnings and errors become visible warnings."""
    for result in results:
        hidden = result.public is not None
        data = result.data if result.kind == "dice" and result.ok and not hidden else None
        event = ToolResultEvent(result.tool, result.trigger, result.ok, result.shown, data, hidden)
        state.calls.emit(event)
        if result.kind == "warning" or not result.ok:
            state.warn(stage, result.text)


def tools_stage(state: TurnState) -> None:
    """Run the planner's tool calls (dice, code, llm tools) before the writer."""
    calls = state.plan.tool_calls if state.plan else ()
    if not calls:
        return
    with state.stage("tools"):
        toolset = _planning_toolset(state)
        tools, code = _tool_kinds(calls, toolset)
        results = run_planning_calls(
            calls,
            toolset,
            state.code_state() if code else {},
            state.rng,
            llm_tool_call(state),
            state.lang,
            context=None if tools == [] else state.tool_context(keys=_read_by(tools)),
        )
        state.tool_results.extend(results)
        report_tools(state, results, "tools")


def recall_stage(state: TurnState, notes: list[str]) -> None:
    """Bring the turns the planner named into ``<text_recall>``, within the recall budget."""
    numbers = list(state.plan.text_recall) if state.plan else []
    if not numbers:
        return
    with state.stage("recall"):
        window = {turn.number for turn in state.window("writing")}
        result = recall_turns(
            numbers,
            state.history,
            budget_tokens=state.story.settings.pipeline.text_recall_budget,
            exclude=window,
        )
        state.recall = result.turns
        notes.extend(f"text recall {note}" for note in result.notes)


def writing_stage(state: TurnState, merged: bool) -> None:
    """The writer (or the merged planner-writer): streamed prose, cleaned."""
    agent = "merged_writing" if merged else "writing"
    with state.stage("writing"):
        prompt = fit_prompt(state, build_merged_writing if merged else build_writing, agent)
        reply = state.calls.complete(
            agent, prompt.messages, cache_breakpoints=prompt.cache_breakpoints
        )
        narrative = apply_reply(state, clean_narrative(reply.text))
        if not narrative:
            raise BackendError(f"{agent}: the model returned no story text; nothing was saved")
        if reply.finish_reason == "length":
            state.warn("writing", f"{agent}: the story text was cut off at the max_tokens limit")
        state.narrative = narrative
        flag_invented_rolls(state)


def flag_invented_rolls(state: TurnState) -> None:
    """A visible warning for each roll in the story text that the engine did not make."""
    rolls = [r.data for r in state.tool_results if r.kind == "dice" and r.ok]
    if not (state.dice_rules or rolls):
        return
    dice = [data for data in rolls if isinstance(data, dict)]
    for warning in invented_roll_warnings(state.narrative, dice, state.lang):
        state.warn("writing", warning)


def apply_reply(state: TurnState, text: str) -> str:
    """The writer's reply with its MVU update applied and its block removed (``mvu_step``)."""

    return apply_mvu(state, text)
