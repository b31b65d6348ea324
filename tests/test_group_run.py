"""``narrative run a.json b.json``: the sample group in line mode, a real subprocess against the
scripted server (issue 19, item 4): each reply under its speaker's name, /group, /next, /mute,
/unmute (kept when the session is resumed), /regen of the last speaker only, --group refused
until SillyTavern group files can be read, bad names refused in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.pipeline_support import PLAN, Script
from tests.servers import RecordedRequest, ScriptedServer

scripted_server = servers.scripted_server
WREN = str(SAMPLES / "night-ferry-wren.json")
PIP = str(SAMPLES / "night-ferry-pip.json")
WENLAN = str(SAMPLES / "night-ferry-wenlan-zh.json")
AQI = str(SAMPLES / "night-ferry-aqi-zh.json")


def narrative(server: ScriptedServer | None, *args: str,
              stdin: str = "") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "narrative_cli", *args]
    if server is not None:
        command += ["--provider", "openai", "--base-url", server.base_url, "--model", "m"]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ), timeout=120)


def speaker(request: RecordedRequest) -> str:
    text = "\n".join(str(m["content"]) for m in request.messages)
    for name in ("Wren", "Pip", "温岚", "阿七"):
        if f"Write only {name}'s reply" in text or f"本轮只写{name}的回应" in text:
            return name
    return "?"


class Writer:
    """Each writing call answers as its speaker, numbered, so a regenerated reply differs."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: RecordedRequest) -> str:
        self.calls += 1
        return f"{speaker(request)} speaks ({self.calls})."


def install(server: ScriptedServer, *speakers: str, **answers: Any) -> None:
    """Answer every agent; the planner names ``speakers`` (none: the strategy chooses)."""
    plan = {**PLAN, "speakers": [{"name": name} for name in speakers]}
    Script({"writing": Writer(), "planning": plan, **answers}).install(server)


def records(home: Path) -> list[TurnRecord]:
    with SessionStore(home / "sessions.db") as store:
        session = store.list_sessions()[0]
        return [TurnRecord.read(t.record) for t in store.turns(session.id) if t.number]


