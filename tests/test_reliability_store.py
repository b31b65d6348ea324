"""Issue 13, saving turns: a turn the store cannot take stays in memory and /retry stores it;
one session is open in one process at a time; a failed analysis leaves the turn stored as
"analysis pending" and /retry runs only the analysis.

The store conditions are real SQLite ones on real files: ``PRAGMA max_page_count`` makes the
database full, ``PRAGMA query_only`` read-only, and a second connection holding a write
transaction locks it. The two-process tests run ``narrative run`` as real subprocesses.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from narrative_cli.errors import SessionBusy
from narrative_cli.pipeline.records import TurnRecord, TurnResult
from narrative_cli.play import PlaySession
from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import ROOT
from tests.reliability_support import CARD, Game, GameFactory, game_factory
from tests.servers import Reply, ScriptedServer
from tests.story_replies import NARRATIVES

scripted_server = servers.scripted_server


@pytest.fixture
def games(scripted_server: ScriptedServer, tmp_path: Path) -> Iterator[GameFactory]:
    yield from game_factory(scripted_server, tmp_path)


@pytest.fixture
def game(games: GameFactory) -> Game:
    return games()


def stored(game: Game) -> list[int]:
    return [view.number for view in game.store.turns(game.play.session_id)]


# -- item 3: the store refuses a finished turn ---------------------------------------------------


def disk_full(game: Game) -> Callable[[], None]:
    connection = game.store.db.connection
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")
    return lambda: connection.execute("PRAGMA max_page_count = 1073741823") and None


def read_only(game: Game) -> Callable[[], None]:
    connection = game.store.db.connection
    connection.execute("PRAGMA query_only = 1")
    return lambda: connection.execute("PRAGMA query_only = 0") and None


def locked(game: Game) -> Callable[[], None]:
    game.store.db.connection.execute("PRAGMA busy_timeout = 50")
    other = sqlite3.connect(game.store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")

    def release() -> None:
        other.execute("ROLLBACK")
        other.close()

    return release


@pytest.mark.parametrize(
    ("condition", "cause"),
    [
        (disk_full, "the disk is full"),
        (read_only, "the database is read-only"),
        (locked, "the database is locked by another process"),
    ],
)
def test_a_turn_the_store_refuses_stays_in_memory_and_retry_stores_it(
    game: Game, condition: Callable[[Game], Callable[[], None]], cause: str
) -> None:
    fix = condition(game)
    outcome, out, err = game.run("I watch the sea.")
    assert outcome.failed
    assert NARRATIVES[0] in out and "/keeper/lamp_oil: 12 → 11" in out  # shown in full
    assert f"turn 1 is shown but NOT saved: {cause}" in err and "/retry" in err
    assert stored(game) == [0] and game.play.unsaved is not None
    calls = len(game.server.requests)
    outcome, _, err = game.run("/retry")  # the cause is still there
    assert outcome.failed and cause in err
    fix()
    outcome, out, err = game.run("/retry")
    assert not outcome.failed, err
    assert "Turn 1 saved." in out and len(game.server.requests) == calls  # no model call
    assert stored(game) == [0, 1] and game.play.turn == 1
    assert game.store.record(game.play.session_id, 1)["narrative"] == NARRATIVES[0]
    assert game.store.resume(game.play.session_id).snapshot["state"]["location"] == "Lamp room"
    game.run("I trim the wick.")
    assert stored(game) == [0, 1, 2]


def test_a_new_line_while_a_turn_is_unsaved_plays_nothing(game: Game) -> None:
    fix = disk_full(game)
    game.run("I watch the sea.")
    calls = len(game.server.requests)
    outcome, _, err = game.run("I trim the wick.")
    assert outcome.failed and "nothing new was played" in err
    assert len(game.server.requests) == calls
    fix()
    outcome, out, _ = game.run("I trim the wick.")  # stores turn 1 first, then plays turn 2
    assert not outcome.failed and NARRATIVES[1] in out
    assert stored(game) == [0, 1, 2]


def test_quit_with_an_unsaved_turn_warns_once(game: Game) -> None:
    disk_full(game)
    game.run("I watch the sea.")
    outcome, _, err = game.run("/quit")
    assert not outcome.quit and "turn 1 is shown but not saved" in err
    assert game.run("/quit")[0].quit


def test_undo_drops_an_unsaved_turn(game: Game) -> None:
    fix = disk_full(game)
    game.run("I watch the sea.")
    outcome, out, _ = game.run("/undo")
    assert not outcome.failed and "back at turn 0" in out
    fix()
    assert game.run("/retry")[2].startswith("error: nothing to retry")
    assert stored(game) == [0]


def test_a_regenerated_turn_the_store_refuses_is_kept_too(game: Game) -> None:
    game.run("I watch the sea.")
    fix = read_only(game)
    outcome, out, err = game.run("/regen")
    assert outcome.failed and NARRATIVES[1] in out and "NOT saved" in err
    fix()
    assert "Turn 1 saved." in game.run("/retry")[1]
    assert game.store.record(game.play.session_id, 1)["narrative"] == NARRATIVES[1]
    assert len(game.play.swipes()) == 2


# -- item 4: two processes on one session ---------------------------------------------------------


def narrative(
    server: ScriptedServer, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "narrative_cli", *args, "--provider", "openai",
               "--base-url", server.base_url, "--model", "m"]  # fmt: skip
    return subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ), timeout=120)  # fmt: skip


def test_a_session_open_in_this_process_is_refused_to_a_second_one(
    games: GameFactory, scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    from tests.story_replies import StoryScript

    first = games(db=clean_environ / "sessions.db")
    first.run("I watch the sea.")
    scripted_server.reply_with(StoryScript())
    done = narrative(scripted_server, "run", "--resume", "1", stdin="I wait.\n")
    assert done.returncode == 1
    assert "error: session 1 (night watch) is open in another narrative process (pid" in (
        done.stderr)  # fmt: skip
    assert "Traceback" not in done.stderr
    assert stored(first) == [0, 1]
    with pytest.raises(SessionBusy):
        PlaySession.resume(first.store, "1")
    deleted = subprocess.run(
        [sys.executable, "-m", "narrative_cli", "sessions", "delete", "1", "--yes"],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=60,
    )  # fmt: skip
    assert deleted.returncode == 1 and "open in another narrative process" in deleted.stderr
    first.play.close()
    done = narrative(scripted_server, "run", "--resume", "1", stdin="I wait.\n")
    assert done.returncode == 0, done.stderr
    assert stored(first) == [0, 1, 2]


def test_the_lock_dies_with_its_process(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    from tests.story_replies import StoryScript

    scripted_server.reply_with(StoryScript())
    assert narrative(scripted_server, "run", CARD, "--session", "fog", stdin="I wait.\n"
                     ).returncode == 0  # fmt: skip
    command = [sys.executable, "-m", "narrative_cli", "run", "--resume", "1", "--provider",
               "openai", "--base-url", scripted_server.base_url, "--model", "m"]  # fmt: skip
    holder = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ))  # fmt: skip
    try:
        lock = clean_environ / ".sessions.db-locks" / "session-1.lock"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and f"pid {holder.pid}" not in _read(lock):
            time.sleep(0.1)
        refused = narrative(scripted_server, "run", "--resume", "1", stdin="I knock.\n")
        assert refused.returncode == 1 and f"pid {holder.pid} on {socket.gethostname()}" in (
            refused.stderr
        )
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.communicate(timeout=30)
    done = narrative(scripted_server, "run", "--resume", "1", stdin="I knock.\n")
    assert done.returncode == 0, done.stderr
    with SessionStore(clean_environ / "sessions.db") as store:
        assert [v.number for v in store.turns(1)] == [0, 1, 2]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


# -- item 5: the analysis fails --------------------------------------------------------------------


def test_a_failed_analysis_stores_the_turn_pending_and_retry_runs_only_the_analysis(
    game: Game, games: GameFactory
) -> None:
    game.replies.set("analysis", Reply(fault="quota"))
    outcome, out, _ = game.run("I climb to the lamp room.")
    assert not outcome.failed and NARRATIVES[0] in out
    assert "analysis pending" in out
    record = game.record(1)
    assert record["analysis_pending"].startswith("analysis failed")
    assert record["narrative"] == NARRATIVES[0] and record["summary_entries"] == []
    assert game.store.resume(game.play.session_id).snapshot["state"]["location"] == "Start"
    lamp_oil = game.store.resume(game.play.session_id).snapshot["mvu"]
    game.play.close()

    resumed = games(db=game.store.path, resume="1")  # a new process would see the same
    _, shown, _ = resumed.run("/state")
    assert resumed.play.failure is not None and resumed.play.failure.kind == "analysis"
    resumed.replies.clear("analysis")
    before = dict(resumed.replies.calls)
    outcome, out, err = resumed.run("/retry")
    assert not outcome.failed, err
    made = {a: n - before.get(a, 0) for a, n in resumed.replies.calls.items()}
    assert {a: n for a, n in made.items() if n} == {"analysis": 1}  # only the analysis ran
    record = resumed.record(1)
    assert "analysis_pending" not in record
    assert record["narrative"] == NARRATIVES[0]
    assert record["summary_entries"] == ["[Turn 1] " + resumed.replies.script.summary]
    after = resumed.store.resume(resumed.play.session_id).snapshot
    assert after["state"]["location"] == "Lamp room" and after["mvu"] == lamp_oil
    assert resumed.run("/retry")[2].startswith("error: nothing to retry")
    resumed.run("I trim the wick.")
    assert stored(resumed) == [0, 1, 2]


def test_a_pending_record_keeps_its_mark_through_the_typed_reader(game: Game) -> None:
    """The mark lives in the typed record: read and written back, it is still there."""
    game.replies.set("analysis", Reply(fault="quota"))
    game.run("I climb to the lamp room.")
    record = game.record(1)
    typed = TurnRecord.read(record)
    assert typed.analysis_pending and typed.analysis_pending.startswith("analysis failed")
    assert typed.to_record() == record
    snapshot = game.store.resume(game.play.session_id).snapshot
    assert TurnResult.from_record(record, snapshot).analysis_pending == typed.analysis_pending


def test_resume_shows_a_pending_analysis(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    from tests.story_replies import StoryScript

    script = StoryScript()
    scripted_server.reply_with(
        lambda body, request: Reply(fault="quota") if request.agent == "analysis"
        else script(body, request)
    )  # fmt: skip
    first = narrative(scripted_server, "run", CARD, stdin="I climb.\n")
    assert first.returncode == 0, first.stderr
    scripted_server.reply_with(StoryScript())
    second = narrative(scripted_server, "run", "--resume", "1", stdin="/retry\n/summary\n")
    assert second.returncode == 0, second.stderr
    assert "analysis pending for turn 1" in second.stdout
    assert "[Turn 1] The apprentice climbed" in second.stdout


def test_line_mode_keeps_a_turn_the_locked_database_refused_and_retry_stores_it(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    """The real CLI against a database another program holds a write lock on: the turn is
    shown, not saved (after SQLite's 10 s busy timeout), and /retry stores it once the lock
    is gone; the exit code is 0 because the failure was repaired."""
    import threading

    from tests.story_replies import StoryScript

    scripted_server.reply_with(StoryScript())
    assert narrative(scripted_server, "run", CARD, stdin="/quit\n").returncode == 0
    command = [sys.executable, "-m", "narrative_cli", "run", "--resume", "1", "--provider",
               "openai", "--base-url", scripted_server.base_url, "--model", "m"]  # fmt: skip
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             env=dict(os.environ))  # fmt: skip
    errors: list[str] = []
    reader = threading.Thread(target=lambda: errors.extend(iter(child.stderr.readline, "")))
    reader.start()
    other = sqlite3.connect(clean_environ / "sessions.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        assert child.stdin is not None
        child.stdin.write("I watch the sea.\n")
        child.stdin.flush()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not any("NOT saved" in e for e in errors):
            time.sleep(0.2)
        assert any("turn 1 is shown but NOT saved: the database is locked" in e for e in errors)
        other.execute("ROLLBACK")
        out, _ = child.communicate("/retry\n", timeout=90)
    finally:
        other.close()
        if child.poll() is None:
            child.kill()
        reader.join(timeout=30)
    assert child.returncode == 0, "".join(errors)
    assert NARRATIVES[0] in out and "Turn 1 saved." in out
    with SessionStore(clean_environ / "sessions.db") as store:
        assert [v.number for v in store.turns(1)] == [0, 1]


def test_line_mode_input_that_is_not_utf8_is_played_not_a_crash(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    from tests.story_replies import StoryScript

    scripted_server.reply_with(StoryScript())
    command = [sys.executable, "-m", "narrative_cli", "run", CARD, "--provider", "openai",
               "--base-url", scripted_server.base_url, "--model", "m"]  # fmt: skip
    line = b"I light the lamp \xff\xfe now.\n"
    done = subprocess.run(command, input=line, capture_output=True, cwd=ROOT,
                          env=dict(os.environ), timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    with SessionStore(clean_environ / "sessions.db") as store:
        assert store.record(1, 1)["user_input"] == "I light the lamp \ufffd\ufffd now."
