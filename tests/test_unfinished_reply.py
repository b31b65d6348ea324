"""Ctrl-C part-way through a reply keeps the prose already shown (#18 item 4), in line mode.

A real ``narrative run`` subprocess reads its lines from a pipe; the test waits until the
story text has started to stream, sends SIGINT (what Ctrl-C sends), and answers the one
question on the next line: keep (``k``), write again (``r``) or drop (``d``). What is
stored is read back from the SQLite file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
CARD = str(SAMPLES / "lantern-keeper.png")
QUESTION = "Keep what is shown (k, Enter)"


class Running:
    """A ``narrative run`` in line mode whose output the test reads as it comes."""

    def __init__(self, server: ScriptedServer, cwd: Path, *args: str) -> None:
        flags = ["--provider", "openai", "--base-url", server.base_url, "--model", "m"]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "narrative_cli", "run", CARD, *args, *flags],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, cwd=cwd, env=dict(os.environ),
        )  # fmt: skip
        self.out: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while char := self.process.stdout.read(1):
            self.out.append(char)

    def text(self) -> str:
        return "".join(self.out)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def wait_for(self, what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while what not in self.text():
            assert time.monotonic() < deadline, f"no {what!r} in:\n{self.text()}"
            assert self.process.poll() is None, f"ended before {what!r}:\n{self.text()}"
            time.sleep(0.02)

    def finish(self) -> tuple[int, str]:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=60)
        assert self.process.stderr is not None
        return code, self.process.stderr.read()

    def interrupt_mid_story(self, first_words: str, gate: threading.Event) -> None:
        """Ctrl-C once ``first_words`` of the reply are on screen; the server holds the reply
        (``gate``) until the question shows, so the Ctrl-C lands mid-reply on any machine."""
        self.wait_for(first_words)
        self.process.send_signal(signal.SIGINT)
        self.wait_for(QUESTION)
        gate.set()


def last_turn(home: Path) -> tuple[int, TurnRecord, int]:
    """(turn number, its record, how many swipes) of the only session."""
    with SessionStore(home / "sessions.db") as store:
        info = store.list_sessions()[0]
        turns = list(store.iter_turns(info.id))
        last = turns[-1]
        return last.number, TurnRecord.read(store.record(info.id, last.number)), len(last.swipes)


def test_ctrl_c_mid_reply_keep_stores_the_shown_text_and_continue_goes_on(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    gate = threading.Event()
    scripted_server.reply_with(StoryScript(chunk_delay=0.25, hold=gate))
    run = Running(scripted_server, tmp_path, "--session", "k")
    run.send("I climb the stairs.")
    run.interrupt_mid_story(NARRATIVES[0][:12], gate)
    run.send("k")
    run.wait_for("Kept the unfinished reply as turn 1")
    number, record, _ = last_turn(clean_environ)
    assert number == 1
    kept = record.narrative
    assert NARRATIVES[0].startswith(kept) and 12 <= len(kept) < len(NARRATIVES[0])
    assert record.analysis_pending == "unfinished reply (Ctrl-C)"
    run.send("/continue")
    run.wait_for(NARRATIVES[1][:20])
    code, err = run.finish()
    assert code == 0, err
    number, record, swipes = last_turn(clean_environ)
    assert number == 1 and swipes == 2  # the continued reply is a new swipe of turn 1
    assert record.narrative.startswith(kept) and record.narrative.endswith(NARRATIVES[1])
    assert record.analysis_pending is None  # the analysis ran on the whole reply


def test_ctrl_c_mid_reply_then_r_writes_the_reply_again_with_fresh_dice(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    gate = threading.Event()
    scripted_server.reply_with(StoryScript(chunk_delay=0.25, hold=gate))
    run = Running(scripted_server, tmp_path, "--session", "r", "--seed", "7")
    run.send("I climb the stairs.")
    run.interrupt_mid_story(NARRATIVES[0][:12], gate)
    run.send("r")
    run.wait_for("calls ")  # the footer of the rewritten turn
    code, err = run.finish()
    assert code == 0, err
    number, record, swipes = last_turn(clean_environ)
    assert (number, swipes) == (1, 1)
    assert record.narrative == NARRATIVES[1]  # the writer's next reply, whole
    assert record.rng_stream == 1  # a second try of turn 1: its own dice
    assert record.analysis_pending is None


def test_ctrl_c_mid_reply_then_d_drops_it_and_stops_like_a_cancel(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    gate = threading.Event()
    scripted_server.reply_with(StoryScript(chunk_delay=0.25, hold=gate))
    run = Running(scripted_server, tmp_path, "--session", "d")
    run.send("I climb the stairs.")
    run.interrupt_mid_story(NARRATIVES[0][:12], gate)
    run.send("d")
    run.send("I trim the wick.")  # not read: a cancelled turn ends line mode
    code, _ = run.finish()
    assert code == 130
    assert "Dropped the unfinished reply; nothing was saved" in run.text()
    assert last_turn(clean_environ)[0] == 0


class SlowAnalysis(StoryScript):
    """The analyst answers only once the test lets it (``released``): Ctrl-C lands after the
    whole reply is on screen, while the analysis call is under way (``asked``)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked, self.released = threading.Event(), threading.Event()

    def __call__(self, body: object, request: object) -> object:
        if getattr(request, "agent", "") == "analysis" and not self.asked.is_set():
            self.asked.set()
            self.released.wait(120)
        return super().__call__(body, request)


def test_ctrl_c_during_the_analysis_keeps_the_whole_reply_and_retry_analyses_it(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    script = SlowAnalysis()
    scripted_server.reply_with(script)
    run = Running(scripted_server, tmp_path, "--session", "a", "--mode", "serial")
    run.send("I climb the stairs.")
    run.wait_for(NARRATIVES[0])
    assert script.asked.wait(120)  # the analysis call is under way
    run.process.send_signal(signal.SIGINT)
    run.wait_for(QUESTION)
    script.released.set()
    run.send("")  # Enter: keep
    run.wait_for("Kept the unfinished reply as turn 1")
    _, record, _ = last_turn(clean_environ)
    assert record.narrative == NARRATIVES[0] and record.analysis_pending
    run.send("/retry")
    code, err = run.finish()
    assert code == 0, err
    _, record, _ = last_turn(clean_environ)
    assert record.narrative == NARRATIVES[0] and record.analysis_pending is None
    assert record.summary_entries  # the analysis ran on /retry
