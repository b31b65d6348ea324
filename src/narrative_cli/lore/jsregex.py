"""JavaScript `/regex/flags` lore keys, translated to Python ``re`` with JS semantics.

SillyTavern tests a key written as ``/body/flags`` as a JavaScript RegExp (compat §3.4). Python's
``re`` differs in ways that change what matches, so the pattern is rewritten token by token:
``\\d``, ``\\w`` and ``\\b`` are ASCII in JS, ``\\s`` is the JS whitespace set, ``.`` stops at
every JS line terminator, ``$`` without the ``m`` flag means the very end, ``(?<name>…)`` and
``\\k<name>`` become Python's ``(?P<name>…)`` and ``(?P=name)``, ``[^]`` matches anything. Flags:
``i`` → IGNORECASE, ``m``/``s`` are folded into the rewrite, ``g`` and ``u`` change nothing for a
test, ``y`` (sticky) anchors the match at the start of the text.

User patterns are compiled once and cached. Patterns with a nested unbounded quantifier such as
``(a+)+`` are refused (they can take exponential time), and the text a regex sees is capped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_LINE_TERMINATORS = "\\n\\r\\u2028\\u2029"
_WORD = "A-Za-z0-9_"
_WORD_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_WORD_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"
MAX_REGEX_TEXT = 30_000  # characters of scan text a user regex may look at

_KEY_FORM = re.compile(r"\A/([\s\S]+?)/([gimsuy]*)\Z")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux-]+[):]")

_JS_LETTER_ESCAPES = frozenset("bBdDwWsStnvfrxu")
_CLASS_ESCAPES = {"d": "0-9", "w": _WORD, "s": JS_WHITESPACE}
_OUTSIDE_ESCAPES = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{JS_WHITESPACE}]",
    "S": f"[^{JS_WHITESPACE}]",
    "b": _WORD_BOUNDARY,
    "B": _NOT_WORD_BOUNDARY,
    "/": "/",
}


# Pieces of a translated pattern that can match a newline or the \x01 message marker.
_SPANNING = ("[^", "\\s\\S", "\\W", "\\S", "\\D", "\\n", "\\x0", "\\u000", "\\x01", "\n")


class RegexKeyError(ValueError):
    """A ``/…/`` key that cannot be used; the message says why."""


@dataclass(frozen=True)
class JsRegex:
    """A compiled user regex with the JS flags it was written with."""

    source: str
    flags: str
    pattern: re.Pattern[str]
    literals: tuple[str, ...]  # substrings every match contains (none when unknown)

    @property
    def may_span(self) -> bool:
        """Whether a match could cross a message boundary (``\\n\\x01``) of the scan text."""
        python = self.pattern.pattern
        return any(mark in python for mark in _SPANNING) or "\x01" in python

    def search(self, text: str) -> bool:
        """True when the regex matches ``text`` (capped at MAX_REGEX_TEXT characters)."""
        text = text[:MAX_REGEX_TEXT]
        if "y" in self.flags:
            return self.pattern.match(text) is not None
        return self.pattern.search(text) is not None


def split_key(key: str) -> tuple[str, str] | None:
    """``(body, flags)`` when ``key`` is a SillyTavern regex key, else None (a plain key)."""
    match = _KEY_FORM.match(key)
    if match is None or _UNESCAPED_SLASH.search(match.group(1)):
        return None
    return match.group(1).replace("\\/", "/", 1), match.group(2)


@lru_cache(maxsize=4096)
def compile_js(body: str, flags: str) -> JsRegex:
    """Compile a JS regex body with its flags; RegexKeyError says what is wrong."""
    if nested_quantifier(body):
        raise RegexKeyError("nested repetition like (a+)+ can take exponential time")
    python = translate(body, flags)
    try:
        pattern = re.compile(python, re.IGNORECASE if "i" in flags else 0)
    except (re.error, OverflowError, RecursionError) as exc:
        raise RegexKeyError(f"not supported here: {exc}") from None
    literals = required_literals(body)
    if "i" in flags:
        literals = tuple(literal.lower() for literal in literals)
    return JsRegex(body, flags, pattern, literals)


def translate(body: str, flags: str) -> str:
    """The Python ``re`` pattern equivalent to JS ``body`` under ``flags``."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char == "\\":
            piece, i = _outside_escape(body, i, flags)
            out.append(piece)
        elif char == "[":
            piece, i = _char_class(body, i)
            out.append(piece)
        elif char == "(" and body.startswith("(?<", i) and body[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
        else:
            out.append(_outside_char(char, flags))
            i += 1
    return "".join(out)


def _outside_char(char: str, flags: str) -> str:
    if char == ".":
        return "[\\s\\S]" if "s" in flags else f"[^{_LINE_TERMINATORS}]"
    if char == "$":
        return f"(?=[{_LINE_TERMINATORS}]|\\Z)" if "m" in flags else "\\Z"
    if char == "^":
        return f"(?:\\A|(?<=[{_LINE_TERMINATORS}]))" if "m" in flags else "\\A"
    return char


def _outside_escape(body: str, i: int, flags: str) -> tuple[str, int]:
    nxt = body[i + 1 : i + 2]
    if nxt in _OUTSIDE_ESCAPES:
        return _OUTSIDE_ESCAPES[nxt], i + 2
    if nxt == "k" and body.startswith("<", i + 2) and ">" in body[i + 3 :]:
        end = body.index(">", i + 3)
        return f"(?P={body[i + 3 : end]})", end + 1
    return _common_escape(body, i, flags)


def _common_escape(body: str, i: int, flags: str) -> tuple[str, int]:
    """Escapes that mean the same inside and outside a class."""
    nxt = body[i + 1 : i + 2]
    if nxt == "c" and body[i + 2 : i + 3].isalpha():
        return f"\\x{ord(body[i + 2]) % 32:02x}", i + 3
    if nxt == "u" and "u" in flags and body.startswith("{", i + 2) and "}" in body[i + 3 :]:
        end = body.index("}", i + 3)
        return f"\\U{int(body[i + 3 : end], 16):08x}", end + 1
    if nxt == "0" and not body[i + 2 : i + 3].isdigit():
        return "\\x00", i + 2
    if nxt == "":
        return "\\\\", i + 1
    if nxt.isascii() and nxt.isalpha() and nxt not in _JS_LETTER_ESCAPES:
        return nxt, i + 2  # JS reads an unknown letter escape as the letter itself
    return body[i : i + 2], i + 2


def _char_class(body: str, start: int) -> tuple[str, int]:
    """Translate ``[…]`` starting at ``start``; returns the piece and the index after it."""
    if body.startswith("[^]", start):
        return "[\\s\\S]", start + 3
    if body.startswith("[]", start):
        return "(?!)", start + 2
    i = start + 1
    out = ["["]
    if body[i : i + 1] == "^":
        out.append("^")
        i += 1
    while i < len(body) and body[i] != "]":
        char = body[i]
        if char == "\\":
            nxt = body[i + 1 : i + 2]
            if nxt in _CLASS_ESCAPES:
                out.append(_CLASS_ESCAPES[nxt])
                i += 2
            else:
                piece, i = _common_escape(body, i, "u")
                out.append(piece)
        else:
            out.append(
                "\\" + char if char in "[&~|-" and _doubled(body, i) or char == "[" else char
            )
            i += 1
    if i >= len(body):
        raise RegexKeyError("unterminated character class")
    out.append("]")
    return "".join(out), i + 1


def _doubled(body: str, i: int) -> bool:
    """Python warns about ``&&``, ``--``, ``||``, ``~~`` in a class (future set syntax)."""
    return body[i + 1 : i + 2] == body[i] or (i > 0 and body[i - 1] == body[i])


def _skip_class(body: str, i: int) -> int:
    """Index after the class starting at ``body[i] == '['``."""
    i += 1
    if body[i : i + 1] == "^":
        i += 1
    if body[i : i + 1] == "]":  # JS `[]` / `[^]`
        return i + 1
    while i < len(body) and body[i] != "]":
        i += 2 if body[i] == "\\" else 1
    return i + 1


def nested_quantifier(body: str) -> bool:
    """True when a repeated group contains an unbounded repetition, e.g. ``(a+)+``, ``(\\w*x)*``."""
    stack: list[bool] = []  # per open group: does it contain an unbounded quantifier?
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _skip_class(body, i)
            continue
        if char == "(":
            stack.append(False)
        elif char == ")" and stack:
            inner = stack.pop()
            if inner and _unbounded_at(body, i + 1):
                return True
            if stack and inner:
                stack[-1] = True
        elif _unbounded_at(body, i) and stack:
            stack[-1] = True
        i += 1
    return False


_UNBOUNDED = re.compile(r"[*+]|\{\d*,\}")


def _unbounded_at(body: str, i: int) -> bool:
    return _UNBOUNDED.match(body, i) is not None


_OPTIONAL = re.compile(r"[*?]|\{0+(?:,\d*)?\}")
_REPEAT = re.compile(r"\+|\{[1-9]\d*(?:,\d*)?\}")
_LAZY = re.compile(r"\?")


def required_literals(body: str) -> tuple[str, ...]:
    """Runs of plain characters that every match of ``body`` must contain, longest first.

    Conservative: none when unsure (top-level alternation, inline flags). Used only to skip
    running a regex whose literals are absent from the text, so returning none is always safe.
    """
    if _INLINE_FLAGS.search(body) or _top_level_alternation(body):
        return ()
    runs: list[str] = []
    current: list[str] = []
    i, n = 0, len(body)
    while i < n:
        atom, i = _literal_atom(body, i)
        optional = _OPTIONAL.match(body, i)
        repeated = _REPEAT.match(body, i)
        quantifier = optional or repeated
        if quantifier is not None:
            i = quantifier.end()
            lazy = _LAZY.match(body, i)
            i = lazy.end() if lazy else i
        if atom is None or optional is not None:
            runs.append("".join(current))
            current = []
            continue
        current.append(atom)
        if repeated is not None:
            runs.append("".join(current))
            current = []
    runs.append("".join(current))
    unique = dict.fromkeys(run for run in runs if run)
    return tuple(sorted(unique, key=len, reverse=True))


def _literal_atom(body: str, i: int) -> tuple[str | None, int]:
    """The literal character at ``i`` (None for anything else) and the index after the atom."""
    char = body[i]
    if char == "\\":
        nxt = body[i + 1 : i + 2]
        if nxt and not nxt.isalnum() and nxt.isprintable() and nxt != " ":
            return nxt, i + 2
        return None, _escape_end(body, i)
    if char == "[":
        return None, _skip_class(body, i)
    if char == "(":
        return None, _skip_group(body, i)
    if char in ".^$|)" or not char.isprintable() or char.isspace():
        return None, i + 1
    return char, i + 1


_ESCAPE_TAIL = re.compile(
    r"x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f]+\}|u[0-9A-Fa-f]{4}|c[A-Za-z]|k<[^>]*>|\d+|.", re.S
)


def _escape_end(body: str, i: int) -> int:
    """Index after the escape sequence starting with the backslash at ``i``."""
    tail = _ESCAPE_TAIL.match(body, i + 1)
    return tail.end() if tail else i + 1


def _skip_group(body: str, i: int) -> int:
    depth = 0
    n = len(body)
    while i < n:
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _skip_class(body, i)
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _top_level_alternation(body: str) -> bool:
    depth = 0
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _skip_class(body, i)
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth <= 0:
            return True
        i += 1
    return False
