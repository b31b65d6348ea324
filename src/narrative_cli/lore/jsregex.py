"""JavaScript `/regex/flags` lore keys, run with JavaScript's semantics under a time limit.

SillyTavern tests a key written as ``/body/flags`` as a JavaScript RegExp (compat §3.4); a key
JavaScript cannot compile is no regex at all there, just plain text. So:

- **Syntax** is JavaScript's own: QuickJS (already our code sandbox) compiles the pattern, and a
  pattern it refuses (``/(?i)x/``, ``/x/ii``, ``/[/``) is a plain key, as in SillyTavern.
- **Matching** runs a token-by-token translation in the ``regex`` module, which can stop a
  match after a time limit (QuickJS's regex engine cannot be interrupted, and neither can
  Python's ``re``). The translation keeps JS meanings where they differ: ``\\d``, ``\\w``,
  ``\\b`` are ASCII, ``\\s`` is the JS whitespace set, ``.`` stops at JS line terminators, ``$``
  without ``m`` is the very end, ``[^]`` is anything, ``\\p{…}`` exists only with ``u``, legacy
  octal and identity escapes (``\\8``), a ``{`` that is no quantifier is literal, and under
  ``i`` without ``u`` the letters JavaScript does not fold (the Kelvin sign, long s) stay apart.
- **Time**: every test of every pattern is bounded by ``TIME_LIMIT`` seconds. A pattern that
  runs out of time raises ``RegexTimeout``; the scan reports it with its entry and skips it for
  the rest of the session (``LoreIndex.slow``).

Known differences left (docs/lore-fidelity.md): a surrogate pair is one character here (JS
without ``u`` sees two), a backreference to a group that did not take part fails here (JS
matches it empty), and case folding inside a character class follows Unicode's simple folding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from narrative_cli.lore.jskeys import (
    JS_TRIM_CHARS,
    JS_WHITESPACE,
    JsSyntaxError,
    RegexKeyError,
    RegexTimeout,
    js_syntax_error,
    split_key,
)

# The key's form, its errors and JavaScript's verdict on a pattern live in ``lore.jskeys``
# (light, for every scan and for ``inspect``'s check of regex scripts); they are re-exported
# here with the translator.
__all__ = ["JS_TRIM_CHARS", "JS_WHITESPACE", "TIME_LIMIT", "JsRegex", "JsSyntaxError",
           "RegexKeyError", "RegexTimeout", "compile_js", "js_syntax_error", "nested_quantifier",
           "required_alternatives", "required_literals", "split_key", "translate"]  # fmt: skip

_LINE_TERMINATORS = "\\n\\r\\u2028\\u2029"
_WORD = "A-Za-z0-9_"
_WORD_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_WORD_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"
TIME_LIMIT = 0.05  # seconds one test of one pattern may take

_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux-]+[):]")
_QUANTIFIER = re.compile(r"\{\d+(?:,\d*)?\}")

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
# Under ``i`` without ``u`` JavaScript folds with toUpperCase and never maps a non-ASCII letter
# to an ASCII one; Unicode simple folding (the ``regex`` module, and JS with ``u``) does.
_NON_UNICODE_FOLD = {
    "k": "kK", "K": "kK", "\u212a": "\u212a", "s": "sS", "S": "sS", "\u017f": "\u017f",
    "\u00e5": "\u00e5\u00c5", "\u00c5": "\u00e5\u00c5", "\u212b": "\u212b",
    "\u00df": "\u00df", "\u1e9e": "\u1e9e",
}


# Pieces of a translated pattern that can match a newline or the \x01 message marker.
_SPANNING = (
    "[^", "\\s\\S", "\\W", "\\S", "\\D", "\\n", "\\x0", "\\u000", "\\x01", "\n", "\\p", "\\P",
)


@dataclass(frozen=True)
class JsRegex:
    """A compiled user regex with the JS flags it was written with."""

    source: str
    flags: str
    pattern: Any  # regex.Pattern[str]
    literals: tuple[str, ...]  # substrings every match contains (none when unknown)
    alternatives: tuple[str, ...] = ()  # every match contains one of them (none: unknown)

    @property
    def key(self) -> str:
        return f"/{self.source}/{self.flags}"

    @property
    def may_span(self) -> bool:
        """Whether a match could cross a message boundary (``\\n\\x01``) of the scan text."""
        python = self.pattern.pattern
        return any(mark in python for mark in _SPANNING) or "\x01" in python

    def search(self, text: str) -> bool:
        """True when the regex matches ``text``; RegexTimeout when it runs out of time."""
        try:
            if "y" in self.flags:
                return self.pattern.match(text, timeout=TIME_LIMIT) is not None
            return self.pattern.search(text, timeout=TIME_LIMIT) is not None
        except TimeoutError:
            raise RegexTimeout(
                f"regex {self.key} ran longer than {TIME_LIMIT * 1000:.0f} ms and is skipped "
                "from now on"
            ) from None


@lru_cache(maxsize=4096)
def compile_js(body: str, flags: str) -> JsRegex:
    """Compile a JS regex body with its flags.

    JsSyntaxError: JavaScript refuses it; RegexKeyError: valid JavaScript we cannot run."""
    problem = js_syntax_error(body, flags)
    if problem is not None:
        raise JsSyntaxError(f"is not a JavaScript regex ({problem})")
    import regex  # here, not at the top: a card without regex keys never needs it

    python = translate(body, flags)
    options = regex.V0 | (regex.IGNORECASE if "i" in flags else 0)
    try:
        pattern = regex.compile(python, options)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise RegexKeyError(f"is not supported here: {exc}") from None
    alternatives = required_alternatives(body) if "i" not in flags else ()
    return JsRegex(body, flags, pattern, _probe_literals(body, flags), alternatives)


def _probe_literals(body: str, flags: str) -> tuple[str, ...]:
    """Required literals usable by the lower-case prefilter: under ``i`` only those whose
    case variants ``str.lower`` finds (ASCII, and no ``s`` that ``ſ`` could match under u)."""
    literals = required_literals(body)
    if "i" not in flags:
        return literals
    kept = []
    for literal in literals:
        if literal.isascii() and not ("u" in flags and "s" in literal.lower()):
            kept.append(literal.lower())
    return tuple(kept)


def translate(body: str, flags: str) -> str:
    """The ``regex``-module pattern equivalent to the JS-valid ``body`` under ``flags``."""
    groups = _count_groups(body)
    fold = "i" in flags and "u" not in flags
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char == "\\":
            piece, i = _outside_escape(body, i, flags, groups)
            out.append(piece)
        elif char == "[":
            piece, i = _char_class(body, i, flags)
            out.append(piece)
        elif char == "(" and body.startswith("(?<", i) and body[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
        elif char == "{" and not _QUANTIFIER.match(body, i):
            out.append("\\{")  # Annex B: a brace that starts no quantifier is literal
            i += 1
        elif fold and char in _NON_UNICODE_FOLD:
            out.append(f"(?-i:[{_NON_UNICODE_FOLD[char]}])")
            i += 1
        else:
            out.append(_outside_char(char, flags))
            i += 1
    return "".join(out)


def _count_groups(body: str) -> int:
    """Capturing groups in ``body`` (JS decides with this whether ``\\N`` is a backreference)."""
    count = 0
    i, n = 0, len(body)
    while i < n:
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _skip_class(body, i)
            continue
        if char == "(" and (body[i + 1 : i + 2] != "?" or body.startswith("(?<", i)
                            and body[i + 3 : i + 4] not in ("=", "!")):
            count += 1
        i += 1
    return count


def _outside_char(char: str, flags: str) -> str:
    if char == ".":
        return "[\\s\\S]" if "s" in flags else f"[^{_LINE_TERMINATORS}]"
    if char == "$":
        return f"(?=[{_LINE_TERMINATORS}]|\\Z)" if "m" in flags else "\\Z"
    if char == "^":
        return f"(?:\\A|(?<=[{_LINE_TERMINATORS}]))" if "m" in flags else "\\A"
    return char


_DIGITS = re.compile(r"\d+")
_OCTAL = re.compile(r"[0-3][0-7]{0,2}|[4-7][0-7]?")


def _outside_escape(body: str, i: int, flags: str, groups: int) -> tuple[str, int]:
    nxt = body[i + 1 : i + 2]
    if nxt in _OUTSIDE_ESCAPES:
        return _OUTSIDE_ESCAPES[nxt], i + 2
    if nxt == "k" and body.startswith("<", i + 2) and ">" in body[i + 3 :]:
        end = body.index(">", i + 3)
        return f"(?P={body[i + 3 : end]})", end + 1
    if nxt.isdigit() and nxt != "0":
        digits = _DIGITS.match(body, i + 1)
        assert digits is not None
        if int(digits.group()) <= groups:
            return f"(?:\\{digits.group()})", digits.end()
    return _common_escape(body, i, flags)


def _common_escape(body: str, i: int, flags: str) -> tuple[str, int]:
    """Escapes that mean the same inside and outside a class."""
    nxt = body[i + 1 : i + 2]
    unicode = "u" in flags
    if nxt == "c":
        letter = body[i + 2 : i + 3]
        if letter.isascii() and letter.isalpha():
            return f"\\x{ord(letter) % 32:02x}", i + 3
        return "\\\\c", i + 2  # Annex B: a backslash and a c
    if nxt == "u":
        if unicode and body.startswith("{", i + 2) and "}" in body[i + 3 :]:
            end = body.index("}", i + 3)
            return f"\\U{int(body[i + 3 : end], 16):08x}", end + 1
        if re.fullmatch(r"[0-9A-Fa-f]{4}", body[i + 2 : i + 6]):
            return body[i : i + 6], i + 6
        return "u", i + 2
    if nxt == "x":
        if re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 2 : i + 4]):
            return body[i : i + 4], i + 4
        return "x", i + 2
    if nxt in ("p", "P") and unicode:
        end = body.find("}", i + 2)
        return body[i : end + 1], end + 1
    if nxt.isdigit():
        if unicode:  # only \0 is allowed with u (JS refused the rest)
            return "\\x00", i + 2
        octal = _OCTAL.match(body, i + 1)
        if octal is None:  # \8, \9: the digit itself
            return nxt, i + 2
        return f"\\x{{{int(octal.group(), 8):x}}}", octal.end()
    if nxt == "":
        return "\\\\", i + 1
    if nxt.isascii() and nxt.isalpha() and nxt not in "bBdDwWsStnvfr":
        return nxt, i + 2  # JS reads an unknown letter escape as the letter itself
    if nxt.isascii() and not nxt.isalnum():
        return "\\" + nxt, i + 2
    import regex

    return regex.escape(nxt), i + 2


def _char_class(body: str, start: int, flags: str) -> tuple[str, int]:
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
            elif nxt == "b":
                out.append("\\x08")
                i += 2
            elif nxt in ("D", "W", "S"):
                out.append(_NEGATED_IN_CLASS[nxt])
                i += 2
            elif nxt == "-":
                out.append("\\-")
                i += 2
            else:
                piece, i = _common_escape(body, i, flags)
                out.append(piece)
        else:
            doubled = char in "[&~|-" and _doubled(body, i)
            out.append("\\" + char if doubled or char == "[" else char)
            i += 1
    if i >= len(body):
        raise RegexKeyError("unterminated character class")
    out.append("]")
    return "".join(out), i + 1


# \D, \W, \S inside a class: the complement of an ASCII set, as a nested-free class item.
_NEGATED_IN_CLASS = {
    "D": "\\x00-/:-\\U0010ffff",
    "W": "\\x00-/:-@\\[-^`{-\\U0010ffff",
    "S": "\\x00-\\x08\\x0e-\\x1f!-\\x9f\\xa1-\\u167f\\u1681-\\u1fff\\u200b-\\u2027"
         "\\u202a-\\u202e\\u2030-\\u205e\\u2060-\\u2fff\\u3001-\\ufefe\\uff00-\\U0010ffff",
}


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


def _quantifier(body: str, i: int) -> tuple[re.Match[str] | None, re.Match[str] | None, int]:
    """The quantifier after an atom at ``i``: (optional ``?``/``*``/``{0,…}``, repeated
    ``+``/``{n,…}``, the index after it and any lazy ``?``)."""
    optional = _OPTIONAL.match(body, i)
    repeated = _REPEAT.match(body, i)
    quantifier = optional or repeated
    if quantifier is not None:
        i = quantifier.end()
        lazy = _LAZY.match(body, i)
        i = lazy.end() if lazy else i
    return optional, repeated, i


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
        optional, repeated, i = _quantifier(body, i)
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


def required_alternatives(body: str, limit: int = 8) -> tuple[str, ...]:
    """Strings one of which every match of ``body`` (without the ``i`` flag) contains: the
    longest run of literal characters and small character classes (``[表质]``), spelled out,
    at most ``limit`` spellings. ``/金[表质]/`` gives ``金表``, ``金质`` where
    ``required_literals`` only knows ``金``. Conservative like it: none when unsure."""
    if _INLINE_FLAGS.search(body) or _top_level_alternation(body):
        return ()
    runs: list[list[str]] = []
    current = [""]
    i, n = 0, len(body)
    while i < n:
        choices, i = _choice_atom(body, i)
        optional, repeated, i = _quantifier(body, i)
        if choices is None or optional is not None:
            runs.append(current)
            current = [""]
            continue
        spelled = [start + choice for start in current for choice in choices]
        if len(spelled) > limit:
            runs.append(current)
            spelled = list(choices)
        current = spelled
        if repeated is not None:  # once for sure; what follows need not be next to it
            runs.append(current)
            current = [""]
    runs.append(current)
    best = max(runs, key=lambda spellings: min(len(spelling) for spelling in spellings))
    return tuple(dict.fromkeys(best)) if best[0] else ()


def _choice_atom(body: str, i: int) -> tuple[tuple[str, ...] | None, int]:
    """The characters the atom at ``i`` can match, when it is a literal or a class of a few
    plain characters (None for anything else), and the index after the atom."""
    if body[i] != "[":
        char, after = _literal_atom(body, i)
        return ((char,) if char is not None else None), after
    after = _skip_class(body, i)
    inside = body[i + 1 : after - 1]
    plain = all(
        char.isprintable() and not char.isspace() and char not in "\\^-[]"
        and not "\ud800" <= char <= "\udfff" and char <= "\uffff"
        for char in inside
    )  # fmt: skip
    if not inside or not plain or len(inside) > 4 or after > len(body) or body[after - 1] != "]":
        return None, after
    return tuple(dict.fromkeys(inside)), after


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
    r"x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f]+\}|u[0-9A-Fa-f]{4}|c[A-Za-z]|k<[^>]*>|[pP]\{[^}]*\}|\d+|.",
    re.S,
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
