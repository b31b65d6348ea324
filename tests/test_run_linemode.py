"""``narrative run`` in line mode: a real subprocess reading stdin, against the scripted server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
CARD = str(SAMPLES / "lantern-keeper.png")


def narrative(
    server: ScriptedServer | None, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m narrative_cli`` with the backend flags pointing at ``server``."""
    command = [sys.executable, "-m", "narrative_cli", *args]
    if server is not None:
        command += ["--provider", "openai", "--base-url", server.base_url, "--model", "m"]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ),
        timeout=120,
    )


def stored_turns(home: Path) -> list[tuple[int, str, str]]:
    with SessionStore(home / "sessions.db") as store:
        session = store.list_sessions()[0]
        return [
            (t.number, str(t.record.get("user_input") or ""), str(t.record.get("narrative")))
            for t in store.turns(session.id)
        ]


def test_lines_are_turns_and_slash_commands_and_the_session_is_stored(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    lines = "I climb the stairs.\n\n/state\nI trim the wick.\n/quit\nnever read\n"
    done = narrative(scripted_server, "run", CARD, "--seed", "5", "--session", "watch",
                     stdin=lines)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = done.stdout
    assert "Edda" in out.splitlines()[0]  # the card header
    assert "Three days of fog" in out  # greeting 0
    assert "> I climb the stairs." in out and NARRATIVES[0] in out
    assert "Dice" in out or "Tool roll_dice" in out
    assert "/keeper/lamp_oil: 12 → 11" in out and "✗ 1 change rejected · /state" in out
    assert "[Turn 1] The apprentice climbed" in out
    assert "State (turn 1)" in out and "lamp_oil: 11" in out
    assert NARRATIVES[1] in out and "never read" not in out
    assert out.count("calls 5 · tokens") == 2
    assert "\x1b[" not in out  # no colour codes in a pipe
    turns = stored_turns(clean_environ)
    assert [t[:2] for t in turns] == [(0, ""), (1, "I climb the stairs."), (2, "I trim the wick.")]
    assert turns[1][2] == NARRATIVES[0]


def test_a_failed_backend_turn_can_be_retried_in_line_mode(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    script = StoryScript(fail_writing=3)  # the first try and both retries fail
    scripted_server.reply_with(script)
    done = narrative(scripted_server, "run", CARD, stdin="I ring the bell.\n/retry\n")
    assert done.returncode == 0, done.stderr
    assert "error:" in done.stderr and "/retry" in done.stderr
    assert "Traceback" not in done.stderr
    assert NARRATIVES[0] in done.stdout
    assert [t[:2] for t in stored_turns(clean_environ)] == [(0, ""), (1, "I ring the bell.")]


def test_a_failure_left_unrepaired_exits_1_and_stores_nothing(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    scripted_server.reply_with(StoryScript(fail_writing=3))
    done = narrative(scripted_server, "run", CARD, stdin="I ring the bell.\n")
    assert done.returncode == 1
    assert [t[0] for t in stored_turns(clean_environ)] == [0]


def test_an_unknown_command_is_a_message_and_exit_code_2(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.reply_with(StoryScript())
    done = narrative(scripted_server, "run", CARD, stdin="/dance\n/help\n")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error: unknown command /dance",
        "hint: /help lists the commands",
    ]
    assert "/continue" in done.stdout  # /help still ran


def test_greeting_choice_resume_and_a_second_run_continue_the_story(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    first = narrative(scripted_server, "run", CARD, "--greeting", "1", stdin="I listen.\n")
    assert first.returncode == 0, first.stderr
    assert "a bell tolls" in first.stdout and "Three days of fog" not in first.stdout
    second = narrative(scripted_server, "run", "--resume", "1", stdin="/state\nI wait.\n")
    assert second.returncode == 0, second.stderr
    assert NARRATIVES[0] in second.stdout  # the last exchange is shown on resume
    assert "State (turn 1)" in second.stdout
    assert [t[0] for t in stored_turns(clean_environ)] == [0, 1, 2]


def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    done = narrative(None, "run", str(broken), stdin="hello\n")
    assert done.returncode == 2
    assert "broken.png" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2
    done = narrative(None, "run", CARD, "--mode", "fast", stdin="")
    assert done.returncode == 2 and "fast" in done.stderr
    done = narrative(None, "run", CARD, "--no-such-flag")
    assert done.returncode == 2
    done = narrative(None, "run", "--resume", "42")
    assert done.returncode == 1 and "42" in done.stderr and "Traceback" not in done.stderr
