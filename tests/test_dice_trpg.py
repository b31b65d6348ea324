"""The TRPG sample card end to end on the scripted server: the planner's checks go through the
engine (one of them hidden), the writer gets the results and the rule against invented rolls,
an invented roll is flagged, the ledger and the export hold every roll, a replay rolls the
same dice; and regenerating or retrying a turn rolls fresh dice, recorded per swipe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.agents.templates import template
from narrative_cli.errors import BackendError
from narrative_cli.pipeline.events import ToolResultEvent
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher
from narrative_cli.play.dice_ledger import session_rolls
from narrative_cli.replay.logs import read_logs
from narrative_cli.replay.runner import ReplayOptions, replay_logs
from narrative_cli.store import SessionStore
from narrative_cli.store.export import export_json, export_jsonl
from narrative_cli.tools.dice_checks import coc_level
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests.conftest import SAMPLES
from tests.pipeline_support import (
    Script,
    block,
    collect,
    message,
    requests_of,
    tool_entry,
    write_card,
)
from tests.servers import ScriptedServer

TRPG = SAMPLES / "qingshi-trpg-zh.json"
CHECKS = [
    {"tool": "roll_dice", "params": {"system": "coc7", "skill": 60, "label": "侦查"}},
    {"tool": "roll_dice", "params": {"system": "coc7", "skill": 40, "label": "心理学",
                                     "hidden": True}},
]  # fmt: skip
PLAN = {"narrative_direction": "调查员搜查沈宅前厅，老陈在门外窥视。", "key_points": ["账簿"],
        "tool_calls": CHECKS}  # fmt: skip
INVENTED = "掷出了 777"


def writer(request: Any) -> str:
    return f"你在前厅翻找账簿，灯影摇晃（{INVENTED}）。门外似乎有人。"


def options(server: ScriptedServer, card: Path, **more: Any) -> PlayOptions:
    return PlayOptions(card=str(card), provider="openai", base_url=server.base_url,
                       model="scripted-model", **more)  # fmt: skip


def dice_results(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [r["data"] for r in record["tool_results"] if r["kind"] == "dice" and r["ok"]]


def test_the_trpg_card_rolls_every_check_through_the_engine(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    with ScriptedServer() as server, SessionStore(tmp_path / "s.db") as store:
        Script(answers={"planning": PLAN, "writing": writer,
                        "analysis": {"events": [], "summary_entries": ["搜查沈宅。"]}}
               ).install(server)  # fmt: skip
        play = PlaySession.open(store, options(server, TRPG, seed=7, trace=str(trace)))
        events, listen = collect()
        result = play.play("我搜查沈宅的前厅。", listen)

        planning = requests_of(server, "planning")[0]
        assert template("zh", "planning_dice_rule").strip() in message(planning, "system")
        assert "skill(coc7：技能值)" in message(planning, "system")

        writing = requests_of(server, "writing")[0]
        assert template("zh", "writing_dice_rule").strip() in message(writing, "system")
        results = block(message(writing, "user"), "tool_results") or ""
        seen, hidden = dice_results(result.to_record())
        assert seen["lines"]["zh"] in results and results.startswith("检定结果：侦查 1d100 = [")
        assert "暗骰结果（玩家看不到）：心理学 1d100 = [" in results
        assert hidden["lines"]["zh"] in results
        for roll in (seen, hidden):  # the engine, not the model, decided the level
            assert roll["info"]["level"] == coc_level(roll["total"], roll["info"]["skill"])

        shown = [e for e in events if isinstance(e, ToolResultEvent)]
        assert [(e.hidden, e.text) for e in shown][1] == (True, "进行了一次暗骰检定")
        assert shown[1].data is None and str(hidden["total"]) not in shown[1].text
        assert shown[0].data == seen and not shown[0].hidden
        assert any(INVENTED in w and "引擎没有掷过" in w for w in result.warnings)

        rows = session_rolls(play)
        assert [(r["turn"], r["roll"]["label"], r["roll"]["hidden"]) for r in rows] == [
            (1, "侦查", False), (1, "心理学", True),
        ]  # fmt: skip
        consoles = recording_consoles(width=120)
        dispatcher = Dispatcher(play, RichScreen.for_play(play, consoles))
        dispatcher.handle("/dice")
        masked = captured(consoles.out)
        assert "本局掷骰记录" in masked and "（暗骰）" in masked and "心理学" in masked
        assert OUTCOME_ZH[hidden["outcome"]] not in masked.split("心理学", 1)[1]
        dispatcher.handle("/dice reveal")
        revealed = captured(consoles.out)[len(masked) :]
        assert OUTCOME_ZH[hidden["outcome"]] in revealed.split("心理学", 1)[1]

        export_json(store, play.session_id, tmp_path / "dump.json")
        play.close()

    dump = json.loads((tmp_path / "dump.json").read_text("utf-8"))
    exported = dump["turns"][1]["swipes"][0]["record"]
    assert dice_results(exported) == [seen, hidden]
    calls = (trace / "calls.jsonl").read_text("utf-8")
    assert "暗骰结果（玩家看不到）：心理学" in calls  # the trace holds the writer's view
    turn_notes = next(trace.glob("**/turn-0001.md")).read_text("utf-8")
    assert seen["lines"]["zh"] in turn_notes and hidden["lines"]["zh"] in turn_notes

    run = replay_logs(read_logs([tmp_path / "dump.json"]),
                      ReplayOptions(PlayOptions(card=str(TRPG)), responses=str(trace),
                                    store_path=tmp_path / "replay.db"))  # fmt: skip
    replayed = run.outcomes[0]
    assert replayed.status == "done", replayed
    assert dice_results(replayed.records[0].to_record()) == [seen, hidden]


OUTCOME_ZH = {
    "critical_success": "大成功", "extreme_success": "极难成功", "hard_success": "困难成功",
    "regular_success": "常规成功", "failure": "失败", "fumble": "大失败",
}  # fmt: skip


@pytest.fixture
def lantern(tmp_path: Path) -> Any:
    with ScriptedServer() as server, SessionStore(tmp_path / "s.db") as store:
        script = Script(answers={"planning": {**PLAN, "tool_calls": [
            {"tool": "roll_dice", "params": {"expr": "1d20+2", "dc": 10}}]}})  # fmt: skip
        script.install(server)
        yield server, store, options(server, SAMPLES / "lantern-keeper.png", seed=11,
                                     trace=str(tmp_path / "trace"))  # fmt: skip


def test_regenerate_and_swipes_draw_fresh_dice_recorded_per_swipe(lantern: Any) -> None:
    server, store, opts = lantern
    play = PlaySession.open(store, opts)
    first = play.play("I climb the stairs.")
    results = [first] + [play.regenerate() for _ in range(3)]
    rolls = [dice_results(r.to_record())[0]["rolls"] for r in results]
    streams = [r.rng_stream for r in results]
    assert streams == [0, 1, 2, 3]
    assert len({tuple(r) for r in rolls}) > 1, rolls  # no longer the same roll five times
    swipes = store.turns(play.session_id)[-1]
    assert swipes.record["rng_stream"] == 3
    play.swipe(0)
    kept = store.record(play.session_id, 1)
    assert kept["rng_stream"] == 0 and dice_results(kept)[0]["rolls"] == rolls[0]
    play.close()


def test_a_turn_tried_again_after_a_failure_rolls_fresh_dice(lantern: Any) -> None:
    server, store, opts = lantern
    play = PlaySession.open(store, opts)
    Script(answers={"planning": {**PLAN, "tool_calls": [
        {"tool": "roll_dice", "params": {"expr": "1d100", "dc": 50}}]},
        "writing": ["", "The lamp is lit."]}).install(server)  # fmt: skip
    with pytest.raises(BackendError):  # no story text: nothing was saved
        play.play("I light the lamp.")
    again = play.play("I light the lamp.")
    assert again.rng_stream == 1
    other = PlaySession.open(store, options(server, SAMPLES / "lantern-keeper.png", seed=11))
    plain = other.play("I light the lamp.")
    assert plain.rng_stream == 0
    assert dice_results(again.to_record()) != dice_results(plain.to_record())
    play.close()
    other.close()


def test_invented_rolls_are_found_and_engine_rolls_are_not() -> None:
    from narrative_cli.tools.dice_rules import describes_checks, invented_rolls

    made = [{"total": 45, "dc": 60, "dice": [{"faces": [{"value": 45}], "value": 45}]}]
    story = "你掷出了17，检定：45/60 成功。他的 1D100=45 也对。She rolled a 12. 车滚了 3 米。"
    assert invented_rolls(story, made) == ["掷出了17", "rolled a 12"]
    assert not invented_rolls("雾很浓。The boulder rolls 3 metres.", made)
    assert describes_checks(["侦查检定成功才能发现暗门"]) and describes_checks(["roll 2d6"])
    assert not describes_checks(["雾港是一座小城。", "A quiet harbour."])


def test_a_card_that_reveals_hidden_rolls_shows_them_after_the_story(tmp_path: Path) -> None:
    dice = {"type": "code", "function": {"name": "roll_dice"}, "reveal_hidden": True}
    card = write_card(tmp_path, [tool_entry(1, dice)], name="Keeper")
    hidden = {"tool": "roll_dice", "params": {"expr": "1d20+1", "dc": 12, "hidden": True,
                                              "label": "Spot"}}  # fmt: skip
    with ScriptedServer() as server, SessionStore(tmp_path / "s.db") as store:
        Script(answers={"planning": {**PLAN, "tool_calls": [hidden]},
                        "writing": "A shadow moves."}).install(server)  # fmt: skip
        play = PlaySession.open(store, options(server, card, seed=3))
        consoles = recording_consoles(width=120)
        Dispatcher(play, RichScreen.for_play(play, consoles)).handle("I look around.")
        out = captured(consoles.out)
        line = dice_results(store.record(play.session_id, 1))[0]["lines"]["en"]
        assert "A hidden check was made" in out
        assert out.index("A hidden check was made") < out.index("A shadow moves.")
        assert line.split(" = ", 1)[1] in out.split("A shadow moves.", 1)[1]
        play.close()


def test_a_regenerated_swipe_replays_with_its_own_dice(lantern: Any, tmp_path: Path) -> None:
    server, store, opts = lantern
    play = PlaySession.open(store, opts)
    play.play("I climb the stairs.")
    chosen = play.regenerate()
    assert chosen.rng_stream == 1
    export_json(store, play.session_id, tmp_path / "dump.json")
    export_jsonl(store, play.session_id, tmp_path / "chat.jsonl")
    play.close()
    logs = read_logs([tmp_path / "dump.json", tmp_path / "chat.jsonl"])
    assert [log.turns[0].rng_stream for log in logs] == [1, 1]
    run = replay_logs(logs[:1], ReplayOptions(PlayOptions(card=str(SAMPLES / "lantern-keeper.png")),
                                              responses=opts.trace,
                                              store_path=tmp_path / "replay.db"))  # fmt: skip
    replayed = run.outcomes[0]
    assert replayed.status == "done", replayed
    assert replayed.records[0].rng_stream == 1
    assert dice_results(replayed.records[0].to_record()) == dice_results(chosen.to_record())


def test_a_card_with_check_rules_but_no_dice_tool_gets_the_built_in_one(tmp_path: Path) -> None:
    rules = entry_with("Every risky action is a skill check: roll 1d100 under the skill.")
    card = write_card(tmp_path, [rules], name="Rules")
    plain = write_card(tmp_path, [entry_with("The ferry leaves at dawn.")], name="Plain")
    with ScriptedServer() as server, SessionStore(tmp_path / "s.db") as store:
        Script(answers={"planning": {**PLAN, "tool_calls": [
            {"tool": "roll_dice", "params": {"system": "coc7", "skill": 45}}]},
            "writing": "You climb."}).install(server)  # fmt: skip
        play = PlaySession.open(store, options(server, card, seed=5))
        consoles = recording_consoles(width=120)
        dispatcher = Dispatcher(play, RichScreen.for_play(play, consoles))
        dispatcher.handle("/tools")
        assert "roll_dice" in captured(consoles.out)
        result = play.play("I climb the wall.")
        assert dice_results(result.to_record())[0]["system"] == "coc7"
        planning = requests_of(server, "planning")[0]
        assert "roll_dice" in message(planning, "system")
        play.close()
        other = PlaySession.open(store, options(server, plain, seed=5))
        before = len(requests_of(server, "planning"))
        result = other.play("I wait.")  # no check rules: no tool, no planner, no dice
        assert result.mode == "merged" and not dice_results(result.to_record())
        assert len(requests_of(server, "planning")) == before
        other.close()


def entry_with(text: str) -> dict[str, Any]:
    from tests.pipeline_support import entry

    return entry(1, text, constant=True)
