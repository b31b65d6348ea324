"""Row-level reads and writes of the session store; each runs inside the caller's transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from narrative_cli.credentials import scrub
from narrative_cli.errors import SnapshotMissing, StoreError
from narrative_cli.store import queries as q
from narrative_cli.store.blobs import Packed, decode, dumps, encode, pack
from narrative_cli.store.models import (
    Json,
    LoreRef,
    NewSession,
    SessionInfo,
    StoredTurn,
    TurnData,
)
from narrative_cli.store.snapshots import load_snapshot, save_blobs


@dataclass
class Encoded:
    """A swipe serialized before its transaction starts, so the write lock is held briefly."""

    record: bytes
    snapshot: Packed | None
    created_at: str | None = None


def encode_swipe(
    record: Json, snapshot: Json | None, number: int, at: str | None = None
) -> Encoded:
    if not isinstance(record, dict):
        raise StoreError(f"turn {number}: a turn record must be a JSON object")
    if snapshot is not None and not isinstance(snapshot, dict):
        raise StoreError(f"turn {number}: a snapshot must be a JSON object")
    try:
        packed = pack(snapshot) if snapshot is not None else None
        return Encoded(encode(scrub(record)), packed, at)
    except StoreError as exc:
        raise StoreError(f"turn {number} cannot be stored: {exc.message}") from exc


def insert_swipe(
    conn: sqlite3.Connection, session_id: int, number: int, index: int, swipe: Encoded, now: str
) -> None:
    root = None
    if swipe.snapshot is not None:
        save_blobs(conn, swipe.snapshot)
        root = swipe.snapshot.root
    conn.execute(
        q.INSERT_SWIPE, (session_id, number, index, swipe.record, root, swipe.created_at or now)
    )


def insert_session(conn: sqlite3.Connection, spec: NewSession, name: str, now: str) -> int:
    cursor = conn.execute(
        q.INSERT_SESSION,
        (
            name,
            spec.card_path,
            spec.card_hash,
            spec.character_name,
            spec.user_name,
            json_column(scrub(spec.settings)),
            spec.seed,
            spec.greeting_index,
            json_column(scrub(spec.chat_metadata)),
            now,
            now,
        ),
    )
    session_id = int(cursor.lastrowid or 0)
    conn.executemany(
        q.INSERT_LORE, [(session_id, i, ref.path, ref.hash) for i, ref in enumerate(spec.lore)]
    )
    return session_id


def json_column(value: Json) -> str:
    return dumps(value).decode("utf-8")


def last_turn(conn: sqlite3.Connection, session_id: int) -> int:
    row = conn.execute(q.LAST_TURN, (session_id,)).fetchone()
    if row is None:
        raise no_session(session_id)
    if row[0] is None:
        raise StoreError(f"session {session_id} has no turns (not even its greeting)")
    return int(row[0])


def require_last(conn: sqlite3.Connection, session_id: int, number: int, action: str) -> None:
    last = last_turn(conn, session_id)
    if number != last:
        raise StoreError(
            f"cannot {action} turn {number} of session {session_id}: only the last turn"
            f" ({last}) can be",
            hint=f"undo back to turn {number}, or branch from turn {max(number - 1, 0)}",
        )


def stored_turn(conn: sqlite3.Connection, session_id: int, number: int) -> StoredTurn:
    session(conn, session_id)
    row = conn.execute(q.SELECTED_SWIPE, (session_id, number)).fetchone()
    if row is None:
        raise SnapshotMissing(f"session {session_id} has no turn {number} to restore")
    swipe_id, count, record, root = row
    if root is None:
        raise SnapshotMissing(
            f"turn {number} of session {session_id} has no snapshot (it was imported without"
            " narrative-cli state), so play cannot be restored to it",
            hint="continue from the last turn, or branch from a turn that has one",
        )
    snapshot = load_snapshot(conn, root)
    return StoredTurn(number, swipe_id, count, decode_record(record), snapshot)


def session(conn: sqlite3.Connection, session_id: int) -> SessionInfo:
    row = conn.execute(q.SELECT_SESSIONS + " WHERE s.id = ?", (session_id,)).fetchone()
    if row is None:
        raise no_session(session_id)
    lore = tuple(LoreRef(p, h) for p, h in conn.execute(q.SESSION_LORE, (session_id,)))
    return session_info(row, lore)


def all_lore(conn: sqlite3.Connection) -> dict[int, tuple[LoreRef, ...]]:
    found: dict[int, list[LoreRef]] = {}
    for session_id, path, digest in conn.execute(q.ALL_LORE):
        found.setdefault(session_id, []).append(LoreRef(path, digest))
    return {key: tuple(value) for key, value in found.items()}


def session_info(row: tuple[Any, ...], lore: tuple[LoreRef, ...]) -> SessionInfo:
    (
        sid,
        name,
        card_path,
        card_hash,
        character,
        user,
        settings,
        seed,
        greeting,
        created,
        updated,
        parent_id,
        parent_turn,
        metadata,
        last,
    ) = row
    return SessionInfo(
        id=sid,
        name=name,
        card_path=card_path,
        card_hash=card_hash,
        character_name=character,
        user_name=user,
        settings=json_text(settings),
        seed=seed,
        greeting_index=greeting,
        lore=lore,
        created_at=created,
        updated_at=updated,
        last_turn=-1 if last is None else int(last),
        parent_id=parent_id,
        parent_turn=parent_turn,
        chat_metadata=json_text(metadata),
    )


def json_text(text: str) -> Json:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"a stored session header is damaged: {exc}") from exc
    return value if isinstance(value, dict) else {}


def decode_record(data: bytes) -> Json:
    value = decode(data)
    return value if isinstance(value, dict) else {"value": value}


def record_number(record: Json, default: int | None = None) -> int:
    number = record.get("number", default) if isinstance(record, dict) else None
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        raise StoreError(f"a turn record needs a whole turn number, got {number!r}")
    return number


def check_turns(turns: Sequence[TurnData]) -> None:
    if not turns:
        raise StoreError("a session needs at least its greeting (turn 0)")
    for expected, turn in enumerate(turns):
        if turn.number != expected:
            raise StoreError(
                f"turns must be numbered 0, 1, 2, …; found {turn.number} at {expected}"
            )
        if not turn.swipes or not 0 <= turn.swipe_id < len(turn.swipes):
            raise StoreError(f"turn {turn.number} has no swipe {turn.swipe_id}")


def lore_ref(item: LoreRef | Mapping[str, str]) -> LoreRef:
    if isinstance(item, LoreRef):
        return item
    return LoreRef(str(item.get("path", "")), str(item.get("hash", "")))


def valid_name(name: str) -> str:
    text = " ".join(str(name).split())
    if not text:
        raise StoreError("a session name cannot be empty")
    if len(text) > 200:
        raise StoreError("a session name can be at most 200 characters")
    return text


def no_session(session_id: int) -> StoreError:
    return StoreError(
        f"there is no session {session_id}",
        hint="`narrative sessions list` shows the sessions and their ids",
    )
