"""The state engine: every event type valid and invalid, clamping, time rollover, the log cap."""

from __future__ import annotations

import json
from typing import Any

import pytest

from narrative_cli.domain import LoreEntry
from narrative_cli.errors import StoreError
from narrative_cli.state.engine import (
    EVENT_LOG_LIMIT,
    Clock,
    GameState,
    Quest,
    apply_events,
    known_context,
    state_diff,
    state_summary,
    sync_from_lore,
)


def base_state() -> GameState:
    """Two potions, Irene at 95, one active, one completed and one failed quest."""
    state = GameState.initial()
    state.inventory = {"药水": 2}
    state.relationships = {"艾琳": 95}
    state.quests = {
        "寻猫": Quest("active", "start"),
        "送信": Quest("completed", "done", "success"),
        "护送": Quest("failed", "ambush", "failure"),
    }
    return state


def ev(kind: str, **params: Any) -> dict[str, Any]:
    return {"type": kind, "params": params}


VALID: list[tuple[dict[str, Any], str, Any, str]] = [
    # event, what to read from the new state, expected value, expected note fragment
    (ev("move", location=" 矿洞 "), "location", "矿洞", ""),
    (ev("add_item", item="绳子"), "inventory", {"药水": 2, "绳子": 1}, ""),
    (ev("add_item", item="药水", quantity=3), "inventory", {"药水": 5}, ""),
    (ev("add_item", item="药水", quantity=2.0), "inventory", {"药水": 4}, ""),
    (ev("remove_item", item="药水"), "inventory", {"药水": 1}, ""),
    (ev("remove_item", item="药水", quantity=2), "inventory", {}, ""),
    (ev("set_relationship", npc="卡尔", value=-30), "relationships", {"艾琳": 95, "卡尔": -30}, ""),
    (ev("set_relationship", npc="艾琳", value=150), "relationships", {"艾琳": 100}, "已截断为 100"),
    (ev("set_relationship", npc="艾琳", value=-999), "relationships", {"艾琳": -100}, "-100"),
    (ev("set_relationship", npc="艾琳", value=12.6), "relationships", {"艾琳": 13}, "取整为 13"),
    (ev("modify_relationship", npc="艾琳", delta=-20), "relationships", {"艾琳": 75}, ""),
    (ev("modify_relationship", npc="艾琳", delta=10), "relationships", {"艾琳": 100}, "105"),
    (ev("modify_relationship", npc="卡尔", delta=7), "relationships", {"艾琳": 95, "卡尔": 7}, ""),
    (ev("start_quest", quest_id="寻宝"), "quest:寻宝", ("active", "start", None), ""),
    (
        ev("start_quest", quest_id="寻宝", stage="找地图"),
        "quest:寻宝",
        ("active", "找地图", None),
        "",
    ),
    (ev("start_quest", quest_id="护送"), "quest:护送", ("active", "start", None), "重新开始"),
    (
        ev("advance_quest", quest_id="寻猫", stage="屋顶"),
        "quest:寻猫",
        ("active", "屋顶", None),
        "",
    ),
    (ev("complete_quest", quest_id="寻猫"), "quest:寻猫", ("completed", "start", "success"), ""),
    (
        ev("complete_quest", quest_id="寻猫", outcome="failure"),
        "quest:寻猫",
        ("failed", "start", "failure"),
        "",
    ),
    (ev("set_flag", flag="门", value="开"), "flags", {"门": "开"}, ""),
    (ev("set_flag", flag="钥匙", value=[1, {"a": True}]), "flags", {"钥匙": [1, {"a": True}]}, ""),
    (ev("pass_time", minutes=45), "time", Clock(1, 0, 45), ""),
    (ev("pass_time", hours=2, minutes=30), "time", Clock(1, 2, 30), ""),
    (ev("pass_time", hours=1.5), "time", Clock(1, 1, 30), ""),
    (ev("pass_time", days=2), "time", Clock(3, 0, 0), ""),
    (ev("pass_time", duration=61), "time", Clock(1, 1, 1), ""),
    (ev("pass_time", amount=3, unit="hours"), "time", Clock(1, 3, 0), ""),
    (ev("pass_time", amount=1, unit="天"), "time", Clock(2, 0, 0), ""),
    (ev("pass_time", amount=20, unit="分钟"), "time", Clock(1, 0, 20), ""),
    (ev("pass_time", minutes=2.4), "time", Clock(1, 0, 2), "取整为 2"),
    ({"type": "move", "location": "平铺参数"}, "location", "平铺参数", ""),
]


