"""The SQLite connection: pragmas, one-transaction-at-a-time, and error translation.

Every write of the store happens inside :meth:`Database.transaction`, which opens with
``BEGIN IMMEDIATE`` (so two processes never interleave a turn) and rolls back on *any*
exception, including ``KeyboardInterrupt``: a turn is either entirely in the file or not at
all. The journal is WAL with ``synchronous=FULL``, so a killed process or a power cut leaves
the database at its last committed transaction.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from narrative_cli import paths
from narrative_cli.errors import StoreError, StoreUnavailable

BUSY_TIMEOUT_MS = 10_000

PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = FULL",
    "PRAGMA foreign_keys = ON",
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
)


class Database:
    """One connection to a session database file, in explicit-transaction mode."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.connection = _connect(path)
        self._lock = threading.RLock()  # one transaction at a time, whichever thread asks
        self._depth = 0
        self._full = True  # synchronous = FULL (PRAGMAS), until a relaxed transaction

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self.connection.close()

    @contextmanager
    def transaction(
        self, *, write: bool = True, durable: bool = True
    ) -> Iterator[sqlite3.Connection]:
        """A transaction: committed when the block ends, rolled back on any exception.

        ``write=False`` opens a read transaction: every query inside sees one consistent state.
        ``durable=False`` commits without waiting for the disk (``synchronous=NORMAL``, still
        atomic and never corrupting in WAL mode): for data rebuilt from the rest, such as the
        text index (issue #17); the next durable commit makes it durable too.
        """
        with self._lock:
            if self._depth:
                raise StoreError("internal: nested store transaction")
            self._depth = 1
            try:
                if write:
                    self._synchronous(full=durable)
                with self._begin(write) as connection:
                    yield connection
            finally:
                self._depth = 0

    def _synchronous(self, *, full: bool) -> None:
        """``synchronous`` for the next commit, set only when it changes: a replay's turns
        and text index commit one relaxed transaction after another, and setting it before
        and after each was a tenth of their cost (#17, session five)."""
        if full != self._full:
            with self.errors("write"):
                self.connection.execute(f"PRAGMA synchronous = {'FULL' if full else 'NORMAL'}")
            self._full = full

    @contextmanager
    def _begin(self, write: bool) -> Iterator[sqlite3.Connection]:
        with self.errors("write" if write else "read"):
            self._rollback()  # a rollback cut short by Ctrl-C last time: finish it first
            try:  # an interrupted BEGIN can leave the transaction open: roll that back too
                self.connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield self.connection
                self.connection.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def checkpoint(self) -> None:
        """Copy the WAL into the file, syncing both (SQLite syncs a checkpoint even under
        ``synchronous=NORMAL``): every commit so far, durable or not, is on the disk after it.
        Passive: readers in other processes are not waited for (what they hold stays in the
        synced WAL)."""
        with self._lock, self.errors("write"):
            self.connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run a read-only statement and return its rows."""
        with self._lock, self.errors("read"):
            return list(self.connection.execute(sql, params).fetchall())

    @contextmanager
    def errors(self, action: str) -> Iterator[None]:
        """Translate sqlite3 errors into a one-line StoreError naming the file."""
        try:
            yield
        except sqlite3.Error as exc:
            message = f"cannot {action} the session database {self.path}: {exc}"
            cause = passing_cause(exc)
            if cause is not None:
                raise StoreUnavailable(message, cause=cause, hint=_hint_for(exc)) from exc
            raise StoreError(message, hint=_hint_for(exc)) from exc

    def _rollback(self) -> None:
        if self.connection.in_transaction:
            try:
                self.connection.execute("ROLLBACK")
            except sqlite3.Error:  # the connection is already unusable; SQLite undoes on close
                pass


def open_database(path: Path) -> Database:
    """Open (creating if needed) the database at ``path`` with the store's pragmas."""
    paths.usable_dir(path.parent, "the session database folder")
    return Database(path)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        connection = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the session database {path}: {exc}") from exc
    try:
        for pragma in PRAGMAS:
            connection.execute(pragma)
        mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
    except sqlite3.Error as exc:
        connection.close()
        raise StoreError(
            f"cannot open the session database {path}: {exc}", hint=_hint_for(exc)
        ) from exc
    if str(mode).lower() != "wal":
        connection.close()
        raise StoreError(f"the session database {path} cannot use WAL journaling (got {mode})")
    return connection


# SQLite primary result codes of failures that can pass once the user acts.
_PASSING = {
    13: "the disk is full",  # SQLITE_FULL (also PRAGMA max_page_count reached)
    8: "the database is read-only",  # SQLITE_READONLY
    5: "the database is locked by another process",  # SQLITE_BUSY
    6: "the database is locked by another process",  # SQLITE_LOCKED
    10: "the disk could not be written (I/O error)",  # SQLITE_IOERR
    14: "the database file cannot be opened",  # SQLITE_CANTOPEN
}


def passing_cause(exc: sqlite3.Error) -> str | None:
    """Why a write failed, in words, when the cause can pass (disk full, read-only, locked)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _PASSING:
        return _PASSING[code & 0xFF]
    text = str(exc).lower()
    if "disk is full" in text:
        return _PASSING[13]
    if "readonly" in text or "read-only" in text:
        return _PASSING[8]
    if "locked" in text or "busy" in text:
        return _PASSING[5]
    return None


def _hint_for(exc: sqlite3.Error) -> str | None:
    text = str(exc).lower()
    if "not a database" in text or "malformed" in text:
        return "the file is damaged or not a narrative-cli database; move it aside to start afresh"
    if "locked" in text or "busy" in text:
        return "another narrative process is writing to it; try again when it is done"
    if "readonly" in text or "read-only" in text:
        return "check the permissions of the file and its directory"
    if "full" in text:
        return "free some disk space"
    return None
