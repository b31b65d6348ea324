"""Same card, settings, inputs, seed and recorded replies → byte-identical prompts and state."""

from __future__ import annotations

import json
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import PlayedTurn, Snapshot, Story, TurnResult, open_story
from narrative_cli.pipeline.trace import TraceWriter, read_calls

from .pipeline_support import (
    DICE_TOOL,
    PLAN,
    Script,
    backends_for,
    entry,
    settings_for,
    tool_entry,
    write_card,
)
from .servers import RecordedRequest, ScriptedServer

INPUTS = ["I cast off the rope.", "I ring the ferry bell.", "I steer toward the lights."]
CLOCK = datetime(2025, 3, 1, 21, 30, tzinfo=timezone.utc)


def _card(folder: Path) -> Path:
    entries = [
        entry(
            0,
            "The wind blows from the {{random::north::south::east::west}}.",
            constant=True,
            position=4,
        ),
        entry(
            1,
            "Tonight the sea is {{pick::calm::choppy::wild}}; it is {{time}}.",
            constant=True,
            position=0,
        ),
        entry(2, "The bell has {{roll:1d100}} dents.", keys=("bell",)),
        tool_entry(3, DICE_TOOL),
    ]
    return write_card(folder, entries)


def _plan(request: RecordedRequest) -> dict[str, Any]:
    return {**PLAN, "tool_calls": [{"tool": "roll_dice", "params": {"expr": "2d6+1", "dc": 8}}]}


def _story(server: ScriptedServer, card: Path, seed: int) -> Story:
    story = open_story(card, settings=settings_for(server), seed=seed)
    story.clock = lambda: CLOCK
    return story


def _play(server: ScriptedServer, story: Story, trace: Path | None = None) -> list[TurnResult]:
    backends = backends_for(server, story.settings)
    writer = TraceWriter(trace) if trace else None
    results = []
    for text in INPUTS:
        result = run_turn(story, text, backends, trace=writer)
        story.advance(result)
        results.append(result)
    return results


def _sent(server: ScriptedServer) -> list[bytes]:
    """Every request body as sent, minus nothing: bytes compared byte for byte."""
    return [request.body for request in server.requests]


def _stable(result: TurnResult) -> dict[str, Any]:
    """A turn record without its timings (latency is the only thing allowed to differ)."""
    record = result.to_record()
    record["usage"] = {a: {**u, "latency_ms": 0} for a, u in record["usage"].items()}
    return record


def test_recorded_replies_reproduce_every_prompt_and_snapshot(tmp_path: Path) -> None:
    card = _card(tmp_path)
    with ScriptedServer() as first_server:
        Script({"planning": _plan}).install(first_server)
        first = _play(first_server, _story(first_server, card, seed=99), tmp_path / "trace")
        first_bodies = _sent(first_server)

    recorded = deque(call["response"]["text"] for call in read_calls(tmp_path / "trace"))
    with ScriptedServer() as replay_server:
        replay_server.reply_with(lambda body, request: recorded.popleft())
        again = _play(replay_server, _story(replay_server, card, seed=99))
        assert _sent(replay_server) == first_bodies
    assert not recorded
    assert [r.snapshot.to_dict() for r in again] == [r.snapshot.to_dict() for r in first]
    assert [_stable(r) for r in again] == [_stable(r) for r in first]
    dice = [r.tool_results[0].text for r in first]
    assert all(line.startswith("Check: 2d6+1 = [") for line in dice)


def test_another_seed_changes_the_rolls_but_not_the_shape(tmp_path: Path) -> None:
    card = _card(tmp_path)
    runs = {}
    for seed in (1, 2):
        with ScriptedServer() as server:
            Script({"planning": _plan}).install(server)
            results = _play(server, _story(server, card, seed))
            rolls = [r.tool_results[0].data["rolls"] for r in results]
            runs[seed] = (rolls, [request.agent for request in server.requests])
    assert runs[1][0] != runs[2][0]
    assert runs[1][1] == runs[2][1] == ["planning", "writing", "analysis"] * 3


def test_a_resumed_story_sends_what_the_continuous_one_sends(tmp_path: Path) -> None:
    card = _card(tmp_path)
    with ScriptedServer() as server:
        Script({"planning": _plan}).install(server)
        story = _story(server, card, seed=7)
        backends = backends_for(server, story.settings)
        first = run_turn(story, INPUTS[0], backends)
        story.advance(first)
        stored = (story.greeting_record(), first.to_record(), first.snapshot.to_dict())
        continuous = run_turn(story, INPUTS[1], backends)
        continuous_bodies = _sent(server)[3:]

        resumed_story = _story(server, card, seed=7)
        greeting, record, snapshot = json.loads(json.dumps(stored))
        played = [PlayedTurn.from_record(greeting), PlayedTurn.from_record(record)]
        resumed_story.restore(played, Snapshot.from_dict(snapshot))
        start = len(server.requests)
        resumed = run_turn(resumed_story, INPUTS[1], backends)
        assert _sent(server)[start:] == continuous_bodies
    assert resumed.snapshot.to_dict() == continuous.snapshot.to_dict()