def read(state: GameState, what: str) -> Any:
    if what.startswith("quest:"):
        quest = state.quests[what.split(":", 1)[1]]
        return (quest.status, quest.stage, quest.outcome)
    return getattr(state, what)


@pytest.mark.parametrize(("event", "what", "expected", "note"), VALID)
def test_valid_event_is_applied(event: dict[str, Any], what: str, expected: Any, note: str) -> None:
    result = apply_events(base_state(), [event])
    assert result.rejected == []
    assert read(result.state, what) == expected
    (record,) = result.applied
    assert record.accepted and record.type == event["type"]
    assert note in " ".join(record.notes)
    assert bool(record.notes) == bool(note)


INVALID: list[tuple[Any, str]] = [
    ("move", "事件必须是 JSON 对象"),
    ([1, 2], "事件必须是 JSON 对象"),
    ({"params": {"location": "x"}}, "缺少 type"),
    ({"type": 5}, "缺少 type"),
    (ev("teleport", location="月球"), '不支持的事件类型："teleport"'),
    ({"type": "move", "params": ["矿洞"]}, "params 必须是 JSON 对象"),
    (ev("move"), "缺少参数 location"),
    (ev("move", location=5), "location 必须是非空字符串"),
    (ev("move", location="   "), "location 必须是非空字符串"),
    (ev("add_item", quantity=1), "缺少参数 item"),
    (ev("add_item", item="药水", quantity="3"), "quantity 必须是 1 到 1000000 之间的整数"),
    (ev("add_item", item="药水", quantity=0), "quantity 必须是"),
    (ev("add_item", item="药水", quantity=-2), "quantity 必须是"),
    (ev("add_item", item="药水", quantity=1.5), "quantity 必须是"),
    (ev("add_item", item="药水", quantity=True), "quantity 必须是"),
    (ev("add_item", item="药水", quantity=2_000_000), "quantity 必须是"),
    (ev("remove_item", item="药水", quantity=3), "库存不足：持有 2，要移除 3"),
    (ev("remove_item", item="金币"), '"金币" 库存不足：持有 0'),
    (ev("remove_item", item="药水", quantity=-1), "quantity 必须是"),
    (ev("set_relationship", value=10), "缺少参数 npc"),
    (ev("set_relationship", npc="艾琳"), "缺少参数 value"),
    (ev("set_relationship", npc="艾琳", value="50"), "value 必须是数字"),
    (ev("set_relationship", npc="艾琳", value=float("nan")), "value 必须是数字"),
    (ev("modify_relationship", npc="艾琳"), "缺少参数 delta"),
    (ev("modify_relationship", npc="艾琳", delta="+5"), "delta 必须是数字"),
    (ev("modify_relationship", npc="", delta=5), "npc 必须是非空字符串"),
    (ev("start_quest"), "缺少参数 quest_id"),
    (ev("start_quest", quest_id="寻猫"), '任务 "寻猫" 已在进行中'),
    (ev("start_quest", quest_id="送信"), '任务 "送信" 已完成'),
    (ev("start_quest", quest_id="寻宝", stage=3), "stage 必须是非空字符串"),
    (ev("advance_quest", quest_id="寻宝", stage="x"), '任务 "寻宝" 不存在'),
    (ev("advance_quest", quest_id="送信", stage="x"), "状态为 completed，无法推进"),
    (ev("advance_quest", quest_id="寻猫"), "缺少参数 stage"),
    (ev("complete_quest", quest_id="寻猫", outcome="win"), "outcome 必须是 success 或 failure"),
    (ev("complete_quest", quest_id="寻宝"), '任务 "寻宝" 不存在'),
    (ev("complete_quest", quest_id="护送"), "状态为 failed，无法完成"),
    (ev("set_flag", flag="门"), "缺少参数 value"),
    (ev("set_flag", flag=" ", value=1), "flag 必须是非空字符串"),
    (ev("set_flag", flag="门", value={1, 2}), "value 必须是 JSON 值"),
    (ev("pass_time"), "pass_time 需要"),
    (ev("pass_time", minutes=-30), "时间只能向前推进"),
    (ev("pass_time", hours=0), "时间只能向前推进"),
    (ev("pass_time", minutes=0.2), "时间只能向前推进"),
    (ev("pass_time", hours="2"), "hours 必须是数字"),
    (ev("pass_time", amount=2, unit="weeks"), "unit 必须是 minutes、hours 或 days"),
    (ev("pass_time", amount=2), "缺少参数 unit"),
    (ev("pass_time", days=400), "单次最多推进 365 天"),
]


