"""Crash safety: SIGKILL at random moments, and Ctrl-C or an error inside a commit."""

from __future__ import annotations

import _thread
import itertools
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.errors import StoreError
from narrative_cli.store import SessionStore

# Shared by the writer subprocess and the checks below: turn n's record and snapshot.
TURN_DATA = """
import random

def summary(n):
    rng = random.Random(n)
    return "[第%d轮] " % n + "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(60))

def record(n):
    return {"number": n, "user_input": "第%d轮的输入" % n, "narrative": summary(n) * 8,
            "events_applied": [{"type": "hp", "delta": -1, "turn": n}]}

def snapshot(n):
    rng = random.Random(1000 + n)
    return {"turn": n, "state": {"hp": 100 - n, "flags": {"door": n % 2 == 0}},
            "summaries": {"entries": [summary(i) for i in range(1, n + 1)]},
            "rng": [3, [rng.randrange(2**32) for _ in range(625)], None]}
"""

WRITER = (
    TURN_DATA
    + """
import sys
from narrative_cli.store import SessionStore

store = SessionStore(sys.argv[1])
sessions = store.list_sessions()
if sessions:
    session = sessions[0].id
else:
    session = store.create_session("crash", card_path="c.png", card_hash="h",
                                   snapshot=snapshot(0), greeting={"narrative": "hi"})
number = store.resume(session).number
print("ready", number, flush=True)
while True:
    number += 1
    store.commit_turn(session, record(number), snapshot(number))
    print("committed", number, flush=True)
"""
)

turns: dict[str, Any] = {}
exec(TURN_DATA, turns)  # noqa: S102 - the same functions the subprocess uses
record, snapshot = turns["record"], turns["snapshot"]


def check_whole(path: Path) -> int:
    """The database is intact and holds only whole turns 0..N; return N."""
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert raw.execute("PRAGMA foreign_key_check").fetchall() == []
    raw.close()
    with SessionStore(path) as store:
        session = store.list_sessions()[0].id
        views = store.turns(session)
        last = views[-1].number
        assert [v.number for v in views] == list(range(last + 1))
        for view in views[1:]:
            assert view.record == record(view.number)
        for number in {0, last // 2, max(last - 1, 0), last}:
            assert store.snapshot(session, number) == snapshot(number)
        return last


def test_sigkill_at_random_moments_leaves_only_whole_turns_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    rng = random.Random(20260501)
    last = 0
    for _ in range(6):
        child = subprocess.Popen(
            [sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        ready = child.stdout.readline().split()
        assert ready == ["ready", str(last)]  # resumed exactly where the last kill left it
        time.sleep(rng.uniform(0.05, 0.6))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL
        # a line the kill cut short proves nothing: count only whole "committed N" lines
        lines = child.stdout.read().splitlines()
        printed = [int(w[1]) for w in map(str.split, lines) if len(w) == 2 and w[1].isdigit()]
        child.stdout.close()
        last = check_whole(path)
        assert last >= (printed[-1] if printed else 0)  # every reported commit survived
        assert last <= (printed[-1] if printed else last) + 1  # at most the one in flight
    assert last > 6
    with SessionStore(path) as store:
        session = store.list_sessions()[0].id
        store.commit_turn(session, record(last + 1), snapshot(last + 1))
        assert store.resume(session).snapshot == snapshot(last + 1)


def _played(tmp_path: Path, turns: int) -> tuple[SessionStore, int]:
    store = SessionStore(tmp_path / "sessions.db")
    session = store.create_session("s", card_path="c", card_hash="h", snapshot=snapshot(0))
    for number in range(1, turns + 1):
        store.commit_turn(session, record(number), snapshot(number))
    return store, session


def _progress(trigger: int, action: str) -> Callable[[], object]:
    """A SQLite progress handler made only of C callables (no Python frame runs in it).

    On its ``trigger``-th call it either aborts the running statement ("abort": an error in
    mid-transaction) or raises SIGINT in this process ("ctrl-c"): Python then raises
    KeyboardInterrupt at the next line of *our* code, exactly as a real Ctrl-C arriving
    during a SQLite call does.
    """
    fire = (
        itertools.repeat(1, 1)
        if action == "abort"
        else map(_thread.interrupt_main, [signal.SIGINT])  # returns None: go on
    )
    return itertools.chain(itertools.repeat(0, trigger - 1), fire, itertools.repeat(0)).__next__


@pytest.mark.parametrize("action", ["ctrl-c", "abort"])
def test_an_interrupted_commit_leaves_nothing_half_written(tmp_path: Path, action: str) -> None:
    store, session = _played(tmp_path, 3)
    outcomes: set[str] = set()
    for trigger in range(1, 400, 7):
        number = store.resume(session).number + 1
        store.db.connection.set_progress_handler(_progress(trigger, action), 10)
        try:
            store.commit_turn(session, record(number), snapshot(number))
            outcomes.add("committed")
        except KeyboardInterrupt:
            outcomes.add("interrupted")
        except StoreError as error:
            assert "interrupted" in error.message
            outcomes.add("failed")
        finally:
            store.db.connection.set_progress_handler(None, 0)
        state = store.resume(session)
        if state.number == number - 1:
            outcomes.add("rolled back")
        assert state.number in (number - 1, number)
        assert state.record == record(state.number)
        assert state.snapshot == snapshot(state.number)
    store.close()
    stopped = "interrupted" if action == "ctrl-c" else "failed"
    assert outcomes >= {"committed", stopped, "rolled back"}
    assert check_whole(tmp_path / "sessions.db") > 3
