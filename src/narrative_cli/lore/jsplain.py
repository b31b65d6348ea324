"""Patterns JavaScript surely accepts, told apart without starting QuickJS.

Whether ``new RegExp(body, flags)`` compiles is JavaScript's verdict (``jskeys.js_syntax_error``
asks QuickJS). Most patterns that cards carry (``<status>[\\s\\S]*?<\\/status>``, ``\\[(.+?)\\]``)
use a small, plain part of the syntax whose rules are the same in every engine, so this
recogniser answers "valid" for them and QuickJS (its module, its runtime, a context) is never
loaded. It answers only "valid" or "ask JavaScript", never "invalid": anything outside the plain
part (backreferences, named groups, lookbehind, ``\\x``/``\\u``/``\\c``/``\\p`` escapes, braces
that are not a quantifier, the ``u``/``v``/``d`` flags, deep nesting) goes to QuickJS as
before. ``tests/test_jsplain.py`` checks every "valid" against QuickJS on generated patterns.

The plain part, in the terms of the ECMAScript grammar (Annex B, no ``u`` flag)::

    Pattern     := Alternative ("|" Alternative)*
    Alternative := Term*
    Term        := "^" | "$" | "\\b" | "\\B" | "(?=" Pattern ")" | "(?!" Pattern ")"
                 | Atom Quantifier?
    Atom        := "." | a character that is not syntax | "\\" one of ESCAPES
                 | "(" Pattern ")" | "(?:" Pattern ")" | Class
    Quantifier  := ("*" | "+" | "?" | "{n}" | "{n,}" | "{n,m}" with n <= m) "?"?
    Class       := "[" "^"? (ClassChar | ClassChar "-" ClassChar with a <= b | "\\" ESCAPES)* "]"
"""

from __future__ import annotations

__all__ = ["plainly_valid"]

SYNTAX = frozenset("^$\\.*+?()[]{}|")  # "/" is plain in new RegExp(...)
ESCAPES = frozenset("dDsSwWnrtfv/\\.*+?()[]{}|^$-")
CLASS_SYNTAX = frozenset("\\]-[")
PLAIN_FLAGS = frozenset("gimsy")
MAX_DEPTH = 32  # groups inside groups; deeper ones are QuickJS's to judge
MAX_DIGITS = 4  # in a {n,m} quantifier


class _NotPlain(Exception):
    """The pattern leaves the plain part: ask JavaScript."""


def plainly_valid(body: str, flags: str) -> bool:
    """True when ``new RegExp(body, flags)`` surely compiles in JavaScript; False means
    "ask JavaScript", not "invalid"."""
    if len(set(flags)) != len(flags) or not set(flags) <= PLAIN_FLAGS:
        return False
    if any("\ud800" <= char <= "\udfff" for char in body):
        return False  # a lone surrogate: QuickJS's part (``regex.patterns.checked_here``)
    try:
        end = _Reader(body).pattern(0)
    except _NotPlain:
        return False
    return end == len(body)


class _Reader:
    """Reads the plain grammar (module docstring) from ``text``; each method takes the index
    to read at and returns the index after what it read, or raises ``_NotPlain``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def peek(self, at: int, length: int = 1) -> str:
        return self.text[at : at + length]

    def pattern(self, at: int, depth: int = 0) -> int:
        at = self.alternative(at, depth)
        while self.peek(at) == "|":
            at = self.alternative(at + 1, depth)
        return at

    def alternative(self, at: int, depth: int) -> int:
        while at < len(self.text) and self.peek(at) not in ("|", ")"):
            at = self.term(at, depth)
        return at

    def term(self, at: int, depth: int) -> int:
        if self.peek(at) in ("^", "$"):  # no quantifier after an assertion
            return at + 1
        if self.peek(at, 2) in ("\\b", "\\B"):
            return at + 2
        if self.peek(at, 3) in ("(?=", "(?!"):
            return self.group(at + 3, depth)  # no quantifier after a lookahead
        return self.quantifier(self.atom(at, depth))

    def atom(self, at: int, depth: int) -> int:
        char = self.peek(at)
        if char == "(":
            if self.peek(at, 3) == "(?:":
                return self.group(at + 3, depth)
            if self.peek(at + 1) == "?":
                raise _NotPlain  # named groups, lookbehind, (?i) and the like
            return self.group(at + 1, depth)
        if char == "[":
            return self.char_class(at + 1)
        if char == "\\":
            return self.escape(at)
        if char == "." or (char and char not in SYNTAX):
            return at + 1
        raise _NotPlain  # a quantifier with nothing to repeat, a stray ] { }

    def escape(self, at: int) -> int:
        """A backslash at ``at`` and one of ``ESCAPES`` (the same inside a class or out)."""
        if self.peek(at + 1) not in ESCAPES:  # "" at the end: not in it either
            raise _NotPlain  # another escape, or a backslash ending the pattern
        return at + 2

    def group(self, at: int, depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise _NotPlain
        at = self.pattern(at, depth + 1)
        if self.peek(at) != ")":
            raise _NotPlain
        return at + 1

    def quantifier(self, at: int) -> int:
        char = self.peek(at)
        if char in ("*", "+", "?"):
            at += 1
        elif char == "{":
            at = self.braces(at + 1)
        else:
            return at
        return at + 1 if self.peek(at) == "?" else at

    def braces(self, at: int) -> int:
        low, at = self.digits(at)
        high = low
        if self.peek(at) == ",":
            at += 1
            high, at = self.digits(at) if self.peek(at).isdigit() else (low, at)
        if self.peek(at) != "}" or high < low:
            raise _NotPlain
        return at + 1

    def digits(self, at: int) -> tuple[int, int]:
        start = at
        while at < len(self.text) and self.text[at] in "0123456789":
            at += 1
        if not 0 < at - start <= MAX_DIGITS:
            raise _NotPlain
        return int(self.text[start:at]), at

    def char_class(self, at: int) -> int:
        if self.peek(at) == "^":
            at += 1
        while self.peek(at) != "]":
            char = self.peek(at)
            if not char:
                raise _NotPlain  # no closing bracket
            if char == "\\":
                at = self.escape(at)
            elif char in CLASS_SYNTAX:
                raise _NotPlain
            elif self.peek(at + 1) == "-" and self.peek(at + 2) not in ("", "]"):
                end = self.peek(at + 2)
                if end in CLASS_SYNTAX or ord(end) < ord(char):
                    raise _NotPlain
                at += 3
            else:
                at += 1
        return at + 1