@pytest.mark.parametrize(("event", "reason"), INVALID)
def test_invalid_event_is_rejected_with_its_reason(event: Any, reason: str) -> None:
    before = base_state()
    result = apply_events(before, [event])
    assert result.applied == []
    (record,) = result.rejected
    assert not record.accepted
    assert reason in record.reason
    changed = result.state.to_dict()
    assert changed.pop("event_log")[-1]["reason"] == record.reason
    expected = before.to_dict()
    expected.pop("event_log")
    assert changed == expected


def test_reasons_and_notes_follow_the_language() -> None:
    events = [
        ev("remove_item", item="药水", quantity=5),
        ev("set_relationship", npc="Ann", value=120),
    ]
    result = apply_events(base_state(), events, lang="en")
    assert result.rejected[0].reason == 'not enough "药水": 2 held, 5 to remove'
    assert result.applied[0].notes == ("relationship 120 is outside -100..100, clamped to 100",)


def test_apply_events_never_changes_its_input_and_is_deterministic() -> None:
    state = base_state()
    snapshot = json.dumps(state.to_dict(), ensure_ascii=False)
    events = [
        ev("add_item", item="药水"),
        ev("advance_quest", quest_id="寻猫", stage="屋顶"),
        ev("set_flag", flag="门", value=["a"]),
        ev("pass_time", hours=30),
    ]
    first = apply_events(state, events, turn=4)
    second = apply_events(state, events, turn=4)
    assert json.dumps(state.to_dict(), ensure_ascii=False) == snapshot
    assert first.state.to_dict() == second.state.to_dict()
    assert first.state.quests["寻猫"].stage == "屋顶" and state.quests["寻猫"].stage == "start"
    events[2]["params"]["value"].append("mutated later")
    assert first.state.flags["门"] == ["a"]


def test_events_apply_in_order_and_rejections_keep_their_place() -> None:
    result = apply_events(
        GameState.initial(),
        [
            ev("add_item", item="火把"),
            ev("remove_item", item="火把", quantity=2),
            ev("remove_item", item="火把"),
            ev("remove_item", item="火把"),
        ],
        turn=7,
    )
    assert [r.accepted for r in result.state.event_log] == [True, False, True, False]
    assert [r.turn for r in result.state.event_log] == [7, 7, 7, 7]
    assert result.state.inventory == {}
    assert len(result.applied) == 2 and len(result.rejected) == 2


