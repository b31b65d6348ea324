"""A smoke test of the REAL REPL in a terminal: tmux runs ``narrative run``, we type and read.

The writer streams slowly from the scripted server, so the test can see the story arrive
piece by piece under the live status line, press Ctrl-C in the middle of a turn, and leave
with Ctrl-D. Skipped when tmux is missing (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures


def at_prompt(screen: str) -> bool:
    """True when some line of the screen is the empty prompt."""
    return any(line.rstrip() == ">" for line in screen.splitlines())


class Terminal:
    """One tmux window on a private tmux server."""

    def __init__(self, socket: str, command: str) -> None:
        self.socket = socket
        self.tmux("new-session", "-d", "-s", "repl", "-x", "100", "-y", "40", command)

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "repl", "-S", "-200")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "repl", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "repl", "-l", text)

    def wait_for(self, test: Callable[[str], bool], what: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{self.screen()}")

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def terminal(
    tmp_path: Path, clean_environ: Path, scripted_server: ScriptedServer
) -> Iterator[tuple[Terminal, Path]]:
    marker = tmp_path / "exit-code"
    env = f"NARRATIVE_HOME={shlex.quote(str(clean_environ))} NO_COLOR=1 TERM=xterm-256color"
    run = (
        f"{shlex.quote(sys.executable)} -m narrative_cli run "
        f"{shlex.quote(str(SAMPLES / 'lantern-keeper.png'))} --greeting 0 --seed 4 "
        f"--provider openai --base-url {scripted_server.base_url} --model scripted"
    )
    command = f"cd {shlex.quote(str(ROOT))} && env {env} {run}; echo $? > {marker}; sleep 30"
    term = Terminal(f"narrative-test-{os.getpid()}", command)
    try:
        yield term, marker
    finally:
        term.close()


def test_type_see_the_story_stream_cancel_with_ctrl_c_and_leave_with_ctrl_d(
    terminal: tuple[Terminal, Path], scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    term, marker = terminal
    scripted_server.reply_with(StoryScript(chunk_delay=0.12))
    term.wait_for(lambda s: "Three days of fog" in s and at_prompt(s), "the greeting and prompt")

    term.type("I climb the stairs.")
    term.keys("Enter")
    first, full = NARRATIVES[0][:12], NARRATIVES[0]
    partial = term.wait_for(lambda s: first in s and full not in s, "the story to start streaming")
    assert "Writing ·" in partial  # the live status line under the text
    done = term.wait_for(lambda s: "calls 5 · tokens" in s, "the turn to finish")
    assert full in done and "/keeper/lamp_oil: 12 → 11" in done
    assert "Writing ·" not in done  # the status line is gone

    term.type("I trim the wick.")
    term.keys("Enter")
    term.wait_for(lambda s: NARRATIVES[1][:10] in s, "the second turn to stream")
    term.keys("C-c")
    term.wait_for(lambda s: "Keep what is shown (k, Enter)" in s, "the keep-or-drop question")
    term.type("d")
    term.keys("Enter")
    dropped = "Dropped the unfinished reply; nothing was saved"
    term.wait_for(
        lambda s: dropped in s and at_prompt(s[s.index(dropped) :]), "the drop and prompt"
    )

    term.keys("C-d")
    assert exit_code(term, marker) == "0"

    with SessionStore(clean_environ / "sessions.db") as store:
        session = store.list_sessions()[0]
        assert store.resume(session.id).number == 1  # the cancelled turn was not saved
    history = (clean_environ / "history.txt").read_text(encoding="utf-8")
    assert "I climb the stairs." in history


def exit_code(term: Terminal, marker: Path) -> str:
    """The exit code the program wrote to ``marker`` when it ended."""
    deadline = time.monotonic() + 15
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), term.screen()
    return marker.read_text().strip()


def test_ctrl_c_clears_a_typed_line_and_leaves_at_an_empty_prompt(
    terminal: tuple[Terminal, Path], scripted_server: ScriptedServer
) -> None:
    term, marker = terminal
    scripted_server.reply_with(StoryScript())
    term.wait_for(lambda s: "Three days of fog" in s and at_prompt(s), "the greeting and prompt")
    term.type("a draft I regret")
    term.wait_for(lambda s: "a draft I regret" in s, "the typed line")
    term.keys("C-c")
    term.wait_for(lambda s: "a draft I regret" not in s and at_prompt(s), "the cleared line")
    assert not marker.exists()  # still running
    term.keys("C-c")
    assert exit_code(term, marker) == "0"
