"""``--trace DIR``: calls.jsonl with exactly the contract's keys, readable turn files, no keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from narrative_cli.credentials import scrub
from narrative_cli.errors import AuthenticationError, NarrativeError
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import open_story
from narrative_cli.pipeline.trace import CallTrace, TraceWriter, read_calls
from narrative_cli.pipeline.trace_text import fenced

from . import servers
from .pipeline_support import LANTERN, backends_for, settings_for
from .servers import Reply, ScriptedServer
from .test_pipeline_e2e import LAMP_STORY, lantern_script

scripted_server = servers.scripted_server

KEYS = {
    "session",
    "turn",
    "agent",
    "mode",
    "attempt",
    "request",
    "response",
    "usage",
    "latency_ms",
    "error",
}
SECRET = "sk-trace-test-0123456789SECRETVALUE"


def _story(server: ScriptedServer, **profile: object):
    settings = settings_for(server)
    settings.profiles["scripted"] = server.profile(**profile)
    return open_story(LANTERN, settings=settings, seed=2), backends_for(server, settings)


def test_every_call_is_one_line_with_exactly_the_contract_keys(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    lantern_script(
        analysis=["not json", json.dumps({"events": [], "summary_entries": ["x"]})]
    ).install(scripted_server)
    story, backends = _story(scripted_server)
    writer = TraceWriter(tmp_path / "trace", session="s-42")
    run_turn(story, "I trim the wick.", backends, trace=writer)

    calls = read_calls(tmp_path / "trace")
    assert [c["agent"] for c in calls] == [
        "planning",
        "writing",
        "analysis",
        "analysis",
        "tool:keeper_log",
        "mvu_extract",
    ]
    for call, sent in zip(calls, scripted_server.requests, strict=True):
        assert set(call) == KEYS
        assert (call["session"], call["turn"], call["mode"]) == ("s-42", 1, "serial")
        assert call["request"]["model"] == "scripted-model"
        assert call["request"]["messages"] == sent.messages
        assert set(call["response"]) == {"text", "reasoning", "finish_reason"}
        assert set(call["usage"]) == {"prompt_tokens", "completion_tokens", "cached_tokens"}
        assert call["usage"]["prompt_tokens"] == sent_usage(sent)
        assert call["error"] is None and call["latency_ms"] >= 0
    assert [c["attempt"] for c in calls if c["agent"] == "analysis"] == [1, 2]
    assert calls[0]["request"]["json_schema"]["name"] == "plan"
    assert calls[1]["request"]["stream"] is True
    assert calls[1]["response"] == {"text": LAMP_STORY, "reasoning": "", "finish_reason": "stop"}


def sent_usage(request: servers.RecordedRequest) -> int:
    """The prompt tokens the scripted server reports for ``request`` (its 'auto' usage)."""
    return sum(len(str(m.get("content", ""))) for m in request.messages) // 4 + 5


def test_turn_file_shows_calls_tools_events_and_state(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    lantern_script().install(scripted_server)
    story, backends = _story(scripted_server)
    writer = TraceWriter(tmp_path, session="s1")
    result = run_turn(story, "I trim the wick.", backends, trace=writer)
    story.advance(result)
    run_turn(story, "I sleep.", backends, trace=writer)

    text = (tmp_path / "turn-0001.md").read_text(encoding="utf-8")
    assert text.startswith("# Turn 1 · serial")
    for heading in (
        "### 1. planning (attempt 1)",
        "### 2. writing (attempt 1)",
        "### 5. mvu_extract (attempt 1)",
        "## Tool results",
        "## State events",
        "## Summary entries",
        "## MVU patches",
        "## State after the turn",
    ):
        assert heading in text
    assert "- roll_dice [planning]: Check: 1d20" in text
    assert "paraffin" in text.split("Rejected:")[1].split("##")[0]
    assert "- [Turn 1] The apprentice trimmed the wick" in text
    assert "- rejected" in text and "weather.wind" in text
    assert '"location": "lamp room"' in text.split("## State after the turn")[1]
    assert (tmp_path / "turn-0002.md").exists()
    assert {c["turn"] for c in read_calls(tmp_path)} == {1, 2}


def test_a_failed_call_is_traced_and_no_key_is_ever_written(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACE_TEST_KEY", SECRET)
    lantern_script(writing=Reply(fault="unauthorized")).install(scripted_server)
    story, backends = _story(scripted_server, api_key_env="TRACE_TEST_KEY")
    trace = tmp_path / "trace"
    with pytest.raises(AuthenticationError):
        run_turn(story, "I trim the wick.", backends, trace=TraceWriter(trace))
    assert scripted_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"

    calls = read_calls(trace)
    assert [c["agent"] for c in calls] == ["planning", "writing"]
    failed = calls[1]
    assert "***" in failed["error"] and failed["response"]["text"] == ""
    turn = (trace / "turn-0001.md").read_text(encoding="utf-8")
    assert "not committed" in turn and "## Error" in turn
    for path in trace.iterdir():
        content = path.read_text(encoding="utf-8")
        assert SECRET not in content


def test_budget_cuts_are_recorded_in_result_and_trace(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    lantern_script().install(scripted_server)
    story, backends = _story(scripted_server, context_size=1100)
    result = run_turn(story, "I trim the wick of the lamp.", backends, trace=TraceWriter(tmp_path))
    assert result.budget_cuts, "a 1100-token context cannot hold the full prompts"
    cut = result.budget_cuts[0]
    assert cut.limit < 1100 and cut.cuts[0].block in {
        "text_recall",
        "worldinfo3",
        "recent_turns",
        "story_summary",
        "character",
        "worldinfo2",
    }
    text = (tmp_path / "turn-0001.md").read_text(encoding="utf-8")
    assert f"- {cut.agent}: " in text.split("## Prompt budget cuts")[1]


def test_scrub_masks_credentials_at_any_depth() -> None:
    data = {
        "model": "m",
        "Authorization": "Bearer x",
        "extra": [{"x-api-key": "k", "a": 1, "secret_key": "s", "password": "p"}],
        "schema": {"properties": {"key": {"type": "string"}}},
        "api_key_env": "DEEPSEEK_API_KEY",
    }
    assert scrub(data) == {
        "model": "m",
        "Authorization": "***",
        "extra": [{"x-api-key": "***", "a": 1, "secret_key": "***", "password": "***"}],
        "schema": {"properties": {"key": {"type": "string"}}},
        "api_key_env": "DEEPSEEK_API_KEY",
    }


def test_call_trace_json_has_only_contract_keys() -> None:
    call = CallTrace(
        turn=3,
        agent="tool:dice",
        mode="merged",
        attempt=1,
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        params={"temperature": 0.2, "api_key": "sk-no"},
    )
    data = call.to_json("sess")
    assert set(data) == KEYS
    assert data["request"] == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
    }


def test_fences_grow_around_text_that_contains_fences() -> None:
    assert fenced("plain").startswith("~~~~text\n")
    inner = "~~~~~\ncode\n~~~~~"
    assert fenced(inner).startswith("~~~~~~text\n") and fenced(inner).endswith("\n~~~~~~")


def test_an_unusable_trace_directory_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(NarrativeError, match=r"--trace .*file.txt"):
        TraceWriter(blocker / "trace")
