"""Issue 13, data loss and bad files: exports, reports and traces never write over the open
session database (or a link to it); an existing file needs --force; deeply nested or partly
corrupt input files are one clear message (exit 2) or a warning naming the line.

Everything runs through the real CLI (Click's runner or a subprocess) on real SQLite files.
"""

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
from narrative_cli.errors import ChatFileError
from narrative_cli.load.png import placeholder_image, replace_text_chunks, text_chunk
from narrative_cli.store import SessionStore
from narrative_cli.store.export import export_jsonl
from tests.conftest import ROOT, SAMPLES
from tests.servers import ScriptedServer

runner = CliRunner()


def saved_session(turns: int = 2) -> int:
    with SessionStore() as store:
        session = store.create_session(
            "fog", card_path="/cards/fog.png", card_hash="sha256:f", snapshot={"turn": 0},
            greeting={"narrative": "The fog rolls in."}, character_name="Edda",
        )  # fmt: skip
        for number in range(1, turns + 1):
            record = {"number": number, "user_input": f"in {number}", "narrative": f"out {number}"}
            store.commit_turn(session, record, {"turn": number})
    return session


def sessions_still_readable() -> int:
    with SessionStore() as store:
        return len(store.list_sessions())


def test_export_over_the_session_database_is_refused_even_with_force() -> None:
    saved_session()
    database = paths.database_file()
    before = database.read_bytes()
    for extra in ([], ["--force"]):
        done = runner.invoke(app, ["sessions", "export", "1", str(database), *extra])
        assert done.exit_code == 2, done.output
        assert "refusing to write" in done.output and "session database" in done.output
        assert "Traceback" not in done.output
    assert sessions_still_readable() == 1
    assert database.read_bytes()[:16] == before[:16] == b"SQLite format 3\x00"


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_export_over_the_database_side_files_is_refused(suffix: str) -> None:
    saved_session()
    target = Path(str(paths.database_file()) + suffix)
    done = runner.invoke(app, ["sessions", "export", "1", str(target), "--force"])
    assert done.exit_code == 2, done.output
    assert "refusing to write" in done.output
    assert sessions_still_readable() == 1


def test_export_through_a_symlink_or_a_hard_link_to_the_database_is_refused(
    tmp_path: Path,
) -> None:
    saved_session()
    database = paths.database_file()
    link = tmp_path / "innocent.jsonl"
    link.symlink_to(database)
    hard = tmp_path / "backup.json"
    os.link(database, hard)
    for target in (link, hard):
        done = runner.invoke(app, ["sessions", "export", "1", str(target), "--force"])
        assert done.exit_code == 2, done.output
        assert "refusing to write" in done.output
    assert link.is_symlink() and sessions_still_readable() == 1


def test_a_database_given_by_relative_path_is_recognised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    saved_session()
    home = paths.database_file().parent
    (home / "sub").mkdir()
    monkeypatch.chdir(home)
    done = runner.invoke(app, ["sessions", "export", "1", "./sub/../sessions.db", "--force"])
    assert "refusing to write" in done.output
    assert done.exit_code == 2, done.output
    assert sessions_still_readable() == 1


def test_importing_the_database_as_a_chat_is_bad_input_and_harmless() -> None:
    saved_session()
    card = str(SAMPLES / "lantern-keeper.png")
    done = narrative("sessions", "import", str(paths.database_file()), "--card", card)
    assert done.returncode == 2 and "internal error" not in done.stderr
    assert sessions_still_readable() == 1


def test_an_existing_file_needs_force_and_then_is_replaced(tmp_path: Path) -> None:
    saved_session()
    target = tmp_path / "story.jsonl"
    target.write_text("my notes\n", encoding="utf-8")
    refused = runner.invoke(app, ["sessions", "export", "1", str(target)])
    assert refused.exit_code == 2
    assert "already exists" in refused.output and "--force" in refused.output
    assert target.read_text(encoding="utf-8") == "my notes\n"
    done = runner.invoke(app, ["sessions", "export", "1", str(target), "--force"])
    assert done.exit_code == 0, done.output
    assert "out 2" in target.read_text(encoding="utf-8") and "my notes" not in target.read_text(
        encoding="utf-8"
    )


