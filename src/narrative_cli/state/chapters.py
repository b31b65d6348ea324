"""Chapter memory (issue #17): old summary entries folded into chapters, chapters into arcs.

A ``Chapter`` covers turns ``first``..``last`` at a ``level`` (1: a chapter, folded from
summary entries; 2: an arc, folded from chapters or earlier arcs). It is shown in prompts from
turn ``shown_from`` on, and to an agent only once that agent's n+m window has cut at or after
that turn (``context.parts.story_summary``): between two cuts of its window every agent's
``<story_summary>`` stays byte for byte the same.

``plan_fold`` is the budget rule, deterministic and pure: given the store, the turn the
summary block stops at (the first turn any window shows in full) and a token budget, it names
the next fold to ask the ``compaction`` agent for, or None when the block fits. Each level has
a share of the budget (entries 1/2, chapters 3/10, arcs 1/5); the lowest level over its share
is folded first, so the whole block stays near the budget however long the story runs.
Entries and chapters are never deleted: a fold only hides what it covers from prompts
(``/summary``, exports and recall still see every entry).
"""

from __future__ import annotations

import operator
import threading
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from narrative_cli.errors import StoreError
from narrative_cli.tokens import estimate_tokens

__all__ = ["CHAPTER", "ARC", "Chapter", "Fold", "plan_fold", "visible_chapters"]

CHAPTER, ARC = 1, 2
_KIND = {CHAPTER: {"zh": "章节", "en": "chapter"}, ARC: {"zh": "篇章", "en": "arc"}}
ENTRY_SHARE, CHAPTER_SHARE, ARC_SHARE = 0.5, 0.3, 0.2
CHAPTER_LENGTH, ARC_LENGTH = 0.08, 0.1  # a fold's reply, as a share of the budget


@dataclass(frozen=True)
class Chapter:
    """A folded stretch of the story: turns ``first``..``last`` told in ``text``."""

    first: int
    last: int
    level: int
    text: str
    shown_from: int  # the first turn whose prompts may show it

    def labelled(self, lang: str) -> str:
        """``[第1-40轮·章节] …`` or ``[Turns 1-40, chapter] …``."""
        kind = _KIND[self.level]["zh" if lang == "zh" else "en"]
        if lang == "zh":
            return f"[第{self.first}-{self.last}轮·{kind}] {self.text}"
        return f"[Turns {self.first}-{self.last}, {kind}] {self.text}"

    def covers(self, other: Chapter) -> bool:
        """Does this one hide ``other`` (a lower level, or an older fold at its level)?"""
        inside = self.first <= other.first and other.last <= self.last
        narrower = (other.first, other.last) != (self.first, self.last)
        return inside and other is not self and (
            other.level < self.level or narrower or other.shown_from < self.shown_from
        )

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "level": self.level,
                "text": self.text, "shown_from": self.shown_from}

    @cached_property
    def shared_dict(self) -> dict[str, Any]:
        """``to_dict``'s object, made once and handed out again (never to be changed): every
        snapshot holds every chapter (70 at turn 2,000), and the store takes the JSON of the
        very objects it wrote last turn instead of encoding them again (#17, session nine)."""
        return self.to_dict()

    @classmethod
    def from_dict(cls, data: Any) -> Chapter:
        if not isinstance(data, Mapping):
            raise StoreError(f"saved chapters: cannot read {data!r}")
        try:
            values = [data[key] for key in ("first", "last", "level", "shown_from")]
        except KeyError as missing:
            raise StoreError(f"saved chapters: a chapter lacks {missing}") from None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise StoreError(f"saved chapters: turns and level must be whole numbers in {data!r}")
        first, last, level, shown_from = values
        if level not in _KIND or first > last:
            raise StoreError(f"saved chapters: a chapter must have level 1 or 2 and first <= last:"
                             f" {data!r}")
        return cls(first, last, level, str(data.get("text", "")), shown_from)


def visible_chapters(chapters: Iterable[Chapter], shown_by: int | None = None) -> list[Chapter]:
    """The chapters a prompt shows: those shown from ``shown_by`` or before (None: all), less
    those a shown wider fold covers; in story order.

    Comparing every fold with every other grows with the square of the folds (70 at turn
    2,000), and every prompt of every turn asks; the answer for one set of shown folds is
    kept (by the folds' identity: they are frozen), so a turn pays for it only when a fold
    was added or became visible."""
    shown = [c for c in chapters if shown_by is None or c.shown_from <= shown_by]
    # filed by the count and the first and last folds (a key of every fold's id held 64 tuples
    # as long as the folds: #17); the folds themselves are checked below, one by one
    key = (len(shown), id(shown[0]), id(shown[-1])) if shown else (0, 0, 0)
    with _LOCK:
        found = _VISIBLE.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], shown, strict=True)):
        return list(found[1])
    kept = [c for c in shown if not any(o.covers(c) for o in shown)]
    result = sorted(kept, key=lambda c: (c.first, -c.level, c.last))
    with _LOCK:
        if len(_VISIBLE) >= _VISIBLE_KEPT:
            _VISIBLE.pop(next(iter(_VISIBLE)))
        _VISIBLE[key] = (tuple(shown), tuple(result))  # holding the folds keeps their ids
    return result


