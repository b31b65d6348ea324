"""Finding MagVarUpdate's update commands in a message, and the update block in the story.

``extract_commands`` is MVU's ``extractCommands``: every ``_.set(...)``, ``_.insert``,
``_.assign``, ``_.remove``, ``_.unset``, ``_.delete`` and ``_.add`` call that ends in ``;``
(an optional ``//reason`` after it), wherever it is in the message, plus every
``<JSONPatch>``/``<json_patch>`` array, translated as MVU translates it (``replace`` → set,
``delta`` → add, ``add``/``insert`` → insert with the last path step as key or index,
``remove`` → delete, ``move`` → move, which MVU then ignores). Commands come out in the order
they appear. Parentheses and commas inside quotes, brackets and braces do not split arguments.

MVU silently skips a call it cannot read (no closing parenthesis, no ``;``, too few
arguments), a JSONPatch block that is not a list of operations (one without ``op`` or
``path``, say: then none of the block applies) and a JSONPatch op it does not know; and a
JSONPatch value holding NaN or Infinity, which MVU would store as null, is refused; here each
of those is returned as a ``MalformedCommand`` with the reason, so the player sees why nothing
changed. MVU's own state is the same either way.

``strip_update_blocks`` removes ``<UpdateVariable>…</UpdateVariable>`` and ``<JSONPatch>``
blocks (an unclosed one at the end too) from the story text shown and sent back to the writer;
``update_blocks`` returns them, for the stored message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from narrative_cli.safetext import MAX_JSON_DEPTH, json_depth, non_finite
from narrative_cli.state.mvu_paths import string_to_path

__all__ = [
    "MalformedCommand",
    "MvuCommand",
    "extract_commands",
    "has_update",
    "strip_update_blocks",
    "update_blocks",
]

COMMAND_TYPES = ("set", "insert", "assign", "remove", "unset", "delete", "add", "move")
_CALL = re.compile(r"_\.(set|insert|assign|remove|unset|delete|add)\(")
_PATCH_BLOCK = re.compile(
    r"<(json_?patch)>(?:\s*```.*)?((?:(?!<json_?patch>)[\s\S])*?)(?:```\s*)?</\1>", re.IGNORECASE
)
_BLOCK = re.compile(r"<(UpdateVariable|JSONPatch|json_patch)>[\s\S]*?(?:</\1>|$)\s*", re.IGNORECASE)
_MIN_ARGS = {"set": 2, "assign": 2, "insert": 2, "remove": 1, "unset": 1, "delete": 1}


@dataclass(frozen=True)
class MvuCommand:
    """One update command: its kind, raw argument texts, ``//`` reason and source text."""

    type: str  # set | insert | assign | remove | unset | delete | add | move
    args: tuple[str, ...]
    reason: str = ""
    text: str = ""  # the command as written (MVU's full_match)
    source: str = "command"  # command | json_patch

    def to_dict(self) -> dict[str, object]:
        return {"type": self.type, "args": list(self.args), "reason": self.reason,
                "text": self.text}  # fmt: skip


@dataclass(frozen=True)
class MalformedCommand:
    """A call that could not be read, and why (MVU skips these without a word)."""

    text: str
    reason: str


@dataclass(frozen=True)
class Extracted:
    """The commands of a message, in order, and the calls that could not be read."""

    commands: list[MvuCommand] = field(default_factory=list)
    malformed: list[MalformedCommand] = field(default_factory=list)


