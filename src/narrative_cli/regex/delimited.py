"""The one shape of regex script that Python runs exactly as JavaScript does: a delimited block.

Most cards' prompt scripts hide a block (``/<thinking>[\\s\\S]*?<\\/thinking>/g`` replaced with
nothing, or with a fixed text). Sending each narrative to the QuickJS helper for that was a
round trip a turn (#17, session seven: 4% of a replayed turn in this process, plus the
helper's own time), so a script of exactly this shape runs here instead; every other script
still runs in JavaScript (``regex.quickjs_run``), where patterns mean what they mean in
SillyTavern.

The shape, and why it is exact: the pattern is ``OPEN MIDDLE CLOSE`` where OPEN (not empty)
and CLOSE are literal text (characters that are not regex syntax, or a backslash before one
of ``^$\\.*+?()[]{}|/-``, which JavaScript reads as that character), MIDDLE is ``[\\s\\S]*?``
or ``[\\S\\s]*?`` (any character, lazily; ``.*?`` too with the ``s`` flag); the flags are
among ``g``, ``m`` (no ``^`` or ``$`` to change) and ``s``; the replacement holds no ``$``
and no ``{{`` (so it is inserted as it is: no group, no ``{{match}}``, nothing for trim
strings to act on) and no template. A backtracking engine scanning from the left finds OPEN
at its first occurrence p; the lazy middle then stops at the first CLOSE at or after the end
of OPEN, at q; when there is none, no later start can find one either, so nothing more
matches. With ``g`` the scan goes on from the end of the match (never empty: OPEN is not).
That is ``str.find`` twice per match. A text holding a surrogate code point goes to
JavaScript (its strings are UTF-16). ``tests/test_regex_delimited.py`` checks this against
the JavaScript runner on generated texts and patterns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

__all__ = ["Delimited", "delimited", "run_here"]

SYNTAX = frozenset("^$\\.*+?()[]{}|")
ESCAPED = frozenset("^$\\.*+?()[]{}|/-")  # "\\" before one of these is the character itself
MIDDLES = ("[\\s\\S]*?", "[\\S\\s]*?")
DOT_MIDDLE = ".*?"  # any character only with the s flag
FLAGS = frozenset("gms")


class _Script(Protocol):
    """What ``run_here`` reads of a script (``quickjs_run.JsScript``)."""

    @property
    def source(self) -> str: ...
    @property
    def flags(self) -> str: ...
    @property
    def replace(self) -> str: ...
    @property
    def mark(self) -> bool: ...


@dataclass(frozen=True)
class Delimited:
    """A script of the delimited shape: its two literals, its replacement, whether global."""

    open: str
    close: str
    replace: str
    every: bool

    def apply(self, text: str) -> str:
        """``text`` with the blocks replaced, as JavaScript's ``String.replace`` does it."""
        pieces: list[str] = []
        at = 0
        while True:
            start = text.find(self.open, at)
            if start < 0:
                break
            end = text.find(self.close, start + len(self.open))
            if end < 0:
                break
            pieces += [text[at:start], self.replace]
            at = end + len(self.close)
            if not self.every:
                break
        if not pieces:
            return text
        pieces.append(text[at:])
        return "".join(pieces)


@lru_cache(maxsize=256)
def delimited(source: str, flags: str, replace: str, mark: bool) -> Delimited | None:
    """The script as a ``Delimited`` when it has the shape (module docstring), else None."""
    if mark or "$" in replace or "{{" in replace:
        return None
    if len(set(flags)) != len(flags) or not set(flags) <= FLAGS:
        return None
    middles = MIDDLES + ((DOT_MIDDLE,) if "s" in flags else ())
    for middle in middles:
        cut = source.find(middle)
        while cut >= 0:
            opened, closed = _literal(source[:cut]), _literal(source[cut + len(middle) :])
            if opened and closed is not None:
                return Delimited(opened, closed, replace, "g" in flags)
            cut = source.find(middle, cut + 1)
    return None


def _literal(part: str) -> str | None:
    """The text a pattern piece of plain characters and escaped syntax matches, else None."""
    chars: list[str] = []
    at = 0
    while at < len(part):
        char = part[at]
        if "\ud800" <= char <= "\udfff":
            return None
        if char == "\\":
            if part[at + 1 : at + 2] not in ESCAPED or at + 1 >= len(part):
                return None
            chars.append(part[at + 1])
            at += 2
            continue
        if char in SYNTAX:
            return None
        chars.append(char)
        at += 1
    return "".join(chars)


def run_here(text: str, scripts: Sequence[_Script]) -> str | None:
    """``text`` after ``scripts`` in order when every one has the delimited shape and the text
    holds no surrogate; None otherwise (then JavaScript runs them all)."""
    shaped = [delimited(s.source, s.flags, s.replace, bool(s.mark)) for s in scripts]
    if any(d is None or _has_surrogate(d.replace) for d in shaped) or _has_surrogate(text):
        return None
    for found in shaped:
        assert found is not None
        text = found.apply(text)
    return text


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
