"""Whole turns through the real backends on the scripted loopback server, with the sample cards.

Each request's blocks are checked, then what the turn produced: streamed text, game state,
rejected events, summary entries, MVU patches, tool outputs, and the failure rules (parse
failures retried once then warned; writer errors raised; Ctrl-C cancels).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from narrative_cli.errors import AuthenticationError, StreamInterrupted, TurnCancelled
from narrative_cli.pipeline.events import StageStarted, TextDelta, ToolResultEvent, TurnWarning
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import Story, TurnResult, open_story

from . import servers
from .pipeline_support import (
    FOG_HARBOR,
    LANTERN,
    PLAN,
    Script,
    backends_for,
    block,
    collect,
    message,
    requests_of,
    settings_for,
)
from .servers import Reply, ScriptedServer

scripted_server = servers.scripted_server

LAMP_PLAN = {
    **PLAN,
    "narrative_direction": "Edda shows the apprentice how to trim the wick.",
    "scene_setting": "The lamp room at the top of the tower, night.",
    "tool_calls": [
        {"tool": "roll_dice", "params": {"expr": "1d20+2", "dc": 12}},
        {"tool": "tide_clock", "params": {"hour": 6}},
    ],
}
LAMP_STORY = "You trim the wick. The flame steadies and the beam swings out over the fog."
LAMP_ANALYSIS = {
    "events": [
        {"type": "move", "params": {"location": "lamp room"}},
        {"type": "remove_item", "params": {"item": "paraffin", "quantity": 2}},
        {"type": "pass_time", "params": {"amount": 30, "unit": "minutes"}},
    ],
    "summary_entries": ["[Turn 7] The apprentice trimmed the wick under Edda's eye."],
}
LAMP_PATCHES = (
    "<UpdateVariable>\n"
    "_.add('keeper.lamp_oil', -1);//a night's oil\n"
    "_.insert('apprentice.tasks_learned', 'trim the wick');//learned\n"
    "_.set('weather.wind', 'calm');//no such category\n"
    "</UpdateVariable>"
)


def lantern_script(**changes: Any) -> Script:
    answers = {
        "planning": LAMP_PLAN,
        "writing": Reply(
            text=LAMP_STORY,
            chunks=[
                "You trim the wick.",
                " The flame",
                " steadies and the beam swings out over the fog.",
            ],
        ),
        "analysis": LAMP_ANALYSIS,
        "tool:keeper_log": "<keeper_log>22:30 fog thick, wick trimmed.</keeper_log>",
        "mvu_extract": LAMP_PATCHES,
        **changes,
    }
    return Script(answers)


def lantern(server: ScriptedServer) -> Story:
    return open_story(LANTERN, settings=settings_for(server), seed=11, user_name="Ada")


def test_lantern_turn_sends_every_agent_the_right_blocks(scripted_server: ScriptedServer) -> None:
    lantern_script().install(scripted_server)
    story = lantern(scripted_server)
    run_turn(story, "I trim the wick of the lamp.", backends_for(scripted_server))
    agents = [r.agent for r in scripted_server.requests]
    assert agents == ["planning", "writing", "analysis", "tool:keeper_log", "mvu_extract"]

    planning = requests_of(scripted_server, "planning")[0]
    system, user = message(planning, "system"), message(planning, "user")
    assert "Edda never leaves Greyholm" in (block(system, "worldinfo1") or "")
    assert "- roll_dice:" in system and "- tide_clock:" in system and "keeper_log" not in system
    assert planning.json["response_format"]["json_schema"]["name"] == "plan"
    assert "Name: Edda" in (block(user, "character") or "")
    assert "Greyholm is a small rocky island" in (block(user, "worldinfo2") or "")
    assert "[Turn 0] AI: *The fog presses" in (block(user, "recent_turns") or "")
    worldinfo3 = block(user, "worldinfo3") or ""
    assert worldinfo3.index("The lamp is lit at dusk") < worldinfo3.index("paraffin behind")
    assert "lamp_oil: 12" in (block(user, "state_summary") or "")
    assert block(user, "user_input") == "I trim the wick of the lamp."
    assert "[User name] Ada" in (block(user, "user_persona") or "")

    writing = requests_of(scripted_server, "writing")[0]
    w_system = message(writing, "system")
    w_user = "\n\n".join(str(m["content"]) for m in writing.messages if m["role"] == "user")
    assert writing.json["stream"] is True
    assert "tool results were decided by the system" in w_system
    guide = block(w_user, "writing_guide") or ""
    assert "Scene: The lamp room at the top of the tower, night." in guide
    results = block(w_user, "tool_results") or ""
    dice, tide = results.split("\n", 1)
    assert dice.startswith("Check: 1d20+2 = [") and "(DC 12)" in dice
    assert tide.startswith("tide_clock: {") and '"tide_m"' in tide
    notes = [m for m in writing.messages[1:] if m["role"] == "system"]  # in the chat, at depth
    assert [m["content"] for m in notes] == ["Edda speaks in short, plain sentences."]
    assert w_user.index("<worldinfo3>") < w_user.index("<writing_guide>")

    analysis = message(requests_of(scripted_server, "analysis")[0], "user")
    assert block(analysis, "narrative_output") == LAMP_STORY
    assert "[Current turn: Turn 1" in analysis

    log = requests_of(scripted_server, "tool:keeper_log")[0]
    assert message(log, "system").startswith("You are the logbook of Greyholm Light.")
    assert block(message(log, "user"), "narrative_text") == LAMP_STORY

    mvu = requests_of(scripted_server, "mvu_extract")[0]
    assert "lower /keeper/lamp_oil by 1" in message(mvu, "system")
    assert "lamp_oil: 12" in (block(message(mvu, "user"), "state_summary") or "")


def test_lantern_turn_result_state_summary_and_variables(scripted_server: ScriptedServer) -> None:
    lantern_script().install(scripted_server)
    story = lantern(scripted_server)
    before = story.snapshot.to_dict()
    events, listener = collect()
    result = run_turn(story, "I trim the wick.", backends_for(scripted_server), listener)

    assert story.snapshot.to_dict() == before and len(story.history) == 1  # story untouched
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == LAMP_STORY == result.narrative
    assert [e.stage for e in events if isinstance(e, StageStarted)][:3] == [
        "lore",
        "planning",
        "tools",
    ]
    assert [e.tool for e in events if isinstance(e, ToolResultEvent)] == [
        "roll_dice",
        "tide_clock",
        "keeper_log",
    ]

    assert result.snapshot.turn == 1 and result.mode == "serial"
    state = result.snapshot.state
    assert state["location"] == "lamp room"
    assert state["time"] == {"day": 1, "hour": 0, "minute": 30}
    assert [e.type for e in result.events_applied] == ["move", "pass_time"]
    [rejected] = result.events_rejected
    assert rejected.type == "remove_item" and "paraffin" in rejected.reason
    assert result.summary_entries == ["[Turn 1] The apprentice trimmed the wick under Edda's eye."]

    keeper = result.snapshot.mvu["keeper"]
    assert keeper["lamp_oil"][0] == 11
    # MVU: an array declared [] without the extensible marker takes no new element
    assert result.snapshot.mvu["apprentice"]["tasks_learned"] == []
    assert len(result.mvu_applied) == 1
    reasons = {p.patch: p.reason for p in result.mvu_rejected}
    assert list(reasons) == [
        "_.insert('apprentice.tasks_learned', 'trim the wick');//learned",
        "_.set('weather.wind', 'calm');//no such category",
    ]
    assert "not extensible" in reasons[list(reasons)[0]]
    assert "weather.wind does not exist" in reasons[list(reasons)[1]]
    assert result.snapshot.mvu_data["delta_data"] == {
        "keeper": {"lamp_oil": "12->11 (a night's oil)"}
    }
    assert result.post_outputs == {
        "keeper_log": "<keeper_log>22:30 fog thick, wick trimmed.</keeper_log>"
    }
    assert result.warnings == []
    assert "lamp_oil: 11" in result.state_text

    usage = result.usage
    assert list(usage.agents) == [
        "planning",
        "writing",
        "analysis",
        "tool:keeper_log",
        "mvu_extract",
    ]
    assert usage.total().calls == 5 and usage.total().prompt_tokens > 0


def test_second_turn_sees_the_first_and_records_round_trip(scripted_server: ScriptedServer) -> None:
    lantern_script().install(scripted_server)
    story = lantern(scripted_server)
    backends = backends_for(scripted_server)
    first = run_turn(story, "I trim the wick.", backends)
    story.advance(first)
    json.dumps(first.to_record()), json.dumps(first.snapshot.to_dict())
    again = TurnResult.from_record(first.to_record(), first.snapshot.to_dict())
    assert again.to_record() == first.to_record()
    assert again.snapshot == first.snapshot

    second = run_turn(story, "I listen for the bell.", backends)
    assert second.number == 2
    planning = message(requests_of(scripted_server, "planning")[1], "user")
    recent = block(planning, "recent_turns") or ""
    assert f"[Turn 1] User: I trim the wick.\n[Turn 1] AI: {LAMP_STORY}" in recent
    assert "Location: lamp room" not in planning  # MVU variables replace the state summary
    analysis = message(requests_of(scripted_server, "analysis")[1], "user")
    assert analysis.startswith("<story_summary>\n[Turn 1] The apprentice trimmed the wick")
    log = message(requests_of(scripted_server, "tool:keeper_log")[1], "user")
    assert "22:30 fog thick, wick trimmed." in (block(log, "tool_history") or "")
    assert second.snapshot.mvu["keeper"]["lamp_oil"][0] == 10


def test_analysis_that_never_parses_is_retried_once_then_warned(
    scripted_server: ScriptedServer,
) -> None:
    script = lantern_script(analysis=["Sorry, I cannot do JSON today.", "Still no JSON."])
    script.install(scripted_server)
    events, listener = collect()
    result = run_turn(
        lantern(scripted_server), "I trim the wick.", backends_for(scripted_server), listener
    )
    first, retry = requests_of(scripted_server, "analysis")
    assert retry.messages[:-2] == first.messages
    assert retry.messages[-2] == {"role": "assistant", "content": "Sorry, I cannot do JSON today."}
    assert "the reply contains no JSON object" in retry.messages[-1]["content"]
    assert result.narrative == LAMP_STORY
    assert result.events_applied == [] and result.summary_entries == []
    assert result.snapshot.state["location"] == "Start"
    [warning] = [w for w in result.warnings if w.startswith("analysis")]
    assert "NOT recorded" in warning
    assert TurnWarning("analysis", warning) in events
    assert result.usage.agents["analysis"].calls == 2


def test_analysis_fixed_by_the_corrective_retry_is_applied(scripted_server: ScriptedServer) -> None:
    lantern_script(analysis=['{"events": [', LAMP_ANALYSIS]).install(scripted_server)
    result = run_turn(lantern(scripted_server), "I trim the wick.", backends_for(scripted_server))
    assert len(requests_of(scripted_server, "analysis")) == 2
    assert result.snapshot.state["location"] == "lamp room"
    assert not [w for w in result.warnings if w.startswith("analysis")]


def test_a_plan_that_never_parses_leaves_the_writer_without_a_guide(
    scripted_server: ScriptedServer,
) -> None:
    lantern_script(planning=["no plan", "no plan either"]).install(scripted_server)
    result = run_turn(lantern(scripted_server), "I trim the wick.", backends_for(scripted_server))
    assert len(requests_of(scripted_server, "planning")) == 2
    writing = message(requests_of(scripted_server, "writing")[0], "user")
    assert block(writing, "writing_guide") is None and block(writing, "tool_results") is None
    assert any(w.startswith("planning: no usable plan") for w in result.warnings)
    assert result.narrative == LAMP_STORY


def test_an_analysis_backend_error_is_a_warning_not_a_failure(
    scripted_server: ScriptedServer,
) -> None:
    lantern_script(analysis=Reply(fault="unauthorized")).install(scripted_server)
    result = run_turn(lantern(scripted_server), "I trim the wick.", backends_for(scripted_server))
    assert result.narrative == LAMP_STORY
    assert any("analysis failed" in w and "NOT recorded" in w for w in result.warnings)


def test_a_writer_backend_error_fails_the_turn(scripted_server: ScriptedServer) -> None:
    lantern_script(writing=Reply(fault="unauthorized")).install(scripted_server)
    story = lantern(scripted_server)
    with pytest.raises(AuthenticationError):
        run_turn(story, "I trim the wick.", backends_for(scripted_server))
    assert story.snapshot.turn == 0 and len(story.history) == 1


def test_a_dropped_writer_stream_raises_with_the_partial_text(
    scripted_server: ScriptedServer,
) -> None:
    lantern_script(writing=Reply(text="You trim the", fault="drop")).install(scripted_server)
    events, listener = collect()
    with pytest.raises(StreamInterrupted) as caught:
        run_turn(
            lantern(scripted_server), "I trim the wick.", backends_for(scripted_server), listener
        )
    assert caught.value.partial == "You trim the"
    assert "analysis" not in [r.agent for r in scripted_server.requests]


def test_ctrl_c_while_streaming_cancels_the_turn(scripted_server: ScriptedServer) -> None:
    lantern_script().install(scripted_server)
    story = lantern(scripted_server)

    def listener(event: object) -> None:
        if isinstance(event, TextDelta):
            raise KeyboardInterrupt

    with pytest.raises(TurnCancelled):
        run_turn(story, "I trim the wick.", backends_for(scripted_server), listener)
    assert story.snapshot.turn == 0


def test_blank_input_is_refused(scripted_server: ScriptedServer) -> None:
    from narrative_cli.errors import BadInput

    with pytest.raises(BadInput, match="no input"):
        run_turn(lantern(scripted_server), "   ", backends_for(scripted_server))
    assert scripted_server.requests == []


def test_chinese_card_plays_a_merged_turn_in_chinese(scripted_server: ScriptedServer) -> None:
    answers = {
        "merged_writing": "<think>先想想</think>雾气漫过码头，老周的渡船在灯塔下靠岸。",
        "analysis": {
            "events": [{"type": "move", "params": {"location": "码头"}}],
            "summary_entries": ["【第3轮】你在雾中来到码头。"],
        },
        "mvu_extract": {"patches": []},
    }
    script = Script(answers).install(scripted_server)
    story = open_story(FOG_HARBOR, settings=settings_for(scripted_server), seed=5)
    assert story.lang == "zh"
    result = run_turn(story, "我去码头等渡船。", backends_for(scripted_server))
    assert result.mode == "merged"
    assert script.seen == ["merged_writing", "analysis", "mvu_extract"]
    assert result.narrative == "雾气漫过码头，老周的渡船在灯塔下靠岸。"
    assert result.summary_entries == ["[第1轮] 你在雾中来到码头。"]
    merged = message(requests_of(scripted_server, "merged_writing")[0], "user")
    assert "雾港是东海边的一座小港城" in (block(merged, "worldinfo2") or "")
    assert block(merged, "user_input") == "我去码头等渡船。"
    assert "地点：码头" in state_text_of(result)


def state_text_of(result: TurnResult) -> str:
    from narrative_cli.state.engine import GameState, state_summary

    return state_summary(GameState.from_dict(result.snapshot.state), "zh")


@pytest.mark.parametrize(
    ("reply", "story"),
    [
        ("<think>plan it</think>\nThe bell tolls.", "The bell tolls."),
        ("The bell tolls.<think>unfinished reasoning", "The bell tolls."),
        ("<context>\nThe bell tolls.\n</context>\n<summary>x</summary>", "The bell tolls."),
        ("<state_summary>\nTime: Day 1\n</state_summary>\nThe bell tolls.", "The bell tolls."),
        ("<worldinfo4>\nlore\n</worldinfo4>\n\nThe bell tolls.", "The bell tolls."),
        ("[Turn 2] User: I wait.\nThe bell tolls.", "The bell tolls."),
        ("[第3轮] 叙事要点：钟响\n钟声响起。", "钟声响起。"),
        ("A [Turn 2] in the middle stays.", "A [Turn 2] in the middle stays."),
        ("<think>only thinking</think>", ""),
    ],
)
def test_writer_replies_are_cleaned_of_reasoning_and_echoed_prompt(reply: str, story: str) -> None:
    from narrative_cli.pipeline.stages import clean_narrative

    assert clean_narrative(reply) == story


def test_a_writer_reply_with_no_story_fails_the_turn(scripted_server: ScriptedServer) -> None:
    from narrative_cli.errors import BackendError

    lantern_script(writing="<think>hmm</think><recent_turns>\nx\n</recent_turns>").install(
        scripted_server
    )
    with pytest.raises(BackendError, match="no story text"):
        run_turn(lantern(scripted_server), "I trim the wick.", backends_for(scripted_server))


@pytest.mark.parametrize(("text", "fires"), [("I crank the horn.", True), ("I sit down.", False)])
def test_a_key_typed_this_turn_activates_its_entry_this_turn(
    scripted_server: ScriptedServer, text: str, fires: bool
) -> None:
    lantern_script().install(scripted_server)
    result = run_turn(lantern(scripted_server), text, backends_for(scripted_server))
    planning = message(requests_of(scripted_server, "planning")[0], "user")
    assert ("worked by a hand crank" in (block(planning, "worldinfo3") or "")) is fires
    assert any(hit.comment == "The fog horn" for hit in result.lore) is fires


def test_snapshot_window_starts_match_the_turns_the_next_prompts_show(
    scripted_server: ScriptedServer,
) -> None:
    lantern_script().install(scripted_server)
    settings = settings_for(
        scripted_server,
        recent_turns_for_planning=2,
        planning_growth_margin=0,
        recent_turns_for_writing=1,
        writing_growth_margin=1,
    )
    story = open_story(LANTERN, settings=settings, seed=4)
    backends = backends_for(scripted_server, settings)
    starts = []
    for turn in range(1, 5):
        result = run_turn(story, f"I wait, turn {turn}.", backends)
        story.advance(result)
        starts.append((result.snapshot.windows["planning"], result.snapshot.windows["writing"]))
    assert starts == [(0, 0), (1, 2), (2, 2), (3, 4)]
    for index, (planning_start, writing_start) in enumerate(starts[:-1]):
        planning = (
            block(
                message(requests_of(scripted_server, "planning")[index + 1], "user"), "recent_turns"
            )
            or ""
        )
        sent = requests_of(scripted_server, "writing")[index + 1].messages
        chat = "\n\n".join(str(m["content"]) for m in sent if m["role"] == "user")
        writing = block(chat, "recent_turns") or ""
        assert planning.startswith(f"[Turn {planning_start}] ")
        assert writing.startswith(f"[Turn {writing_start}] ")


def test_empty_windows_are_allowed(scripted_server: ScriptedServer) -> None:
    lantern_script().install(scripted_server)
    settings = settings_for(
        scripted_server,
        recent_turns_for_planning=0,
        planning_growth_margin=0,
        recent_turns_for_writing=0,
        writing_growth_margin=0,
    )
    story = open_story(LANTERN, settings=settings, seed=4)
    result = run_turn(story, "I wait.", backends_for(scripted_server, settings))
    assert result.snapshot.windows == {"planning": 2, "writing": 2}
    planning = message(requests_of(scripted_server, "planning")[0], "user")
    assert block(planning, "recent_turns") is None


def test_a_catastrophic_regex_key_is_warned_once_and_the_turn_goes_on(
    scripted_server: ScriptedServer,
) -> None:
    """Issue #13 item 9: a lore regex that runs out of time is named with its entry, then
    skipped for the rest of the session; the turn is not held up."""
    from narrative_cli.domain import LoreEntry

    lantern_script().install(scripted_server)
    story = lantern(scripted_server)
    story.entries = [*story.entries, LoreEntry(
        uid=99, keys=["/(a|aa)+$/"], content="never", comment="slow key", position=1,
        source="card",
    )]
    backends = backends_for(scripted_server)
    first = run_turn(story, "I trim the wick. " + "a" * 40 + "b", backends)
    [warning] = [w for w in first.warnings if "slow key" in w]
    assert warning.startswith("entry 99 (slow key): regex /(a|aa)+$/ ran longer than 50 ms")
    assert "skipped from now on" in warning
    assert first.narrative == LAMP_STORY
    story.advance(first)
    lantern_script().install(scripted_server)
    second = run_turn(story, "a" * 40 + "b", backends)
    assert not [w for w in second.warnings if "slow key" in w]


@pytest.mark.parametrize(("greeting", "fires"), [(True, True), (False, False)])
def test_delay_counts_the_chat_s_messages_like_sillytavern(
    scripted_server: ScriptedServer, greeting: bool, fires: bool
) -> None:
    """Issue #16 class 8: turn 1 scans 2 messages after a greeting, 1 without one; an entry
    with ``delay: 2`` waits for 2 messages."""
    from narrative_cli.domain import LoreEntry

    lantern_script().install(scripted_server)
    story = lantern(scripted_server)
    if not greeting:
        story.history = [turn for turn in story.history if turn.number != 0]
    story.entries = [*story.entries, LoreEntry(
        uid=98, keys=["wick"], content="delayed", comment="delayed", position=1, delay=2,
        source="card",
    )]
    result = run_turn(story, "I trim the wick.", backends_for(scripted_server))
    assert any(hit.uid == 98 for hit in result.lore) is fires