def extract_commands(text: str) -> Extracted:
    """The update commands in ``text`` (see the module doc)."""
    found: list[tuple[int, MvuCommand]] = []
    malformed: list[MalformedCommand] = []
    for match in _PATCH_BLOCK.finditer(text):
        commands, unread = _json_patch(match.group(2).strip())
        found.extend((match.start(), command) for command in commands)
        malformed.extend(unread)
    position = 0
    while True:
        call = _CALL.search(text, position)
        if call is None:
            break
        kind, start, opened = call.group(1), call.start(), call.end()
        close = _closing_paren(text, opened)
        if close < 0:
            malformed.append(_bad(text, start, "unbalanced quotes or parentheses"))
            position = opened
            continue
        end = close + 1
        if end >= len(text) or text[end] != ";":
            malformed.append(_bad(text[:end], start, "no ';' after the call"))
            position = end
            continue
        end += 1
        reason = ""
        comment = re.compile(r"\s*//(.*)").match(text, end)
        if comment:
            reason = comment.group(1).strip()
            end = comment.end()
        args = tuple(split_arguments(text[opened:close]))
        needed = _MIN_ARGS.get(kind, 2)
        if len(args) < needed or (kind == "add" and len(args) != 2):
            expected = "2" if kind == "add" else f"at least {needed}"
            malformed.append(
                MalformedCommand(text[start:end], f"_.{kind} needs {expected} arguments")
            )
        else:
            found.append((start, MvuCommand(kind, args, reason, text[start:end])))
        position = end
    found.sort(key=lambda item: item[0])
    return Extracted([command for _, command in found], malformed)


def _bad(text: str, start: int, reason: str) -> MalformedCommand:
    line_end = text.find("\n", start)
    snippet = text[start : line_end if line_end >= 0 else len(text)]
    return MalformedCommand(snippet.strip(), reason)


def _closing_paren(text: str, start: int) -> int:
    """MVU's findMatchingCloseParen: the ``)`` closing the call, quotes respected."""
    depth, quote = 1, ""
    for index in range(start, len(text)):
        char = text[index]
        if char in "\"'`" and (index == 0 or text[index - 1] != "\\"):
            if not quote:
                quote = char
            elif char == quote:
                quote = ""
        if not quote:
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth == 0:
                    return index
    return -1


def split_arguments(params: str) -> list[str]:
    """MVU's parseParameters: commas split only outside quotes, (), [] and {}."""
    result: list[str] = []
    current: list[str] = []
    quote = ""
    depth = {"(": 0, "[": 0, "{": 0}
    closers = {")": "(", "]": "[", "}": "{"}
    for index, char in enumerate(params):
        if char in "\"'`" and (index == 0 or params[index - 1] != "\\"):
            if not quote:
                quote = char
            elif char == quote:
                quote = ""
        if not quote:
            if char in depth:
                depth[char] += 1
            elif char in closers:
                depth[closers[char]] -= 1
        if char == "," and not quote and not any(depth.values()):
            result.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    last = "".join(current).strip()
    if last:
        result.append(last)
    return result


def _json_patch(body: str) -> tuple[list[MvuCommand], list[MalformedCommand]]:
    """A JSONPatch block's commands, and what MVU would skip without a word: a block that is
    not a list of operations (MVU then applies none of it) or an op it does not know."""
    import json

    from narrative_cli.state.mvu_values import TextParseError, js_stringify, parse_text

    try:
        patch = parse_text(body)
        deep = json_depth(patch) > MAX_JSON_DEPTH
    except TextParseError as error:
        return [], [MalformedCommand(_snippet(body), f"the JSONPatch block is not JSON ({error})")]
    except RecursionError:
        deep = True
    if deep:
        why = f"the JSONPatch block nests more than {MAX_JSON_DEPTH} levels deep"
        return [], [MalformedCommand(_snippet(body), why)]
    if not _is_json_patch(patch):
        return [], [MalformedCommand(_snippet(body), _patch_problem(patch))]
    commands: list[MvuCommand] = []
    unknown: list[MalformedCommand] = []
    for op in patch:
        raw = op.get("path") if op.get("path") is not None else op.get("to")
        path = _pointer_to_path(raw)
        text = json.dumps(op, ensure_ascii=False, separators=(",", ":"))
        if non_finite(op.get("value")):  # MVU would store null; we refuse (issue 13)
            unknown.append(MalformedCommand(text, "the value holds NaN or Infinity"))
            continue
        value = js_stringify(op.get("value")) if "value" in op else "undefined"
        kind = op["op"]
        if kind == "replace":
            commands.append(MvuCommand("set", (path, value), "json_patch", text, "json_patch"))
        elif kind == "delta":
            commands.append(MvuCommand("add", (path, value), "json_patch", text, "json_patch"))
        elif kind in ("insert", "add"):
            parts = string_to_path(path)
            last = parts[-1] if parts else ""
            key = last if re.fullmatch(r"\d+", last) else f"'{last}'"
            args: tuple[str, ...] = (".".join(parts[:-1]), key, value)
            commands.append(MvuCommand("insert", args, "json_patch", text, "json_patch"))
        elif kind == "remove":
            commands.append(MvuCommand("delete", (path,), "json_patch", text, "json_patch"))
        elif kind == "move":
            args = (_pointer_to_path(op.get("from")), path)
            commands.append(MvuCommand("move", args, "json_patch", text, "json_patch"))
        else:
            ops = "replace, delta, add, insert, remove or move"
            unknown.append(MalformedCommand(text, f"unknown JSONPatch op {kind!r} (use {ops})"))
    return commands, unknown


