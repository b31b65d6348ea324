"""`narrative sessions list|show|export|import|rename|delete` through the real Click group."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from narrative_cli import paths
from narrative_cli.cli.app import app
from narrative_cli.load.chats import load_chat
from narrative_cli.pipeline.story import Snapshot
from narrative_cli.store import SessionStore

from .conftest import fixture_file

runner = CliRunner()


def saved_session(name: str = "雨夜", turns: int = 2) -> int:
    """A session in the default database ($NARRATIVE_HOME/sessions.db)."""
    with SessionStore() as store:
        session = store.create_session(
            name,
            card_path="/cards/rain.png",
            card_hash="sha256:r",
            snapshot={"turn": 0},
            greeting={"narrative": "雨下个不停。"},
            character_name="梅布尔",
            user_name="琉阡",
        )
        for number in range(1, turns + 1):
            store.commit_turn(
                session,
                {"number": number, "user_input": f"第{number}轮输入", "narrative": f"回应{number}"},
                {"turn": number},
            )
        store.replace_turn(session, turns, {"number": turns, "narrative": "重写"}, {"turn": turns})
    return session


def test_list_is_friendly_when_there_is_nothing_yet() -> None:
    result = runner.invoke(app, ["sessions", "list"])
    assert result.exit_code == 0, result.output
    assert "No saved sessions yet" in result.output
    assert paths.database_file().exists()


def test_list_shows_sessions_as_a_table_and_as_json() -> None:
    first = saved_session("雨夜")
    second = saved_session("second game", turns=5)
    result = runner.invoke(app, ["sessions", "list"])
    assert result.exit_code == 0, result.output
    assert "雨夜" in result.output and "second game" in result.output and "梅布尔" in result.output
    assert result.output.index("second game") < result.output.index("雨夜")  # last played first
    data = json.loads(runner.invoke(app, ["sessions", "list", "--json"]).output)
    assert [(s["id"], s["name"], s["last_turn"]) for s in data] == [
        (second, "second game", 5),
        (first, "雨夜", 2),
    ]


def test_show_prints_the_turns_with_their_swipes() -> None:
    session = saved_session()
    result = runner.invoke(app, ["sessions", "show", str(session)])
    assert result.exit_code == 0, result.output
    assert f"Session {session}" in result.output and "雨夜" in result.output
    assert "雨下个不停。" in result.output and "第1轮输入" in result.output
    assert "回应1" in result.output and "重写" in result.output
    assert "2/2" in result.output  # the last turn: swipe 2 of 2
    by_name = runner.invoke(app, ["sessions", "show", "雨夜", "--full"])
    assert by_name.exit_code == 0 and "回应1" in by_name.output


def test_export_as_jsonl_and_json(tmp_path: Path) -> None:
    session = saved_session()
    chat_path = tmp_path / "chat.jsonl"
    result = runner.invoke(app, ["sessions", "export", str(session), str(chat_path)])
    assert result.exit_code == 0, result.output
    assert "Wrote 5 messages" in result.output
    chat = load_chat(chat_path)
    assert [m.mes for m in chat.messages][-1] == "重写"

    dump = tmp_path / "dump.json"
    result = runner.invoke(app, ["sessions", "export", "雨夜", str(dump)])  # .json → a dump
    assert result.exit_code == 0 and "Wrote 3 turns" in result.output
    assert json.loads(dump.read_text(encoding="utf-8"))["format"] == "narrative-cli-session"
    forced = tmp_path / "forced.txt"
    result = runner.invoke(app, ["sessions", "export", "雨夜", str(forced), "--format", "json"])
    assert result.exit_code == 0 and json.loads(forced.read_text(encoding="utf-8"))["turns"]


@pytest.mark.fixtures
def test_import_a_sillytavern_chat_that_the_pipeline_can_continue() -> None:
    chat = fixture_file("chats/legacy-megumin-2023.jsonl")
    card = fixture_file("en/megumin-v1.png")
    args = ["sessions", "import", str(chat), "--card", str(card), "--seed", "5"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Imported session 1 (legacy-megumin-2023): turns 0..0, 1 swipes" in result.output
    assert "Continue with: narrative run --resume 1" in result.output
    with SessionStore() as store:
        info = store.session(1)
        assert (info.character_name, info.seed, info.card_path) == ("Megumin", 5, str(card))
        assert info.card_hash.startswith("sha256:")
        restored = Snapshot.from_dict(store.resume(1).snapshot)
    assert restored.turn == 0 and restored.rng  # the pipeline's own fresh snapshot


@pytest.mark.fixtures
def test_import_warns_when_the_card_is_not_the_chats_character() -> None:
    chat = fixture_file("chats/zh-plague-apartment.jsonl")
    card = fixture_file("en/megumin-v1.png")
    result = runner.invoke(
        app, ["sessions", "import", str(chat), "--card", str(card), "--name", "疫病"]
    )
    assert result.exit_code == 0, result.output
    assert "Imported session 1 (疫病): turns 0..1, 4 swipes" in result.output
    assert "warning: the chat is with '疫病公寓' but the card is 'Megumin'" in result.output


def test_rename_and_delete() -> None:
    session = saved_session()
    result = runner.invoke(app, ["sessions", "rename", str(session), "新名字"])
    assert result.exit_code == 0 and "Renamed session" in result.output
    kept = runner.invoke(app, ["sessions", "delete", "新名字"], input="n\n")
    assert kept.exit_code != 0
    assert "Delete session" in kept.output
    with SessionStore() as store:
        assert store.session(session).name == "新名字"
    gone = runner.invoke(app, ["sessions", "delete", str(session)], input="y\n")
    assert gone.exit_code == 0 and f"Deleted session {session}" in gone.output
    assert "No saved sessions yet" in runner.invoke(app, ["sessions", "list"]).output


def test_unknown_session_is_an_error_not_a_traceback(clean_environ: Path) -> None:
    saved_session()
    result = runner.invoke(app, ["sessions", "show", "42"])
    assert result.exit_code == 1 and "error: there is no session 42" in result.output
    env = {**os.environ, "NARRATIVE_HOME": str(clean_environ)}
    done = subprocess.run(
        [sys.executable, "-m", "narrative_cli", "sessions", "delete", "42", "--yes"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: there is no session 42\n")
    assert "Traceback" not in done.stderr
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "narrative_cli",
            "sessions",
            "import",
            "nope.jsonl",
            "--card",
            "nope.png",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert missing.returncode == 2 and "nope.png: no such card file" in missing.stderr