@pytest.mark.parametrize(
    ("start", "minutes", "end"),
    [
        (Clock(1, 23, 50), 20, Clock(2, 0, 10)),
        (Clock(1, 0, 0), 59, Clock(1, 0, 59)),
        (Clock(1, 0, 59), 1, Clock(1, 1, 0)),
        (Clock(3, 22, 30), 3 * 1440 + 5 * 60, Clock(7, 3, 30)),
        (Clock(9, 12, 0), 1440, Clock(10, 12, 0)),
    ],
)
def test_pass_time_carries_minutes_into_hours_and_days(
    start: Clock, minutes: int, end: Clock
) -> None:
    state = GameState(time=start)
    result = apply_events(state, [ev("pass_time", minutes=minutes)])
    assert result.state.time == end
    assert result.applied[0].time == start  # the record keeps the clock before the event


def test_event_log_is_capped_at_200_records() -> None:
    events = [ev("add_item", item=f"石头{i}") for i in range(150)]
    first = apply_events(GameState.initial(), events)
    second = apply_events(first.state, [*events[:100], ev("fly")])
    log = second.state.event_log
    assert len(log) == EVENT_LOG_LIMIT
    assert log[-1].type == "fly" and not log[-1].accepted
    assert log[0].event == ev("add_item", item="石头51")
    saved = GameState.from_dict(json.loads(json.dumps(second.state.to_dict())))
    assert len(saved.event_log) == EVENT_LOG_LIMIT and saved.event_log[-1].reason


def test_state_round_trips_through_json() -> None:
    result = apply_events(
        base_state(),
        [ev("move", location="矿洞"), ev("set_flag", flag="x", value={"k": [1]}), ev("fly")],
        turn=2,
    )
    data = json.loads(json.dumps(result.state.to_dict(), ensure_ascii=False))
    assert GameState.from_dict(data) == result.state


def test_from_dict_reads_the_originals_saved_state() -> None:
    original = {
        "time": {"day": 2, "hour": 5, "minute": 7},
        "location": "酒馆",
        "inventory": {"剑": 1},
        "relationships": {"老板": 10},
        "quests": {"q": {"status": "completed", "stage": "end", "outcome": "success"}},
        "flags": {"醉": True},
        "eventLog": [
            {"timestamp": {"day": 1, "hour": 0, "minute": 0}, "type": "move",
             "params": {"location": "酒馆"}, "accepted": True},
        ],
        "knownLocations": ["酒馆"],
        "knownNpcs": ["老板"],
    }  # fmt: skip
    state = GameState.from_dict(original)
    assert state.time == Clock(2, 5, 7) and state.quests["q"].outcome == "success"
    assert state.event_log[0].event == {"location": "酒馆"}
    assert state.known_locations == ["酒馆"] and state.known_npcs == ["老板"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "game state must be an object"),
        ({"inventory": {"剑": "一把"}}, "inventory['剑'] must be a number"),
        ({"time": {"day": 0}}, "is not a valid day/hour/minute"),
        ({"time": {"day": 1, "hour": 24}}, "is not a valid day/hour/minute"),
        ({"quests": {"q": {"status": "done"}}}, "unknown status 'done'"),
        ({"event_log": {}}, "event_log must be a list"),
    ],
)
def test_from_dict_names_what_is_wrong(data: Any, message: str) -> None:
    with pytest.raises(StoreError, match=message.replace("[", r"\[").replace("]", r"\]")):
        GameState.from_dict(data)


def test_state_summary_is_the_originals_chinese_text() -> None:
    state = apply_events(
        base_state(),
        [
            ev("pass_time", hours=8, minutes=5),
            ev("move", location="矿洞"),
            ev("set_flag", flag="门", value=True),
            ev("set_flag", flag="层", value=3),
            ev("set_flag", flag="线索", value=["a", "b"]),
        ],
    ).state
    assert state_summary(state, "zh") == (
        "时间：第1天 08:05\n"
        "地点：矿洞\n"
        "物品：药水x2\n"
        "NPC关系：艾琳: 95\n"
        "任务：寻猫(active@start), 送信(completed@done), 护送(failed@ambush)\n"
        '标记：门=true, 层=3, 线索=["a","b"]'
    )


