"""Mode choice (merged / serial / parallel) and the calls each mode makes (scripted server)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.errors import BadInput
from narrative_cli.pipeline.orchestrator import choose_mode, run_turn
from narrative_cli.pipeline.story import open_story

from . import servers
from .pipeline_support import (
    DICE_TOOL,
    PLAN,
    Script,
    backends_for,
    block,
    entry,
    llm_tool,
    message,
    requests_of,
    settings_for,
    tool_entry,
    write_card,
)
from .servers import RecordedRequest, ScriptedServer

scripted_server = servers.scripted_server


@pytest.mark.parametrize(
    ("setting", "parallel", "tools", "recall", "label"),
    [
        ("auto", False, False, False, "merged"),
        ("auto", False, True, False, "serial"),
        ("auto", False, False, True, "serial"),
        ("auto", True, True, False, "parallel"),
        ("auto", True, False, False, "merged"),
        ("merged", False, True, True, "merged"),
        ("serial", True, False, False, "serial"),
        ("parallel", False, False, False, "parallel"),
    ],
)
def test_mode_rule(setting: str, parallel: bool, tools: bool, recall: bool, label: str) -> None:
    assert choose_mode(setting, parallel, tools, recall).label == label


def test_unknown_mode_is_bad_input() -> None:
    with pytest.raises(BadInput, match="--mode must be one of"):
        choose_mode("fast", False, False, False)


def _play(server: ScriptedServer, card: Path, text: str = "I board the ferry.", **pipe: Any):
    settings = settings_for(server, **pipe)
    story = open_story(card, settings=settings, seed=3)
    return run_turn(story, text, backends_for(server, settings))


def test_no_tools_and_no_recall_is_merged_with_two_calls(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    card = write_card(tmp_path, [entry(0, "The strait is cold.", constant=True, position=0)])
    script = Script().install(scripted_server)
    result = _play(scripted_server, card)
    assert result.mode == "merged"
    assert script.seen == ["merged_writing", "analysis"]
    assert {agent: u.calls for agent, u in result.usage.agents.items()} == {
        "merged_writing": 1,
        "analysis": 1,
    }
    assert result.usage.total().calls == len(scripted_server.requests) == 2


def test_text_recall_setting_makes_it_serial_with_three_calls(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    card = write_card(tmp_path, [])
    script = Script().install(scripted_server)
    result = _play(scripted_server, card, text_recall=True)
    assert (result.mode, script.seen) == ("serial", ["planning", "writing", "analysis"])
    planning = message(requests_of(scripted_server, "planning")[0], "system")
    assert "No tools are available" in planning


def test_a_planning_tool_makes_it_serial_and_dice_cost_no_call(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    card = write_card(tmp_path, [tool_entry(1, DICE_TOOL)])
    plan = {**PLAN, "tool_calls": [{"tool": "roll_dice", "params": {"expr": "1d20+1"}}]}
    script = Script({"planning": plan}).install(scripted_server)
    result = _play(scripted_server, card)
    assert (result.mode, script.seen) == ("serial", ["planning", "writing", "analysis"])
    assert "roll_dice" in message(requests_of(scripted_server, "planning")[0], "system")
    results = block(message(requests_of(scripted_server, "writing")[0], "user"), "tool_results")
    assert results is not None and results.startswith("Check: 1d20+1 = [")


def test_llm_tools_and_mvu_each_add_a_call(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    entries = [
        tool_entry(1, llm_tool("lookup", "planning", ["user_input"])),
        tool_entry(2, llm_tool("panel", "post_pipeline", ["narrative_text"])),
        entry(3, '{"ferry": {"fuel": 10}}', comment="[initvar] vars"),
    ]
    card = write_card(tmp_path, entries)
    plan = {**PLAN, "tool_calls": [{"tool": "lookup", "params": {}}]}
    script = Script({"planning": plan}).install(scripted_server)
    result = _play(scripted_server, card)
    assert script.seen == [
        "planning",
        "tool:lookup",
        "writing",
        "analysis",
        "tool:panel",
        "mvu_extract",
    ]
    assert result.post_outputs == {"panel": "tool output"}
    assert result.usage.agents["tool:lookup"].calls == 1


def test_a_keyed_tool_is_active_only_when_its_key_is_typed(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    card = write_card(tmp_path, [tool_entry(1, DICE_TOOL, keys=("climb",))])
    Script().install(scripted_server)
    assert _play(scripted_server, card, "I sit down.").mode == "merged"
    assert _play(scripted_server, card, "I climb the mast.").mode == "serial"


def test_forced_merged_mode_skips_the_planner_even_with_tools(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    card = write_card(tmp_path, [tool_entry(1, DICE_TOOL)])
    script = Script().install(scripted_server)
    result = _play(scripted_server, card, mode="merged")
    assert (result.mode, script.seen) == ("merged", ["merged_writing", "analysis"])


def test_serial_mode_runs_post_tools_after_the_state_update(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    entries = [
        tool_entry(1, DICE_TOOL),
        tool_entry(2, llm_tool("panel", "post_pipeline", ["state_summary"])),
    ]
    card = write_card(tmp_path, entries)
    script = Script().install(scripted_server)
    _play(scripted_server, card)
    assert script.seen == ["planning", "writing", "analysis", "tool:panel"]
    panel = message(requests_of(scripted_server, "tool:panel")[0], "user")
    assert "Location: ferry deck" in (block(panel, "state_summary") or "")


def test_parallel_mode_overlaps_the_analysis_with_independent_tools(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    entries = [
        tool_entry(1, DICE_TOOL),
        tool_entry(2, llm_tool("weather", "post_pipeline", ["narrative_text"])),
        tool_entry(3, llm_tool("panel", "post_pipeline", ["state_summary"])),
        tool_entry(4, llm_tool("gossip", "post_pipeline", ["user_input"])),
    ]
    card = write_card(tmp_path, entries)
    together = threading.Barrier(3, timeout=5)  # analysis, weather and gossip all in flight
    met: list[bool] = []

    def meet(answer: Any) -> Any:
        def hook(request: RecordedRequest) -> Any:
            try:
                together.wait()
                met.append(True)
            except threading.BrokenBarrierError:
                met.append(False)
            return answer

        return hook

    analysis = {
        "events": [{"type": "move", "params": {"location": "ferry deck"}}],
        "summary_entries": ["Left the pier."],
    }
    answers = {
        "analysis": meet(analysis),
        "tool:weather": meet("<weather>fog</weather>"),
        "tool:gossip": meet("<gossip>none</gossip>"),
        "tool:panel": _where,
    }
    script = Script(answers).install(scripted_server)
    result = _play(scripted_server, card, parallel=True)
    assert result.mode == "parallel"
    assert met == [True, True, True]
    assert script.seen[:2] == ["planning", "writing"] and script.seen[-1] == "tool:panel"
    # the panel was guessed on the state before the analysis; the move changed what it reads,
    # so the guess was dropped and the panel asked again on the fresh state
    guessed, fresh = (message(r, "user") for r in requests_of(scripted_server, "tool:panel"))
    assert "Location: Start" in (block(guessed, "state_summary") or "")
    assert "Location: ferry deck" in (block(fresh, "state_summary") or "")
    assert list(result.post_outputs) == ["weather", "gossip", "panel"]
    assert result.post_outputs["panel"] == "<panel>Location: ferry deck</panel>"
    assert result.usage.agents["tool:panel"].calls == 2  # the dropped guess cost tokens too
    assert result.summary_entries == ["[Turn 1] Left the pier."]


def _where(request: RecordedRequest) -> str:
    """A panel that reports the location it was shown."""
    state = block(message(request, "user"), "state_summary") or ""
    return "<panel>" + next(line for line in state.splitlines() if "Location" in line) + "</panel>"


def test_parallel_mode_keeps_a_guessed_tool_call_when_the_state_did_not_change(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    """A tool reading the state is sent beside the analysis; when the analysis changes nothing
    it reads, that call is the tool's call: one request, the same prompt and output as the
    serial order gives."""
    entries = [tool_entry(1, DICE_TOOL), tool_entry(2, llm_tool("panel", "post_pipeline",
                                                                ["state_summary"]))]
    card = write_card(tmp_path, entries)
    panel_sent = threading.Event()
    overlapped: list[bool] = []

    def analysis(request: RecordedRequest) -> Any:
        overlapped.append(panel_sent.wait(5))  # the panel's request came while this one ran
        return {"events": [], "summary_entries": ["Waited on the pier."]}

    def panel(request: RecordedRequest) -> str:
        panel_sent.set()
        return _where(request)

    Script({"analysis": analysis, "tool:panel": panel}).install(scripted_server)
    result = _play(scripted_server, card, parallel=True)
    assert overlapped == [True]
    assert len(requests_of(scripted_server, "tool:panel")) == 1
    assert result.usage.agents["tool:panel"].calls == 1
    parallel_prompt = requests_of(scripted_server, "tool:panel")[0].messages

    scripted_server.requests.clear()
    panel_sent.set()
    Script({"analysis": analysis, "tool:panel": panel}).install(scripted_server)
    serial = _play(scripted_server, card)
    assert serial.mode == "serial"
    assert requests_of(scripted_server, "tool:panel")[0].messages == parallel_prompt
    assert serial.post_outputs == result.post_outputs == {"panel": "<panel>Location: Start</panel>"}


def test_usage_adds_up_per_turn_and_per_session_with_a_cost_estimate(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    from narrative_cli.pipeline.accounting import Price, SessionAccount, estimate_cost

    card = write_card(tmp_path, [])
    Script({"analysis": ["oops", {"events": [], "summary_entries": ["ok"]}]}).install(
        scripted_server
    )
    settings = settings_for(scripted_server)
    story = open_story(card, settings=settings, seed=1)
    backends = backends_for(scripted_server, settings)
    session = SessionAccount()
    for text in ("I wave.", "I sit."):
        result = run_turn(story, text, backends)
        story.advance(result)
        session.add_turn(result.usage)
    assert session.turns == 2
    assert session.agents["analysis"].calls == 3  # one corrective retry on the first turn
    assert session.agents["merged_writing"].calls == 2
    total = session.total()
    assert total.calls == len(scripted_server.requests) == 5
    prompt = sum(len(json.dumps(r.messages)) for r in scripted_server.requests)
    assert 0 < total.prompt_tokens < prompt
    price = Price(prompt=2.0, cached=0.5, completion=8.0)
    expected = (total.prompt_tokens * 2.0 + total.completion_tokens * 8.0) / 1_000_000
    assert estimate_cost(session.agents, {"*": price}) == pytest.approx(expected)
    assert estimate_cost(session.agents, {"analysis": price}) < expected
    assert estimate_cost(session.agents, lambda agent: None) == 0


def test_cached_prompt_tokens_are_priced_at_the_cached_rate() -> None:
    from narrative_cli.pipeline.accounting import AgentUsage, Price

    usage = AgentUsage(calls=1, prompt_tokens=1000, cached_tokens=600, completion_tokens=100)
    assert Price(prompt=2.0, cached=0.5, completion=8.0).cost(usage) == pytest.approx(
        (400 * 2.0 + 600 * 0.5 + 100 * 8.0) / 1_000_000
    )
    assert usage.cache_share == 0.6
