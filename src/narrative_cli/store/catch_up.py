"""Where an imported chat's catch-up stands, and its snapshots, in the session database.

The catch-up (``play.catch_up``) reads an imported chat's old turns in batches. After each
batch, ``save_batch`` rewrites the snapshot of every turn in it (all their swipes: the state
follows the shown text, which is the same text for this purpose) and records how far it got,
in one transaction: Ctrl-C or a crash between batches loses at most the batch being read, and
the next run starts after ``through``. ``status`` is ``running`` (started, not finished),
``done`` or ``declined`` (the player said no; ``/catchup`` can still run it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from narrative_cli.errors import StoreError
from narrative_cli.store import rows
from narrative_cli.store.blobs import pack
from narrative_cli.store.models import Json
from narrative_cli.store.sessions import SessionStore
from narrative_cli.store.snapshots import release, save_blobs

STATUSES = ("running", "done", "declined")


@dataclass(frozen=True)
class CatchUpState:
    """How far the catch-up of a session has read (``through``: the last turn done)."""

    through: int
    last_turn: int
    status: str

    @property
    def finished(self) -> bool:
        return self.status == "done"


def state(store: SessionStore, session_id: int) -> CatchUpState | None:
    """The session's catch-up row (None: never offered, run or declined)."""
    found = store.db.query(
        "SELECT through, last_turn, status FROM catch_up WHERE session_id = ?", (session_id,)
    )
    if not found:
        return None
    through, last, status = found[0]
    return CatchUpState(int(through), int(last), str(status))


def set_status(
    store: SessionStore, session_id: int, status: str, *, through: int, last_turn: int
) -> None:
    """Record the catch-up's status (``declined`` when the player says no)."""
    if status not in STATUSES:
        raise ValueError(f"catch-up status {status!r}")
    with store.db.transaction() as conn:
        rows.session(conn, session_id)
        _upsert(conn, session_id, through, last_turn, status)


def save_batch(
    store: SessionStore,
    session_id: int,
    snapshots: Mapping[int, Json],
    *,
    last_turn: int,
) -> CatchUpState:
    """Give each turn of a finished batch its caught-up snapshot and move ``through`` past it."""
    if not snapshots:
        raise StoreError("a catch-up batch holds at least one turn")
    packed = {number: pack(snapshot) for number, snapshot in snapshots.items()}
    through = max(snapshots)
    status = "done" if through >= last_turn else "running"
    with store.db.transaction() as conn:
        rows.session(conn, session_id)
        for number, snapshot in packed.items():
            found = conn.execute(
                "SELECT idx, snapshot FROM swipes WHERE session_id = ? AND number = ?",
                (session_id, number),
            ).fetchall()
            if not found:
                raise StoreError(f"session {session_id} has no turn {number} to catch up")
            for index, old_root in found:
                save_blobs(conn, snapshot)  # one reference per swipe, before the release
                release(conn, [old_root])
                conn.execute(
                    "UPDATE swipes SET snapshot = ?"
                    " WHERE session_id = ? AND number = ? AND idx = ?",
                    (snapshot.root, session_id, number, index),
                )
        _upsert(conn, session_id, through, last_turn, status)
    return CatchUpState(through, last_turn, status)


def _upsert(
    conn: sqlite3.Connection, session_id: int, through: int, last_turn: int, status: str
) -> None:
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    conn.execute(
        "INSERT INTO catch_up (session_id, through, last_turn, status, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET through = excluded.through,"
        " last_turn = excluded.last_turn, status = excluded.status,"
        " updated_at = excluded.updated_at",
        (session_id, through, last_turn, status, now),
    )
