"""The summary store: turn labels come from the real turn, windows, regenerate and undo."""

from __future__ import annotations

import json
import random
import re

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


def _added_one_by_one(data: dict[str, object]) -> SummaryStore:
    """What loading meant before the one-pass rebuild: every saved entry through ``add``."""
    store = SummaryStore(lang=str(data.get("lang", "zh")))
    for item in data["entries"]:  # type: ignore[attr-defined]
        if isinstance(item, str):
            match = re.match(r"\[第(\d+)轮\]", item)
            last = store.entries[-1].turn if store.entries else 0
            store = store.add(int(match.group(1)) if match else last, item)
        else:
            store = store.add(item["turn"], item["text"])
    return store


def test_loading_gives_the_store_that_adding_each_entry_gives() -> None:
    """Out-of-order turns, repeats, blanks, several lines and labels in any order: loading a
    saved store keeps the entries in turn order and in the order they came, once each."""
    rng = random.Random(17)
    words = ["甲", "乙", "丙", "丁", "[第9轮] 戊", "", "  ", "甲\n己", "[Turn 4] 庚"]
    for _ in range(200):
        entries: list[object] = []
        for _ in range(rng.randint(0, 25)):
            if rng.random() < 0.2:
                entries.append(f"[第{rng.randint(0, 6)}轮] {rng.choice(words)}")
            elif rng.random() < 0.05:
                entries.append(rng.choice(["无标签", "", "乙"]))
            else:
                entries.append({"turn": rng.randint(0, 6), "text": rng.choice(words)})
        data = {"lang": rng.choice(["zh", "en"]), "entries": entries}
        assert SummaryStore.from_dict(data) == _added_one_by_one(data), entries


def test_labelled_lines_kept_from_turn_to_turn_match_labelling_afresh() -> None:
    """Lines carried over from the store a turn started from are the lines labelled anew,
    whether entries go at the end (the usual turn), in the middle (regenerate) or repeat."""
    rng = random.Random(3)
    for lang in ("zh", "en"):
        store = SummaryStore(lang=lang)
        store.lines()
        for _ in range(300):
            turn = rng.randint(0, 40) if rng.random() < 0.2 else len(store) + 1
            store = store.add(turn, rng.choice(["甲", "乙\n丙", "[第2轮] 丁", "", "甲"]))
            if rng.random() < 0.05:
                store = store.replace(rng.randint(0, 40), "戊")
            afresh = SummaryStore(store.lang, store.entries)
            assert store.lines() == afresh.lines()
            assert store.render(before_turn=20) == afresh.render(before_turn=20)
