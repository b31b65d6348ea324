"""Issue 13, model replies that once lost a turn or ended the process: NaN and Infinity,
MVU updates that fail the schema, oversized texts, recursion bombs and lone surrogates.

Each test plays the sample card through the real dispatcher against the scripted server and
checks what the user sees and what the SQLite file holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from narrative_cli.load import load_chat
from narrative_cli.safetext import json_depth
from narrative_cli.store import SessionStore
from tests import servers
from tests.reliability_support import Game, GameFactory, game_factory
from tests.servers import Reply, ScriptedServer
from tests.story_replies import NARRATIVES

scripted_server = servers.scripted_server


@pytest.fixture
def games(scripted_server: ScriptedServer, tmp_path: Path) -> Iterator[GameFactory]:
    yield from game_factory(scripted_server, tmp_path)


@pytest.fixture
def game(games: GameFactory) -> Game:
    return games()


def analysis_text(events: str, summary: str = '"The keeper waited."') -> str:
    return '{"events": [' + events + '], "summary_entries": [' + summary + "]}"


# -- item 2: NaN and Infinity ------------------------------------------------------------------


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_number_in_an_event_is_rejected_with_its_reason_and_the_turn_is_stored(
    game: Game, number: str
) -> None:
    game.replies.set("analysis", analysis_text(
        '{"type": "set_flag", "params": {"flag": "storm", "value": ' + number + "}},"
        '{"type": "modify_relationship", "params": {"npc": "Edda", "delta": ' + number + "}},"
        '{"type": "move", "params": {"location": "Gallery"}}'
    ))  # fmt: skip
    outcome, out, err = game.run("I watch the sea.")
    assert not outcome.failed, err
    assert "changes rejected · /state" in out
    _, state, _ = game.run("/state")
    assert "NaN or Infinity" in state and "✗ set_flag" in state
    assert "✗ modify_relationship" in state
    record = game.record()
    assert record["number"] == 1 and record["narrative"] == NARRATIVES[0]
    reasons = [e["reason"] for e in record["events_rejected"] if e["type"] != "remove_item"]
    assert len(reasons) == 2 and all("NaN or Infinity" in r for r in reasons)
    state = game.store.resume(game.play.session_id).snapshot["state"]
    assert state["location"] == "Gallery"  # the valid event of the same reply applied
    assert "storm" not in state["flags"] and "Edda" not in state["relationships"]
    assert game.run("/retry")[2].startswith("error: nothing to retry")


def patch_block(ops: str) -> str:
    """An mvu_extract reply: an <UpdateVariable> block holding a <JSONPatch> array (as text)."""
    return f"<UpdateVariable>\n<JSONPatch>{ops}</JSONPatch>\n</UpdateVariable>"


def test_a_non_finite_mvu_value_is_a_rejected_update_and_the_turn_is_stored(game: Game) -> None:
    game.replies.set("mvu_extract", patch_block(
        '[{"op": "replace", "path": "/keeper/lamp_oil", "value": NaN},'
        ' {"op": "delta", "path": "/keeper/lamp_oil", "value": 1e999}]'))  # fmt: skip
    outcome, out, err = game.run("I watch the sea.")
    assert not outcome.failed, err
    rejected = game.record()["mvu_rejected"]
    assert len(rejected) == 2 and all("NaN or Infinity" in r["reason"] for r in rejected)
    assert "2 variable updates rejected" in out
    assert " ".join(game.run("/vars")[1].split()).count("NaN or Infinity") == 2
    assert game.record()["mvu_applied"] == []  # nothing changed, not even to null
    assert json.dumps(game.record(), allow_nan=False)  # the stored record is plain JSON


# -- item 6: MVU updates that fail the schema ---------------------------------------------------


def test_mvu_updates_failing_the_schema_are_shown_with_their_reasons(game: Game) -> None:
    game.replies.set("mvu_extract", patch_block(json.dumps([
        {"op": "frobnicate", "path": "/keeper/lamp_oil", "value": 3},
        {"op": "delta", "path": "/keeper/lamp_oil", "value": -1},
    ])))  # fmt: skip
    outcome, out, _ = game.run("I watch the sea.")
    assert not outcome.failed
    record = game.record()
    [rejected] = record["mvu_rejected"]
    assert "unknown JSONPatch op 'frobnicate'" in rejected["reason"]
    assert len(record["mvu_applied"]) == 1  # the valid op of the same block applied
    assert "1 variable update rejected" in out
    assert "unknown JSONPatch op 'frobnicate'" in " ".join(game.run("/vars")[1].split())


@pytest.mark.parametrize(
    ("ops", "reason"),
    [
        ('[{"path": "/keeper/lamp_oil", "value": 2}]', "JSONPatch operation 0 has no 'op'"),
        ('{"patches": "lower the lamp oil"}', "must be a list of operations"),
        ('[{"op": "delta", "path": ', "the JSONPatch block is not JSON"),
    ],
)
def test_a_patch_block_that_is_not_a_list_of_operations_is_a_rejected_update(
    game: Game, ops: str, reason: str
) -> None:
    game.replies.set("mvu_extract", patch_block(ops))
    outcome, out, _ = game.run("I watch the sea.")
    assert not outcome.failed
    [rejected] = game.record()["mvu_rejected"]
    assert reason in rejected["reason"] and game.record()["mvu_applied"] == []
    assert "1 variable update rejected" in out
    assert reason in " ".join(game.run("/vars")[1].split())


# -- item 7: length limits ----------------------------------------------------------------------


def test_a_megabyte_summary_entry_is_cut_with_a_visible_note_and_not_resent(game: Game) -> None:
    huge = "The fog " + "x" * (1 << 20)
    game.replies.set("analysis", {"events": [], "summary_entries": [huge]})
    outcome, out, _ = game.run("I watch the sea.")
    assert not outcome.failed
    assert "summary_entries[0] was 1048584 characters long; cut to 400" in " ".join(out.split())
    [entry] = game.record()["summary_entries"]
    assert entry.startswith("[Turn 1] The fog xxx") and entry.endswith("…")
    assert len(entry) == len("[Turn 1] ") + 400
    game.replies.clear("analysis")
    game.run("I wait.")
    later = [r for r in game.server.requests if r.agent == "analysis"][-1]
    assert len(json.dumps(later.json)) < 100_000


def test_plan_texts_and_lists_are_cut_to_the_schema(game: Game) -> None:
    game.replies.set("planning", {
        "narrative_direction": "Go " + "on " * 2000,
        "key_points": [f"point {i}" for i in range(40)],
    })  # fmt: skip
    outcome, out, _ = game.run("I watch the sea.")
    assert not outcome.failed
    plan = game.record()["plan"]
    assert len(plan["narrative_direction"]) == 1200 and len(plan["key_points"]) == 6
    assert "key_points had 40 items; kept the first 6" in out


# -- item 11: recursion bombs -------------------------------------------------------------------


def bomb(depth: int) -> str:
    return '{"events": ' + "[" * depth + "]" * depth + ', "summary_entries": ["s"]}'


@pytest.mark.parametrize("agent", ["analysis", "planning"])
@pytest.mark.parametrize("depth", [500, 5000, 200_000])
def test_deep_nesting_is_a_parse_failure_with_the_corrective_retry(
    game: Game, agent: str, depth: int
) -> None:
    good = game.replies.script.plan() if agent == "planning" else game.replies.script.analysis()
    game.replies.set(agent, bomb(depth), good)
    outcome, out, err = game.run("I watch the sea.")
    assert not outcome.failed, err
    assert game.replies.calls[agent] == 2  # the reply and its corrective retry
    retry = [r for r in game.server.requests if r.agent == agent][1]
    assert "nests more than 100 levels" in retry.messages[-1]["content"]
    assert game.record()["narrative"] == NARRATIVES[0]
    assert game.run("/state")[0] == outcome  # the session goes on


@pytest.mark.parametrize("depth", [500, 5000, 200_000])
@pytest.mark.parametrize("where", ["mvu_extract patch", "mvu_extract set", "writer set"])
def test_deep_nesting_in_an_mvu_update_is_a_rejected_update(
    game: Game, depth: int, where: str
) -> None:
    nested = "[" * depth + "]" * depth
    if where == "mvu_extract patch":
        reply = patch_block('[{"op": "replace", "path": "/keeper/lamp_oil", "value": '
                            + nested + "}]")  # fmt: skip
    else:
        reply = f"<UpdateVariable>\n_.set('keeper.lamp_oil', {nested});\n</UpdateVariable>"
    if where.startswith("writer"):
        game.replies.set("writing", NARRATIVES[0] + "\n" + reply)
    else:
        game.replies.set("mvu_extract", reply)
    outcome, out, err = game.run("I watch the sea.")
    assert not outcome.failed, err
    assert game.record()["narrative"] == NARRATIVES[0]  # stored
    variables = game.store.resume(game.play.session_id).snapshot["mvu"]
    assert json_depth(variables) < 10  # the bomb never reached the variables
    rejected = game.record()["mvu_rejected"]
    if where == "mvu_extract patch" or depth > 500:  # at 500 MVU's _.set turns [[…]] into 0
        assert [r["reason"] for r in rejected] == [rejected[0]["reason"]]
        assert "nests more than 100 levels deep" in rejected[0]["reason"]
        assert "1 variable update rejected" in out
        assert "nests more than 100 levels deep" in " ".join(game.run("/vars")[1].split())


def test_a_bomb_on_both_tries_leaves_the_analysis_pending_not_a_crash(game: Game) -> None:
    game.replies.set("analysis", bomb(100_000))
    outcome, out, _ = game.run("I watch the sea.")
    assert not outcome.failed
    assert "nests more than 100 levels" in out
    assert game.record()["analysis_pending"]


# -- item 12: lone surrogates -------------------------------------------------------------------


def sse_text(text_json_escaped: str) -> Reply:
    chunk = '{"choices": [{"index": 0, "delta": {"content": "' + text_json_escaped + '"}}]}'
    return Reply(options={"raw_events": [f"data: {chunk}\n\n", "data: [DONE]\n\n"]})


def test_lone_surrogates_are_shown_stored_traced_and_exported(
    game: Game, tmp_path: Path
) -> None:
    game.run(f"/trace on {tmp_path / 'trace'}")
    game.replies.set("writing", sse_text("The lamp \\ud800 flickers \\udfff twice."))
    game.replies.set("analysis", analysis_text(
        '{"type": "set_flag", "params": {"flag": "mark\\ud800", "value": "a\\udc00b"}}',
        '"The keeper saw \\ud800 a light."'))  # fmt: skip
    game.replies.set("planning", '{"narrative_direction": "Edda \\ud83d waits."}')
    outcome, out, err = game.run("I watch the sea.")
    assert not outcome.failed, err
    assert "The lamp \ufffd flickers \ufffd twice." in out
    record = game.record()
    assert record["narrative"] == "The lamp \ufffd flickers \ufffd twice."
    assert record["summary_entries"] == ["[Turn 1] The keeper saw \ufffd a light."]
    assert record["plan"]["narrative_direction"] == "Edda \ufffd waits."
    assert game.store.resume(game.play.session_id).snapshot["state"]["flags"] == {
        "mark\ufffd": "a\ufffdb"}  # fmt: skip
    calls = (tmp_path / "trace" / "calls.jsonl").read_text(encoding="utf-8")
    assert "\ufffd" in calls or "\\ufffd" in calls
    assert "flickers" in (tmp_path / "trace" / "turn-0001.md").read_text(encoding="utf-8")
    for name in ("out.jsonl", "out.json"):
        assert not game.run(f"/export {tmp_path / name}")[0].failed
    assert load_chat(tmp_path / "out.jsonl").messages[-1].mes.startswith("The lamp \ufffd")
    with SessionStore(game.store.path) as again:
        assert again.record(game.play.session_id, 1)["narrative"].endswith("twice.")
