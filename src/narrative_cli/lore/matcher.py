"""Lore key matching with SillyTavern's rules (compat §3.4), plus a fast multi-key prefilter.

A key is first macro-substituted (``{{user}}``, ``{{char}}``) and trimmed; an empty key never
matches. A ``/regex/flags`` key is a JavaScript regex tested on the raw scan text and ignores the
case and whole-word settings. A plain key is compared lower-cased unless case-sensitive. With
whole words on, a key without whitespace must sit between ASCII non-word characters
(``[^A-Za-z0-9_]``) or the ends of the text, exactly like SillyTavern's ``(?:^|\\W)key(?:$|\\W)``
without the ``u`` flag: every CJK character counts as a boundary, so a Chinese key matches
wherever it is not glued to an ASCII letter, digit or underscore.

``ProbeIndex`` finds which of thousands of keys occur in a text with one pass over the text's
character pairs instead of one substring search per key.
"""

from __future__ import annotations

import itertools
import re
import string
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from narrative_cli.lore.jskeys import (
    JS_TRIM_CHARS,
    JS_WHITESPACE,
    JsSyntaxError,
    RegexKeyError,
    split_key,
)

if TYPE_CHECKING:
    from narrative_cli.lore.jsregex import JsRegex

_JS_SPACE = re.compile(f"[{JS_WHITESPACE}]")
_ASCII_WORD = frozenset(string.ascii_letters + string.digits + "_")
_MACRO = re.compile(r"\{\{\s*(user|char)\s*\}\}|<(USER|BOT|CHAR)>", re.IGNORECASE)
_MARKER = "\x01"  # SillyTavern's message-start marker in the scan text
_UNITS = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"  # native order, for "I"


def substitute_names(text: str, user: str, char: str) -> str:
    """Replace ``{{user}}``/``<USER>`` and ``{{char}}``/``<BOT>``/``<CHAR>`` (case-insensitive)."""
    if "{{" not in text and "<" not in text:
        return text

    def name(match: re.Match[str]) -> str:
        which = (match.group(1) or match.group(2)).lower()
        return user if which == "user" else char

    return _MACRO.sub(name, text)


@dataclass(frozen=True)
class Key:
    """One key of an entry, ready to match."""

    raw: str  # as written in the entry
    text: str  # what plain matching looks for (lower-cased unless case-sensitive)
    lower: bool  # compared with the lower-cased scan text
    whole_word: bool  # a single word under matchWholeWords: needs ASCII boundaries
    regex: JsRegex | None = None
    problem: str = ""  # why a /regex/ key was refused; such a key never matches
    note: str = ""  # a /…/ key JavaScript cannot compile: plain text, as in SillyTavern

    @cached_property
    def probes(self) -> tuple[str, ...]:
        """Strings every match contains (for ProbeIndex); empty when the key must be tested.
        Computed once: the scan asks for every candidate key in every pass."""
        if self.problem:
            return ()
        found = self.regex.literals if self.regex is not None else (self.text,)
        if any(_MARKER in probe or "\n" in probe for probe in found):
            return ()
        return found

    @cached_property
    def choices(self) -> tuple[str, ...]:
        """Strings one of which every match of a regex key contains (for ProbeIndex, looked up
        in the exact text); empty when unknown. Spares most searches of the scan text."""
        if self.problem or self.regex is None:
            return ()
        found = self.regex.alternatives
        if any(_MARKER in choice or "\n" in choice for choice in found):
            return ()
        return found

    @cached_property
    def probe_lower(self) -> bool:
        """Whether the probes are looked up in the lower-cased text."""
        return self.lower if self.regex is None else "i" in self.regex.flags


def compile_key(
    raw: str,
    *,
    case_sensitive: bool,
    whole_words: bool,
    substitute: Callable[[str], str] | None = None,
    trim: bool = True,
) -> Key | None:
    """A matchable key, or None when it is empty after macros and trimming."""
    text = substitute(raw) if substitute is not None else raw
    if trim:
        text = text.strip(JS_TRIM_CHARS)  # JavaScript's trim(), not Python's strip()
    if not text:
        return None
    parts = split_key(text)
    note = ""
    if parts is not None:
        from narrative_cli.lore.jsregex import compile_js  # the translator: for regex keys only

        try:
            regex = compile_js(*parts)
        except JsSyntaxError as exc:
            note = f"{text} {exc}: it is matched as plain text, as SillyTavern does"
        except RegexKeyError as exc:
            return Key(raw, text, False, False, problem=f"regex {text} {exc}")
        else:
            return Key(raw, text, False, False, regex=regex)
    lower = not case_sensitive
    needle = text.lower() if lower else text
    return Key(raw, needle, lower, whole_words and _JS_SPACE.search(needle) is None, note=note)


def key_matches(key: Key, text: str, lowered: str | None = None) -> bool:
    """Whether ``key`` matches the scan ``text`` (``lowered`` is ``text.lower()`` if known)."""
    if key.problem:
        return False
    if key.regex is not None:
        return key.regex.search(text)
    haystack = (lowered if lowered is not None else text.lower()) if key.lower else text
    if key.whole_word:
        return find_word(haystack, key.text)
    return key.text in haystack


