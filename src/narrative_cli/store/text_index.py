"""A session's full-text index in the session database (issue #17 item 2).

``recall_docs`` holds each document of a session once (``context.text_search.Document``:
a turn's text, a summary entry, a chapter), ``recall_fts`` indexes it with FTS5's trigram
tokenizer (migration ``m004_text_recall``). A term of three characters or more is an FTS
phrase query, which with trigrams is a substring match; a shorter one (a two-character Chinese
name such as 老周) cannot be, so it is found by a ``LIKE`` scan of the same documents.

``sync`` makes the index hold exactly the story's documents as they are now: it compares
them with what it holds (read once per session open, then kept in memory) and writes only
the difference, in one transaction. Undo, swipes, regenerate and branches therefore need no
hooks of their own: the next sync follows the story wherever it went.
"""

from __future__ import annotations

from collections.abc import Sequence

from narrative_cli.context.text_search import Document
from narrative_cli.store.db import Database

_SELECT = "SELECT key, turn, kind, text FROM recall_docs WHERE session_id = ?"
_DELETE = "DELETE FROM recall_docs WHERE session_id = ? AND key = ?"
_UPSERT = """INSERT INTO recall_docs (session_id, key, turn, kind, text) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (session_id, key) DO UPDATE SET turn = excluded.turn, kind = excluded.kind,
    text = excluded.text"""
_MATCH = """SELECT d.key, d.turn FROM recall_fts JOIN recall_docs AS d ON d.id = recall_fts.rowid
    WHERE recall_fts MATCH ? AND d.session_id = ?"""
_SCAN = "SELECT key, turn FROM recall_docs WHERE session_id = ? AND text LIKE ? ESCAPE '\\'"


class SessionTextIndex:
    """The ``context.text_search.TextIndex`` of one session."""

    def __init__(self, db: Database, session_id: int) -> None:
        self.db = db
        self.session_id = session_id
        self._held: dict[str, Document] | None = None

    def _documents(self) -> dict[str, Document]:
        if self._held is None:
            rows = self.db.query(_SELECT, (self.session_id,))
            self._held = {key: Document(key, turn, kind, text) for key, turn, kind, text in rows}
        return self._held

    def sync(self, documents: Sequence[Document]) -> None:
        held = self._documents()
        wanted = {document.key: document for document in documents}
        gone = [key for key in held if key not in wanted]
        changed = [d for key, d in wanted.items() if held.get(key) != d]
        if not gone and not changed:
            return
        with self.db.transaction() as conn:
            conn.executemany(_DELETE, [(self.session_id, key) for key in gone])
            conn.executemany(
                _UPSERT, [(self.session_id, d.key, d.turn, d.kind, d.text) for d in changed]
            )
        for key in gone:
            del held[key]
        held.update((d.key, d) for d in changed)

    def matches(self, term: str) -> list[tuple[str, int]]:
        term = term.strip()
        if not term:
            return []
        if len(term) >= 3:
            phrase = '"' + term.replace('"', '""') + '"'
            rows = self.db.query(_MATCH, (phrase, self.session_id))
        else:
            pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.db.query(_SCAN, (self.session_id, pattern))
        return sorted((str(key), int(turn)) for key, turn in rows)

    def document(self, key: str) -> Document | None:
        return self._documents().get(key)

    def __len__(self) -> int:
        return len(self._documents())
