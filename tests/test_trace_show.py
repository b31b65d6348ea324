"""``narrative trace show DIR``: blocks with token shares, the shared cache prefix, the usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from narrative_cli.cli.app import main
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.trace_report import read_trace, shared_prefix, split_blocks, trace_reports
from narrative_cli.store import SessionStore
from narrative_cli.tokens import estimate_tokens
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import StoryScript

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures


def show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["trace", "show", *args])
        code = 0
    except SystemExit as done:
        code = int(done.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def trace_dir(tmp_path: Path, scripted_server: ScriptedServer) -> Path:
    """A trace of two played turns of the sample card."""
    scripted_server.reply_with(StoryScript())
    trace = tmp_path / "trace"
    options = PlayOptions(
        card=str(SAMPLES / "lantern-keeper.png"), provider="openai",
        base_url=scripted_server.base_url, model="m", seed=2, trace=str(trace),
    )
    with SessionStore(tmp_path / "s.db") as store:
        play = PlaySession.open(store, options)
        play.play("I climb the stairs.")
        play.play("I trim the wick.")
        play.close()
    return trace


def test_blocks_of_a_message_are_its_tagged_pieces_and_the_text_between() -> None:
    content = "Intro line.\n\n<character>\nEdda\n</character>\n\n"
    content += "<recent_turns>\nA\nB\n</recent_turns>\nGo."
    names = [name for name, _, _ in split_blocks(content)]
    assert names == ["text", "character", "recent_turns", "text"]
    name, start, end = split_blocks(content)[1]
    assert content[start:end] == "<character>\nEdda\n</character>"


HISTORY = "<history>\nold\n</history>"


def _call(turn: int, user: str) -> dict[str, object]:
    system = "<rules>\nBe kind.\n</rules>"
    return {
        "turn": turn, "agent": "writing", "attempt": 1, "mode": "merged",
        "request": {"model": "m", "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": f"{HISTORY}\n\n<user_input>\n{user}\n</user_input>"},
        ]},
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "cached_tokens": 10},
        "latency_ms": 12.0, "error": None,
    }


def test_the_shared_prefix_ends_in_the_first_block_that_differs() -> None:
    first, second = trace_reports([_call(1, "hello"), _call(2, "bye")])
    assert first.prefix is None
    prefix = second.prefix
    assert prefix is not None and prefix.previous_turn == 1
    assert (prefix.message, prefix.block) == (1, "user_input")
    system = "<rules>\nBe kind.\n</rules>"
    expected = [system, HISTORY, "<user_input>\n"]  # whole blocks, then the part before "bye"
    assert prefix.tokens == sum(estimate_tokens(text) for text in expected)
    same = shared_prefix(first, first)
    assert same.message == -1 and same.share == pytest.approx(1.0)
    shares = sum(block.share for block in second.blocks)
    assert shares == pytest.approx(1.0)


def test_trace_show_prints_every_agent_with_blocks_prefix_and_usage(
    trace_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = show(capsys, str(trace_dir))
    assert code == 0 and err == ""
    calls = read_trace(trace_dir)
    for agent in ("planning", "writing", "analysis", "tool:keeper_log", "mvu_extract"):
        assert f"turn 1 · {agent} (attempt 1)" in out
        assert f"turn 2 · {agent} (attempt 1)" in out
    assert out.count("shared prefix: first call of this agent") == 5
    assert out.count("shared prefix with turn 1:") == 5
    assert "◀ prefix ends" in out
    for block in ("<character>", "<recent_turns>", "<user_input>", "<state_summary>"):
        assert block in out
    planning = next(c for c in calls if c["agent"] == "planning" and c["turn"] == 2)
    usage = planning["usage"]
    assert f"usage: {usage['prompt_tokens']:,} prompt / {usage['cached_tokens']:,} cached" in out


def test_turn_option_keeps_one_turn(trace_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = show(capsys, str(trace_dir), "--turn", "2")
    assert code == 0
    assert "turn 2 · writing" in out and "turn 1 · writing" not in out
    assert "shared prefix with turn 1" in out  # the prefix still compares with turn 1
    code, out, _ = show(capsys, str(trace_dir), "--turn", "9")
    assert code == 0 and "no calls for that turn" in out


def test_bad_trace_directories_are_one_line_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = show(capsys, str(tmp_path / "nowhere"))
    assert code == 2 and "nowhere: no such trace directory" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = show(capsys, str(empty))
    assert code == 2 and "calls.jsonl: not found" in err
    (empty / "calls.jsonl").write_text(json.dumps(_call(1, "x")) + "\n{oops\n")
    code, _, err = show(capsys, str(empty))
    assert code == 2 and "calls.jsonl:2: not a JSON object" in err
    assert "Traceback" not in err
