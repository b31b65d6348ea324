"""A forgiving JSON reader for what models write when they mean JSON.

It reads one value starting at a ``{`` or ``[`` and accepts the usual slips: single or curly
quotes as string delimiters, unescaped quotes inside a string, trailing or missing commas,
``//`` and ``/* */`` comments, unquoted keys and words, Python ``True``/``False``/``None``, and
a reply cut off mid-way (open strings, arrays and objects are closed; a key left without a
value is dropped). Whatever follows the value is ignored. Each fix is noted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_CLOSING_QUOTE = {'"': '"', "'": "'", "“": "”", "”": "”", "‘": "’", "’": "’", "„": "“"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\"}
_WORDS: dict[str, Any] = {
    "true": True,
    "false": False,
    "null": None,
    "none": None,
    "undefined": None,
    "nan": None,
}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_WORD_END = set(",:}]\n\r")
_MISSING = object()


@dataclass
class Repaired:
    """The value read, what was fixed, and whether the text ended before the value did."""

    value: Any
    notes: list[str] = field(default_factory=list)
    truncated: bool = False


def repair_json(text: str, start: int = 0) -> Repaired:
    """Read one JSON-like value from ``text[start:]`` as leniently as possible."""
    reader = _Reader(text, start)
    value = reader.value()
    if reader.truncated:
        reader.note("the reply was cut off; closed what was left open")
    return Repaired(None if value is _MISSING else value, reader.notes, reader.truncated)


class _Reader:
    def __init__(self, text: str, start: int) -> None:
        self.s = text
        self.i = start
        self.notes: list[str] = []
        self.truncated = False

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)

    @property
    def eof(self) -> bool:
        return self.i >= len(self.s)

    def skip(self) -> None:
        """Skip whitespace and comments."""
        while not self.eof:
            if self.s[self.i].isspace():
                self.i += 1
            elif self.s.startswith("//", self.i) or self.s.startswith("#", self.i):
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
                self.note("removed comments")
            elif self.s.startswith("/*", self.i):
                end = self.s.find("*/", self.i + 2)
                self.i = len(self.s) if end < 0 else end + 2
                self.note("removed comments")
            else:
                return

    def value(self) -> Any:
        self.skip()
        if self.eof:
            self.truncated = True
            return _MISSING
        char = self.s[self.i]
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char in _CLOSING_QUOTE:
            return self.string()
        number = _NUMBER.match(self.s, self.i)
        if number:
            return self.number(number)
        return self.word()

    def next_item(self) -> bool:
        """Move to the next item of the open object or array: False at its end (a closing
        bracket of either kind, or the text cut off), True where an item starts."""
        while True:
            self.skip()
            if self.eof:
                self.truncated = True
                return False
            char = self.s[self.i]
            if char in "}]":
                self.i += 1
                return False
            if char != ",":
                return True
            self.i += 1

    def object(self) -> dict[str, Any]:
        self.i += 1
        result: dict[str, Any] = {}
        while self.next_item():
            key = self.key()
            self.skip()
            if self.eof:
                self.truncated = True
                return result
            if self.s[self.i] in ":=":
                self.i += 1
            else:
                self.note("added a missing colon")
            value = self.value()
            if value is _MISSING:
                return result
            result[key] = value
            self.after_item("}")
        return result

    def array(self) -> list[Any]:
        self.i += 1
        result: list[Any] = []
        while self.next_item():
            value = self.value()
            if value is _MISSING:
                return result
            result.append(value)
            self.after_item("]")
        return result

    def after_item(self, closer: str) -> None:
        """Note a missing comma or a trailing comma after an item."""
        self.skip()
        if self.eof:
            return
        if self.s[self.i] == ",":
            rest = self.s[self.i + 1 :].lstrip()
            if rest.startswith(closer):
                self.note("removed trailing commas")
        elif self.s[self.i] not in "]}":
            self.note("added missing commas")

    def key(self) -> str:
        if self.s[self.i] in _CLOSING_QUOTE:
            return self.string()
        start = self.i
        while not self.eof and self.s[self.i] not in ":=,}]" and not self.s[self.i].isspace():
            self.i += 1
        if self.i == start:  # a stray character: skip it
            self.i += 1
        self.note("quoted bare keys")
        return self.s[start : self.i]

    def string(self) -> str:
        opener = self.s[self.i]
        closer = _CLOSING_QUOTE[opener]
        if opener != '"':
            self.note("replaced non-JSON quotes")
        self.i += 1
        out: list[str] = []
        while not self.eof:
            char = self.s[self.i]
            if char == "\\":
                out.append(self.escape())
                continue
            if char == closer and self.closes_string():
                self.i += 1
                return "".join(out)
            out.append(char)
            self.i += 1
        self.truncated = True
        return "".join(out)

    def closes_string(self) -> bool:
        """A quote ends the string only if what follows could follow a string."""
        rest = self.s[self.i + 1 :].lstrip(" \t\r\n")
        if not rest or rest[0] in ",:}]" or rest.startswith(("//", "/*")):
            return True
        if self.s[self.i + 1 : self.i + 2] in ("\n", "\r") and rest[0] in '"{[':
            return True  # a missing comma before the next line's item
        self.note("escaped quotes inside strings")
        return False

    def escape(self) -> str:
        nxt = self.s[self.i + 1 : self.i + 2]
        if nxt == "u":
            digits = self.s[self.i + 2 : self.i + 6]
            if re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                self.i += 6
                return chr(int(digits, 16))
        self.i += 2
        if not nxt:
            self.truncated = True
            return ""
        return _ESCAPES.get(nxt, nxt)

    def number(self, match: re.Match[str]) -> int | float:
        self.i = match.end()
        text = match.group(0).lstrip("+")
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        return float(text)

    def word(self) -> Any:
        start = self.i
        while not self.eof and self.s[self.i] not in _WORD_END:
            self.i += 1
        word = self.s[start : self.i].strip()
        if self.i == start:
            self.i += 1
        if word.lower() in _WORDS:
            if word not in ("true", "false", "null"):
                self.note("replaced Python/JS literals")
            return _WORDS[word.lower()]
        self.note("quoted bare words")
        return word