def test_the_sample_group_plays_with_names_and_the_commands_work(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    install(scripted_server, "Wren", "Pip")
    lines = ("/group\nHello, both of you.\n/next Pip\nWhere are we?\n/mute Wren\n/group\n"
             "Anyone there?\n/mute Nobody\n/unmute Wren\n/continue\n/quit\n")
    done = narrative(scripted_server, "run", WREN, PIP, "--seed", "2", "--session", "ferry",
                     stdin=lines)
    assert done.returncode == 2, done.stderr  # line mode: a bad argument (/mute Nobody) was met
    out = done.stdout
    assert "Wren: *Wren keeps one hand on the wheel" in out  # each member's greeting
    assert "Pip: *Pip swings a lantern" in out
    assert "Group" in out and "natural" in out and "swap" in out  # the roster
    assert "Wren:\nWren speaks (1).\n\nPip:\nPip speaks (2)." in out  # the planner's, named
    assert "Pip speaks next" in out and "Pip:\nPip speaks (3)." in out
    assert "Wren is muted: no strategy will choose them" in out
    assert "muted" in out.split("Wren is muted")[1].split("Anyone there?")[0]  # roster row
    assert "Pip:\nPip speaks (4)." in out and "Wren speaks (4)" not in out
    assert "no member named 'Nobody'; members: Wren, Pip" in done.stderr
    assert "Wren is no longer muted" in out
    assert "/continue does not work in a group scene yet" in done.stderr
    turns = records(clean_environ)
    assert [[s.name for s in t.speakers] for t in turns] == [["Wren", "Pip"], ["Pip"], ["Pip"]]


def test_muting_is_kept_when_the_session_is_resumed(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    install(scripted_server)
    first = narrative(scripted_server, "run", WREN, PIP, "--session", "ferry",
                      stdin="/mute Pip\n/quit\n")
    assert first.returncode == 0, first.stderr
    again = narrative(scripted_server, "run", "-c", stdin="Hello?\n/group\n/quit\n")
    assert again.returncode == 0, again.stderr
    (turn,) = records(clean_environ)
    assert [s.name for s in turn.speakers] == ["Wren"]


def test_regen_in_a_group_redoes_only_the_last_speakers_reply(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    install(scripted_server, "Wren", "Pip")
    done = narrative(scripted_server, "run", WREN, PIP, "--seed", "4",
                     stdin="Hello.\n/regen\n/quit\n")
    assert done.returncode == 0, done.stderr
    (turn,) = records(clean_environ)
    assert [(s.name, s.text) for s in turn.speakers] == [
        ("Wren", "Wren speaks (1)."), ("Pip", "Pip speaks (3).")]
    agents = [r.agent for r in scripted_server.requests]
    # the regenerated try: no new plan, Wren's reply kept, only Pip written again
    assert agents == ["planning", "writing", "writing", "analysis", "writing", "analysis"]


def test_the_chinese_sample_group_speaks_chinese(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    install(scripted_server, "温岚")
    done = narrative(scripted_server, "run", WENLAN, AQI, stdin="你们好。\n/next 阿七\n/quit\n")
    assert done.returncode == 0, done.stderr
    assert "温岚：*温岚一只手扶着舵轮" in done.stdout
    assert "温岚:\n温岚 speaks (1)." in done.stdout
    assert "下一位发言：阿七" in done.stdout
    planning = next(r for r in scripted_server.requests if r.agent == "planning")
    assert "可以发言的成员：温岚、阿七" in str(planning.messages[-1]["content"])


def test_a_story_of_one_card_refuses_group_commands(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    install(scripted_server)
    done = narrative(scripted_server, "run", WREN, stdin="/next Pip\n/quit\n")
    assert "this story is one character, not a group: /next needs several cards" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_same_card_twice_is_refused(clean_environ: Path) -> None:
    done = narrative(None, "run", WREN, WREN)
    assert done.returncode == 2
    assert "night-ferry-wren.json: the same card is named twice" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_sillytavern_group_file_plays_in_its_generation_mode(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    install(scripted_server, "Pip")
    group = str(SAMPLES / "night-ferry.group.json")
    done = narrative(scripted_server, "run", "--group", group, stdin="Hello.\n/group\n/quit\n")
    assert done.returncode == 0, done.stderr
    assert "Pip:\nPip speaks (1)." in done.stdout and "join" in done.stdout
    (writer,) = [r for r in scripted_server.requests if r.agent == "writing"]
    text = "\n".join(str(m["content"]) for m in writer.messages)
    assert "[Wren's Description]\nWren is the captain" in text  # joined, with the prefix
    again = narrative(scripted_server, "run", "-c", stdin="/group\n/quit\n")
    assert again.returncode == 0 and "The night ferry" not in again.stderr
    assert "join" in again.stdout  # resumed from the group file


def test_a_broken_group_file_is_one_line(tmp_path: Path, clean_environ: Path) -> None:
    group = tmp_path / "ferry.json"
    group.write_text('{"name": "x", "members": ["nobody.png"]}', encoding="utf-8")
    done = narrative(None, "run", "--group", str(group))
    assert done.returncode == 2
    assert "member card 'nobody.png' not found" in done.stderr
    assert "Traceback" not in done.stderr


def group_chat(folder: Path) -> Path:
    """A SillyTavern 1.18 group chat of the night ferry: both greetings, one round."""
    def reply(name: str, key: str, text: str) -> dict[str, Any]:
        return {"name": name, "is_user": False, "mes": text, "original_avatar": key,
                "force_avatar": f"/thumbnail?type=avatar&file={key}", "extra": {"gen_id": 1}}

    lines = [
        {"chat_metadata": {}, "user_name": "unused", "character_name": "unused"},
        reply("Wren", "night-ferry-wren.json", "Wren checks the compass."),
        reply("Pip", "night-ferry-pip.json", "Pip waves a lantern."),
        {"name": "Lan", "is_user": True, "mes": "Are we close?"},
        reply("Wren", "night-ferry-wren.json", "Not yet."),
        reply("Pip", "night-ferry-pip.json", "Almost!"),
    ]
    path = folder / "ferry-chat.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return path


def test_an_imported_group_chat_plays_on_and_exports_one_message_per_reply(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    install(scripted_server, "Pip", "Wren")
    group = str(SAMPLES / "night-ferry.group.json")
    imported = narrative(None, "sessions", "import", "--group", group,
                         str(group_chat(tmp_path)), "--name", "ferry")
    assert imported.returncode == 0, imported.stderr
    played = narrative(scripted_server, "run", "--resume", "ferry",
                       stdin="And now?\n/quit\n")
    assert played.returncode == 0, played.stderr
    assert "Pip:\nPip speaks (1)." in played.stdout
    writer = next(r for r in scripted_server.requests if r.agent == "writing")
    history = str(writer.messages[-1]["content"])
    assert "Wren: Not yet.\n\nPip: Almost!" in history  # the imported round, named
    out = tmp_path / "out.jsonl"
    exported = narrative(None, "sessions", "export", "ferry", str(out))
    assert exported.returncode == 0, exported.stderr
    messages = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()][1:]
    last = [(m["name"], m["mes"]) for m in messages[-3:]]
    assert last == [("Lan", "And now?"), ("Pip", "Pip speaks (1)."),
                    ("Wren", "Wren speaks (2).")]  # the chat's user name kept
    assert messages[-1]["original_avatar"] == "night-ferry-wren.json"