def _patch_problem(patch: object) -> str:
    """Why a parsed JSONPatch block is not a list of operations (the first problem found)."""
    if not isinstance(patch, list):
        return "the JSONPatch block must be a list of operations, not a single value"
    for index, op in enumerate(patch):
        if not isinstance(op, dict):
            return f"JSONPatch operation {index} is not an object"
        if not isinstance(op.get("op"), str):
            return f"JSONPatch operation {index} has no 'op'"
        if not isinstance(op.get("path"), str):
            return f"JSONPatch operation {index} has no 'path'"
    return "the JSONPatch block is not a list of operations"


def _snippet(body: str) -> str:
    line = body.strip().split("\n", 1)[0]
    return line if len(line) <= 80 else line[:77] + "..."


def _is_json_patch(patch: object) -> bool:
    if not isinstance(patch, list):
        return False
    return all(
        isinstance(op, dict)
        and isinstance(op.get("op"), str)
        and (
            isinstance(op.get("path"), str)
            or (op.get("op") == "move" and isinstance(op.get("to"), str))
        )
        for op in patch
    )


def _pointer_to_path(path: object) -> str:
    if not isinstance(path, str) or not path:
        return ""
    return (path[1:] if path.startswith("/") else path).replace("/", ".")


def has_update(text: str) -> bool:
    """Whether ``text`` holds an update block or a command."""
    return bool(_BLOCK.search(text) or _CALL.search(text))


def update_blocks(text: str) -> str:
    """The update blocks of ``text``, joined by blank lines (what the stored message keeps)."""
    return "\n\n".join(match.group(0).strip() for match in _BLOCK.finditer(text))


def strip_update_blocks(text: str) -> str:
    """``text`` without its update blocks (what the player sees and the writer reads back)."""
    if "<" not in text:
        return text
    stripped = _BLOCK.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", stripped).strip() if stripped != text else text


_OPENERS = ("<updatevariable>", "<jsonpatch>", "<json_patch>")


class BlockFilter:
    """Streamed story text without its update block: everything from the first
    ``<UpdateVariable>`` / ``<JSONPatch>`` tag on is held back (the block ends the reply in
    the cards' format), and a trailing ``<`` that may start such a tag waits for more text."""

    def __init__(self) -> None:
        self._held = ""
        self._cut = False

    def feed(self, piece: str) -> str:
        """The part of ``piece`` that can be shown now."""
        if self._cut:
            return ""
        text = self._held + piece
        lower = text.lower()
        found = [lower.find(tag) for tag in _OPENERS if tag in lower]
        if found:
            self._cut, self._held = True, ""
            return text[: min(found)]
        start = text.rfind("<")
        if start >= 0 and any(tag.startswith(lower[start:]) for tag in _OPENERS):
            self._held = text[start:]
            return text[:start]
        self._held = ""
        return text

    def flush(self) -> str:
        """What is still held back at the end of the stream (a ``<`` that started nothing)."""
        held, self._held = ("" if self._cut else self._held), ""
        return held
