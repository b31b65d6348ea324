"""Recall of anything said (issue #17 item 2): search the story's past text for passages.

The story's documents (every finished turn's text, every summary entry, every chapter and
arc) live in a full-text index the session database keeps (``store.text_index``: SQLite FTS5
with the trigram tokenizer, so Chinese needs no word splitting, and a plain scan for terms
under three characters such as 老周). This module holds what does not depend on SQLite: which
words of the player's input are worth searching for, how matches are ranked, and how the
best passages are cut to a token cap. Everything is deterministic: the same documents and
input give the same passages, ties broken by turn number, then by document key.

Two callers: the pipeline every turn (``pipeline.search_recall``: the planner's
``recall_terms`` and the rare words and names of the input) and ``/recall QUERY``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Protocol

from narrative_cli.tokens import estimate_tokens

TURN, SUMMARY, CHAPTER = "turn", "summary", "chapter"
MAX_AUTO_TERMS = 32  # candidate words taken from one input
MAX_PASSAGES = 3
PASSAGE_TOKENS = 160  # one passage at most
RARE_SHARE = 0.02  # a word in more than this share of the documents (and > RARE_FLOOR) is common
RARE_FLOOR = 3
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]{2,}|\d{3,}")
_SENTENCE_END = "。！？!?…\n"
_STOPWORDS = frozenset(
    "the and you your for with that this from have what when where which who why how not are"
    " was were will would can could should into onto about again there their them they then"
    " than just like some any all out our ours his her hers its it's i'm don't let look ask"
    " tell say said take go went come came see saw know".split()
)


class Document:
    """One searchable text: ``key`` is unique in the story (``turn:12``, ``summary:12:0``,
    ``chapter:1-40:1:41``), ``turn`` the turn it belongs to (a chapter: its last turn).

    Read-only, compared by its four fields. A turn's document (``joined``) keeps the player's
    words and the story's as the prompt history holds them and makes its text when asked:
    the story's text is held once, not once more per turn for the search (#17: at thousands
    of turns, and with real stories' narratives of kilobytes, the largest copy)."""

    __slots__ = ("key", "turn", "kind", "_first", "_second")
    key: str
    turn: int
    kind: str
    _first: str
    _second: str | None

    def __init__(self, key: str, turn: int, kind: str, text: str) -> None:
        _set(self, "key", key)
        _set(self, "turn", turn)
        _set(self, "kind", kind)
        _set(self, "_first", text)
        _set(self, "_second", None)

    @classmethod
    def joined(cls, key: str, turn: int, kind: str, first: str, second: str) -> Document:
        """The document whose text is ``f"{first}\\n{second}".strip()``, without making it."""
        document = cls(key, turn, kind, first)
        _set(document, "_second", second)
        return document

    @property
    def text(self) -> str:
        if self._second is None:
            return self._first
        return f"{self._first}\n{self._second}".strip()

    def contains(self, term: str) -> bool:
        """Whether the text holds ``term``, looked for in each part when the term holds no
        whitespace (it cannot then cross the line between them, nor meet what ``strip``
        takes away)."""
        if self._second is None or _SPACE.search(term):
            return term in self.text
        return term in self._first or term in self._second

    def folded_contains(self, folded: str) -> bool:
        """``contains`` on the case-folded text (``folded``: a case-folded term)."""
        if self._second is None or _SPACE.search(folded):
            return folded in self.text.casefold()
        return folded in self._first.casefold() or folded in self._second.casefold()

    def _fields(self) -> tuple[str, int, str, str]:
        return (self.key, self.turn, self.kind, self.text)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Document):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Document is read-only (cannot set {name!r})")

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(
            ("key", "turn", "kind", "text"), self._fields(), strict=True))
        return f"Document({fields})"


_set = object.__setattr__
_SPACE = re.compile(r"\s")


class TextIndex(Protocol):
    """A story's full-text index (``store.text_index.SessionTextIndex``)."""

    def sync(self, documents: Sequence[Document], later: AbstractSet[str] = frozenset()) -> None:
        """Make the index hold exactly ``documents`` (only what changed is written); those
        with a key in ``later``, which every search until the next sync will ``exclude``,
        may be written later."""

    def matches(self, term: str, at_most: int | None = None) -> list[tuple[str, int]]:
        """``(key, turn)`` of every document containing ``term`` (case-insensitive); with
        ``at_most``, possibly only the first ``at_most + 1`` (enough to call it common)."""

    def document(self, key: str) -> Document | None:
        """The document with ``key`` (after ``sync``)."""

    def count_at_least(self, term: str) -> int:
        """How many documents the index knows to contain ``term`` without a search (all of
        them or a lower bound; the documents waiting to be written left out), else 0."""


@dataclass(frozen=True)
class Passage:
    """A found passage: the document it comes from, the terms it matched, its excerpt."""

    key: str
    turn: int
    kind: str
    terms: tuple[str, ...]
    text: str
    score: float


@dataclass
class SearchResult:
    passages: list[Passage] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # for the trace: what was searched and why


