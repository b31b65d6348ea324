"""Run tools: the planner's tool calls before the writer, and the post-pipeline tools after it.

``roll_dice`` rolls with the session RNG, custom code tools run in the QuickJS sandbox, and
``llm`` tools go through ``llm_call(tool, messages) -> str``, which the pipeline injects (HTTP
stays out of ``tools/``). Nothing a tool does stops the turn: a failure becomes a result whose
text is ``工具错误：…`` and an unknown tool name becomes a visible warning result.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from narrative_cli.agents.replies import ToolCall
from narrative_cli.domain_chat import Message
from narrative_cli.errors import NarrativeError
from narrative_cli.tools.definitions import ToolDef, ToolSet
from narrative_cli.tools.dice_checks import check, ignored_params
from narrative_cli.tools.dice_notation import DiceError
from narrative_cli.tools.llm_tools import (
    ANALYSIS_DEPENDENT_KEYS,
    Overlay,
    tool_history,
    tool_messages,
)
from narrative_cli.tools.sandbox import DEFAULT_MEMORY_LIMIT, DEFAULT_TIME_LIMIT, run_code

LlmCall = Callable[[ToolDef, list[Message]], str]
MAX_PLANNING_CALLS = 10

_TEXT = {
    "zh": {
        "error": "工具错误：{tool}：{message}",
        "unknown": "工具警告：未知工具「{tool}」，已跳过（可用工具：{names}）",
        "not_planning": "工具警告：「{tool}」是 post_pipeline 工具，规划阶段不能调用，已跳过",
        "too_many": "工具警告：每轮最多执行 {limit} 个工具调用，其余 {n} 个已跳过",
        "no_name": "工具警告：第 {n} 个工具调用没有工具名，已跳过",
        "bad_params": "params 必须是对象",
        "empty_output": "模型没有返回内容",
        "none": "无",
        "code": "{tool}：{value}",
        "branch": "走向：",
        "rule": "- 工具执行结果已由系统确定，必须严格按照结果中的走向来写作，"
        "不得自行改变工具执行结果",
        "hidden": "进行了一次暗骰检定",
        "ignored": "工具警告：roll_dice 的检定规则 {system} 不使用参数 {names}，已忽略",
    },
    "en": {
        "error": "Tool error: {tool}: {message}",
        "unknown": 'Tool warning: unknown tool "{tool}" skipped (available: {names})',
        "not_planning": 'Tool warning: "{tool}" is a post_pipeline tool; planning cannot call it',
        "too_many": "Tool warning: at most {limit} tool calls run per turn; {n} more skipped",
        "no_name": "Tool warning: tool call {n} names no tool; skipped",
        "bad_params": "params must be an object",
        "empty_output": "the model returned nothing",
        "none": "none",
        "code": "{tool}: {value}",
        "branch": "Outcome: ",
        "rule": "- Tool results were decided by the system: write exactly the outcome they give, "
        "never change them",
        "hidden": "A hidden check was made",
        "ignored": "Tool warning: roll_dice system {system} does not use {names}; ignored",
    },
}


def _words(lang: str) -> dict[str, str]:
    return _TEXT["zh" if lang == "zh" else "en"]


@dataclass
class ToolResult:
    """One tool's outcome: ``text`` is its line for the writer or its visible output.

    ``public`` is what the player is shown instead of ``text`` (a hidden roll's notice);
    None means the player sees ``text``.
    """

    tool: str
    kind: str  # dice | code | llm | warning
    ok: bool
    text: str
    data: Any = None
    trigger: str = "planning"
    public: str | None = None

    @property
    def shown(self) -> str:
        """The text the player sees."""
        return self.text if self.public is None else self.public

    def to_dict(self) -> dict[str, Any]:
        data = {
            "tool": self.tool,
            "kind": self.kind,
            "ok": self.ok,
            "text": self.text,
            "data": self.data,
            "trigger": self.trigger,
        }
        if self.public is not None:
            data["public"] = self.public
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        return cls(
            tool=str(data.get("tool", "")),
            kind=str(data.get("kind", "")),
            ok=bool(data.get("ok")),
            text=str(data.get("text", "")),
            data=data.get("data"),
            trigger=str(data.get("trigger", "planning")),
            public=None if data.get("public") is None else str(data.get("public")),
        )


@dataclass(frozen=True)
class _Limits:
    time: float
    memory: int


def run_planning_calls(
    calls: Sequence[ToolCall | object],
    toolset: ToolSet,
    state_snapshot: Mapping[str, Any],
    rng: random.Random,
    llm_call: LlmCall,
    lang: str = "zh",
    *,
    context: Mapping[str, str] | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
) -> list[ToolResult]:
    """Run the planner's ``tool_calls`` in order; one result per call, warnings included.

    The pipeline passes the plan's ``ToolCall``s; a call's JSON object (as a test or an
    embedder has it) is read with ``ToolCall.from_json`` first.

    ``context`` holds the llm-tool context keys; ``dice_results`` is filled with this turn's
    dice lines so far unless the caller gave it.
    """
    limits = _Limits(time_limit, memory_limit)
    words = _words(lang)
    results: list[ToolResult] = []
    for index, call in enumerate(calls[:MAX_PLANNING_CALLS], start=1):
        typed = call if isinstance(call, ToolCall) else ToolCall.from_json(call)
        name, params = typed.tool, typed.params if typed.params_ok else None
        tool = toolset.get(name) if name else None
        if tool is None or tool.trigger != "planning":
            results.append(_warning(name, index, tool, toolset, words))
            continue
        if tool.is_dice and isinstance(params, Mapping) and ignored_params(params):
            system = str(params.get("system") or "none")
            text = words["ignored"].format(system=system, names=", ".join(ignored_params(params)))
            results.append(ToolResult(name, "warning", False, text))
        tool_context: Mapping[str, str] = context or {}
        if not tool_context.get("dice_results", "").strip():
            tool_context = Overlay(tool_context, {"dice_results": dice_results_text(results, lang)})
        runner = _ToolRun(tool, state_snapshot, rng, llm_call, lang, limits)
        results.append(runner.planning(params, tool_context))
    skipped = len(calls) - MAX_PLANNING_CALLS
    if skipped > 0:
        text = words["too_many"].format(limit=MAX_PLANNING_CALLS, n=skipped)
        results.append(ToolResult("", "warning", False, text))
    return results


def run_post_pipeline(
    tools: Iterable[ToolDef],
    context: Mapping[str, str],
    state_snapshot: Mapping[str, Any],
    rng: random.Random,
    llm_call: LlmCall,
    lang: str = "zh",
    *,
    past_outputs: Mapping[int, str] | None = None,
    current_turn: int = 0,
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
) -> list[ToolResult]:
    """Run post-pipeline tools in order: code tools as code, llm tools through ``llm_call``.

    A code tool gets its declared context keys as ``params``. An llm tool with ``output_tag``
    and ``tag_lookback`` also sees its own earlier output from ``past_outputs`` (the visible
    message text of each turn, keyed by turn number).
    """
    limits = _Limits(time_limit, memory_limit)
    results = []
    for tool in tools:
        history = ""
        if past_outputs is not None and tool.type == "llm":
            history = tool_history(
                past_outputs, tool.output_tag, tool.tag_lookback, current_turn, lang
            )
        runner = _ToolRun(tool, state_snapshot, rng, llm_call, lang, limits)
        results.append(runner.post_pipeline(context, history))
    return results


def split_independent(tools: Iterable[ToolDef]) -> tuple[list[ToolDef], list[ToolDef]]:
    """(independent, dependent): dependent tools declare a key the merged analysis changes."""
    independent: list[ToolDef] = []
    dependent: list[ToolDef] = []
    for tool in tools:
        waits = any(key in ANALYSIS_DEPENDENT_KEYS for key in tool.context)
        (dependent if waits else independent).append(tool)
    return independent, dependent


def format_tool_results(
    results: Iterable[ToolResult], lang: str = "zh", *, include_warnings: bool = False
) -> str:
    """The lines inside ``<tool_results>``: one per result (warnings only when asked)."""
    del lang  # the lines are already in the turn's language
    lines = [
        r.text for r in results if r.text.strip() and (include_warnings or r.kind != "warning")
    ]
    return "\n".join(lines)


def tool_results_block(results: Iterable[ToolResult], lang: str = "zh") -> str:
    """``<tool_results>\\n…\\n</tool_results>``, or "" when no tool produced a line."""
    content = format_tool_results(results, lang)
    return f"<tool_results>\n{content}\n</tool_results>" if content else ""


def tool_results_rule(lang: str = "zh") -> str:
    """The writer's system-prompt rule added when the ``<tool_results>`` block is present."""
    return _words(lang)["rule"]


def dice_results_text(results: Iterable[ToolResult], lang: str = "zh") -> str:
    """The dice lines of these results, for the ``dice_results`` context key.

    A hidden roll gives only its notice: llm tools' outputs are shown to the player."""
    del lang
    return "\n".join(r.shown for r in results if r.kind == "dice" and r.ok)


def code_state(game: Mapping[str, Any] | None, mvu: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``state`` a code tool reads: StateManager fields and MVU variables at the top level.

    MVU variables win a name clash; ``state.game`` and ``state.stat_data`` hold each source whole.
    """
    game_data = dict(game or {})
    mvu_data = dict(mvu or {})
    return {**game_data, **mvu_data, "game": game_data, "stat_data": mvu_data}


def _warning(
    name: str, index: int, tool: ToolDef | None, toolset: ToolSet, words: dict[str, str]
) -> ToolResult:
    if not name:
        text = words["no_name"].format(n=index)
    elif tool is not None:
        text = words["not_planning"].format(tool=name)
    else:
        names = ", ".join(t.name for t in toolset.planning()) or words["none"]
        text = words["unknown"].format(tool=name, names=names)
    return ToolResult(name, "warning", False, text)


class _ToolRun:
    """One tool run with everything it may need; each method returns one ToolResult."""

    def __init__(
        self,
        tool: ToolDef,
        state: Mapping[str, Any],
        rng: random.Random,
        llm_call: LlmCall,
        lang: str,
        limits: _Limits,
    ) -> None:
        self.tool, self.state, self.rng, self.llm_call = tool, state, rng, llm_call
        self.lang, self.limits, self.words = lang, limits, _words(lang)

    def planning(self, params: Mapping[str, Any] | None, context: Mapping[str, str]) -> ToolResult:
        if params is None:
            return self.error(self.words["bad_params"])
        params = dict(params)
        if self.tool.is_dice:
            return self.branch(self.dice(params), params)
        if self.tool.type == "code":
            return self.branch(self.code(params, as_line=True), params)
        return self.llm(context, "")

    def post_pipeline(self, context: Mapping[str, str], history: str) -> ToolResult:
        if self.tool.type == "code":
            params = {key: context.get(key, "") for key in self.tool.context}
            result = self.dice(params) if self.tool.is_dice else self.code(params, as_line=False)
        else:
            result = self.llm(context, history)
        result.trigger = "post_pipeline"
        return result

    def dice(self, params: Mapping[str, Any]) -> ToolResult:
        try:
            rolled = check(params, self.rng)
        except DiceError as error:
            return self.error(error.localized(self.lang))
        data = rolled.to_dict()
        if self.tool.reveal_hidden and rolled.hidden:
            data["reveal"] = True
        public = self.words["hidden"] if rolled.hidden else None
        return ToolResult(self.tool.name, "dice", True, rolled.line(self.lang), data, public=public)

    def code(self, params: dict[str, Any], *, as_line: bool) -> ToolResult:
        seed = self.rng.getrandbits(32)
        state = dict(self.state)
        outcome = run_code(
            self.tool.code, params, state, self.limits.time, self.limits.memory, seed
        )
        if not outcome.ok:
            return self.error(outcome.message(self.lang))
        value = _show_value(outcome.value)
        if as_line:
            value = self.words["code"].format(tool=self.tool.name, value=value)
        elif outcome.value is None:
            value = ""
        return ToolResult(self.tool.name, "code", True, value, outcome.value)

    def llm(self, context: Mapping[str, str], history: str) -> ToolResult:
        messages = tool_messages(self.tool, context, history, self.lang)
        try:
            output = self.llm_call(self.tool, messages).strip()
        except NarrativeError as error:
            return self.error(error.message)
        if not output:
            return self.error(self.words["empty_output"])
        return ToolResult(self.tool.name, "llm", True, output, output)

    def branch(self, result: ToolResult, params: Mapping[str, Any]) -> ToolResult:
        success = _success_flag(result)
        if success is None:
            return result
        key = "success_branch" if success else "failure_branch"
        given = params.get(key)
        text = given if isinstance(given, str) and given.strip() else getattr(self.tool, key)
        if text.strip():
            glue = "\n" if "\n" in result.text else ("；" if self.lang == "zh" else "; ")
            result.text = f"{result.text}{glue}{self.words['branch']}{text.strip()}"
        return result

    def error(self, message: str) -> ToolResult:
        text = self.words["error"].format(tool=self.tool.name, message=message)
        kind = "dice" if self.tool.is_dice else self.tool.type
        return ToolResult(self.tool.name, kind, False, text, {"error": message})


def _success_flag(result: ToolResult) -> bool | None:
    if not result.ok or not isinstance(result.data, dict):
        return None
    flag = result.data.get("success")
    return flag if isinstance(flag, bool) else None


def _show_value(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)