def find_word(haystack: str, needle: str) -> bool:
    """True when ``needle`` occurs with a non-ASCII-word character (or an end) on both sides."""
    size = len(needle)
    start = haystack.find(needle)
    while start >= 0:
        end = start + size
        before_ok = start == 0 or haystack[start - 1] not in _ASCII_WORD
        if before_ok and (end == len(haystack) or haystack[end] not in _ASCII_WORD):
            return True
        start = haystack.find(needle, start + 1)
    return False


class ProbeIndex:
    """Finds which of many fixed strings occur in a text, with one pass over its pairs.

    Strings are grouped by their first two characters; the text's set of adjacent character
    pairs (built in C by ``zip``) selects the few groups worth a substring check. Results are
    memoized per text, so the history shared by consecutive turns is scanned once.
    """

    _MEMO_LIMIT = 512

    def __init__(self, probes: Iterable[str]) -> None:
        self.singles: frozenset[str] = frozenset()
        self.by_pair: dict[tuple[str, str], list[str]] = {}
        singles: set[str] = set()
        for probe in set(probes):
            if len(probe) == 1:
                singles.add(probe)
            elif probe:
                self.by_pair.setdefault((probe[0], probe[1]), []).append(probe)
        self.singles = frozenset(singles)
        self.pairs: frozenset[tuple[str, str]] = frozenset(self.by_pair)
        self.by_code: dict[int, list[str]] = {}  # the same groups, by pair_code (BMP pairs)
        for (first, second), group in self.by_pair.items():
            code = pair_code(first + second)
            if code is not None:
                self.by_code[code] = group
        self.codes = frozenset(self.by_code)
        self.size = len(self.singles) + sum(len(group) for group in self.by_pair.values())
        self._memo: dict[str, frozenset[str]] = {}
        self._memo_lower: dict[str, frozenset[str]] = {}

    def __len__(self) -> int:
        return self.size

    def scan(self, text: str) -> frozenset[str]:
        """Every indexed string that occurs in ``text``."""
        known = self._memo.get(text)
        if known is not None:
            return known
        found = self._singles_in(text)
        if self.by_pair and len(text) > 1:
            for group in self._pair_groups(text):
                for probe in group:
                    if len(probe) == 2 or probe in text:
                        found.add(probe)
        result = frozenset(found)
        if len(self._memo) >= self._MEMO_LIMIT:
            self._memo.clear()
        self._memo[text] = result
        return result

    def _pair_groups(self, text: str) -> list[list[str]]:
        """The groups of strings whose first two characters occur side by side in ``text``.

        A text of BMP characters only (every Chinese, Japanese and Korean text without emoji)
        is read as 32-bit numbers, one per adjacent pair, straight from its UTF-16 bytes: about
        3.5 times faster than building a tuple per pair, and no pair of it can start a string
        holding a character outside the BMP. Other texts are read pair by pair."""
        codes = pair_codes(text)
        if codes is not None:
            by_code = self.by_code
            return [by_code[code] for code in self.codes.intersection(codes)]
        by_pair = self.by_pair
        pairs = zip(text, text[1:], strict=False)
        return [by_pair[pair] for pair in self.pairs.intersection(pairs)]

    def _singles_in(self, text: str) -> set[str]:
        """The one-character strings in ``text``: a substring test each while there are few
        (C-speed, about six times cheaper per string than the intersection is per character
        of text, which makes a new string object for every non-Latin-1 character)."""
        singles = self.singles
        if len(singles) * 6 < len(text):
            return {char for char in singles if char in text}
        return set(singles.intersection(text))

    def scan_lower(self, text: str) -> frozenset[str]:
        """``scan(text.lower())``, memoized by ``text`` itself: the scan asks again for the same
        pieces pass after pass, and lower-casing them anew each time (a new string, hashed and
        compared again) cost more than the lookups."""
        known = self._memo_lower.get(text)
        if known is None:
            known = self.scan(text.lower())
            if len(self._memo_lower) >= self._MEMO_LIMIT:
                self._memo_lower.clear()
            self._memo_lower[text] = known
        return known

    def clear_memo(self) -> None:
        """Forget memoized texts (benchmarks use it to measure cold scans)."""
        self._memo.clear()
        self._memo_lower.clear()


def pair_code(pair: str) -> int | None:
    """The number ``pair_codes`` reads for a two-character string; None outside the BMP."""
    data = pair.encode(_UNITS, "surrogatepass")
    return memoryview(data).cast("I")[0] if len(data) == 4 else None


def pair_codes(text: str) -> Iterator[int] | None:
    """One number per adjacent character pair of ``text`` (two UTF-16 units read as one
    unsigned 32-bit integer, at every even and then every odd unit), or None when ``text``
    holds a character outside the BMP (a surrogate pair would split it)."""
    data = text.encode(_UNITS, "surrogatepass")
    if len(data) != 2 * len(text):
        return None
    view = memoryview(data)
    even = len(data) // 4 * 4
    odd = (len(data) - 2) // 4 * 4
    return itertools.chain(view[:even].cast("I"), view[2 : 2 + odd].cast("I"))
