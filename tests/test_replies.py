"""Typed replies (agents/replies.py): the checked JSON read once into values (#12)."""

from __future__ import annotations

from narrative_cli.agents.parsing import parse_analysis, parse_plan
from narrative_cli.agents.replies import Analysis, Plan, ToolCall
from narrative_cli.state.engine import GameState, apply_events

PLAN_REPLY = """```json
{"narrative_direction": "The bell rings", "key_points": "the bell", "tone": "calm",
 "tool_calls": [{"tool": "roll_dice", "params": {"expr": "1d20"}}, {"tool": "peek"}],
 "text_recall": ["2", 7], "mood_of_the_model": "cheerful"}
```"""


def test_a_checked_plan_becomes_typed_fields_and_keeps_what_the_model_sent() -> None:
    parsed = parse_plan(PLAN_REPLY)
    assert parsed.value is not None
    plan = Plan.from_json(parsed.value)
    assert plan.narrative_direction == "The bell rings"
    assert plan.key_points == ("the bell",)  # one string became a list when checked
    assert plan.tool_calls == (ToolCall("roll_dice", {"expr": "1d20"}), ToolCall("peek", {}))
    assert plan.text_recall == (2, 7)
    assert plan.scene_setting == "" and plan.continuity_notes == ()
    assert plan.to_json() == parsed.value  # the record stores the checked reply unchanged
    assert plan.to_json()["mood_of_the_model"] == "cheerful"


def test_a_stored_plan_of_any_shape_reads_without_raising() -> None:
    plan = Plan.from_json({"narrative_direction": 3, "key_points": [1, "ok"], "tool_calls": "x"})
    assert plan.narrative_direction == "" and plan.key_points == ("ok",)
    assert plan.tool_calls == ()


def test_a_tool_call_with_params_that_are_not_an_object_is_marked() -> None:
    assert ToolCall.from_json({"name": " dice ", "arguments": [1]}) == ToolCall("dice", {}, False)
    assert ToolCall.from_json("roll") == ToolCall("")


def test_analysis_events_are_typed_and_the_engine_records_them_as_proposed() -> None:
    parsed = parse_analysis(
        '{"events": [{"type": " move ", "params": {"location": "deck"}},'
        ' {"type": "add_item", "item": "rope"}, {"type": "fly"}],'
        ' "summary_entries": ["They sail."]}'
    )
    assert parsed.value is not None
    analysis = Analysis.from_json(parsed.value)
    assert [e.type for e in analysis.events] == ["move", "add_item", "fly"]
    assert analysis.events[1].params == {"item": "rope"}  # sibling keys as params
    assert analysis.summary_entries == ("They sail.",)
    result = apply_events(GameState.initial("en"), analysis.events, lang="en")
    assert [r.type for r in result.applied] == ["move", "add_item"]
    assert result.applied[0].event == {"type": " move ", "params": {"location": "deck"}}
    assert [r.reason for r in result.rejected] == ['unknown event type "fly"']
