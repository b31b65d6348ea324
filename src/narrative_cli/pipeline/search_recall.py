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

from collections.abc import Callable
from functools import partial

from narrative_cli.context.inputs import HistoryTurn
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
from narrative_cli.state.chapters import visible_chapters
from narrative_cli.state.summaries import SummaryStore
from narrative_cli.tokens import estimate_tokens

# Documents made once: a past turn (or summary line) is the same object turn after turn, so its
# document is found by the object's id (checked to be that object). Bounded: cleared when full.
_MADE: dict[int, tuple[object, Document | None]] = {}
_KEEP_AT_MOST = 50_000


def _made(source: object, make: Callable[[], Document | None]) -> Document | None:
    found = _MADE.get(id(source))
    if found is not None and found[0] is source:
        return found[1]
    document = make()
    if len(_MADE) >= _KEEP_AT_MOST:
        _MADE.clear()
    _MADE[id(source)] = (source, document)  # holding the source keeps its id unique
    return document


def _turn_document(turn: HistoryTurn) -> Document | None:
    def make() -> Document | None:
        text = f"{turn.user}\n{turn.narrative}".strip()
        return Document(f"turn:{turn.number}", turn.number, TURN, text) if text else None

    return _made(turn, make)


def documents(history: list[HistoryTurn], summaries: SummaryStore) -> list[Document]:
    """Every searchable text of the story so far: each finished turn (the player's words and
    the story's), each summary entry, each chapter and arc."""
    found = [doc for doc in map(_turn_document, history) if doc is not None]
    position: dict[int, int] = {}
    for item in summaries.labelled_entries:
        turn, line = item
        index = position[turn] = position.get(turn, -1) + 1
        key = f"summary:{turn}:{index}"
        made = _made(item, partial(Document, key, turn, SUMMARY, line))
        if made is None or made.key != key:  # the same line at another place: a new document
            made = Document(key, turn, SUMMARY, line)
        found.append(made)
    for c in summaries.chapters:
        key = f"chapter:{c.first}-{c.last}:{c.level}:{c.shown_from}"
        found.append(Document(key, c.last, CHAPTER, c.labelled(summaries.lang)))
    return found


def shown_keys(state: TurnState, docs: list[Document]) -> set[str]:
    """Documents the writer's prompt already holds: its window's turns, the summary entries
    before the window no fold covers, the folds it shows; and this turn's own."""
    window = state.window("writing")
    first = window[0].number if window else state.number
    shown_folds = visible_chapters(state.summaries.chapters)
    spans = [(c.first, c.last) for c in shown_folds]
    fold_keys = {f"chapter:{c.first}-{c.last}:{c.level}:{c.shown_from}" for c in shown_folds}
    keys = set()
    for doc in docs:
        if (doc.turn >= first and doc.kind != CHAPTER) or doc.key in fold_keys:
            keys.add(doc.key)
        elif doc.kind == SUMMARY and not any(a <= doc.turn <= b for a, b in spans):
            keys.add(doc.key)
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
    docs = documents(state.history, state.summaries)
    index.sync(docs)
    exclude = shown_keys(state, docs) | {f"turn:{r.number}" for r in state.recall}
    searchable = len(docs) - len(exclude)
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
