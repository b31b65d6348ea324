"""Remembered full-text matches, per term, kept up to date as documents change (#17).

The automatic recall searches the player's words every turn (``context.text_search``), and
the same words come back turn after turn ("the lamp", a name): asking FTS5 each time was a
twentieth of a replayed turn at 500 turns, growing with the story. ``TermMemo`` keeps, for
each term asked, the row ids of the documents containing it, and brings them up to date
from the writes since (``changed``): a document gone or rewritten leaves the list, a new or
rewritten one joins it when it contains the term.

A common word's matches grow with the story, and a search only needs to know it is common:
a term can be remembered with only some of its matches (``complete`` false: the first rows
a limited query found, kept up to date the same way), which still says "at least this many".

That check is done here, in Python, so it must find exactly what the trigram index finds:
a substring, case folded. It is made only where Python's ``lower`` and SQLite's case folding
agree: ASCII, and scripts without case (CJK, kana, general and CJK punctuation, fullwidth
punctuation; ``_CASELESS``). A term or a document with any other character (accented
letters, Greek, the Kelvin sign ...) is never decided here: the term is asked of FTS5 again.
"""

from __future__ import annotations

import re
from bisect import insort
from collections.abc import Iterable
from dataclasses import dataclass

KEEP_CHANGES = 256  # writes remembered: a term not asked for that long is asked again
KEEP_TERMS = 1024

_OTHER = re.compile(
    "[^\x00-\x7f\u2000-\u206f\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uff01-\uff20\uff3b-\uff40\uff5b-\uff65]"
)


def decidable(text: str) -> bool:
    """Whether a substring match in ``text`` can be decided with ``lower`` (see above)."""
    return text.isascii() or _OTHER.search(text) is None


@dataclass(frozen=True)
class _Change:
    version: int
    removed: frozenset[int]  # row ids of documents gone or rewritten
    added: tuple[tuple[int, str], ...]  # (row id, text) of documents new or rewritten


class TermMemo:
    """Each term's matching row ids (ascending), all of them or some (``complete``), as of
    the index's ``version``."""

    def __init__(self) -> None:
        self.version = 0
        self._changes: list[_Change] = []
        self._terms: dict[str, tuple[int, list[int], bool]] = {}

    def changed(self, removed: Iterable[int], added: Iterable[tuple[int, str]]) -> None:
        """Note a write: the documents ``removed`` (gone or rewritten) and ``added``."""
        self.version += 1
        self._changes.append(_Change(self.version, frozenset(removed), tuple(added)))
        if len(self._changes) > KEEP_CHANGES:
            del self._changes[0]

    def get(self, term: str) -> tuple[list[int], bool] | None:
        """The row ids of the documents containing ``term`` (do not change the list) and
        whether they are all of them (else some of them), or None when the memo cannot tell:
        ask the index, then ``put`` the answer."""
        known = self._terms.get(term)
        if known is None:
            return None
        version, rowids, complete = known
        if version == self.version:
            return rowids, complete
        first = self._changes[0].version if self._changes else self.version + 1
        if version + 1 < first:  # the writes since are no longer all remembered
            del self._terms[term]
            return None
        rowids = list(rowids)
        folded = term.lower()
        for change in self._changes[version + 1 - first :]:
            if change.removed:
                rowids = [rowid for rowid in rowids if rowid not in change.removed]
            for rowid, text in change.added:
                if not decidable(text):
                    del self._terms[term]
                    return None
                if folded in text.lower():
                    insort(rowids, rowid)
        self._terms[term] = (self.version, rowids, complete)
        return rowids, complete

    def put(self, term: str, rowids: list[int], complete: bool = True) -> None:
        """Remember what the index found for ``term`` now: all its matches, or (``complete``
        false) some of them (only a term decidable here)."""
        if not decidable(term):
            return
        if len(self._terms) >= KEEP_TERMS:
            self._terms.clear()
        self._terms[term] = (self.version, sorted(rowids), complete)
