"""The summary store: turn labels come from the real turn, windows, regenerate and undo."""

from __future__ import annotations

import json

import pytest

from narrative_cli.errors import StoreError
from narrative_cli.state.summaries import SummaryStore, strip_turn_label, turn_label


@pytest.mark.parametrize(
    "written",
    [
        "[第1轮] 兰韦德进入矿洞",
        "[第 7 轮]：兰韦德进入矿洞",
        "【第3轮】兰韦德进入矿洞",
        "（第十二轮）兰韦德进入矿洞",
        "第3轮：兰韦德进入矿洞",
        "第三轮 兰韦德进入矿洞",
        "[轮3] 兰韦德进入矿洞",
        "[Turn 2] 兰韦德进入矿洞",
        "Turn 12: 兰韦德进入矿洞",
        "[第１２轮] [第3轮] 兰韦德进入矿洞",
        "  兰韦德进入矿洞  ",
    ],
)
def test_any_label_the_model_wrote_becomes_the_real_turn(written: str) -> None:
    store = SummaryStore().add(5, written)
    assert store.render() == "[第5轮] 兰韦德进入矿洞"


def test_text_that_only_starts_like_a_label_is_kept() -> None:
    assert strip_turn_label("第三轮战斗开始了") == "第三轮战斗开始了"
    assert strip_turn_label("Turn the key") == "Turn the key"
    assert (
        strip_turn_label("用户意图：探索 | 叙事要点：进入矿洞")
        == "用户意图：探索 | 叙事要点：进入矿洞"
    )


def test_english_stores_label_turns_in_english() -> None:
    store = SummaryStore(lang="en").add(
        3, ["[第2轮] Ann enters the mine", "Turn 9: she finds a key"]
    )
    assert store.render() == "[Turn 3] Ann enters the mine\n[Turn 3] she finds a key"
    assert turn_label(4, "en") == "[Turn 4]" and turn_label(4) == "[第4轮]"


def test_entries_stay_in_turn_order_whatever_order_they_arrive_in() -> None:
    store = SummaryStore().add(2, "乙").add(1, "甲").add(3, "丙").add(2, "乙二")
    assert store.lines() == ["[第1轮] 甲", "[第2轮] 乙", "[第2轮] 乙二", "[第3轮] 丙"]
    assert store.turns() == [1, 2, 3]


def test_blank_repeated_and_multi_line_entries() -> None:
    store = SummaryStore().add(4, ["", "  ", "[第4轮] 甲\n[第4轮] 乙", "甲", 7])  # type: ignore[list-item]
    assert store.lines() == ["[第4轮] 甲", "[第4轮] 乙"]
    assert store.add(4, "乙").lines() == store.lines()


def test_render_before_a_turn_shows_only_older_turns() -> None:
    store = SummaryStore()
    for turn in range(1, 9):
        store = store.add(turn, f"事件{turn}")
    assert store.render(before_turn=4) == "[第1轮] 事件1\n[第2轮] 事件2\n[第3轮] 事件3"
    assert store.render(before_turn=1) == ""
    assert store.render(before_turn=1, placeholder=True) == "（尚无故事摘要）"
    assert SummaryStore(lang="en").render(placeholder=True) == "(no story summary yet)"
    assert store.lines(turn=6) == ["[第6轮] 事件6"]


def test_replace_and_drop_for_regenerate_and_undo() -> None:
    store = SummaryStore().add(1, "甲").add(2, ["乙", "乙二"]).add(3, "丙")
    regenerated = store.replace(2, "[第9轮] 新乙")
    assert regenerated.lines() == ["[第1轮] 甲", "[第2轮] 新乙", "[第3轮] 丙"]
    assert store.drop(2).lines() == ["[第1轮] 甲", "[第3轮] 丙"]
    assert store.drop_from(2).lines() == ["[第1轮] 甲"]
    assert len(store) == 4  # the original store is unchanged


def test_round_trip_and_the_originals_saved_forms() -> None:
    store = SummaryStore().add(0, "开场").add(2, "乙")
    saved = json.loads(json.dumps(store.to_dict(), ensure_ascii=False))
    assert SummaryStore.from_dict(saved) == store
    legacy = SummaryStore.from_dict(
        {"entries": ["[第3轮] 用户意图：探索 | 叙事要点：甲", "无标签", "[第５轮] 丙"]}
    )
    assert legacy.lines() == [
        "[第3轮] 用户意图：探索 | 叙事要点：甲",
        "[第3轮] 无标签",
        "[第5轮] 丙",
    ]
    older = SummaryStore.from_dict({"summary": "[第1轮] 甲\n[第2轮] 乙"}, lang="en")
    assert older.lines() == ["[Turn 1] 甲", "[Turn 2] 乙"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "saved summaries must be an object"),
        ({"entries": "a"}, "'entries' must be a list"),
        ({"entries": [{"turn": -1, "text": "x"}]}, "cannot read the entry"),
        ({"entries": [3]}, "cannot read the entry 3"),
    ],
)
def test_unreadable_saved_summaries_say_what_is_wrong(data: object, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        SummaryStore.from_dict(data)


def test_a_negative_turn_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="whole number >= 0"):
        SummaryStore().add(-1, "x")
