"""The search half of ``<text_recall>`` (issue #17 item 2), run every turn before the writer.

The story's index (``Story.text_index``, the session database's when the story is played
through ``play.PlaySession``) is brought up to date with the story's documents, then
searched twice:

- for the planner's ``recall_terms`` (serial turns), within ``pipeline.text_recall_budget``
  less what the planner's numbered turns already took;
- automatically (``pipeline.auto_recall``), for the rare words and names of the player's
  input, within ``pipeline.auto_recall_budget``.

Documents the writer already sees are left out: the turns of its window, the summary entries
``<story_summary>`` shows and the chapters it shows. The passages join the planner's numbered
turns in ``<text_recall>``, oldest first. A story without an index (an embedder calling
``run_turn`` itself) gets no search, and its turns say nothing about it.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from narrative_cli.context.inputs import HistoryTurn, SummaryEntry
from narrative_cli.context.text_search import (
    CHAPTER,
    SUMMARY,
    TURN,
    Document,
    Passage,
    TextIndex,
    input_terms,
    query_terms,
    search,
)
from narrative_cli.errors import StoreError
from narrative_cli.i18n import t
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.state.chapters import Chapter, visible_chapters
from narrative_cli.state.summaries import SummaryStore
from narrative_cli.tokens import estimate_tokens


@dataclass
class StoryDocuments:
    """Every searchable text of the story, by kind, each list in story order (with the turn
    numbers beside it, for ``bisect``): what the index holds and what the writer is shown
    are found from these without a pass over the whole story.

    The story's own last one is extended in place by the next turn (``_extend``): its lists
    only grow, so a turn makes no list as long as the story (#17: a dozen such lists made
    anew and dropped every turn left holes in the C heap that grew with the story)."""

    history: list[HistoryTurn]  # what ``turns`` was made from
    turn_docs: list[Document | None]  # one per history turn (None: a turn with no text)
    labelled: tuple[SummaryEntry, ...]  # what ``summaries`` was made from
    summaries: list[Document]
    summary_turns: list[int]
    folds: tuple[Chapter, ...]  # what ``chapters`` was made from
    chapters: list[Document]
    chapter_keys: dict[int, str]  # id(chapter) → its document's key

    @cached_property
    def turns(self) -> list[Document]:
        return [doc for doc in self.turn_docs if doc is not None]

    @cached_property
    def turn_numbers(self) -> list[int]:
        return [doc.turn for doc in self.turns]

    @cached_property
    def all(self) -> list[Document]:
        """Every document: the turns, the lines, the folds (a story extended from the last
        turn's has the last one's ``all`` first, then what is new)."""
        return [*self.turns, *self.summaries, *self.chapters]


# The documents made for each story's last turn: the next turn's history and summary lines
# start with the very objects of the last one, so only its new turn and lines are made into
# documents (issue #17 item 4: the search's cost stays flat however long the story). Filed by
# the story's first turn (the very object, held, so its id stays its own): each story finds
# its own at once, and a story holds one set of lists as long as itself, not one per story
# played lately (four held 0.3 MB more at 2,000 turns; #17). A story whose first turn is a
# new object (restored from the store) looks through all of them, as before.
_LAST: dict[int, StoryDocuments] = {}
_KEEP = 4  # stories (a few logs replayed at once, --jobs, each find their own)
_LOCK = threading.Lock()
_TAIL = 64  # the newest items compared one by one; the rest in one list comparison (C)


def _story_key(history: Sequence[HistoryTurn]) -> int:
    return id(history[0]) if history else 0


def _common(old: Sequence[object], new: Sequence[object]) -> int:
    """How many first items of ``old`` and ``new`` are the same (equal counts: equal items
    make equal documents)."""
    length = min(len(old), len(new))
    # One sequence comparison in C, identity first (the usual case, the next turn's, is the
    # very items): a map of operator.is_ was twenty times slower (#17). Only the longer one
    # is cut (a tuple cut whole is the tuple itself).
    if (old if len(old) == length else old[:length]) == (
        new if len(new) == length else new[:length]
    ):
        return length
    bulk = max(length - _TAIL, 0)
    at = bulk if old[:bulk] == new[:bulk] else 0
    while at < length and (old[at] is new[at] or old[at] == new[at]):
        at += 1
    return at


def _turn_document(turn: HistoryTurn) -> Document | None:
    """The turn's document: its text read from the history turn's own (not a copy)."""
    if not (turn.user.strip() or turn.narrative.strip()):
        return None
    return Document.joined(f"turn:{turn.number}", turn.number, TURN, turn.user, turn.narrative)


def story_documents(history: list[HistoryTurn], summaries: SummaryStore) -> StoryDocuments:
    """The story's documents (see ``documents``), extending the last turn's where the history
    and the summary lines start the same."""
    labelled = summaries.labelled_entries
    key = _story_key(history)
    with _LOCK:
        own = _LAST.get(key)
        candidates = [own] if own is not None else list(_LAST.values())
    kept_turns = kept_lines = 0
    base: StoryDocuments | None = None
    for made in candidates:
        turns_here, lines_here = _common(made.history, history), _common(made.labelled, labelled)
        if base is None or turns_here + lines_here > kept_turns + kept_lines:
            base, kept_turns, kept_lines = made, turns_here, lines_here
    folds = summaries.chapters
    kept_folds = _common(base.folds, folds) if base else 0
    kept = (kept_turns, kept_lines, kept_folds)
    if base is not None and base is own and kept == (len(base.history), len(base.labelled),
                                                     len(base.folds)):  # fmt: skip
        _extend(base, history, labelled, folds, summaries.lang)  # the next turn: only added
        with _LOCK:
            _LAST[key] = _LAST.pop(key, base)  # the newest last
        return base
    turn_docs = (base.turn_docs[:kept_turns] if base else []) + [
        _turn_document(turn) for turn in history[kept_turns:]
    ]
    docs = base.summaries[:kept_lines] if base else []
    turns = base.summary_turns[:kept_lines] if base else []
    _add_lines(docs, turns, labelled[kept_lines:])
    chapters = (base.chapters[:kept_folds] if base else []) + _chapter_documents(
        folds[kept_folds:], summaries.lang
    )
    chapter_keys = {id(c): doc.key for c, doc in zip(folds, chapters, strict=True)}
    made = StoryDocuments(
        list(history), turn_docs, labelled, docs, turns, folds, chapters, chapter_keys
    )
    with _LOCK:
        _LAST.pop(key, None)
        _LAST[key] = made  # the newest last
        while len(_LAST) > _KEEP:
            del _LAST[next(iter(_LAST))]
    return made


def _extend(
    made: StoryDocuments,
    history: list[HistoryTurn],
    labelled: tuple[SummaryEntry, ...],
    folds: tuple[Chapter, ...],
    lang: str,
) -> None:
    """``made`` brought to a story that only added turns, lines and folds to its own, in
    place (``all`` gains what is new at its end: the index tells what is new by that)."""
    new_turns = [_turn_document(turn) for turn in history[len(made.history) :]]
    added = [doc for doc in new_turns if doc is not None]
    fresh_chapters = _chapter_documents(folds[len(made.folds) :], lang)
    every, turns, numbers = made.all, made.turns, made.turn_numbers  # made before they grow
    count = len(made.summaries)
    _add_lines(made.summaries, made.summary_turns, labelled[len(made.labelled) :])
    lines = made.summaries[count:]
    # The history's very objects, not only the new ones: a card's prompt-side scripts remake
    # the turns within their depth bound every turn (equal), then keep each one once deeper;
    # holding the first-made object of each turn failed the identity test of the whole
    # history every turn after, and compared it turn by turn (#17: a third of the stage at
    # 500 turns, two thirds at 2,000). Equal turns make equal documents: nothing else changes.
    made.history[:] = history
    made.turn_docs.extend(new_turns)
    turns.extend(added)
    numbers.extend(doc.turn for doc in added)
    made.chapters.extend(fresh_chapters)
    every.extend([*added, *lines, *fresh_chapters])
    made.labelled, made.folds = labelled, folds
    if fresh_chapters:
        made.chapter_keys = {id(c): d.key for c, d in zip(folds, made.chapters, strict=True)}


def _add_lines(docs: list[Document], turns: list[int], new: Sequence[SummaryEntry]) -> None:
    """Append the documents of the summary lines ``new`` (and their turns) to ``docs``."""
    for turn, line in new:
        position = 0  # the turn's earlier lines (a turn's lines are together, in order)
        while position < len(turns) and turns[-1 - position] == turn:
            position += 1
        docs.append(Document(f"summary:{turn}:{position}", turn, SUMMARY, line))
        turns.append(turn)


def _chapter_documents(folds: Sequence[Chapter], lang: str) -> list[Document]:
    return [Document(_chapter_key(c), c.last, CHAPTER, c.labelled(lang)) for c in folds]


def _chapter_key(chapter: Chapter) -> str:
    return f"chapter:{chapter.first}-{chapter.last}:{chapter.level}:{chapter.shown_from}"


def documents(history: list[HistoryTurn], summaries: SummaryStore) -> list[Document]:
    """Every searchable text of the story so far: each finished turn (the player's words and
    the story's), each summary entry, each chapter and arc."""
    return list(story_documents(history, summaries).all)  # a copy: the story's grows


def shown_keys(state: TurnState, docs: StoryDocuments) -> set[str]:
    """Documents the writer's prompt already holds: its window's turns, the summary entries
    before the window no fold covers, the folds it shows; and this turn's own."""
    window = state.window("writing")
    first = window[0].number if window else state.number
    return shown_before(docs, visible_chapters(state.summaries.chapters), first)


def shown_before(docs: StoryDocuments, shown_folds: list[Chapter], first: int) -> set[str]:
    """The keys of the turns and lines from turn ``first`` on, of the folds ``shown_folds``,
    and of the lines before ``first`` none of them covers; found by bisection, not by a look
    at every document of the story."""
    keys = {docs.chapter_keys.get(id(c)) or _chapter_key(c) for c in shown_folds}
    keys.update(d.key for d in docs.turns[bisect_left(docs.turn_numbers, first) :])
    lines, turns = docs.summaries, docs.summary_turns

    def between(low: int, high: int) -> None:  # the lines of turns low..high-1
        keys.update(d.key for d in lines[bisect_left(turns, low) : bisect_left(turns, high)])

    between(first, turns[-1] + 1 if turns else first)
    # Before the window: the lines in the gaps between the folds it shows.
    start = 0  # the first turn of the current gap
    for a, b in sorted((c.first, c.last) for c in shown_folds):
        between(start, min(a, first))
        start = max(start, b + 1)
    between(start, first)
    return keys


def search_stage(state: TurnState, notes: list[str]) -> None:
    """Add the passages the planner's terms and the input's rare words find (see above)."""
    index: TextIndex | None = state.story.text_index
    pipeline = state.story.settings.pipeline
    asked = query_terms(" ".join(state.plan.recall_terms)) if state.plan else []
    if index is None or not (asked or pipeline.auto_recall):
        return
    with state.stage("recall"):
        try:
            _search(state, index, asked, notes)
        except StoreError as error:  # the index is a help, never a reason to lose a turn
            state.warn("recall", t("recall.skipped", state.lang, error=error))


def _search(state: TurnState, index: TextIndex, asked: list[str], notes: list[str]) -> None:
    """Sync the index, then the planner's search and the automatic one."""
    pipeline = state.story.settings.pipeline
    made = story_documents(state.history, state.summaries)
    shown = shown_keys(state, made)
    index.sync(made.all, later=shown)  # what both searches leave out may wait (#17)
    exclude = shown | {f"turn:{r.number}" for r in state.recall}
    searchable = len(made.all) - len(exclude)
    passages: list[Passage] = []
    if asked:
        used = sum(estimate_tokens(r.narrative) for r in state.recall)
        budget = max(pipeline.text_recall_budget - used, 0)
        found = search(index, asked, rare_only=False, exclude=exclude,
                       budget_tokens=budget, total=searchable)
        passages += found.passages
        notes.extend(f"planner {note}" for note in found.notes)
        exclude |= {p.key for p in found.passages}
    if pipeline.auto_recall and pipeline.auto_recall_budget > 0:
        found = search(index, input_terms(state.user_input), rare_only=True, exclude=exclude,
                       budget_tokens=pipeline.auto_recall_budget, total=searchable)
        passages += found.passages
        notes.extend(f"auto {note}" for note in found.notes)
    if passages:
        notes.append("text search found " + ", ".join(_where(p) for p in passages))
        state.recall = merge(state.recall, passages)


def merge(recalled: list[HistoryTurn], passages: list[Passage]) -> list[HistoryTurn]:
    """The planner's numbered turns and the found passages, one entry per turn, oldest first
    (passages of one turn joined in the order found)."""
    by_turn = {turn.number: turn for turn in recalled}
    texts: dict[int, list[str]] = {}
    for passage in passages:
        if passage.turn not in by_turn:
            texts.setdefault(passage.turn, []).append(passage.text)
    added = [HistoryTurn(turn, "", "\n".join(parts)) for turn, parts in texts.items()]
    return sorted([*recalled, *added], key=lambda turn: turn.number)


def _where(passage: Passage) -> str:
    return f"{passage.kind} {passage.turn} ({' '.join(passage.terms)})"
