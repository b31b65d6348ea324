"""Issue #17 item 3 from the command line: ``sessions import``, then ``run --resume`` in line mode
with ``--catch-up`` / ``--no-catch-up`` / neither, as real subprocesses on the scripted server."""

from __future__ import annotations

from pathlib import Path

from narrative_cli.store import SessionStore
from narrative_cli.store import catch_up as stored
from tests import servers
from tests.servers import ScriptedServer
from tests.test_catch_up import CARD, CatchUpScript, write_chat
from tests.test_run_linemode import narrative

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures


def _import(tmp_path: Path) -> None:
    chat = write_chat(tmp_path / "chat.jsonl")
    done = narrative(None, "sessions", "import", str(chat), "--card", str(CARD), "--seed", "4")
    assert done.returncode == 0, done.stderr


def test_run_catch_up_reads_the_old_turns_then_plays_on(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    script = CatchUpScript()
    scripted_server.reply_with(script)
    _import(tmp_path)
    done = narrative(scripted_server, "run", "--resume", "1", "--catch-up",
                     stdin="/state\nI watch the sea.\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "The imported chat's 12 turns (1-12) have no summary" in out
    assert "2 call(s)" in out and "prompt tokens" in out
    assert out.index("Catching up: 8/12") < out.index("Caught up on turns 1-12")
    state = out.split("> /state", 1)[1].split("> I watch")[0]
    assert "lamp_oil: 4" in state  # the variables the old turns left
    assert script.batches == [list(range(1, 9)), list(range(9, 13))]
    analysis = [r for r in scripted_server.requests if r.agent == "analysis"][-1]
    text = "\n".join(str(m["content"]) for m in analysis.messages)
    assert all(f"fact-{n}:" in text for n in range(1, 10))
    with SessionStore(clean_environ / "sessions.db") as store:
        assert stored.state(store, 1) == stored.CatchUpState(12, 12, "done")
        assert store.resume(1).number == 13


def test_no_catch_up_declines_and_a_plain_resume_only_tells_how(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    script = CatchUpScript()
    scripted_server.reply_with(script)
    _import(tmp_path)
    asked = narrative(scripted_server, "run", "--resume", "1", stdin="/quit\n")
    assert asked.returncode == 0, asked.stderr
    assert "12 turns (1-12)" in asked.stdout and "Type /catchup to catch up" in asked.stdout
    declined = narrative(scripted_server, "run", "--resume", "1", "--no-catch-up",
                         stdin="/quit\n")
    assert "Catch-up skipped; /catchup runs it later." in declined.stdout
    later = narrative(scripted_server, "run", "--resume", "1", stdin="/catchup\n/quit\n")
    assert later.returncode == 0, later.stderr
    assert "12 turns (1-12)" not in later.stdout.split("> /catchup")[0]  # declined: not offered
    assert "Caught up on turns 1-12" in later.stdout
    assert len(script.batches) == 2
