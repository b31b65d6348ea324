"""The story summary: short entries per turn, labelled ``[第N轮]`` (``[Turn N]`` in English).

The label always comes from the real turn number: whatever label the model wrote (``[第3轮]``,
``【第 3 轮】``, ``第三轮：``, ``[Turn 3]``, ``[轮3]``, a stale number copied from older
entries) is removed and replaced, so numbering never drifts. An entry written over several
lines becomes one entry per line. The store is immutable: every change returns a new store,
which suits turn snapshots, regenerate (``replace``) and undo (``drop_from``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import takewhile
from typing import Any, NamedTuple

from narrative_cli.errors import StoreError
from narrative_cli.shared_items import SharedItems
from narrative_cli.state.chapters import Chapter, visible_chapters

__all__ = ["Labelled", "SummaryEntry", "SummaryStore", "strip_turn_label", "turn_label"]

EMPTY_TEXT = {"zh": "（尚无故事摘要）", "en": "(no story summary yet)"}

_NUMERAL = r"[0-9０-９一二三四五六七八九十百千零〇两]+"
_BRACKETED = re.compile(
    r"^\s*[\[【(（<〔]\s*(?:第\s*" + _NUMERAL + r"\s*[轮回]|[轮回]\s*\d+|(?:turn|round)\s*#?\d+)"
    r"\s*[\]】)）>〕]\s*[:：\-—|｜]?\s*",
    re.IGNORECASE,
)
_BARE = re.compile(
    r"^\s*(?:第\s*" + _NUMERAL + r"\s*[轮回]|(?:turn|round)\s*#?\d+)(?:\s*[:：\-—|｜]\s*|\s+)",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_FULLWIDTH = str.maketrans("０１２３４５６７８９", "0123456789")


def turn_label(turn: int, lang: str = "zh") -> str:
    """``[第3轮]`` or ``[Turn 3]``."""
    return f"[第{turn}轮]" if lang == "zh" else f"[Turn {turn}]"


def strip_turn_label(text: str) -> str:
    """``text`` without any turn labels the model put in front of it."""
    previous = None
    while previous != text:
        previous = text
        text = _BRACKETED.sub("", text, count=1)
        text = _BARE.sub("", text, count=1)
    return text.strip()


@dataclass(frozen=True, slots=True)  # one per turn, held for the whole story: no __dict__
class SummaryEntry:
    """One summary line of one turn, stored without its label."""

    turn: int
    text: str

    def labelled(self, lang: str) -> str:
        return f"{turn_label(self.turn, lang)} {self.text}"


class Labelled(NamedTuple):
    """One summary line as prompts show it (``[第3轮] 叙事要点：…``) and its turn: the store's
    ``labelled_entries`` and the prompts' entries (``context.inputs.SummaryEntry`` is this
    class) are the very same objects, so a long story holds each labelled line once (#17)."""

    turn: int
    text: str


@dataclass(frozen=True)
class SummaryStore:
    """All summary entries of a story, ordered by turn, then by the order they came in."""

    lang: str = "zh"
    entries: tuple[SummaryEntry, ...] = ()
    chapters: tuple[Chapter, ...] = ()  # folds of old entries (state.chapters, issue #17)

    def add(self, turn: int, texts: str | Iterable[str]) -> SummaryStore:
        """A store with ``texts`` added to ``turn``; labels fixed, blanks and repeats dropped."""
        _check_turn(turn)
        at_end = not self.entries or self.entries[-1].turn <= turn  # the usual case
        if at_end:  # the turn's entries so far are the last ones: no look at the whole story
            same = reversed(self.entries)
            kept = [entry.text for entry in takewhile(lambda e: e.turn == turn, same)]
        else:
            kept = [entry.text for entry in self.entries if entry.turn == turn]
        new: list[SummaryEntry] = []
        for text in _clean(texts):
            if text not in kept:
                kept.append(text)
                new.append(SummaryEntry(turn, text))
        if at_end:
            before, after = list(self.entries), []
        else:
            before = [entry for entry in self.entries if entry.turn <= turn]
            after = [entry for entry in self.entries if entry.turn > turn]
        store = SummaryStore(self.lang, (*before, *new, *after), self.chapters)
        if not after:  # the usual case: this turn's entries at the end
            _extend_from(self, store, new)
        return store

    @cached_property
    def labelled_entries(self) -> tuple[Labelled, ...]:
        """``(turn, labelled line)`` of every entry, kept: every prompt of every turn reads
        them, and a store made by ``add`` at the end extends its parent's instead of
        labelling every entry again."""
        return tuple(Labelled(entry.turn, entry.labelled(self.lang)) for entry in self.entries)

    def replace(self, turn: int, texts: str | Iterable[str]) -> SummaryStore:
        """A store where ``turn``'s entries are ``texts`` instead (regenerate)."""
        return self.drop(turn).add(turn, texts)

    def drop(self, turn: int) -> SummaryStore:
        """A store without ``turn``'s entries."""
        kept = tuple(e for e in self.entries if e.turn != turn)
        return SummaryStore(self.lang, kept, self.chapters)

    def drop_from(self, turn: int) -> SummaryStore:
        """A store without the entries of ``turn`` and every later turn (undo), and without
        the chapters made from then on."""
        kept = tuple(e for e in self.entries if e.turn < turn)
        folds = tuple(c for c in self.chapters if c.shown_from <= turn)
        return SummaryStore(self.lang, kept, folds)

    def with_chapter(self, chapter: Chapter) -> SummaryStore:
        """A store with one more fold (the entries it covers stay, hidden from prompts)."""
        store = SummaryStore(self.lang, self.entries, (*self.chapters, chapter))
        _extend_from(self, store, ())
        return store

    def compacted_lines(self, before_turn: int | None = None) -> list[str]:
        """The labelled lines a prompt shows: every visible chapter and arc, then the entries
        no chapter covers, in story order (the same as ``lines`` when nothing was folded)."""
        return [text for _, text in self.compacted(before_turn)]

    def compacted(self, before_turn: int | None = None) -> list[tuple[int, str]]:
        """``(last turn, labelled line)`` of what ``compacted_lines`` shows."""
        shown = visible_chapters(self.chapters)
        items = [(c.first, c.last, c.labelled(self.lang)) for c in shown]
        spans = [(c.first, c.last) for c in shown]
        items += [
            (turn, turn, text)
            for turn, text in self.labelled_entries
            if not any(first <= turn <= last for first, last in spans)
        ]
        items.sort(key=lambda item: item[0])
        wanted = [item for item in items if before_turn is None or item[1] < before_turn]
        return [(last, text) for _, last, text in wanted]

    def turns(self) -> list[int]:
        """The turns that have entries, in order."""
        return sorted({entry.turn for entry in self.entries})

    def lines(self, before_turn: int | None = None, turn: int | None = None) -> list[str]:
        """Labelled lines of all turns, of the turns before ``before_turn``, or of one ``turn``."""
        if turn is not None and before_turn is None:  # from the end: entries are in turn order
            found = []
            for number, text in reversed(self.labelled_entries):
                if number < turn:
                    break
                if number == turn:
                    found.append(text)
            return found[::-1]
        return [
            text
            for number, text in self.labelled_entries
            if (before_turn is None or number < before_turn) and (turn is None or number == turn)
        ]

    def render(self, before_turn: int | None = None, *, placeholder: bool = False) -> str:
        """The ``<story_summary>`` text: one labelled line per entry, older turns first.

        With ``before_turn`` only the turns before it are shown (the prompt window holds the
        later ones in full). Nothing to show gives ``""``, or with ``placeholder`` the
        original's ``（尚无故事摘要）``.
        """
        text = "\n".join(self.compacted_lines(before_turn))
        if not text and placeholder:
            return EMPTY_TEXT["zh" if self.lang == "zh" else "en"]
        return text

    def __len__(self) -> int:
        return len(self.entries)

    @cached_property
    def _entry_items(self) -> tuple[dict[str, Any], ...]:
        """``to_dict``'s entry objects (not to be changed: the next store shares them)."""
        return tuple({"turn": entry.turn, "text": entry.text} for entry in self.entries)

    def to_dict(self) -> dict[str, Any]:
        base = self.__dict__.get("_entry_base")  # the parent's tuple, this one's first items
        data = {"lang": self.lang, "entries": SharedItems(self._entry_items, base=base)}
        if self.chapters:  # absent when there are none: snapshots written before #17 unchanged
            data["chapters"] = SharedItems([chapter.shared_dict for chapter in self.chapters])
        _remember(data, self)
        return data

    @classmethod
    def from_dict(cls, data: Any, lang: str = "zh") -> SummaryStore:
        """A store from ``to_dict`` output or the original's ``{entries}`` / ``{summary}`` forms.

        Built in one pass (the same store as adding the entries one by one, which was quadratic
        and, at thousands of turns, most of a turn's own cost): entries are cleaned, repeats
        within a turn dropped, then ordered by turn keeping the order they came in.
        """
        if not isinstance(data, Mapping):
            raise StoreError(f"saved summaries must be an object, got {type(data).__name__}")
        remembered = _recall(data)
        if remembered is not None:
            return remembered
        builder = _Builder()
        if isinstance(data.get("summary"), str) and "entries" not in data:
            for line in data["summary"].splitlines():
                builder.add_labelled(line)
        else:
            entries = data.get("entries", [])
            if not isinstance(entries, list):
                raise StoreError("saved summaries: 'entries' must be a list")
            for item in entries:
                if isinstance(item, str):
                    builder.add_labelled(item)
                elif isinstance(item, Mapping) and _is_turn(item.get("turn")):
                    builder.add(item["turn"], str(item.get("text", "")))
                else:
                    raise StoreError(f"saved summaries: cannot read the entry {item!r}")
        chapters = data.get("chapters", [])
        if not isinstance(chapters, list):
            raise StoreError("saved summaries: 'chapters' must be a list")
        folds = tuple(Chapter.from_dict(item) for item in chapters)
        return cls(str(data.get("lang", lang)), builder.entries(), folds)


def _extend_from(parent: SummaryStore, store: SummaryStore, new: Sequence[SummaryEntry]) -> None:
    """Give ``store`` (``parent`` with ``new`` entries at the end) what ``parent`` already
    made of its entries, extended by the new ones: a turn's cost must not grow with the story
    (every turn adds a line; every prompt and every snapshot reads them all)."""
    known = parent.__dict__.get("labelled_entries")
    if known is not None:
        labelled = tuple(Labelled(entry.turn, entry.labelled(parent.lang)) for entry in new)
        store.__dict__["labelled_entries"] = known + labelled
    items = parent.__dict__.get("_entry_items")
    if items is not None:
        store.__dict__["_entry_items"] = items + tuple(
            {"turn": entry.turn, "text": entry.text} for entry in new
        )
        store.__dict__["_entry_base"] = items


# The stores whose ``to_dict`` output is still about: the next turn starts from the snapshot the
# last one wrote, and reading the same object back needs no rebuild. Bounded, thread-safe.
_REMEMBERED: OrderedDict[int, tuple[Mapping[str, Any], SummaryStore]] = OrderedDict()
# Each store holds tuples as long as the story; the next turn reads the last snapshot written
# (16 held 0.9 MB more at 2,000 turns, found always as the last one in a replay; #17).
_REMEMBER_AT_MOST = 4
_LOCK = threading.Lock()


def _remember(data: Mapping[str, Any], store: SummaryStore) -> None:
    with _LOCK:
        _REMEMBERED[id(data)] = (data, store)  # holding data keeps its id unique
        _REMEMBERED.move_to_end(id(data))
        while len(_REMEMBERED) > _REMEMBER_AT_MOST:
            _REMEMBERED.popitem(last=False)


def _recall(data: Mapping[str, Any]) -> SummaryStore | None:
    """The store that wrote ``data``, when ``data`` is that very object and looks unchanged."""
    with _LOCK:
        found = _REMEMBERED.get(id(data))
    if found is None or found[0] is not data:
        return None
    store = found[1]
    entries = data.get("entries")
    unchanged = isinstance(entries, list) and len(entries) == len(store.entries)
    chapters = data.get("chapters", [])
    unchanged = unchanged and isinstance(chapters, list) and len(chapters) == len(store.chapters)
    return store if unchanged and data.get("lang") == store.lang else None


class _Builder:
    """Collects entries per turn for ``from_dict``: what ``add`` does, without rescanning."""

    def __init__(self) -> None:
        self.by_turn: dict[int, dict[str, None]] = {}  # insertion-ordered, no repeats
        self.last_turn: int | None = None  # the latest turn with an entry so far

    def add(self, turn: int, text: str) -> None:
        kept = self.by_turn.setdefault(turn, {})
        for cleaned in _clean(text):
            kept.setdefault(cleaned, None)
        if not kept:
            del self.by_turn[turn]
        elif self.last_turn is None or turn > self.last_turn:
            self.last_turn = turn

    def add_labelled(self, line: str) -> None:
        """A line written with its label (the original's format): the label gives the turn,
        and a line without one belongs to the latest turn so far."""
        self.add(_label_turn(line, self.last_turn), line)

    def entries(self) -> tuple[SummaryEntry, ...]:
        return tuple(
            SummaryEntry(turn, text) for turn in sorted(self.by_turn) for text in self.by_turn[turn]
        )


def _label_turn(line: str, last_turn: int | None) -> int:
    """The turn a labelled line names; an unlabelled one belongs to the last entry's turn."""
    match = _BRACKETED.match(line) or _BARE.match(line)
    found = _DIGITS.search(match.group().translate(_FULLWIDTH)) if match else None
    if found:
        return int(found.group())
    return last_turn if last_turn is not None else 0


def _clean(texts: str | Iterable[str]) -> list[str]:
    items = [texts] if isinstance(texts, str) else list(texts)
    cleaned = []
    for item in items:
        if not isinstance(item, str):
            continue
        for line in item.splitlines():
            text = strip_turn_label(line)
            if text:
                cleaned.append(text)
    return cleaned


def _is_turn(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_turn(turn: int) -> None:
    if not _is_turn(turn):
        raise ValueError(f"a summary turn must be a whole number >= 0, got {turn!r}")
