"""``narrative replay`` from the command line: the real entry point, exit codes and output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from narrative_cli import paths
from narrative_cli.cli.app import main
from narrative_cli.pipeline.trace import read_calls

from .servers import ScriptedServer
from .test_cli_help import PROBE
from .test_replay import install, st_log, story_card

SECRET = "sk-test-replay-0123456789abcdef"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``narrative ARGS`` in this process; (exit code, stdout, stderr)."""
    code: object = 0
    try:
        main([str(arg) for arg in args])
    except SystemExit as done:
        code = done.code
    out, err = capsys.readouterr()
    return (code if isinstance(code, int) else 0), out, err


def live_flags(server: ScriptedServer) -> list[str]:
    return ["--provider", "openai", "--base-url", server.base_url, "--model", "scripted-model"]


def test_record_replay_offline_and_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    card, log = story_card(tmp_path), st_log(tmp_path, "ferry")
    monkeypatch.setenv("REPLAY_TEST_KEY", SECRET)
    t1, t2, r1, r2 = (tmp_path / name for name in ("t1", "t2", "r1.json", "r2.json"))
    with ScriptedServer() as server:
        install(server)
        code, out, err = cli(
            capsys, "replay", log, "--card", card, *live_flags(server),
            "--api-key-env", "REPLAY_TEST_KEY", "--trace", t1, "--report", r1,
        )  # fmt: skip
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert code == 0, err
    assert "ferry" in out and "done" in out and "3/3" in out

    code, out, err = cli(
        capsys, "replay", log, "--card", card, "--responses", t1, "--trace", t2, "--report", r2
    )
    assert code == 0, err
    requests = [json.dumps(c["request"], ensure_ascii=False) for c in read_calls(t1)]
    assert [json.dumps(c["request"], ensure_ascii=False) for c in read_calls(t2)] == requests

    code, out, err = cli(capsys, "replay", "--diff", r1, r2)
    assert code == 0, err
    assert "No story differences" in out and "prompt tokens" in out

    written = [*t1.rglob("*"), *t2.rglob("*"), r1, r2, paths.database_file()]
    for path in written:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def recorded_trace(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A card, a chat log and the trace its replay recorded against the scripted server."""
    card, log, trace = story_card(tmp_path), st_log(tmp_path, "ferry"), tmp_path / "t"
    with ScriptedServer() as server:
        install(server)
        recorded = narrative("replay", log, "--card", card, *live_flags(server), "--trace", trace)
    assert recorded.returncode == 0, recorded.stderr
    return card, log, trace


def test_drift_exits_1_naming_the_turn_and_block(tmp_path: Path) -> None:
    card, log, trace = recorded_trace(tmp_path)
    story_card(tmp_path, description="{{char}} keeps a lighthouse, not a ferry.")

    drifted = narrative("replay", log, "--card", card, "--responses", trace)

    assert drifted.returncode == 1
    assert "error: ferry: turn 1, planning (attempt 1): the prompt differs" in drifted.stderr
    assert "block <character>" in drifted.stderr
    assert "now:      Mira keeps a lighthouse, not a ferry." in drifted.stderr
    assert "hint: the card, lore, settings or prompt templates changed" in drifted.stderr
    assert "Traceback" not in drifted.stderr
    assert "failed" in drifted.stdout


# A plain log replayed from its trace needs none of these: a price table's YAML, an HTTP
# date's parser, package resources (tempfile, zipfile), the socket module for one host name,
# the imported-chat catch-up, progress bars when the output is not a terminal (issue 17:
# replay start-up).
NOT_FOR_A_PLAIN_REPLAY = (
    "yaml", "email.utils", "importlib.resources", "socket", "rich.progress",
    "narrative_cli.replay.imported", "narrative_cli.pipeline.catch_up",
)  # fmt: skip


def test_a_plain_replay_from_its_trace_loads_only_what_it_uses(tmp_path: Path) -> None:
    card, log, trace = recorded_trace(tmp_path)

    done = subprocess.run(
        [sys.executable, "-c", PROBE, "replay", str(log), "--card", str(card),
         "--responses", str(trace)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "120"},
    )  # fmt: skip

    assert "done" in done.stdout and "error:" not in done.stderr, done.stderr  # it replayed
    modules = set(done.stderr.rsplit("MODULES ", 1)[1].split("\n", 1)[0].split())
    assert {"narrative_cli.replay.recorded", "narrative_cli.agents.templates"} <= modules
    assert sorted(modules.intersection(NOT_FOR_A_PLAIN_REPLAY)) == []


def narrative(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "narrative_cli", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "120"},
    )


def test_jobs_write_one_trace_folder_per_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    card = story_card(tmp_path)
    logs = [st_log(tmp_path, name) for name in ("north", "south", "east")]
    trace = tmp_path / "t"
    with ScriptedServer() as server:
        install(server)
        code, out, err = cli(
            capsys, "replay", *logs, "--card", card, *live_flags(server),
            "--jobs", "2", "--rpm", "6000", "--trace", trace,
        )  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in trace.iterdir() if p.is_dir()) == ["east", "north", "south"]
    assert (trace / "replay-settings.json").is_file()
    assert "total" in out and all(name in out for name in ("north", "south", "east"))

    code, out, err = cli(capsys, "replay", *logs, "--card", card, "--responses", trace, "-j", "3")
    assert code == 0, err
    assert out.count("done") == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay"], "give LOG files and --card CARD"),
        (["replay", "{log}"], "give LOG files and --card CARD"),
        (["replay", "{missing}", "--card", "{card}"], "no such chat file"),
        (["replay", "{log}", "--card", "{card}", "--responses", "{missing}"], "no such trace"),
        (["replay", "{log}", "--card", "{card}", "--jobs", "0"], "--jobs"),
        (["replay", "{log}", "--card", "{card}", "--rpm", "-1"], "--rpm must be above 0"),
        (["replay", "--diff", "{log}", "{log}"], "invalid JSON in the report file"),
        (["replay", "{log}", "--card", "{card}", "--prices", "{log}"], "the price table is not"),
    ],
)
def test_bad_usage_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    names = {
        "log": str(st_log(tmp_path, "ferry")),
        "card": str(story_card(tmp_path)),
        "missing": str(tmp_path / "missing.jsonl"),
    }
    code, out, err = cli(capsys, *(arg.format(**names) for arg in args))
    assert code == 2
    assert message in out + err
    assert "Traceback" not in out + err


def test_help_lists_the_replay_and_common_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "replay", "--help")
    assert code == 0
    flags = (
        "--card", "--lorebook", "--preset", "--persona", "--user-name", "--profile",
        "--provider", "--base-url", "--model", "--api-key-env", "--trace", "--seed", "--mode",
        "--lang", "--responses", "--jobs", "--report", "--diff", "--rpm", "--prices",
    )  # fmt: skip
    assert [flag for flag in flags if flag not in out] == []


def test_a_replay_killed_mid_log_leaves_the_store_whole_and_resumes(tmp_path: Path) -> None:
    """A replay commits its turns without waiting for the disk (#17). Killed part-way, the
    database is intact (the user's own session too) and a second run plays only the rest."""
    from narrative_cli.store.sessions import SessionStore

    card = story_card(tmp_path)
    # enough turns that the kill lands mid-log even though a replay commits its turns in
    # batches of up to 0.25 s (#17, session six)
    inputs = tuple(f"I pull the oar, stroke {n}." for n in range(1, 151))
    log, trace = st_log(tmp_path, "ferry", inputs=inputs), tmp_path / "t"
    with ScriptedServer() as server:
        install(server)
        with pytest.raises(SystemExit) as done:
            main([str(a) for a in ("replay", log, "--card", card, *live_flags(server),
                                   "--trace", trace)])  # fmt: skip
    assert done.value.code in (0, None)
    database = paths.database_file()
    with SessionStore(database) as store:
        mine = store.create_session(
            "my own story", card_path=str(card), card_hash="", snapshot={"turn": 0}
        )
    command = [sys.executable, "-m", "narrative_cli", "replay", str(log), "--card", str(card)]
    child = subprocess.Popen([*command, "--responses", str(trace)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        committed = 0
        deadline = time.monotonic() + 120
        while committed < 3 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            committed = replayed(database).last_turn if replayed(database) else 0
        assert child.poll() is None, "the replay ended before it could be killed"
    finally:
        child.kill()
        child.wait()

    with SessionStore(database) as store:
        assert store.db.query("PRAGMA integrity_check") == [("ok",)]
        assert store.resume(mine).snapshot == {"turn": 0}
    stopped = replayed(database)
    assert stopped is not None and 3 <= stopped.last_turn < len(inputs)

    again = narrative("replay", log, "--card", card, "--responses", trace)
    assert again.returncode == 0, again.stderr
    with SessionStore(database) as store:
        views = store.turns(stopped.id)
    assert [v.number for v in views] == list(range(len(inputs) + 1))


def replayed(database: Path) -> Any:
    """The newest session a replay of the log ``ferry`` made (None before there is one)."""
    from narrative_cli.store.sessions import SessionStore

    with SessionStore(database) as store:
        found = [s for s in store.list_sessions() if s.name == "replay: ferry"]
    return max(found, key=lambda s: s.id) if len(found) > 1 else None
