"""Ordered, named schema migrations, applied when the store opens.

Each migration is a list of statements run in one transaction together with its row in
``_migrations``; ``PRAGMA user_version`` mirrors the count. A database that records a
migration this version does not know was written by a newer narrative-cli and is refused
rather than guessed at. Never edit a released migration: append a new one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from narrative_cli.errors import StoreError
from narrative_cli.store.db import Database


@dataclass(frozen=True)
class Migration:
    name: str
    statements: tuple[str, ...]


M001_INITIAL = Migration(
    "m001_initial",
    (
        """CREATE TABLE sessions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            card_path TEXT NOT NULL,
            card_hash TEXT NOT NULL,
            character_name TEXT NOT NULL DEFAULT '',
            user_name TEXT NOT NULL DEFAULT 'User',
            settings TEXT NOT NULL DEFAULT '{}',
            seed INTEGER,
            greeting_index INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        """CREATE TABLE session_lore (
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            path TEXT NOT NULL,
            hash TEXT NOT NULL,
            PRIMARY KEY (session_id, position)
        ) WITHOUT ROWID""",
        """CREATE TABLE turns (
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            number INTEGER NOT NULL CHECK (number >= 0),
            swipe_id INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, number)
        ) WITHOUT ROWID""",
        """CREATE TABLE swipes (
            session_id INTEGER NOT NULL,
            number INTEGER NOT NULL,
            idx INTEGER NOT NULL CHECK (idx >= 0),
            record BLOB NOT NULL,
            snapshot BLOB,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, number, idx),
            FOREIGN KEY (session_id, number) REFERENCES turns(session_id, number)
                ON DELETE CASCADE
        )""",
        """CREATE TABLE blobs (
            hash BLOB PRIMARY KEY,
            data BLOB NOT NULL
        )""",
        """CREATE TABLE blob_refs (
            hash BLOB PRIMARY KEY,
            refs INTEGER NOT NULL CHECK (refs >= 0)
        ) WITHOUT ROWID""",
    ),
)

M002_BRANCH_LINEAGE = Migration(
    "m002_branch_lineage",
    (
        "ALTER TABLE sessions ADD COLUMN parent_id INTEGER"
        " REFERENCES sessions(id) ON DELETE SET NULL",
        "ALTER TABLE sessions ADD COLUMN parent_turn INTEGER",
    ),
)

M003_CHAT_METADATA = Migration(
    "m003_chat_metadata",
    ("ALTER TABLE sessions ADD COLUMN chat_metadata TEXT NOT NULL DEFAULT '{}'",),
)

# Issue #17: recall of anything said. Every document of a session (a turn's text, a summary
# entry, a chapter) once, full-text indexed with the trigram tokenizer (Chinese needs no word
# splitting); terms under three characters are found by a LIKE scan of recall_docs.
M004_TEXT_RECALL = Migration(
    "m004_text_recall",
    (
        """CREATE TABLE recall_docs (
            id INTEGER PRIMARY KEY,
            session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            turn INTEGER NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            UNIQUE (session_id, key)
        )""",
        """CREATE VIRTUAL TABLE recall_fts USING fts5(
            text, content='recall_docs', content_rowid='id', tokenize='trigram'
        )""",
        """CREATE TRIGGER recall_docs_added AFTER INSERT ON recall_docs BEGIN
            INSERT INTO recall_fts (rowid, text) VALUES (new.id, new.text);
        END""",
        """CREATE TRIGGER recall_docs_removed AFTER DELETE ON recall_docs BEGIN
            INSERT INTO recall_fts (recall_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END""",
        """CREATE TRIGGER recall_docs_changed AFTER UPDATE ON recall_docs BEGIN
            INSERT INTO recall_fts (recall_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO recall_fts (rowid, text) VALUES (new.id, new.text);
        END""",
    ),
)

# Issue #17: how far an imported chat's catch-up has read (store.catch_up).
M005_CATCH_UP = Migration(
    "m005_catch_up",
    (
        """CREATE TABLE catch_up (
            session_id INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
            through INTEGER NOT NULL,
            last_turn INTEGER NOT NULL,
            status TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
    ),
)

MIGRATIONS: tuple[Migration, ...] = (
    M001_INITIAL,
    M002_BRANCH_LINEAGE,
    M003_CHAT_METADATA,
    M004_TEXT_RECALL,
    M005_CATCH_UP,
)

_LEDGER = """CREATE TABLE IF NOT EXISTS _migrations (
    name TEXT PRIMARY KEY,
    applied_at TEXT NOT NULL
)"""


def applied_migrations(db: Database) -> list[str]:
    """Names of the migrations recorded in the database, in the order they were applied."""
    ledger = db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'")
    if not ledger:
        return []
    return [row[0] for row in db.query("SELECT name FROM _migrations ORDER BY rowid")]


def migrate(db: Database, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply the migrations the database lacks, each in its own transaction; return their names."""
    done = applied_migrations(db)
    known = [m.name for m in migrations]
    unknown = [name for name in done if name not in known]
    if unknown:
        raise StoreError(
            f"the session database {db.path} was written by a newer narrative-cli"
            f" (unknown migration {unknown[0]})",
            hint="upgrade narrative-cli, or point NARRATIVE_HOME elsewhere",
        )
    if done != known[: len(done)]:
        raise StoreError(f"the session database {db.path} has migrations out of order: {done}")
    for index, migration in enumerate(migrations[len(done) :], start=len(done) + 1):
        _apply(db, migration, index)
    return known[len(done) :]


def _apply(db: Database, migration: Migration, version: int) -> None:
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with db.transaction() as conn:
        conn.execute(_LEDGER)
        # Another process may have applied it while we waited for the write lock.
        if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (migration.name,)).fetchone():
            return
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (migration.name, stamp)
        )
        conn.execute(f"PRAGMA user_version = {int(version)}")