def input_terms(text: str) -> list[str]:
    """Candidate words of a player's input: Latin words (3+ letters, no stop words) and every
    2-, 3- and 4-character run of Chinese text (Chinese has no spaces; the index decides
    which runs are rare). In order of appearance, without repeats, at most MAX_AUTO_TERMS."""
    terms: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word = match.group().lower().strip("'-")
        if len(word) >= 3 and word not in _STOPWORDS:
            terms.setdefault(word, None)
    for run in _CJK.findall(text):
        for size in (4, 3, 2):
            for start in range(len(run) - size + 1):
                terms.setdefault(run[start : start + size], None)
    return list(terms)[:MAX_AUTO_TERMS]


def query_terms(query: str) -> list[str]:
    """The terms of a typed query or of the planner's list: split on spaces, each kept whole."""
    seen: dict[str, None] = {}
    for term in query.split():
        if term.strip():
            seen.setdefault(term.strip().lower(), None)
    return list(seen)


def search(
    index: TextIndex,
    terms: Iterable[str],
    *,
    rare_only: bool,
    exclude: Collection[str] = (),
    budget_tokens: int = 600,
    max_passages: int = MAX_PASSAGES,
    total: int | None = None,
) -> SearchResult:
    """The best passages for ``terms`` within ``budget_tokens``.

    ``exclude`` holds keys the prompt already shows (the writer's window, the summary block).
    With ``rare_only`` (the automatic search) a term must be rare: found in at most
    ``max(RARE_FLOOR, RARE_SHARE × total)`` documents; a shorter term found in exactly the same
    documents as a longer one is dropped (老周 inside 老周说). A document scores the sum of its
    terms' weights, log(1 + total / frequency): rarer words count more."""
    result = SearchResult()
    count = max(total or 0, 1)
    limit = max(RARE_FLOOR, int(RARE_SHARE * count)) if rare_only else None
    found: dict[str, list[tuple[str, int]]] = {}
    dead: list[str] = []  # terms found nowhere searchable: no longer term holding one can be
    for term in sorted(dict.fromkeys(terms), key=len):  # shorter first, each once
        if any(part in term for part in dead):
            continue
        # Excluded documents may fill part of an early stop: ask for that many more.
        at_most = None if limit is None else limit + len(exclude)
        if at_most is not None and index.count_at_least(term) > at_most:
            continue  # common even if every excluded document holds it (#17: no rows read)
        hits = [(key, turn) for key, turn in index.matches(term, at_most) if key not in exclude]
        if not hits:
            dead.append(term)
        elif limit is None or len(hits) <= limit:
            found[term] = hits
    if rare_only:
        found = _without_shadowed(found)
    if not found:
        return result
    result.notes.append("text search: " + ", ".join(f"{t} ({len(h)})" for t, h in found.items()))
    scores: dict[str, float] = {}
    matched: dict[str, list[str]] = {}
    turns: dict[str, int] = {}
    for term, hits in found.items():
        weight = math.log(1 + count / len(hits))
        for key, turn in hits:
            scores[key] = scores.get(key, 0.0) + weight
            matched.setdefault(key, []).append(term)
            turns[key] = turn
    ranked = sorted(scores, key=lambda key: (-round(scores[key], 9), turns[key], key))
    left = budget_tokens
    for key in ranked:
        if len(result.passages) >= max_passages or left < 24:
            break
        document = index.document(key)
        if document is None:
            continue
        terms_here = sorted(matched[key], key=lambda t: (-len(t), t))
        text = excerpt(document.text, terms_here[0], min(PASSAGE_TOKENS, left - 8))
        result.passages.append(
            Passage(key, document.turn, document.kind, tuple(terms_here), text, scores[key])
        )
        left -= estimate_tokens(text) + 8
    return result


def _without_shadowed(found: dict[str, list[tuple[str, int]]]) -> dict[str, list[tuple[str, int]]]:
    keys = {term: frozenset(key for key, _ in hits) for term, hits in found.items()}
    return {
        term: hits
        for term, hits in found.items()
        if not any(term != other and term in other and keys[term] == keys[other] for other in found)
    }


def excerpt(text: str, term: str, tokens: int) -> str:
    """The sentence(s) around the first place ``term`` occurs, within ``tokens``: from the start
    of its sentence, as far as the budget goes; ``…`` marks a cut."""
    text = text.strip()
    at = text.lower().find(term.lower())
    if at < 0:
        at = 0
    start = at
    while start > 0 and text[start - 1] not in _SENTENCE_END and at - start < 200:
        start -= 1
    piece = text[start:]
    if estimate_tokens(piece) > tokens:
        low, high = 0, len(piece)
        while low < high:
            middle = (low + high + 1) // 2
            if estimate_tokens(piece[:middle]) + 1 <= tokens:
                low = middle
            else:
                high = middle - 1
        piece = piece[:low].rstrip() + "…"
    cut_before = start > 0 and text[start - 1] not in _SENTENCE_END
    return ("…" if cut_before else "") + piece.strip()
