"""Batched store commits (#17, session six): a replay with recorded responses joins its turns'
transactions into few commits; what is stored is what per-turn commits store, a failing turn
is undone alone, and other processes can still write."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.errors import StoreError
from narrative_cli.play.options import PlayOptions
from narrative_cli.store.sessions import SessionStore

from .servers import ScriptedServer
from .test_replay import install, live, replay, st_log, story_card
from .test_store import new_session, record, snapshot

# Columns that hold the wall clock of the write (the only ones allowed to differ).
TABLES = {
    "sessions": "id, name, card_path, card_hash, character_name, user_name, settings, seed, "
    "greeting_index, parent_id, parent_turn, chat_metadata",
    "session_lore": "*",
    "turns": "session_id, number, swipe_id",
    "swipes": "session_id, number, idx, record, snapshot",
    "blobs": "*",
    "blob_refs": "*",
    "recall_docs": "*",
}


def stored_rows(database: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every stored row of every table (clock columns left out), and what the text index finds."""
    with sqlite3.connect(database) as connection:
        found = {
            table: sorted(connection.execute(f"SELECT {columns} FROM {table}").fetchall())
            for table, columns in TABLES.items()
        }
        words = ("fog", "oar", "stroke 1", "bell")
        found["recall_fts"] = [
            connection.execute(
                "SELECT rowid FROM recall_fts WHERE recall_fts MATCH ? ORDER BY rowid", (word,)
            ).fetchall()
            for word in words
        ]
    return found


def test_a_batched_replay_stores_exactly_what_per_turn_commits_store(tmp_path: Path) -> None:
    """The same recorded log replayed with its turns' commits batched (one log, recorded
    responses) and with one commit per transaction (``--jobs 2`` turns batching off): the
    same rows in every table, blobs, refcounts and text index included."""
    card = story_card(tmp_path)
    inputs = tuple(f"I pull the oar, stroke {n}, and look for the bell." for n in range(1, 41))
    log, trace = st_log(tmp_path, "ferry", inputs=inputs), tmp_path / "t"
    with ScriptedServer() as server:
        install(server)
        assert replay([log], live(server, card, trace=str(trace))).outcomes[0].status == "done"
    batched, alone = tmp_path / "batched.db", tmp_path / "alone.db"
    options = PlayOptions(card=str(card))
    first = replay([log], options, responses=str(trace), store_path=batched)
    second = replay([log], options, responses=str(trace), store_path=alone, jobs=2)
    assert [o.status for o in first.outcomes + second.outcomes] == ["done", "done"]
    rows = stored_rows(batched)
    assert len(rows["turns"]) == len(inputs) + 1 and rows["recall_fts"][0]
    assert rows == stored_rows(alone)


def test_a_failed_commit_in_a_batch_is_undone_alone(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db", durable_turns=False)
    session = new_session(store)
    with store.batched():
        for number in range(1, 6):
            store.commit_turn(session, record(number), snapshot(number))
        with pytest.raises(StoreError, match="already stored"):
            store.commit_turn(session, record(3), snapshot(3))
        store.commit_turn(session, record(6), snapshot(6))
        assert store.resume(session).number == 6  # reads in the batch see what joined
    store.close()
    with SessionStore(tmp_path / "s.db") as again:
        assert [view.number for view in again.turns(session)] == list(range(7))
        assert again.resume(session).snapshot == snapshot(6)
        assert again.db.query("PRAGMA integrity_check") == [("ok",)]


def test_an_interrupted_commit_in_a_batch_keeps_the_turns_before_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db", durable_turns=False)
    session = new_session(store)
    with pytest.raises(KeyboardInterrupt), store.batched():
        store.commit_turn(session, record(1), snapshot(1))
        with store.db.transaction(durable=False) as conn:
            conn.execute("UPDATE sessions SET name = 'half-done' WHERE id = ?", (session,))
            raise KeyboardInterrupt
    store.close()
    with SessionStore(tmp_path / "s.db") as again:
        assert again.resume(session).number == 1
        assert again.session(session).name != "half-done"


def test_another_process_can_write_while_a_batching_replay_commits(tmp_path: Path) -> None:
    """The batch leaves the database free after each commit, so another store's writes (which
    wait up to the busy timeout, 10 s) get in while the turns go on; held without a pause,
    the batch would keep them waiting far longer (about 5 s a write here)."""
    store = SessionStore(tmp_path / "s.db", durable_turns=False)
    session = new_session(store)
    written: list[str] = []
    failed: list[BaseException] = []

    def other_writer() -> None:
        try:
            with SessionStore(tmp_path / "s.db") as other:
                mine = new_session(other, "mine")
                for n in range(3):
                    other.rename(mine, f"mine {n}")
                    written.append(other.session(mine).name)
                    time.sleep(0.05)
        except BaseException as error:  # noqa: BLE001 (reported by the assertion below)
            failed.append(error)

    writer = threading.Thread(target=other_writer)
    with store.batched():
        writer.start()
        number, started = 0, time.monotonic()
        while writer.is_alive() and time.monotonic() - started < 30:
            number += 1
            store.commit_turn(session, record(number), {"turn": number})
            time.sleep(0.005)  # the rest of a replayed turn
    writer.join()
    store.close()
    assert failed == []
    assert written == [f"mine {n}" for n in range(3)]
