"""The readable half of a trace: ``turn-NNNN.md``, rendered from a turn's calls and result.

Each call shows its agent, attempt, model, usage and latency, then every request message and
the reply in fenced blocks (the fence grows when the text itself contains ``~~~~``). After the
calls come the tool results, applied and rejected state events, summary entries, MVU patches,
warnings, prompt-budget cuts and the state after the turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from narrative_cli.pipeline.story import TurnResult


class TracedCall(Protocol):
    """What a turn file shows of one call (``pipeline.trace.CallTrace`` is one); declared here
    so that the trace writer imports this module and not the other way round."""

    @property
    def agent(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def model(self) -> str: ...
    @property
    def messages(self) -> list[dict[str, str]]: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def text(self) -> str: ...
    @property
    def reasoning(self) -> str: ...
    @property
    def finish_reason(self) -> str | None: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def cached_tokens(self) -> int: ...
    @property
    def latency_ms(self) -> float: ...
    @property
    def error(self) -> str | None: ...
    @property
    def speaker(self) -> str | None: ...


def fenced(text: str, info: str = "text") -> str:
    """``text`` in a ``~~~~`` fence longer than any run of tildes inside it."""
    longest = max((len(run) for run in re.findall(r"~{4,}", text)), default=3)
    fence = "~" * (longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def _speaker(call: TracedCall) -> str:
    """`` for NAME`` after a group scene's writing call."""
    return f" for {call.speaker}" if call.speaker else ""


def call_markdown(index: int, call: TracedCall) -> str:
    """One call: a heading with its figures, the request messages, the reply or the error."""
    figures = (
        f"{call.prompt_tokens} prompt / {call.cached_tokens} cached / "
        f"{call.completion_tokens} completion tokens · {call.latency_ms:.0f} ms"
    )
    lines = [
        f"### {index}. {call.agent}{_speaker(call)} (attempt {call.attempt})",
        "",
        f"model `{call.model or 'default'}` · {figures}",
    ]
    if call.params:
        lines += [
            "",
            "params: " + _json({k: v for k, v in call.params.items() if k != "json_schema"}),
        ]
        if "json_schema" in call.params:
            schema_name = (call.params["json_schema"] or {}).get("name", "")
            lines.append(f"json schema: `{schema_name}`")
    for message in call.messages:
        lines += ["", f"#### {message.get('role', '?')}", "", fenced(message.get("content", ""))]
    if call.error:
        lines += ["", "#### error", "", fenced(call.error)]
    else:
        if call.reasoning:
            lines += ["", "#### reasoning", "", fenced(call.reasoning)]
        lines += ["", f"#### reply (finish: {call.finish_reason or '?'})", "", fenced(call.text)]
    return "\n".join(lines)


def _section(title: str, items: Iterable[str]) -> list[str]:
    body = list(items)
    return ["", f"## {title}", "", *(body or ["(none)"])]


def _events(result: TurnResult) -> list[str]:
    lines = ["Applied:", ""]
    lines += [f"- {e.type} {_json(e.event)}{_notes(e.notes)}" for e in result.events_applied]
    if not result.events_applied:
        lines.append("- (none)")
    lines += ["", "Rejected:", ""]
    lines += [f"- {e.type or '?'} {_json(e.event)}: {e.reason}" for e in result.events_rejected]
    if not result.events_rejected:
        lines.append("- (none)")
    return lines


def _notes(notes: Sequence[str]) -> str:
    return f" ({'; '.join(notes)})" if notes else ""


def _patches(result: TurnResult) -> list[str]:
    lines = [f"- applied {_json(p.to_dict())}" for p in result.mvu_applied]
    lines += [f"- rejected {_json(p.to_dict())}" for p in result.mvu_rejected]
    return lines


def _tool_results(result: TurnResult) -> list[str]:
    lines = []
    for tool in result.tool_results:
        mark = "" if tool.ok else " (error)"
        lines.append(f"- {tool.tool} [{tool.trigger}]{mark}: {tool.text}")
    for name, text in result.post_outputs.items():
        lines += [f"- {name} [post_pipeline]:", "", fenced(text)]
    return lines


def _budget(result: TurnResult) -> list[str]:
    return [
        f"- {cut.agent or '?'}: {_json([c.to_dict() for c in cut.cuts])}"
        for cut in result.budget_cuts
    ]


def _usage(result: TurnResult) -> list[str]:
    lines = [
        "| agent | calls | prompt | cached | completion | latency ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for agent, usage in [*result.usage.agents.items(), ("total", result.usage.total())]:
        lines.append(
            f"| {agent} | {usage.calls} | {usage.prompt_tokens} | {usage.cached_tokens} | "
            f"{usage.completion_tokens} | {usage.latency_ms:.0f} |"
        )
    return lines


def _calls(calls: Sequence[TracedCall]) -> list[str]:
    out: list[str] = ["", "## Calls"]
    for index, call in enumerate(calls, start=1):
        out += ["", call_markdown(index, call)]
    return out


def turn_markdown(result: TurnResult, calls: Sequence[TracedCall], session: str = "") -> str:
    """The whole turn-NNNN.md of a finished turn."""
    head = [f"# Turn {result.number} · {result.mode}", ""]
    if session:
        head.append(f"session `{session}`  ")
    head += [
        "User input:",
        "",
        fenced(result.user_input),
        "",
        "Narrative:",
        "",
        fenced(result.narrative),
    ]
    out = head + _calls(calls)
    out += _section("Tool results", _tool_results(result))
    out += ["", "## State events", "", *_events(result)]
    out += _section("Summary entries", (f"- {entry}" for entry in result.summary_entries))
    out += _section("MVU patches", _patches(result))
    out += _section("Warnings", (f"- {w}" for w in result.warnings))
    out += _section("Prompt budget cuts", _budget(result))
    out += _section("Notes", (f"- {note}" for note in result.notes))
    out += _section("Usage", _usage(result))
    out += ["", "## State after the turn", "", fenced(result.state_text)]
    out += ["", fenced(json.dumps(result.snapshot.state, ensure_ascii=False, indent=2), "json")]
    if result.snapshot.mvu:
        out += [
            "",
            "MVU variables:",
            "",
            fenced(json.dumps(result.snapshot.mvu, ensure_ascii=False, indent=2), "json"),
        ]
    return "\n".join(out) + "\n"


def failed_turn_markdown(
    number: int, mode: str, calls: Sequence[TracedCall], error: str, session: str = ""
) -> str:
    """turn-NNNN.md for a turn that failed or was cancelled: its calls, then the error."""
    head = [f"# Turn {number} · {mode} · not committed", ""]
    if session:
        head.append(f"session `{session}`")
    out = head + _calls(calls)
    out += ["", "## Error", "", fenced(error)]
    return "\n".join(out) + "\n"
