"""A session's full-text index in the session database (issue #17 item 2).

``recall_docs`` holds each document of a session once (``context.text_search.Document``:
a turn's text, a summary entry, a chapter), ``recall_fts`` indexes it with FTS5's trigram
tokenizer (migration ``m004_text_recall``). A term of three characters or more is an FTS
phrase query, which with trigrams is a substring match. A shorter one (a two-character Chinese
name such as 老周) cannot be: it is found by scanning the same documents for the substring, in
memory (the index keeps the session's documents after the first read; a SQL ``LIKE`` scan of
``recall_docs`` finds the same rows, ten to twenty times slower).

``sync`` makes the index hold exactly the story's documents as they are now: it compares
them with what it holds and writes only the difference, in one transaction. Undo, swipes,
regenerate and branches therefore need no hooks of their own: the next sync follows the story
wherever it went. Documents the caller will not search before the next sync (the writer's
window, the summary block) may wait until it will (``_deferred``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from itertools import compress

from narrative_cli.context.text_search import Document
from narrative_cli.store.db import Database
from narrative_cli.store.term_memo import TermMemo

_SELECT = "SELECT id, key, turn, kind, text FROM recall_docs WHERE session_id = ?"
_DELETE = "DELETE FROM recall_docs WHERE session_id = ? AND key = ?"
_UPSERT = """INSERT INTO recall_docs (session_id, key, turn, kind, text) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (session_id, key) DO UPDATE SET turn = excluded.turn, kind = excluded.kind,
    text = excluded.text"""
_ID = "SELECT id FROM recall_docs WHERE session_id = ? AND key = ?"
# Only rowids: the documents themselves are in memory (and another session's rows are skipped).
_MATCH = "SELECT rowid FROM recall_fts WHERE recall_fts MATCH ? ORDER BY rowid LIMIT ?"
_NO_LIMIT = -1
_ASKED_KEPT = 1024  # terms asked once, per generation (two kept)


class SessionTextIndex:
    """The ``context.text_search.TextIndex`` of one session."""

    def __init__(self, db: Database, session_id: int) -> None:
        self.db = db
        self.session_id = session_id
        self._held: dict[str, Document] | None = None
        self._keys: dict[int, str] = {}  # row id → key, this session's rows only
        self._ids: dict[str, int] = {}
        self._synced: dict[int, Document] | None = None  # the last sync's documents, by id
        self._synced_list: list[Document] | None = None  # and in their order
        self._pending: dict[str, Document] = {}  # synced, not written yet (``_deferred``)
        self._memo = TermMemo()  # each term's matches, kept up to date (term_memo)
        # terms asked once (remembered when asked again), in two generations: a term asked
        # again moves to the newer; the older is dropped when the newer is full (#17: one set
        # of 4,096 cleared when full held 0.2 MB more at 2,000 turns than at 500)
        self._asked: set[str] = set()
        self._asked_before: set[str] = set()

    def _documents(self) -> dict[str, Document]:
        if self._held is None:
            held: dict[str, Document] = {}
            for row_id, key, turn, kind, text in self.db.query(_SELECT, (self.session_id,)):
                held[key] = Document(key, turn, kind, text)
                self._keys[row_id], self._ids[key] = key, row_id
            self._held = held
        return self._held

    def sync(self, documents: Sequence[Document], later: AbstractSet[str] = frozenset()) -> None:
        """Make the index hold ``documents``; those of them with a key in ``later`` that it
        does not hold yet may wait (see ``_deferred``)."""
        held = self._documents()
        before = self._synced_list
        if before is not None and len(before) <= len(documents):
            count = len(before)
            before.extend(documents[count:])  # the index's own list, grown in place
            # The same first documents? One list comparison in C, identity first (#17: no
            # copy of a list as long as the story; a map of operator.is_ was 20x slower).
            if before == documents:
                try:
                    self._write_waiting(held, [], before[count:], dict(self._pending), later)
                except BaseException:
                    del before[count:]
                    raise
                self._synced = None
                return
            del before[count:]
        by_id = dict(zip(map(id, documents), documents, strict=True))
        last = self._synced if self._synced is not None else (
            None if before is None else dict(zip(map(id, before), before, strict=True))
        )
        pending = dict(self._pending)
        if last is None or len(by_id) != len(documents):
            wanted = {document.key: document for document in documents}
            gone = [key for key in held if key not in wanted]
            fresh: Iterable[Document] = wanted.values()
            pending.clear()  # every document is looked at again
        else:  # only the documents that are not the very ones synced last time (C loops)
            new_ids = by_id.keys() - last.keys()
            fresh = list(compress(documents, map(new_ids.__contains__, map(id, documents))))
            fresh_keys = {document.key for document in fresh}
            gone = [
                last[i].key for i in last.keys() - by_id.keys() if last[i].key not in fresh_keys
            ]
            for key in [*gone, *fresh_keys]:  # a waiting document gone or replaced
                pending.pop(key, None)
            gone = [key for key in gone if key in held]
        self._write_waiting(held, gone, fresh, pending, later)
        self._synced = by_id  # holding the documents keeps their ids their own
        self._synced_list = list(documents)

    def _write_waiting(
        self,
        held: dict[str, Document],
        gone: list[str],
        fresh: Iterable[Document],
        pending: dict[str, Document],
        later: AbstractSet[str],
    ) -> None:
        """Write ``gone`` and what of ``fresh`` and ``pending`` (this sync's waiting
        documents, a copy) cannot wait; what waits is kept only once that is written (a
        failed write loses nothing: the next sync finds the same)."""
        now = self._deferred(held, fresh, pending, later)
        self._write(held, gone, now)
        self._pending = pending

    @staticmethod
    def _deferred(
        held: dict[str, Document],
        fresh: Iterable[Document],
        pending: dict[str, Document],
        later: AbstractSet[str],
    ) -> list[Document]:
        """The documents to write now: the waiting ones and ``fresh``, less those that may
        wait (left in ``pending``).

        A document the caller leaves out of every search until the next sync (``later``:
        what the writer's prompt shows, which ``search`` excludes: the window's turns and
        lines, the summary block's lines, the folds shown) is not written until it can be
        found: its rows could change no result meanwhile (a search drops excluded documents,
        and asks for as many more rows as it excludes). The writer's window moves by m + 1
        turns at once (n+m) and a line leaves the summary block when a fold takes it, so the
        index is written on one turn in five instead of every turn (#17: each write is a
        savepoint, an FTS5 segment flush and a transaction's bookkeeping). A document the
        index already holds is written at once when it changes, as before."""
        if not later:
            now = [*pending.values(), *fresh]
            pending.clear()
            return now
        now = []
        if not pending.keys() <= later:  # some may be found now (a set test in C, in order)
            now = [document for key, document in pending.items() if key not in later]
            for document in now:
                del pending[document.key]
        for document in fresh:
            key = document.key
            if key in later and key not in held:
                pending[key] = document
            else:
                pending.pop(key, None)
                now.append(document)
        return now

    def _write(self, held: dict[str, Document], gone: list[str], fresh: Iterable[Document]) -> None:
        """Bring the index from ``held`` to ``held`` less ``gone`` and with ``fresh``."""
        changed = []
        for document in fresh:
            key = document.key
            known = held.get(key)
            if known is document:  # the usual case: the very document synced last turn
                continue
            if known == document:
                held[key] = document  # the same from now on: found by identity next turn
            else:
                changed.append(document)
        if not gone and not changed:
            return
        texts = [d.text for d in changed]  # a turn's is made when asked: once here
        with self.db.transaction(durable=False) as conn:  # rebuilt from the story if lost
            conn.executemany(_DELETE, [(self.session_id, key) for key in gone])
            ids = []
            for d, text in zip(changed, texts, strict=True):
                conn.execute(_UPSERT, (self.session_id, d.key, d.turn, d.kind, text))
                ids.append(int(conn.execute(_ID, (self.session_id, d.key)).fetchone()[0]))
        removed = [self._ids[key] for key in gone if key in self._ids]
        removed += [self._ids[d.key] for d in changed if d.key in self._ids]
        for key in gone:
            del held[key]
            self._keys.pop(self._ids.pop(key), None)
        for d, row_id in zip(changed, ids, strict=True):
            held[d.key] = d
            self._keys[row_id], self._ids[d.key] = d.key, row_id
        added = list(zip(ids, texts, strict=True))
        self._memo.changed(removed, added)

    def matches(self, term: str, at_most: int | None = None) -> list[tuple[str, int]]:
        """Documents containing ``term``; with ``at_most``, the search may stop once it has
        found more than that many (the caller only needs to know the term is common)."""
        held = self._documents()
        term = term.strip()
        if not term:
            return []
        wanted = _NO_LIMIT if at_most is None else at_most + 1
        if len(term) >= 3:
            found = self._fts(term, wanted, held)
        else:
            found = _scan(term, held.values(), wanted)
        return sorted((d.key, d.turn) for d in found)

    def _fts(self, term: str, wanted: int, held: dict[str, Document]) -> list[Document]:
        known = self._memo.get(term)
        if known is not None:
            rowids, complete = known
            if complete or len(rowids) >= wanted != _NO_LIMIT:
                chosen = rowids if wanted == _NO_LIMIT else rowids[:wanted]
                return [held[self._keys[rowid]] for rowid in chosen]
            rowids, complete = self._rowids(term, wanted)  # too few remembered: ask again
            self._memo.put(term, rowids, complete)
        elif self._memo_usable(term):
            rowids, complete = self._rowids(term, wanted)
            self._memo.put(term, rowids, complete)
        else:
            rowids, _ = self._rowids(term, wanted)
        return [held[self._keys[rowid]] for rowid in rowids]

    def _rowids(self, term: str, wanted: int) -> tuple[list[int], bool]:
        """This session's row ids of the documents containing ``term``, ascending: all of
        them, or (``wanted`` is not -1) the first ``wanted`` when there are more; and whether
        they are all. Only as many rows as asked are read (#17: a common word's rows grow
        with the story, and a search needs only enough of them to call it common)."""
        phrase = '"' + term.replace('"', '""') + '"'
        rows = self.db.query(_MATCH, (phrase, wanted))
        keys = self._keys
        rowids = [row[0] for row in rows if row[0] in keys]  # this session's
        if wanted == _NO_LIMIT or len(rows) < wanted:
            return rowids, True
        if len(rowids) < wanted:  # other sessions' rows took part of the limit: ask again
            return self._rowids(term, _NO_LIMIT)
        return rowids, False

    def count_at_least(self, term: str) -> int:
        """How many documents the index knows to contain ``term`` without a search (the
        memo: all of the term's matches or some of them), else 0; as ``matches`` would
        find them, without reading them (a common word's rows grow with the story: #17)."""
        term = term.strip()
        known = self._memo.get(term) if len(term) >= 3 else None
        return 0 if known is None else len(known[0])

    def _memo_usable(self, term: str) -> bool:
        """Whether to remember what the index finds for a term: when it is asked a second
        time (a word asked once is not kept)."""
        if term in self._asked:
            return True
        if term in self._asked_before:
            self._asked.add(term)
            return True
        if len(self._asked) >= _ASKED_KEPT:
            self._asked_before, self._asked = self._asked, set()
        self._asked.add(term)
        return False

    def document(self, key: str) -> Document | None:
        return self._documents().get(key) or self._pending.get(key)

    def __len__(self) -> int:
        """The documents of the last sync (those waiting to be written included)."""
        return len(self._documents()) + len(self._pending)


def _scan(term: str, documents: Iterable[Document], wanted: int) -> list[Document]:
    """The documents containing a short ``term`` (ASCII letters case-insensitively), stopping
    after ``wanted`` (-1: all)."""
    found: list[Document] = []
    if term.isascii():
        folded = term.casefold()
        matching = (d for d in documents if d.folded_contains(folded))
    else:
        matching = (d for d in documents if d.contains(term))
    for document in matching:
        found.append(document)
        if len(found) == wanted:
            break
    return found