# visible_chapters' answers by the shown folds' ids (bounded, oldest dropped first).
_VISIBLE: dict[tuple[int, int, int], tuple[tuple[Chapter, ...], tuple[Chapter, ...]]] = {}
_VISIBLE_KEPT = 64
_LOCK = threading.Lock()


def covered(turn: int, chapters: Sequence[Chapter]) -> bool:
    """Is ``turn``'s summary folded into one of ``chapters``?"""
    return any(c.first <= turn <= c.last for c in chapters)


def _loose(
    entries: Sequence[tuple[int, str]], shown: Sequence[Chapter], before_turn: int
) -> list[tuple[int, str]]:
    """The entries before ``before_turn`` that no fold of ``shown`` covers. Entries in turn
    order (a store keeps them so) are taken between the folds by bisection; others one by one."""
    turns = [t for t, _ in entries]
    if any(map(operator.gt, turns, turns[1:])):
        return [(t, line) for t, line in entries if t < before_turn and not covered(t, shown)]
    loose: list[tuple[int, str]] = []
    start = 0  # the first turn after every fold so far
    for fold in sorted(shown, key=lambda c: c.first):
        stop = min(fold.first, before_turn)
        loose += entries[bisect_left(turns, start) : bisect_left(turns, stop)]
        start = max(start, fold.last + 1)
    loose += entries[bisect_left(turns, start) : bisect_left(turns, before_turn)]
    return loose


@dataclass(frozen=True)
class Fold:
    """One fold to ask for: the labelled ``lines`` it replaces, the turns they span, the level
    of the result and its length limit in tokens."""

    level: int
    first: int
    last: int
    lines: tuple[str, ...]
    limit_tokens: int

    def kind(self, lang: str) -> str:
        return _KIND[self.level]["zh" if lang == "zh" else "en"]


def plan_fold(
    entries: Sequence[tuple[int, str]],
    chapters: Sequence[Chapter],
    before_turn: int,
    budget: int,
    lang: str,
) -> Fold | None:
    """The next fold that brings the summary block (``entries``: ``(turn, labelled line)``;
    only turns before ``before_turn`` count) nearer to ``budget`` tokens, or None."""
    shown = visible_chapters(chapters)
    loose = _loose(entries, shown, before_turn)
    chapter_items = [c for c in shown if c.level == CHAPTER]
    arcs = [c for c in shown if c.level == ARC]
    cost = {id(c): _tokens(c.text) for c in shown}
    entry_tokens = sum(_tokens(line) for _, line in loose)
    chapter_tokens = sum(cost[id(c)] for c in chapter_items)
    arc_tokens = sum(cost[id(c)] for c in arcs)
    if entry_tokens + chapter_tokens + arc_tokens <= budget:
        return None
    if entry_tokens > budget * ENTRY_SHARE:
        return _fold_entries(loose, budget)
    if chapter_tokens > budget * CHAPTER_SHARE and len(chapter_items) >= 2:
        return _fold(ARC, chapter_items[:-1], budget, lang)
    if arc_tokens > budget * ARC_SHARE and len(arcs) >= 2:
        return _fold(ARC, arcs, budget, lang)
    return None


def _fold_entries(loose: list[tuple[int, str]], budget: int) -> Fold | None:
    """Fold the oldest entries, keeping the newest within half the entries' share."""
    keep_tokens, kept = budget * ENTRY_SHARE / 2, 0
    cut = len(loose)
    while cut > 0 and kept + _tokens(loose[cut - 1][1]) <= keep_tokens:
        cut -= 1
        kept += _tokens(loose[cut][1])
    # Whole turns only: a turn's entries go into the same chapter.
    while 0 < cut < len(loose) and loose[cut][0] == loose[cut - 1][0]:
        cut += 1
    folded = loose[:cut]
    if len(folded) < 2:
        return None
    limit = max(int(budget * CHAPTER_LENGTH), 40)
    return Fold(CHAPTER, folded[0][0], folded[-1][0], tuple(line for _, line in folded), limit)


def _fold(level: int, items: Sequence[Chapter], budget: int, lang: str) -> Fold:
    limit = max(int(budget * ARC_LENGTH), 48)
    lines = tuple(c.labelled(lang) for c in items)
    return Fold(level, min(c.first for c in items), max(c.last for c in items), lines, limit)


def _tokens(text: str) -> int:
    return estimate_tokens(text) + 1  # the line break