def test_any_sqlite_database_is_refused_even_with_force(tmp_path: Path) -> None:
    saved_session()
    elsewhere = tmp_path / "games.sqlite"
    with SessionStore(elsewhere):
        pass  # closed again: no process holds it, it is still somebody's sessions
    done = runner.invoke(app, ["sessions", "export", "1", str(elsewhere), "--force"])
    assert done.exit_code == 2 and "is a SQLite database" in done.output
    with SessionStore(elsewhere) as store:
        assert store.list_sessions() == []


def test_the_homes_own_files_are_refused_even_with_force() -> None:
    saved_session()
    for own in (paths.config_file(), paths.history_file()):
        own.write_text("mine\n", encoding="utf-8")
        done = runner.invoke(app, ["sessions", "export", "1", str(own), "--force"])
        assert done.exit_code == 2 and "refusing to write" in done.output
        assert own.read_text(encoding="utf-8") == "mine\n"


def test_export_to_a_directory_is_refused(tmp_path: Path) -> None:
    saved_session()
    done = runner.invoke(app, ["sessions", "export", "1", str(tmp_path), "--force"])
    assert done.exit_code == 2
    assert "is a directory" in done.output


def test_a_database_outside_the_home_is_protected_while_it_is_open(tmp_path: Path) -> None:
    saved_session()
    other = tmp_path / "elsewhere" / "games.db"
    with SessionStore(other), SessionStore() as home:
        with pytest.raises(ChatFileError, match="refusing to write"):
            export_jsonl(home, 1, other, force=True)
    with SessionStore(other) as store:
        assert store.list_sessions() == []


def test_trace_files_never_go_over_the_database(tmp_path: Path) -> None:
    from narrative_cli.errors import BadInput
    from narrative_cli.pipeline.trace import CallTrace, TraceWriter

    saved_session()
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "calls.jsonl").symlink_to(paths.database_file())
    with SessionStore():
        writer = TraceWriter(trace, "1")
        call = CallTrace(turn=1, agent="writing", mode="merged", attempt=1, model="m", messages=[])
        with pytest.raises(BadInput, match="refusing to write the trace"):
            writer.record_call(call)
    assert sessions_still_readable() == 1


def test_replay_report_needs_force_to_overwrite_and_never_takes_the_database(
    tmp_path: Path,
) -> None:
    saved_session()
    existing = tmp_path / "report.json"
    existing.write_text("{}", encoding="utf-8")
    chat = tmp_path / "log.jsonl"
    chat.write_text('{"user_name":"U","character_name":"E"}\n', encoding="utf-8")
    card = str(SAMPLES / "lantern-keeper.png")
    for target, words in ((existing, "already exists"), (paths.database_file(), "refusing")):
        done = runner.invoke(app, ["replay", str(chat), "--card", card, "--report", str(target)])
        assert done.exit_code == 2, done.output
        assert words in done.output
    assert existing.read_text(encoding="utf-8") == "{}"
    assert sessions_still_readable() == 1


# -- deeply nested and corrupt input files (items 14 and 20) ----------------------------------


def png_card(payload: str) -> bytes:
    return replace_text_chunks(
        placeholder_image(), frozenset({"chara"}), [text_chunk("chara", payload)]
    )


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def narrative(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "narrative_cli", *args], capture_output=True, text=True,
        cwd=ROOT, env=dict(os.environ), timeout=120, input=stdin,
    )  # fmt: skip


def test_a_png_card_with_deeply_nested_json_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Deep", "first_mes": "hi", "extensions": {"x": json.loads(
                nested(900))}}}  # fmt: skip
    import base64

    payload = base64.b64encode(json.dumps(card).encode()).decode()
    path = tmp_path / "deep.png"
    path.write_bytes(png_card(payload))
    for depth_card in (path,):
        done = narrative("inspect", str(depth_card))
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert str(depth_card) in lines[0] and "nest" in lines[0]
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_a_png_card_nested_past_the_parser_stack_is_exit_2(tmp_path: Path) -> None:
    import base64

    payload = base64.b64encode(('{"data": ' + nested(100_000) + "}").encode()).decode()
    path = tmp_path / "abyss.png"
    path.write_bytes(png_card(payload))
    done = narrative("inspect", str(path))
    assert done.returncode == 2, done.stderr
    assert str(path) in done.stderr and "internal error" not in done.stderr


