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
import time
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


class _Batch:
    """Relaxed transactions joined into one (``Database.batched``): how many have joined
    the open one, since when it is open, and when the last one was committed."""

    def __init__(self, units: int, seconds: float) -> None:
        self.units, self.seconds = units, seconds
        self.joined = 0
        self.opened = 0.0
        self.open = False  # its transaction is open
        self.committed = -float("inf")

    def may_open(self) -> bool:
        """Whether a new joined transaction may begin: not within a fifth of ``seconds`` of
        the last commit, which leaves other processes' writers (SQLite's busy handler looks
        every 100 ms at most) a time the database is free."""
        return time.monotonic() - self.committed >= self.seconds / 5


class Database:
    """One connection to a session database file, in explicit-transaction mode."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.connection = _connect(path)
        self._lock = threading.RLock()  # one transaction at a time, whichever thread asks
        self._depth = 0
        self._full = True  # synchronous = FULL (PRAGMAS), until a relaxed transaction
        self._batch: _Batch | None = None

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
                if self._batch is not None and (not write or not durable):
                    with self._joined(self._batch, write) as connection:
                        yield connection
                    return
                self._end_batch(self._batch)  # a durable write commits a batch's first
                if write:
                    self._synchronous(full=durable)
                with self._begin(write) as connection:
                    yield connection
            finally:
                self._depth = 0

    @contextmanager
    def batched(self, units: int = 64, seconds: float = 0.25) -> Iterator[None]:
        """Relaxed write transactions (``durable=False``) in this block join one transaction,
        committed once ``units`` have joined or it has been open ``seconds``, and when the
        block ends (an error or Ctrl-C included: what joined is whole). Each still applies
        entirely or not at all (a savepoint: one that fails is undone alone), and a killed
        process leaves the database at the last commit, never part of a transaction. After
        a commit, the transactions of the next ``seconds / 5`` commit on their own, so that
        other processes' writers, waiting up to 10 s (``BUSY_TIMEOUT_MS``), find the
        database free. Reads inside the block see what joined.

        For a replay with recorded responses, whose turns follow each other without waiting
        for a model: a turn's text index and its record and snapshot each committed on their
        own (and the text index's FTS5 segments written each time) were a tenth of a
        replayed turn (#17, session six). Never hold it across a wait for a model or a
        person: the open transaction keeps every other writer out."""
        with self._lock:
            if self._batch is not None:
                raise StoreError("internal: nested store batch")
            self._batch = _Batch(units, seconds)
        try:
            yield
        finally:
            with self._lock:
                batch, self._batch = self._batch, None
                self._end_batch(batch)

    @contextmanager
    def _joined(self, batch: _Batch, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction of a batch: a savepoint in the batch's transaction (opened here
        when none is), released when the block ends; the batch commits when it is full. A
        read runs in the batch's transaction when one is open (it sees what joined)."""
        connection = self.connection
        if not write:
            if batch.open:
                yield connection
            else:
                with self._begin(False) as reading:
                    yield reading
            return
        if not batch.open and not batch.may_open():  # the database's free time: on its own
            self._synchronous(full=False)
            with self._begin(True) as alone:
                yield alone
            return
        with self.errors("write"):
            if not batch.open:
                self._synchronous(full=False)
                self._rollback()  # a rollback cut short by Ctrl-C last time: finish it first
                connection.execute("BEGIN IMMEDIATE")
                batch.open, batch.joined, batch.opened = True, 0, time.monotonic()
            connection.execute("SAVEPOINT joined")
            try:
                yield connection
            except BaseException:
                self._undo_joined(batch)
                raise
            connection.execute("RELEASE joined")
            batch.joined += 1
            if batch.joined >= batch.units or time.monotonic() - batch.opened >= batch.seconds:
                self._end_batch(batch)

    def _undo_joined(self, batch: _Batch) -> None:
        """Undo a failed transaction of a batch, keeping the ones before it; when SQLite has
        rolled back the whole batch (a full disk, an I/O error), say that they are lost too."""
        connection = self.connection
        if not connection.in_transaction:
            batch.open = False
            raise StoreError(
                f"the session database {self.path} undid its uncommitted transactions after "
                "an error: the turns since its last commit are not stored",
                hint="run the same command again: a replay resumes after its last stored turn",
            )
        try:
            connection.execute("ROLLBACK TO joined")
            connection.execute("RELEASE joined")
        except sqlite3.Error:
            batch.open = False
            self._rollback()
            raise

    def _end_batch(self, batch: _Batch | None) -> None:
        """Commit what ``batch`` holds, when its transaction is open."""
        if batch is None or not batch.open:
            return
        batch.open = False
        if not self.connection.in_transaction:
            return
        with self.errors("commit the last turns to"):
            try:
                self.connection.execute("COMMIT")
            except sqlite3.Error:
                self._rollback()  # whatever joined is lost as a whole, never in part
                raise
        batch.committed = time.monotonic()

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
            self._end_batch(self._batch)
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
