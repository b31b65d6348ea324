"""Parallel mode's guessed post tools under recorded replay (issue #17 item 5).

A post tool that reads the state is sent beside the analysis on the state from before it and
kept only when its final prompt is the same; the trace holds only the calls the turn is made
of, so replaying the trace (which sends no guesses) gives the same prompts, story and state.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.pipeline.trace import read_calls
from narrative_cli.play.options import PlayOptions

from .pipeline_support import DICE_TOOL, llm_tool, tool_entry, write_card
from .servers import ScriptedServer
from .test_replay import INPUTS, echo_writer, install, live, replay, st_log, stable

MOVED = {"events": [{"type": "move", "params": {"location": "the pier"}}], "summary_entries": ["a"]}
STILL = {"events": [], "summary_entries": ["b"]}
BACK = {"events": [{"type": "move", "params": {"location": "the deck"}}], "summary_entries": ["c"]}


def panel_card(folder: Path) -> Path:
    panel = llm_tool("panel", "post_pipeline", ["state_summary"])
    return write_card(folder, [tool_entry(1, DICE_TOOL), tool_entry(2, panel)])


def panel_calls(trace: Path) -> list[dict[str, Any]]:
    return [call for call in read_calls(trace) if call["agent"] == "tool:panel"]


def without_usage(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in record.items() if k != "usage"} for record in records]


def test_guessed_post_tools_replay_to_the_same_prompts_story_and_state(tmp_path: Path) -> None:
    card, log = panel_card(tmp_path), st_log(tmp_path, "ferry")
    with ScriptedServer() as server:
        install(server, analysis=[MOVED, STILL, BACK])
        recorded = replay([log], live(server, card, mode="parallel", trace=str(tmp_path / "t1")))
        sent = [r for r in server.requests if r.agent == "tool:panel"]
    original = recorded.outcomes[0]
    assert original.status == "done" and {r.mode for r in original.records} == {"parallel"}
    # turns 1 and 3 moved the party: the guess was dropped and the panel asked again;
    # turn 2 changed nothing the panel reads: its guess was the call
    assert len(sent) == 5
    assert len(panel_calls(tmp_path / "t1")) == 3
    assert [r.usage.agents["tool:panel"].calls for r in original.records] == [2, 1, 2]
    states = [json.loads(json.dumps(c["request"]["messages"]))[-1]["content"]
              for c in panel_calls(tmp_path / "t1")]
    assert ["the pier" in states[0], "the pier" in states[1], "the deck" in states[2]] == [
        True, True, True,
    ]  # fmt: skip

    offline = PlayOptions(card=str(card), mode="parallel", trace=str(tmp_path / "t2"))
    again = replay([log], offline, responses=str(tmp_path / "t1"))
    assert again.outcomes[0].status == "done"
    first = [json.dumps(c["request"], ensure_ascii=False) for c in read_calls(tmp_path / "t1")]
    second = [json.dumps(c["request"], ensure_ascii=False) for c in read_calls(tmp_path / "t2")]
    assert second == first
    assert again.outcomes[0].final == original.final
    assert without_usage(stable(again.outcomes[0].records)) == without_usage(
        stable(original.records)
    )
    # the replay sends no guesses: its usage lacks exactly the dropped ones
    assert [r.usage.agents["tool:panel"].calls for r in again.outcomes[0].records] == [1, 1, 1]


class AnalysisWatch:
    """Scripted analysis replies that wait (up to ``patience`` seconds) for a call of the
    panel tool to reach the server in this turn while the analysis is still unanswered, and
    note whether one came: a guessed call arrives then (before or after the analysis request:
    they are sent together); a call made after the analysis cannot. The turn starts at its
    writer call, which comes after every call of the turn before."""

    def __init__(self, replies: list[dict[str, Any]], patience: float) -> None:
        self.replies, self.patience = list(replies), patience
        self.panel_seen = threading.Event()
        self.early: list[bool] = []  # per analysis call: did a panel call come meanwhile?

    def writing(self, request: Any) -> str:
        self.panel_seen.clear()
        return echo_writer(request)

    def analysis(self, request: Any) -> dict[str, Any]:
        self.early.append(self.panel_seen.wait(self.patience))
        return self.replies.pop(0)

    def panel(self, request: Any) -> str:
        self.panel_seen.set()
        return "tool output"


@pytest.mark.parametrize("guessing", [True, False])
def test_speculative_post_tools_off_sends_no_call_before_the_analysis_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guessing: bool
) -> None:
    monkeypatch.setenv("NARRATIVE_SPECULATIVE_POST_TOOLS", str(guessing).lower())
    card, log = panel_card(tmp_path), st_log(tmp_path, "ferry", INPUTS[:2])
    # patience: long enough for a guess to arrive on a loaded machine; paid only when off
    watch = AnalysisWatch([MOVED, STILL], patience=1.5 if guessing else 0.4)
    with ScriptedServer() as server:
        install(server, analysis=watch.analysis, writing=watch.writing,
                **{"tool:panel": watch.panel})
        recorded = replay([log], live(server, card, mode="parallel", trace=str(tmp_path / "t1")))
        sent = [r for r in server.requests if r.agent == "tool:panel"]
    assert recorded.outcomes[0].status == "done"
    assert watch.early == [guessing, guessing]
    # off: one panel call a turn, each the turn's own; on: turn 1's guess was dropped
    assert len(sent) == (3 if guessing else 2)
    assert [r.usage.agents["tool:panel"].calls for r in recorded.outcomes[0].records] == (
        [2, 1] if guessing else [1, 1]
    )
    # replay from the trace is unaffected: the same prompts, story and state
    offline = PlayOptions(card=str(card), mode="parallel", trace=str(tmp_path / "t2"))
    again = replay([log], offline, responses=str(tmp_path / "t1"))
    first = [json.dumps(c["request"], ensure_ascii=False) for c in read_calls(tmp_path / "t1")]
    second = [json.dumps(c["request"], ensure_ascii=False) for c in read_calls(tmp_path / "t2")]
    assert second == first and len(panel_calls(tmp_path / "t1")) == 2
    assert again.outcomes[0].final == recorded.outcomes[0].final


def test_guessing_on_or_off_the_turn_is_made_of_the_same_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    card, log = panel_card(tmp_path), st_log(tmp_path, "ferry")
    traces = []
    for guessing in ("true", "false"):
        monkeypatch.setenv("NARRATIVE_SPECULATIVE_POST_TOOLS", guessing)
        with ScriptedServer() as server:
            install(server, analysis=[MOVED, STILL, BACK])
            trace = tmp_path / f"t-{guessing}"
            replay([log], live(server, card, mode="parallel", trace=str(trace)))
        traces.append([json.dumps(c["request"], ensure_ascii=False) for c in read_calls(trace)])
    assert traces[0] == traces[1]
