"""Prompt drift: where a request differs from the one a trace recorded, told in a few lines.

``first_difference(recorded, current)`` compares two request objects as ``calls.jsonl`` holds
them (``{"model", "messages", ...params}``): first the messages, one by one (role, then
text), then the sampling parameters (``model`` and ``max_tokens`` are left out: the same
prompt may be recorded from another model, whose profile gives another reply limit). The
first difference names the message, the tagged block it sits in
(``<worldinfo2>``, ``<recent_turns>``, …, the innermost one) and the line on both sides.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from narrative_cli.context.blocks import shared_prefix_length

_OPEN = re.compile(r"^<([A-Za-z_][\w.:-]*)>$")
LINE_WIDTH = 160
IGNORED_PARAMS = frozenset({"model", "messages", "max_tokens"})


@dataclass(frozen=True)
class Drift:
    """The first place two requests differ, and the line on each side."""

    where: str
    recorded: str
    current: str

    def lines(self) -> list[str]:
        """``recorded:`` and ``now:`` lines, aligned."""
        return [f"  recorded: {self.recorded}", f"  now:      {self.current}"]


def first_difference(recorded: dict[str, Any], current: dict[str, Any]) -> Drift | None:
    """The first difference between two requests, or None when they are the same."""
    old_messages = list(recorded.get("messages") or [])
    new_messages = list(current.get("messages") or [])
    for index, (old, new) in enumerate(zip(old_messages, new_messages, strict=False)):
        drift = _message_difference(index, old, new)
        if drift is not None:
            return drift
    if len(old_messages) != len(new_messages):
        return _count_difference(old_messages, new_messages)
    return _param_difference(recorded, current)


def _message_difference(index: int, old: Any, new: Any) -> Drift | None:
    old_role, new_role = _field(old, "role"), _field(new, "role")
    if old_role != new_role:
        return Drift(f"message {index + 1}: the role", old_role, new_role)
    old_text, new_text = _field(old, "content"), _field(new, "content")
    if old_text == new_text:
        return None
    offset = shared_prefix_length(old_text, new_text)
    block = block_at(old_text, offset) or block_at(new_text, offset)
    where = f"message {index + 1} ({old_role})"
    where += f", block <{block}>" if block else ", outside any tagged block"
    return Drift(where, line_at(old_text, offset), line_at(new_text, offset))


def _count_difference(old: list[Any], new: list[Any]) -> Drift:
    index = min(len(old), len(new))
    if len(old) > len(new):
        extra = old[index]
        where = f"message {index + 1} ({_field(extra, 'role')}): recorded, missing now"
        return Drift(where, _shorten(_field(extra, "content"), 0), "(no message)")
    extra = new[index]
    where = f"message {index + 1} ({_field(extra, 'role')}): new, not recorded"
    return Drift(where, "(no message)", _shorten(_field(extra, "content"), 0))


def _param_difference(recorded: dict[str, Any], current: dict[str, Any]) -> Drift | None:
    for name in sorted((set(recorded) | set(current)) - IGNORED_PARAMS):
        old, new = recorded.get(name), current.get(name)
        if not _same(old, new) and _canonical(old) != _canonical(new):
            return Drift(f"request parameter {name!r}", _show(old), _show(new))
    return None


def block_at(text: str, offset: int) -> str | None:
    """The innermost ``<tag>`` … ``</tag>`` block (tags on their own lines) around ``offset``."""
    stack: list[tuple[str, int]] = []
    best: tuple[str, int] | None = None
    position = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        opened = _OPEN.match(stripped)
        if opened:
            stack.append((opened.group(1), position))
        elif stripped.startswith("</") and stack and stripped == f"</{stack[-1][0]}>":
            name, start = stack.pop()
            end = position + len(line)
            if start <= offset < end and (best is None or start >= best[1]):
                best = (name, start)
        position += len(line)
    candidates = [entry for entry in stack if entry[1] <= offset]  # unclosed: run to the end
    if best is not None:
        candidates.append(best)
    return max(candidates, key=lambda entry: entry[1])[0] if candidates else None


def line_at(text: str, offset: int) -> str:
    """The line of ``text`` holding ``offset``, cut around it to a readable width."""
    if offset >= len(text) and (not text or text.endswith("\n")):
        return "(end of message)"
    offset = min(offset, len(text) - 1)
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    line = text[start : end if end >= 0 else len(text)]
    return _shorten(line, offset - start)


def _shorten(line: str, focus: int) -> str:
    """``line`` on one row; long lines show the part around ``focus`` with ``…`` marks."""
    flat = line.replace("\n", "⏎").replace("\t", " ")
    if len(flat) <= LINE_WIDTH:
        return flat or "(empty line)"
    start = max(0, min(focus - LINE_WIDTH // 3, len(flat) - LINE_WIDTH))
    piece = flat[start : start + LINE_WIDTH]
    return ("…" if start else "") + piece + ("…" if start + LINE_WIDTH < len(flat) else "")


def _field(message: Any, name: str) -> str:
    return str(message.get(name, "")) if isinstance(message, dict) else str(message)


def _same(old: Any, new: Any) -> bool:
    """Whether two JSON values are the same value of the same types all the way down (their
    canonical JSON is then the same, and need not be made: a request's JSON schema twice for
    every call of a replay, #17 session six). False says nothing: compare the JSON then
    (``1`` and ``1.0`` are equal in Python, not in JSON)."""
    kind = type(old)
    if kind is not type(new):
        return False
    if kind is dict:
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in old)
    if kind is list:
        return len(old) == len(new) and all(map(_same, old, new))
    if kind is float:
        return bool(old.hex() == new.hex())  # -0.0 is 0.0 in Python, not in JSON
    return kind in _EXACT and bool(old == new)


_EXACT = frozenset({str, int, bool, type(None)})


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _show(value: Any) -> str:
    return "(not set)" if value is None else _shorten(_canonical(value), 0)
