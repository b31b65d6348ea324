"""The MVU engine (state/mvu_*): initialisation, commands, $meta rules, and the hidden block.

What MagVarUpdate itself does is checked against its own code in test_mvu_oracle.py; these
tests pin the behaviour a card author relies on, with readable inputs, and run without node.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from narrative_cli.domain import LoreEntry
from narrative_cli.state.mvu_commands import (
    BlockFilter,
    extract_commands,
    strip_update_blocks,
    update_blocks,
)
from narrative_cli.state.mvu_init import initialise
from narrative_cli.state.mvu_paths import fix_path, js_get, to_path
from narrative_cli.state.mvu_update import MvuData, update_variables
from narrative_cli.state.mvu_values import js_stringify, parse_command_value


def initvar(uid: int, content: str, *, comment: str = "[InitVar] 变量", disabled: bool = True
            ) -> LoreEntry:  # fmt: skip
    return LoreEntry(uid=uid, comment=comment, content=content, disabled=disabled)


def start(tree: dict[str, Any]) -> MvuData:
    return initialise([initvar(0, json.dumps(tree, ensure_ascii=False))]).data


def run(data: MvuData, *lines: str, lang: str = "en") -> Any:
    return update_variables("<UpdateVariable>\n" + "\n".join(lines) + "\n</UpdateVariable>",
                            data, lang=lang)  # fmt: skip


# -- initialisation ----------------------------------------------------------------------------


def test_disabled_initvar_entries_are_read_and_merged_in_order() -> None:
    entries = [
        initvar(0, '{"角色": {"好感度": [10, "0-100"], "标签": ["a", "b", "c"]}}'),
        LoreEntry(uid=1, comment="普通条目", content='{"忽略": 1}', disabled=True),
        initvar(1, "角色:\n  标签: [x]\n  名字: <user>\n世界:\n  时间: '08:30'",
                comment="第二块 [initvar]", disabled=False),
        initvar(2, "```json5\n{世界: {天气: '晴',},}\n```", comment="[INITVAR] json5"),
    ]  # fmt: skip
    result = initialise(entries, user="Ada", char="Edda")
    assert result.problems == []
    assert result.data.stat_data == {
        "角色": {"好感度": [10, "0-100"], "标签": ["x"], "名字": "Ada"},
        "世界": {"时间": "08:30", "天气": "晴"},
    }


def test_meta_rules_become_the_schema_and_leave_the_variables() -> None:
    data = start({
        "背包": {"$meta": {"extensible": True, "template": {"数量": 1}}, "绳子": {"数量": 2}},
        "队伍": ["艾达", "$__META_EXTENSIBLE__$"],
        "固定": {"a": 1},
    })  # fmt: skip
    assert data.stat_data == {"背包": {"绳子": {"数量": 2}}, "队伍": ["艾达"], "固定": {"a": 1}}
    result = run(data, "_.insert('背包', '火把', {品质: '好'});//捡到",
                 "_.insert('队伍', '伊芙');//加入", "_.insert('固定', 'b', 2);//不行")  # fmt: skip
    assert result.data.stat_data["背包"]["火把"] == {"数量": 1, "品质": "好"}
    assert result.data.stat_data["队伍"] == ["艾达", "伊芙"]
    [refused] = result.rejected
    assert refused.patch == "_.insert('固定', 'b', 2);//不行"
    assert "固定 is not extensible ($meta): no new key b" == refused.reason


def test_an_unreadable_initvar_entry_is_named_and_no_variables_are_half_made() -> None:
    entries = [initvar(0, '{"a": 1}'), initvar(7, "{bad: [1, 2", comment="[InitVar] 坏")]
    result = initialise(entries, lang="en")
    assert result.data.stat_data == {}
    assert "[InitVar] entry 7 ([InitVar] 坏)" in result.problems[0]
    assert "[InitVar] 条目 7（[InitVar] 坏）：" in initialise(entries, lang="zh").problems[0]


def test_the_greetings_initvar_block_wins_and_its_commands_run() -> None:
    greeting = ("开场。\n<initvar>\n地点: 码头\n金币: 5\n</initvar>\n"
                "<UpdateVariable>\n_.add('金币', 3);//见面礼\n</UpdateVariable>")  # fmt: skip
    result = initialise([initvar(0, '{"地点": "教堂"}')], greeting)
    assert result.data.stat_data == {"地点": "码头", "金币": 8}
    assert result.data.delta_data == {"金币": "5->8 (见面礼)"}


@pytest.mark.parametrize("greeting", [
    "",
    "*She sets the mug down.* \"Drink up, {{user}}.\"",
    "<UpdateVariable>\n一段没有命令的文字\n</UpdateVariable>",
    "_.set('地点', '灯塔');",  # a call without a block is still a command
    "<JSONPatch>[{\"op\": \"replace\", \"path\": \"/地点\", \"value\": \"灯塔\"}]</JSONPatch>",
    "<json_patch>not json</json_patch>",
    "_.set('地点', '灯塔'",  # unbalanced: rejected, not ignored
    "{{char}}",  # a name that writes a command
])  # fmt: skip
def test_a_greeting_without_commands_skips_the_engine_and_gets_what_it_would_give(
    greeting: str,
) -> None:
    """Most greetings hold no command: ``initialise`` then does not run (or load) the update
    engine (``mvu_data.may_update``); what it gives must be what the engine gives."""
    entries = [initvar(0, '{"地点": "教堂", "金币": [5, "钱"], "$meta": {"extensible": true}}')]
    result = initialise(entries, greeting, user="Ada", char="_.set('金币', 9);")
    base = initialise(entries, user="Ada", char="_.set('金币', 9);")  # before the greeting's
    engine = update_variables(greeting, base.data, lang="zh", user="Ada",
                              char="_.set('金币', 9);")  # fmt: skip
    assert result.greeting_update == engine
    assert result.data == engine.data


# -- commands ----------------------------------------------------------------------------------


def test_set_keeps_descriptions_coerces_numbers_and_records_display_text() -> None:
    data = start({"角色": {"络络": {"好感度": [10, "0-100"], "HP": 50}}, "列表": ["a", "b"]})
    result = run(data,
                 "_.set('角色.络络.好感度', 10, 15);//开心",
                 "_.set('角色[\"络络\"].HP', '45');",
                 "_.set('列表[1]', 'B');//改")  # fmt: skip
    assert result.data.stat_data == {"角色": {"络络": {"好感度": [15, "0-100"], "HP": 45}},
                                     "列表": ["a", "B"]}  # fmt: skip
    changes = {"好感度": "10->15 (开心)", "HP": "50->45 "}
    assert result.data.delta_data == {"角色": {"络络": changes}, "列表": [None, "b->B (改)"]}
    assert result.data.display_data["角色"]["络络"]["好感度"] == "10->15 (开心)"


def test_values_are_read_as_mvu_reads_them() -> None:
    assert parse_command_value("10 + 2 * 3") == 16
    assert parse_command_value("Math.max(3, 9)") == 9
    assert parse_command_value("0.1 + 0.2") == 0.3
    assert parse_command_value("{name: '艾达', tags: ['a',],}") == {"name": "艾达", "tags": ["a"]}
    assert parse_command_value("'受伤了'") == "受伤了"
    assert parse_command_value("`反引号`") == "反引号"
    assert parse_command_value("2024-01-02") == 2021  # unquoted: mathjs subtracts, as in MVU
    assert parse_command_value("'2024-01-02'") == "2024-01-02"
    assert parse_command_value("hello world") == "hello world"
    assert js_stringify({"a": 5.0, "b": [1e-7, True, None]}) == '{"a":5,"b":[1e-7,true,null]}'


def test_json_patch_blocks_translate_as_mvu_translates_them() -> None:
    data = start({"环境": {"时段": "清晨"}, "资金": 30, "物品": ["$__META_EXTENSIBLE__$"]})
    ops = [
        {"op": "replace", "path": "/环境/时段", "value": "下午"},
        {"op": "delta", "path": "/资金", "value": 15},
        {"op": "add", "path": "/物品/-", "value": "扫帚"},
        {"op": "move", "from": "/资金", "path": "/环境/资金"},
    ]
    text = f"<JSONPatch>\n```json\n{json.dumps(ops, ensure_ascii=False)}\n```\n</JSONPatch>"
    result = update_variables(text, data, lang="en")
    assert result.data.stat_data == {"环境": {"时段": "下午"}, "资金": 45, "物品": ["扫帚"]}
    assert [r.reason for r in result.rejected] == ["MVU has no move command (ignored)"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("_.set('角色.无此项', 1);", "角色.无此项 does not exist"),
        ("_.set('角色.HP', 50, '很多');", "角色.HP holds a number; '很多' is not one"),
        ("_.set('角色.HP', 1/0);", "角色.HP: 1/0 is not a finite number"),
        ("_.add('角色.HP', NaN);", "角色.HP: NaN is not a finite number"),
        ("_.add('角色.名字', 1);", "角色.名字 is not a number or a date"),
        ("_.remove('角色.HP');", "HP is required in 角色"),
        ("_.set('角色.HP', 5)", "cannot read it: no ';' after the call"),
        ("_.set('角色.HP, 5);", "cannot read it: unbalanced quotes or parentheses"),
        ("_.add('角色.HP');", "cannot read it: _.add needs 2 arguments"),
    ],
)
def test_bad_commands_are_rejected_with_their_reason_and_change_nothing(
    line: str, reason: str
) -> None:
    data = start({"角色": {"HP": 50, "名字": "艾达"}})
    result = run(data, line)
    assert [r.reason for r in result.rejected] == [reason]
    assert result.data.stat_data == {"角色": {"HP": 50, "名字": "艾达"}}
    assert not result.modified


def test_rejection_reasons_follow_the_story_language() -> None:
    result = run(start({"a": 1}), "_.set('b', 2);", lang="zh")
    assert result.rejected[0].reason == "路径 b 不存在"


def test_paths_follow_lodash_and_mvus_path_fix() -> None:
    assert to_path("a.b[0].c") == ["a", "b", "0", "c"]
    assert to_path('a["b c"].d') == ["a", "b c", "d"]
    assert fix_path("角色.'络 络'.好感度") == '角色["络 络"].好感度'
    assert fix_path("列表['0']") == '列表["0"]'
    assert js_get({"a.b": 1}, "a.b") == 1  # a whole key with a dot is that key


def test_commands_come_in_message_order_with_their_reasons() -> None:
    text = ("_.set('a', 1);// 第一\n<JSONPatch>[{\"op\":\"remove\",\"path\":\"/b\"}]</JSONPatch>\n"
            "_.insert('c', {x: 'a, b'});//含逗号")  # fmt: skip
    commands = extract_commands(text).commands
    assert [(c.type, c.args, c.reason) for c in commands] == [
        ("set", ("'a'", "1"), "第一"),
        ("delete", ("b",), "json_patch"),
        ("insert", ("'c'", "{x: 'a, b'}"), "含逗号"),
    ]


# -- the block in the story --------------------------------------------------------------------


def test_update_blocks_leave_the_story_and_stay_in_the_stored_block() -> None:
    reply = "她笑了。\n\n<UpdateVariable>\n_.set('a', 1);//x\n</UpdateVariable>\n"
    assert strip_update_blocks(reply) == "她笑了。"
    assert update_blocks(reply) == "<UpdateVariable>\n_.set('a', 1);//x\n</UpdateVariable>"
    assert strip_update_blocks("她笑了。\n<updatevariable>\n_.set('a'") == "她笑了。"


def test_a_streamed_reply_stops_before_the_block_even_when_the_tag_is_split() -> None:
    stream = BlockFilter()
    pieces = ["她笑了。<", "Upd", "ateVariable>\n_.set('a', 1);", "</UpdateVariable>"]
    shown = "".join(stream.feed(piece) for piece in pieces) + stream.flush()
    assert shown == "她笑了。"
    other = BlockFilter()
    assert other.feed("a < b") == "a < b" and other.feed(" <") == " " and other.flush() == "<"


def test_non_finite_numbers_in_initvar_are_saved_as_null_as_sillytavern_saves_them() -> None:
    result = initialise([initvar(0, "{生命: Infinity, 列表: [NaN, 1]}")])
    assert result.data.stat_data == {"生命": None, "列表": [None, 1]}


def test_an_update_leaves_the_variables_it_was_given_untouched() -> None:
    """The update works on its own copy (``MvuData.copy``, a JSON copy since #17): nested
    values, lists and a date that YAML gave stay as they were in the caller's data."""
    import datetime

    day = datetime.date(2026, 1, 1)
    data = MvuData(stat_data={"hero": {"hp": [10, "hit points"], "bag": ["rope"], "born": day}})
    original = json.loads(json.dumps(data.stat_data, default=str))
    text = "_.set('hero.hp', 10, 4);_.insert('hero.bag', 'lamp');"

    result = update_variables(text, data, lang="en")

    assert result.modified and result.data.stat_data["hero"]["bag"] == ["rope", "lamp"]
    assert json.loads(json.dumps(data.stat_data, default=str)) == original
    assert result.data.stat_data["hero"]["born"] == day
    copied = data.copy()
    copied.stat_data["hero"]["bag"].append("knife")
    assert data.stat_data["hero"]["bag"] == ["rope"]