def test_empty_state_summary_in_both_languages() -> None:
    assert state_summary(GameState.initial(), "zh") == (
        "时间：第1天 00:00\n地点：起点\n物品：无\nNPC关系：无\n任务：无\n标记：无"
    )
    assert state_summary(GameState.initial("en"), "en") == (
        "Time: Day 1 00:00\nLocation: Start\nItems: none\nRelationships: none\n"
        "Quests: none\nFlags: none"
    )


def test_state_diff_lists_each_change() -> None:
    before = base_state()
    after = apply_events(
        before,
        [
            ev("pass_time", minutes=90),
            ev("move", location="矿洞"),
            ev("add_item", item="药水"),
            ev("add_item", item="绳子"),
            ev("modify_relationship", npc="艾琳", delta=-5),
            ev("complete_quest", quest_id="寻猫"),
            ev("set_flag", flag="门", value="开"),
        ],
    ).state
    assert state_diff(before, after) == [
        "时间：第1天 00:00 → 第1天 01:30",
        "地点：起点 → 矿洞",
        "物品 药水：2 → 3",
        "物品 绳子：0 → 1",
        "关系 艾琳：95 → 90",
        "任务 寻猫：active@start → completed@start",
        "标记 门：— → 开",
    ]
    assert state_diff(after, after) == []
    assert "Item 绳子: 1 → 0" in state_diff(after, before, "en")


def test_known_context_grows_with_moves_and_relationships() -> None:
    state = apply_events(
        GameState.initial(),
        [ev("move", location="矿洞"), ev("move", location="酒馆"), ev("move", location="矿洞"),
         ev("set_relationship", npc="老板", value=5), ev("add_item", item="剑")],
    ).state  # fmt: skip
    assert json.loads(known_context(state)) == {
        "locations": ["矿洞", "酒馆"],
        "npcs": ["老板"],
        "items": ["剑"],
        "quests": [],
    }


def test_lore_quests_are_available_and_can_then_be_started() -> None:
    entries = [
        LoreEntry(uid=1, keys=["寻找圣杯"], comment="[QUEST]圣杯"),
        LoreEntry(uid=2, keys=["黑森林"], comment="[LOCATION] 森林"),
        LoreEntry(uid=3, keys=["巫婆"], comment="[npc]巫婆"),
        LoreEntry(uid=4, keys=["隐藏任务"], comment="[QUEST]", disabled=True),
    ]
    state = sync_from_lore(GameState.initial(), entries)
    assert state.quests["寻找圣杯"] == Quest("available", "未开始")
    assert "隐藏任务" not in state.quests
    assert state.known_locations == ["黑森林"] and state.known_npcs == ["巫婆"]
    started = apply_events(state, [ev("start_quest", quest_id="寻找圣杯")])
    assert started.state.quests["寻找圣杯"].status == "active" and started.applied[0].notes == ()
    advanced = apply_events(state, [ev("advance_quest", quest_id="寻找圣杯", stage="x")])
    assert "状态为 available" in advanced.rejected[0].reason


def test_a_copy_is_equal_and_changing_it_leaves_the_original_alone() -> None:
    state = base_state()
    state.flags = {"门": {"锁": True}}
    state.known_npcs = ["艾琳"]
    state = apply_events(state, [{"type": "move", "params": {"location": "酒馆"}}]).state
    before = state.to_dict()
    copied = state.copy()
    assert copied == state
    copied.inventory["药水"] = 0
    copied.relationships["艾琳"] = 0
    copied.quests["寻猫"].stage = "found"
    copied.flags["门"]["锁"] = False
    copied.known_npcs.append("老周")
    copied.event_log.clear()
    assert state.to_dict() == before
