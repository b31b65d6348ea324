"""What ``narrative trace show DIR`` reports, computed from ``DIR/calls.jsonl`` (architecture §3).

For every call: the prompt cut into blocks (each ``<tag>…</tag>`` piece of a message is one
block, the plain text between them another) with a token estimate and its share of the
prompt; the prefix it shares with the same agent's previous call (where the first difference
falls, and how many estimated tokens come before it: what a provider's prompt cache can
reuse); and the usage the provider reported.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative_cli.context.blocks import shared_prefix_length
from narrative_cli.errors import BadInput
from narrative_cli.tokens import estimate_tokens

_TAGGED = re.compile(r"<([A-Za-z_][\w.\-]*)>\n(.*?)\n</\1>", re.DOTALL)


@dataclass(frozen=True)
class BlockStat:
    """One block of one request message."""

    message: int
    role: str
    name: str
    start: int  # character offset in the message
    end: int
    tokens: int
    share: float  # of the whole prompt's estimated tokens


@dataclass(frozen=True)
class SharedPrefix:
    """The part of a prompt identical to the same agent's previous prompt."""

    tokens: int
    share: float
    message: int  # where the first difference is (-1: the whole prompt is shared)
    block: str  # the block the first difference falls in ("" when all is shared)
    previous_turn: int


@dataclass
class CallReport:
    """One call of a trace as ``trace show`` prints it."""

    turn: int
    agent: str
    attempt: int
    mode: str
    model: str
    blocks: list[BlockStat]
    usage: dict[str, int]
    latency_ms: float
    error: str | None
    prefix: SharedPrefix | None = None
    estimated_tokens: int = 0
    messages: list[tuple[str, str]] = field(default_factory=list, repr=False)


def read_trace(directory: str | Path) -> list[dict[str, Any]]:
    """The call objects of ``DIR/calls.jsonl``; BadInput names the file and line when unusable."""
    path = Path(directory) / "calls.jsonl"
    if not Path(directory).is_dir():
        raise BadInput(f"{directory}: no such trace directory")
    if not path.is_file():
        raise BadInput(f"{path}: not found (write a trace with `narrative run --trace DIR`)")
    calls = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            call = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{number}: not a JSON object ({exc.msg})") from None
        if not isinstance(call, dict) or not isinstance(call.get("request"), dict):
            raise BadInput(f"{path}:{number}: not a trace call (no request object)")
        calls.append(call)
    return calls


def split_blocks(content: str) -> list[tuple[str, int, int]]:
    """``(name, start, end)`` of each block of a message: tagged pieces and the text between."""
    blocks: list[tuple[str, int, int]] = []
    position = 0
    for match in _TAGGED.finditer(content):
        _plain(content, position, match.start(), blocks)
        blocks.append((match.group(1), match.start(), match.end()))
        position = match.end()
    _plain(content, position, len(content), blocks)
    return blocks


def _plain(content: str, start: int, end: int, blocks: list[tuple[str, int, int]]) -> None:
    piece = content[start:end]
    if piece.strip():
        lead = len(piece) - len(piece.lstrip())
        blocks.append(("text", start + lead, start + len(piece.rstrip())))


def call_report(call: dict[str, Any]) -> CallReport:
    """Blocks, token estimates and usage of one call object."""
    messages = [
        (str(m.get("role", "?")), str(m.get("content", "")))
        for m in call["request"].get("messages") or []
        if isinstance(m, dict)
    ]
    spans = [
        (index, role, name, start, end, estimate_tokens(content[start:end]))
        for index, (role, content) in enumerate(messages)
        for name, start, end in split_blocks(content)
    ]
    total = sum(span[5] for span in spans) or 1
    blocks = [BlockStat(i, role, name, s, e, t, t / total) for i, role, name, s, e, t in spans]
    usage = {key: int(value or 0) for key, value in (call.get("usage") or {}).items()}
    return CallReport(
        turn=int(call.get("turn") or 0),
        agent=str(call.get("agent", "?")),
        attempt=int(call.get("attempt") or 1),
        mode=str(call.get("mode", "")),
        model=str(call["request"].get("model") or ""),
        blocks=blocks,
        usage=usage,
        latency_ms=float(call.get("latency_ms") or 0.0),
        error=call.get("error"),
        estimated_tokens=sum(span[5] for span in spans),
        messages=messages,
    )


def shared_prefix(current: CallReport, previous: CallReport) -> SharedPrefix:
    """How much of ``current``'s prompt repeats ``previous``'s from the start."""
    difference = first_difference(current.messages, previous.messages)
    if difference is None:
        return SharedPrefix(current.estimated_tokens, 1.0, -1, "", previous.turn)
    message, offset = difference
    tokens, where = 0, "end"
    for block in current.blocks:
        if block.message < message or (block.message == message and block.end <= offset):
            tokens += block.tokens
            continue
        if block.message == message:
            content = current.messages[message][1]
            tokens += estimate_tokens(content[block.start : offset]) if block.start < offset else 0
            where = block.name
        break
    share = tokens / current.estimated_tokens if current.estimated_tokens else 0.0
    return SharedPrefix(tokens, min(share, 1.0), message, where, previous.turn)


def first_difference(
    current: list[tuple[str, str]], previous: list[tuple[str, str]]
) -> tuple[int, int] | None:
    """(message, character offset) of the first difference; None when ``current`` repeats
    the start of ``previous`` completely."""
    for index, (role, content) in enumerate(current):
        if index >= len(previous) or previous[index][0] != role:
            return index, 0
        before = previous[index][1]
        if before != content:
            return index, shared_prefix_length(before, content)
    return None


def trace_reports(calls: list[dict[str, Any]], turn: int | None = None) -> list[CallReport]:
    """Reports of every call (or of one turn's), each with its shared prefix when it has one."""
    last_by_agent: dict[str, CallReport] = {}
    reports = []
    for call in calls:
        report = call_report(call)
        previous = last_by_agent.get(report.agent)
        if previous is not None:
            report.prefix = shared_prefix(report, previous)
        last_by_agent[report.agent] = report
        if turn is None or report.turn == turn:
            reports.append(report)
    return reports