def test_a_jsonl_chat_with_a_deeply_nested_line_is_exit_2_naming_the_file(
    tmp_path: Path,
) -> None:
    chat = tmp_path / "deep.jsonl"
    header = json.dumps({"user_name": "U", "character_name": "Edda"})
    extra = '{"k": ' * 900 + "1" + "}" * 900  # a valid message whose extra nests 900 deep
    deep = '{"name": "Edda", "is_user": false, "mes": "x", "extra": ' + extra + "}"
    chat.write_text(header + "\n" + deep + "\n", encoding="utf-8")
    card = str(SAMPLES / "lantern-keeper.png")
    done = narrative("sessions", "import", str(chat), "--card", card)
    assert done.returncode == 2, done.stderr
    assert str(chat) in done.stderr and "internal error" not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_corrupt_line_in_an_imported_chat_is_a_warning_with_its_number(
    tmp_path: Path,
) -> None:
    chat = tmp_path / "torn.jsonl"
    lines = [
        json.dumps({"user_name": "U", "character_name": "Edda"}),
        json.dumps({"name": "Edda", "is_user": False, "mes": "The fog rolls in."}),
        json.dumps({"name": "U", "is_user": True, "mes": "I light the lamp."}),
        '{"name": "Edda", "is_user": false, "mes": "The lamp catches',  # torn mid-write
        json.dumps({"name": "U", "is_user": True, "mes": "I wait."}),
        json.dumps({"name": "Edda", "is_user": False, "mes": "A ship answers."}),
    ]
    chat.write_text("\n".join(lines) + "\n", encoding="utf-8")
    card = str(SAMPLES / "lantern-keeper.png")
    done = narrative("sessions", "import", str(chat), "--card", card)
    assert done.returncode == 0, done.stderr
    shown = done.stdout + done.stderr
    assert "line 4" in shown and "torn.jsonl" in shown
    with SessionStore() as store:
        session = store.list_sessions()[0]
        texts = [str(t.record.get("narrative")) for t in store.turns(session.id)]
    assert "A ship answers." in texts  # the lines after the bad one are kept


def test_a_card_with_escaped_lone_surrogates_is_shown_not_a_crash(tmp_path: Path) -> None:
    card = tmp_path / "odd.json"
    card.write_text(
        '{"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Odd\\ud800",'
        ' "description": "a \\udfff b", "first_mes": "hi \\ud800", "extensions": {}}}',
        encoding="utf-8",
    )
    done = narrative("inspect", str(card))
    assert done.returncode == 0, done.stderr
    assert "Odd\ufffd" in done.stdout and "internal error" not in done.stderr


@pytest.mark.parametrize("comment", ["[TOOL:t]", "[initvar]"])
@pytest.mark.parametrize("depth", [600, 100_000])
def test_nested_json_inside_a_card_entry_is_reported_with_the_entry(
    tmp_path: Path, comment: str, depth: int, scripted_server: ScriptedServer
) -> None:
    deep = '{"a": ' * depth + "1" + "}" * depth
    content = '{"type": "code", "function": {"name": "t", "parameters": ' + deep + "}}"
    entry = {"id": 1, "keys": ["x"], "comment": comment, "enabled": True, "constant": True,
             "content": content if comment.startswith("[TOOL") else deep}  # fmt: skip
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Deep", "first_mes": "hi", "extensions": {},
        "character_book": {"entries": [entry]}}}  # fmt: skip
    path = tmp_path / "entries.json"
    path.write_text(json.dumps(card), encoding="utf-8")
    for args in (["inspect", str(path)], ["lore", "test", str(path), "--input", "x"]):
        done = narrative(*args)
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr, args
        assert done.returncode in (0, 2), done.stderr
    # a server that answers (preflight passes: it lists no models), so the story opens
    served = ["--provider", "openai", "--base-url", scripted_server.base_url, "--model", "m"]
    done = narrative("run", str(path), *served, stdin="I look around.\n")
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert "nests more than 100 levels deep" in done.stdout + done.stderr
