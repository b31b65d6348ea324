"""Issue #17 item 3: a session that ran a catch-up replays it from the recorded replies.

A SillyTavern chat (the sample card, its MVU lamp oil) is imported, caught up and played on
with ``narrative run --trace``, as real subprocesses on the scripted server. The session's dump
(``sessions export``) is then replayed with ``narrative replay --responses`` from that trace:
the imported turns are stored as they were, the catch_up and compaction calls answered from
the recording, the later turns played, and every turn's summaries, chapters, state and
variables come out as the session's own. A changed setting is drift, named, not a new story.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import ScriptedServer
from tests.test_catch_up_memory import MemoryScript, write_chat, write_config
from tests.test_run_linemode import narrative

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
CARD = SAMPLES / "lantern-keeper.png"
KEPT = ("state", "mvu", "mvu_data", "summaries")


def snapshots(home: Path, session_id: int) -> dict[int, dict[str, Any]]:
    """Every turn's snapshot of a stored session: what a replay must reach again."""
    with SessionStore(home / "sessions.db") as store:
        return {
            view.number: {key: store.snapshot(session_id, view.number).get(key) for key in KEPT}
            for view in store.turns(session_id)
        }


def test_a_caught_up_session_replays_from_its_trace_to_the_same_memory(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    write_config(scripted_server, pipeline={"summary_budget": 90, "mode": "serial"})
    script = MemoryScript(mvu=dict.fromkeys((1, 4, 9), "_.add('keeper.lamp_oil', -1);//a night"))
    scripted_server.reply_with(script)
    replies = [f"Night {n} passes by the lamp." for n in range(1, 21)]
    replies[2] += "\n<UpdateVariable>\n_.add('keeper.lamp_oil', -2);//spilled\n</UpdateVariable>"
    chat = write_chat(tmp_path / "chat.jsonl", replies, greeting="Fog at the window.")
    done = narrative(None, "sessions", "import", str(chat), "--card", str(CARD), "--seed", "4")
    assert done.returncode == 0, done.stderr

    trace = tmp_path / "trace"
    ran = narrative(scripted_server, "run", "--resume", "1", "--catch-up", "--trace", str(trace),
                    stdin="I watch the sea.\nI climb to the lamp.\n")
    assert ran.returncode == 0, ran.stderr
    agents = [r.agent for r in scripted_server.requests]
    assert agents.count("catch_up") == 3 and "compaction" in agents
    original = snapshots(clean_environ, 1)
    assert len(original) == 23 and original[22]["summaries"].get("chapters")
    assert original[20]["mvu"]["keeper"]["lamp_oil"][0] == 12 - 2 - 3

    dump = tmp_path / "dump.json"
    exported = narrative(None, "sessions", "export", "1", str(dump))
    assert exported.returncode == 0, exported.stderr
    assert json.loads(dump.read_text(encoding="utf-8"))["catch_up"]["through"] == 20

    sent = len(scripted_server.requests)
    replayed = narrative(scripted_server, "replay", str(dump), "--card", str(CARD),
                         "--responses", str(trace))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert len(scripted_server.requests) == sent  # every answer came from the recording
    again = snapshots(clean_environ, 2)
    assert again.keys() == original.keys()
    for number, snapshot in original.items():  # turn 0: a replay's greeting starts a story
        if number:
            assert again[number] == snapshot, f"turn {number}"

    write_config(scripted_server, pipeline={"summary_budget": 200, "mode": "serial"})
    drifted = narrative(scripted_server, "replay", str(dump), "--card", str(CARD),
                        "--responses", str(trace))
    assert drifted.returncode == 1
    said = drifted.stdout + drifted.stderr
    assert "the prompt differs from the recorded one" in said  # the chapters it folded
    assert "<story_summary>" in said and "Traceback" not in said
    assert len(scripted_server.requests) == sent


def test_a_catch_up_stopped_part_way_is_replayed_as_far_as_it_read(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    write_config(scripted_server, pipeline={"mode": "serial"})
    script = MemoryScript(mvu=dict.fromkeys((2, 10), "_.add('keeper.lamp_oil', -1);//a night"))
    scripted_server.reply_with(script)
    replies = [f"Night {n} passes by the lamp." for n in range(1, 13)]
    chat = write_chat(tmp_path / "chat.jsonl", replies, greeting="Fog at the window.")
    done = narrative(None, "sessions", "import", str(chat), "--card", str(CARD), "--seed", "9")
    assert done.returncode == 0, done.stderr

    trace = tmp_path / "trace"
    # the second batch fails: the catch-up keeps turns 1-8, then the player plays on
    script.queued_batch = 1
    scripted_server.queue_fault("status", status=400, body={"error": {"message": "bad batch"}})
    ran = narrative(scripted_server, "run", "--resume", "1", "--catch-up", "--trace", str(trace),
                    stdin="I watch the sea.\n")
    assert ran.returncode == 0, ran.stderr
    assert "catch-up stopped after turn 8" in ran.stdout + ran.stderr
    original = snapshots(clean_environ, 1)
    assert original[8]["mvu"]["keeper"]["lamp_oil"][0] == 11  # turn 2 read, turn 10 never
    assert not original[10]["summaries"]["entries"]

    dump = tmp_path / "dump.json"
    assert narrative(None, "sessions", "export", "1", str(dump)).returncode == 0
    replayed = narrative(scripted_server, "replay", str(dump), "--card", str(CARD),
                         "--responses", str(trace))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    again = snapshots(clean_environ, 2)
    assert {n: s for n, s in again.items() if n} == {n: s for n, s in original.items() if n}
