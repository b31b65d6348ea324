"""Editing and control in line mode (#18 item 6): ``/delete N``, ``/export md|txt``, ``run -c``.

A real ``narrative run`` subprocess reads stdin in a temporary directory against the scripted
server; what is stored is read back from the SQLite file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
CARD = str(SAMPLES / "lantern-keeper.png")


def narrative(
    server: ScriptedServer, cwd: Path, *args: str, stdin: str
) -> subprocess.CompletedProcess[str]:
    flags = ["--provider", "openai", "--base-url", server.base_url, "--model", "m"]
    return subprocess.run(
        [sys.executable, "-m", "narrative_cli", "run", *args, *flags],
        input=stdin, capture_output=True, text=True, cwd=cwd, env=dict(os.environ), timeout=120,
    )  # fmt: skip


def stored(home: Path) -> dict[str, list[tuple[int, str]]]:
    with SessionStore(home / "sessions.db") as store:
        return {
            info.name: [(t.number, str(t.record.get("user_input") or "")) for t in
                        store.turns(info.id)]
            for info in store.list_sessions()
        }  # fmt: skip


def test_delete_n_drops_the_last_n_messages_and_refuses_half_a_turn(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    lines = "I climb the stairs.\nI trim the wick.\n/delete 1\n/delete 2\n/delete 9\n"
    done = narrative(scripted_server, tmp_path, CARD, "--session", "d", stdin=lines)
    assert done.returncode == 2  # the refused /delete 1 and /delete 9 are usage errors
    assert "error: /delete 1 would split a turn" in done.stderr
    assert "hint: use /delete 2, or /regen to redo the last reply" in done.stderr
    assert "only 2 messages after the greeting" in done.stderr
    assert "Deleted. The story is back at turn 1." in done.stdout
    assert stored(clean_environ)["d"] == [(0, ""), (1, "I climb the stairs.")]


def test_export_md_and_txt_write_readable_transcripts(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    lines = "I climb the stairs.\n/export md\n/export txt notes.txt\n/export story.md\n"
    done = narrative(scripted_server, tmp_path, CARD, "--session", "watch", stdin=lines)
    assert done.returncode == 0, done.stderr
    md = (tmp_path / "session-1-watch.md").read_text(encoding="utf-8")
    assert md.startswith("# watch\n")
    assert "**User:**\n\nI climb the stairs." in md
    assert "**Edda:**\n\n*The fog presses" in md and NARRATIVES[0].strip() in md
    assert md.split("\n")[2].startswith("*Edda · 20")  # the character and the date
    assert md.index("The fog presses") < md.index("I climb the stairs.") < md.index(
        NARRATIVES[0].strip()[:40]
    )
    txt = (tmp_path / "notes.txt").read_text(encoding="utf-8")
    assert "User:\nI climb the stairs." in txt and "**" not in txt.split("\n", 2)[2][:10]
    assert (tmp_path / "story.md").read_text(encoding="utf-8") == md  # format from the suffix
    assert "Wrote 3 messages to session-1-watch.md." in done.stdout


def test_export_refuses_an_existing_file_without_force_and_a_path_it_cannot_write(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    (tmp_path / "taken.md").write_text("mine", encoding="utf-8")
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    lines = "/export md taken.md\n/export md a-file/x.md\n/export md taken.md --force\n"
    done = narrative(scripted_server, tmp_path, CARD, stdin=lines)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 2 and "taken.md" in errors[0] and "a-file/x.md" in errors[1]
    assert "Traceback" not in done.stderr
    assert (tmp_path / "taken.md").read_text(encoding="utf-8").startswith("# ")  # --force wrote


def test_run_c_continues_the_last_played_session(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    nothing = narrative(scripted_server, tmp_path, "-c", stdin="I wait.\n")
    assert nothing.returncode == 1 and "nothing to continue" in nothing.stderr
    narrative(scripted_server, tmp_path, CARD, "--session", "old", stdin="I listen.\n")
    narrative(scripted_server, tmp_path, CARD, "--session", "new", stdin="I climb.\n")
    again = narrative(scripted_server, tmp_path, "-c", stdin="I trim the wick.\n")
    assert again.returncode == 0, again.stderr
    assert "2 · new" in again.stdout and "I climb." in again.stdout  # its last exchange
    with_card = narrative(scripted_server, tmp_path, CARD, "--continue", stdin="I rest.\n")
    assert with_card.returncode == 0, with_card.stderr
    sessions = stored(clean_environ)
    assert [t[1] for t in sessions["new"]] == ["", "I climb.", "I trim the wick.", "I rest."]
    assert [t[1] for t in sessions["old"]] == ["", "I listen."]


def test_edit_replays_the_last_turn_with_the_new_line_and_keeps_the_old_as_a_swipe(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    lines = "/edit too early\nI climb the stairs.\n/edit\n/edit I don't climb; I wait.\n"
    done = narrative(scripted_server, tmp_path, CARD, "--session", "e", stdin=lines)
    assert done.returncode == 1  # /edit at the greeting could not run (as /continue there)
    assert "nothing to edit: the story is at its greeting" in done.stderr
    assert "your last one was: I climb the stairs." in done.stderr
    assert "hint: /edit TEXT replays the last turn with TEXT" in done.stderr
    assert stored(clean_environ)["e"] == [(0, ""), (1, "I don't climb; I wait.")]
    writing = [r for r in scripted_server.requests if r.agent == "writing"]
    last_prompt = writing[-1].messages[-1]["content"]
    assert "<user_input>\nI don't climb; I wait.\n</user_input>" in last_prompt
    with SessionStore(clean_environ / "sessions.db") as store:
        [info] = store.list_sessions()
        assert store.resume(info.id).swipe_count == 2  # the first line and its reply kept
