"""SessionStore: sessions and their turns in one SQLite file (architecture §7).

Turn 0 is the greeting; turn N ≥ 1 is one user input and its reply. A turn has one or more
*swipes*, alternative outputs, each holding a full turn record **and** the snapshot taken
after it. The turn's current record and snapshot are those of its selected swipe, so choosing
another swipe moves the story state with it (the original kept the state of whichever swipe
was generated last).

Only the **last** turn can be regenerated, swiped, or switched to another swipe. Changing an
older turn would leave every later snapshot built on an output that is no longer shown, so it
is refused with a message; to redo an older turn, undo back to it (``drop_last_turn``) or
``branch`` from the turn before it, which keeps the original session intact.

Every write is one transaction. A missing snapshot is an error (``SnapshotMissing``), never a
silent reset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from pathlib import Path

from narrative_cli import held, paths
from narrative_cli.credentials import scrub
from narrative_cli.errors import SessionBusy, StoreError
from narrative_cli.store import queries as q
from narrative_cli.store import rows
from narrative_cli.store.db import Database, open_database
from narrative_cli.store.locks import SessionLock, is_locked
from narrative_cli.store.migrations import migrate
from narrative_cli.store.models import (
    Json,
    LoreRef,
    NewSession,
    SessionInfo,
    StoredTurn,
    SwipeData,
    TurnData,
    TurnView,
)
from narrative_cli.store.snapshots import add_references, load_snapshot, release, save_blobs
from narrative_cli.store.text_index import SessionTextIndex

Clock = Callable[[], datetime]
HELD_AS = "the session database narrative-cli has open"


class SessionStore:
    """Sessions, turns, swipes and snapshots in ``sessions.db`` (or the file given)."""

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        clock: Clock | None = None,
        durable_turns: bool = True,
    ) -> None:
        """``durable_turns=False`` (a replay): ``commit_turn`` does not wait for the disk.
        Each turn is still one atomic transaction and WAL never corrupts the file; a crash
        or power cut can lose the last turns committed before ``flush`` (a replay plays
        them again: it resumes). A commit waiting for the disk was a third of a replayed
        turn's wall time (#17)."""
        self.path = Path(path) if path is not None else paths.database_file()
        self.durable_turns = durable_turns
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self.db: Database = open_database(self.path)
        try:
            migrate(self.db)
        except BaseException:
            self.db.close()
            raise
        held.hold(self.path, HELD_AS, sidecars=True)  # no export may write over it
        self._held = True

    def text_index(self, session_id: int) -> SessionTextIndex:
        """The full-text index of a session's story (issue #17: recall of anything said)."""
        return SessionTextIndex(self.db, session_id)

    def close(self) -> None:
        """Close the database connection (idempotent)."""
        if self._held:
            held.release(self.path, HELD_AS, sidecars=True)
            self._held = False
        self.db.close()

    def batched(self) -> AbstractContextManager[None]:
        """Relaxed commits (``durable_turns=False`` turns, the text index) joined into few
        transactions while the block runs (``Database.batched``): for a replay with recorded
        responses only, which never waits for a model between commits."""
        return self.db.batched()

    def flush(self) -> None:
        """Make every commit so far durable (a WAL checkpoint syncs the log and the file):
        what a store opened with ``durable_turns=False`` does when its work is done."""
        self.db.checkpoint()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- creating ----------------------------------------------------------------------------

    def create_session(
        self,
        name: str,
        *,
        card_path: str,
        card_hash: str,
        snapshot: Json,
        lore: Sequence[LoreRef | Mapping[str, str]] = (),
        settings: Json | None = None,
        seed: int | None = None,
        greeting_index: int = 0,
        greeting: Json | None = None,
        character_name: str = "",
        user_name: str = "User",
    ) -> int:
        """Start a session at turn 0 (the greeting record and the initial snapshot)."""
        spec = NewSession(
            name=name,
            card_path=str(card_path),
            card_hash=card_hash,
            lore=tuple(rows.lore_ref(item) for item in lore),
            settings=dict(settings or {}),
            seed=seed,
            greeting_index=greeting_index,
            character_name=character_name,
            user_name=user_name,
        )
        record = {**(greeting or {}), "number": 0}
        return self.restore_session(spec, [TurnData(0, [SwipeData(record, snapshot)])])

    def restore_session(self, spec: NewSession, turns: Sequence[TurnData]) -> int:
        """Write a whole session (turns 0..N with their swipes) in one transaction."""
        name = rows.valid_name(spec.name)
        rows.check_turns(turns)
        encoded = [
            [
                rows.encode_swipe(
                    {**s.record, "number": t.number}, s.snapshot, t.number, s.created_at
                )
                for s in t.swipes
            ]
            for t in turns
        ]
        now = self._now()
        with self.db.transaction() as conn:
            session_id = rows.insert_session(conn, spec, name, now)
            for turn, swipes in zip(turns, encoded, strict=True):
                conn.execute(
                    q.INSERT_TURN, (session_id, turn.number, turn.swipe_id, turn.created_at or now)
                )
                for index, swipe in enumerate(swipes):
                    rows.insert_swipe(conn, session_id, turn.number, index, swipe, now)
        return session_id

    # -- turns -------------------------------------------------------------------------------

    def commit_turn(self, session_id: int, record: Json, snapshot: Json) -> int:
        """Append the next turn (record ``number`` must be the last turn + 1); return it."""
        number = rows.record_number(record)
        swipe = rows.encode_swipe(record, snapshot, number)
        with self.db.transaction(durable=self.durable_turns) as conn:
            last = rows.last_turn(conn, session_id)
            if number != last + 1:
                what = "is already stored" if number <= last else "would leave a gap"
                raise StoreError(
                    f"cannot commit turn {number} to session {session_id}: it {what}"
                    f" (the last turn is {last})"
                )
            now = self._now()
            conn.execute(q.INSERT_TURN, (session_id, number, 0, now))
            rows.insert_swipe(conn, session_id, number, 0, swipe, now)
            conn.execute(q.TOUCH_SESSION, (now, session_id))
        return number

    def replace_turn(self, session_id: int, number: int, record: Json, snapshot: Json) -> int:
        """Regenerate the last turn: the new output becomes the selected swipe, the old stays."""
        return self.add_swipe(session_id, number, record, snapshot, select=True)

    def add_swipe(
        self, session_id: int, number: int, record: Json, snapshot: Json, *, select: bool = False
    ) -> int:
        """Add an alternative output to the last turn; return its swipe index."""
        swipe = rows.encode_swipe(record, snapshot, rows.record_number(record, default=number))
        if rows.record_number(record, default=number) != number:
            raise StoreError(f"a swipe for turn {number} carries turn number {record['number']}")
        with self.db.transaction() as conn:
            rows.require_last(conn, session_id, number, "swipe or regenerate")
            index = int(conn.execute(q.NEXT_SWIPE, (session_id, number)).fetchone()[0])
            now = self._now()
            rows.insert_swipe(conn, session_id, number, index, swipe, now)
            if select:
                conn.execute(q.SELECT_SWIPE, (index, session_id, number))
            conn.execute(q.TOUCH_SESSION, (now, session_id))
        return index

    def amend_last_turn(self, session_id: int, number: int, record: Json, snapshot: Json) -> None:
        """Rewrite the shown swipe of the last turn in place: a turn stored with its analysis
        pending gets its events and summary when ``/retry`` runs the analysis again."""
        swipe = rows.encode_swipe(record, snapshot, number)
        with self.db.transaction() as conn:
            rows.require_last(conn, session_id, number, "amend")
            index, _, _, old_root = conn.execute(q.SELECTED_SWIPE, (session_id, number)).fetchone()
            root = None
            if swipe.snapshot is not None:
                save_blobs(conn, swipe.snapshot)  # before the release: shared blobs survive
                root = swipe.snapshot.root
            release(conn, [old_root])
            conn.execute(q.UPDATE_SWIPE, (swipe.record, root, session_id, number, index))
            conn.execute(q.TOUCH_SESSION, (self._now(), session_id))

    def lock_session(self, session_id: int) -> SessionLock:
        """Hold the session for this process (SessionBusy when another has it open)."""
        info = self.session(session_id)
        return SessionLock(self.path, session_id).acquire(info.name)

    def select_swipe(self, session_id: int, number: int, index: int) -> StoredTurn:
        """Show another swipe of the last turn; the story state follows it."""
        with self.db.transaction() as conn:
            rows.require_last(conn, session_id, number, "change the swipe of")
            count = int(conn.execute(q.COUNT_SWIPES, (session_id, number)).fetchone()[0])
            if not 0 <= index < count:
                raise StoreError(
                    f"turn {number} of session {session_id} has swipes 0..{count - 1}, not {index}"
                )
            conn.execute(q.SELECT_SWIPE, (index, session_id, number))
            state = rows.stored_turn(conn, session_id, number)
            conn.execute(q.TOUCH_SESSION, (self._now(), session_id))
        return state

    def drop_last_turn(self, session_id: int) -> StoredTurn:
        """Undo: delete the last turn with all its swipes; return the turn now last."""
        with self.db.transaction() as conn:
            last = rows.last_turn(conn, session_id)
            if last == 0:
                raise StoreError(f"nothing to undo: session {session_id} is at its greeting")
            state = rows.stored_turn(conn, session_id, last - 1)
            roots = [row[0] for row in conn.execute(q.TURN_ROOTS, (session_id, last))]
            release(conn, roots)
            conn.execute(q.DELETE_TURN, (session_id, last))
            conn.execute(q.TOUCH_SESSION, (self._now(), session_id))
        return state

    # -- sessions ----------------------------------------------------------------------------

    def branch(self, session_id: int, turn_number: int, new_name: str) -> int:
        """A new session holding turns 0..turn_number (all swipes, all snapshots) of this one."""
        name = rows.valid_name(new_name)
        with self.db.transaction() as conn:
            last = rows.last_turn(conn, session_id)
            if not 0 <= turn_number <= last:
                raise StoreError(
                    f"cannot branch session {session_id} at turn {turn_number}:"
                    f" it has turns 0..{last}"
                )
            rows.stored_turn(conn, session_id, turn_number)  # the branch point must be restorable
            now = self._now()
            cursor = conn.execute(q.COPY_SESSION, (name, turn_number, now, now, session_id))
            new_id = int(cursor.lastrowid or 0)
            conn.execute(q.COPY_LORE, (new_id, session_id))
            conn.execute(q.COPY_TURNS, (new_id, session_id, turn_number))
            conn.execute(q.COPY_SWIPES, (new_id, session_id, turn_number))
            add_references(conn, [row[0] for row in conn.execute(q.SESSION_ROOTS, (new_id,))])
        return new_id

    def rename(self, session_id: int, name: str) -> None:
        """Give a session another name."""
        text = rows.valid_name(name)
        with self.db.transaction() as conn:
            cursor = conn.execute(q.RENAME_SESSION, (text, session_id))
            if cursor.rowcount == 0:
                raise rows.no_session(session_id)

    def set_chat_metadata(self, session_id: int, metadata: Json) -> None:
        """Replace a session's SillyTavern ``chat_metadata`` (e.g. its Author's Note); the
        export writes it back into the chat file."""
        with self.db.transaction() as conn:
            cursor = conn.execute(q.SET_CHAT_METADATA,
                                  (rows.json_column(scrub(metadata)), session_id))
            if cursor.rowcount == 0:
                raise rows.no_session(session_id)

    def set_settings(self, session_id: int, settings: Json) -> None:
        """Replace what a session keeps of its flags (``/model``, ``/profile`` switch the
        backend mid-story, and a resume starts with the new one); never a key."""
        with self.db.transaction() as conn:
            cursor = conn.execute(q.SET_SETTINGS, (rows.json_column(scrub(settings)), session_id))
            if cursor.rowcount == 0:
                raise rows.no_session(session_id)

    def delete(self, session_id: int) -> None:
        """Delete a session, its turns and every snapshot blob only it used (not while another
        process has it open)."""
        if is_locked(self.path, session_id):
            raise SessionBusy(
                f"session {session_id} is open in another narrative process; close it first"
            )
        with self.db.transaction() as conn:
            release(conn, [row[0] for row in conn.execute(q.SESSION_ROOTS, (session_id,))])
            if conn.execute(q.DELETE_SESSION, (session_id,)).rowcount == 0:
                raise rows.no_session(session_id)

    # -- reading -----------------------------------------------------------------------------

    def list_sessions(self) -> list[SessionInfo]:
        """All sessions, most recently played first."""
        with self.db.transaction(write=False) as conn:
            lore = rows.all_lore(conn)
            found = conn.execute(q.SELECT_SESSIONS + " ORDER BY s.updated_at DESC, s.id DESC")
            return [rows.session_info(row, lore.get(row[0], ())) for row in found]

    def session(self, session_id: int) -> SessionInfo:
        """One session's header; StoreError if there is none with this id."""
        with self.db.transaction(write=False) as conn:
            return rows.session(conn, session_id)

    def find(self, ref: str) -> SessionInfo:
        """A session by id, or by name when exactly one session has that name."""
        text = ref.strip()
        if text.isdigit():
            return self.session(int(text))
        matches = [info for info in self.list_sessions() if info.name == text]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise StoreError(
                f"no session is named {text!r} in {self.path}",
                hint="`narrative sessions list` shows ids and names",
            )
        ids = ", ".join(str(info.id) for info in sorted(matches, key=lambda i: i.id))
        raise StoreError(f"several sessions are named {text!r} (ids {ids}); give an id")

    def resume(self, session_id: int) -> StoredTurn:
        """The latest turn's record and snapshot: where play continues."""
        with self.db.transaction(write=False) as conn:
            return rows.stored_turn(conn, session_id, rows.last_turn(conn, session_id))

    def snapshot(self, session_id: int, number: int) -> Json:
        """The snapshot after turn ``number``; SnapshotMissing if it cannot be restored."""
        with self.db.transaction(write=False) as conn:
            return rows.stored_turn(conn, session_id, number).snapshot

    def record(self, session_id: int, number: int) -> Json:
        """The selected record of turn ``number``."""
        with self.db.transaction(write=False) as conn:
            rows.session(conn, session_id)
            row = conn.execute(q.SELECTED_SWIPE, (session_id, number)).fetchone()
            if row is None:
                raise StoreError(f"session {session_id} has no turn {number}")
            return rows.decode_record(row[2])

    def turns(self, session_id: int) -> list[TurnView]:
        """Every turn's selected record, oldest first (the history to rebuild windows from)."""
        with self.db.transaction(write=False) as conn:
            rows.session(conn, session_id)
            found = conn.execute(q.TURN_VIEWS, (session_id,)).fetchall()
        return [TurnView(n, s, c, rows.decode_record(rec), at) for n, s, c, rec, at in found]

    def records(self, session_id: int, first: int, last: int) -> list[Json]:
        """The selected records of turns ``first`` to ``last``, oldest first (a stretch of a
        long session, without reading every turn)."""
        with self.db.transaction(write=False) as conn:
            rows.session(conn, session_id)
            found = conn.execute(q.SELECTED_RECORDS, (session_id, first, last)).fetchall()
        return [rows.decode_record(record) for (record,) in found]

    def iter_turns(self, session_id: int, *, snapshots: bool = False) -> Iterator[TurnData]:
        """Every turn with all its swipes, oldest first; with their snapshots if asked."""
        with self.db.transaction(write=False) as conn:
            rows.session(conn, session_id)
            found = conn.execute(q.ALL_SWIPES, (session_id,)).fetchall()
        current: TurnData | None = None
        for number, swipe_id, turn_at, record, root, swipe_at in found:
            if current is not None and current.number != number:
                yield current
                current = None
            if current is None:
                current = TurnData(number, [], swipe_id, turn_at)
            snap = self._load(root) if snapshots and root is not None else None
            current.swipes.append(SwipeData(rows.decode_record(record), snap, swipe_at))
        if current is not None:
            yield current

    def _load(self, root: bytes) -> Json:
        with self.db.transaction(write=False) as conn:
            value = load_snapshot(conn, root)
        return value if isinstance(value, dict) else {"value": value}

    def _now(self) -> str:
        return self._clock().astimezone(timezone.utc).isoformat(timespec="milliseconds")
