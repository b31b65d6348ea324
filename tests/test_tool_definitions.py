"""Tool entries → ToolDefs: registration, validation problems, and the planner's tool list."""

from __future__ import annotations

import json
from typing import Any

import pytest

from narrative_cli.domain import LoreEntry
from narrative_cli.tools.definitions import (
    DICE_PARAMETERS,
    load_tools,
    tool_list_text,
)

# The tutorial's three example tools (narrative-agent TUTORIAL.md, uids 600/610/700).
ROLL_DICE = {
    "type": "code",
    "function": {
        "name": "roll_dice",
        "description": "执行技能检定掷骰，判断角色行动成败",
        "parameters": {
            "type": "object",
            "properties": {
                "mode": {
                    "type": "string",
                    "enum": ["normal", "advantage", "disadvantage", "exploding"],
                    "description": "检定类型",
                },
                "expr": {"type": "string", "description": "骰子表达式，如 1d20+3"},
                "dc": {"type": "number", "description": "目标难度，可选"},
            },
            "required": ["mode", "expr"],
        },
    },
}
DAMAGE_CALC = {
    "type": "code",
    "function": {
        "name": "damage_calc",
        "description": "根据攻防数值计算伤害结果",
        "parameters": {
            "type": "object",
            "properties": {
                "atk": {"type": "number", "description": "攻击力"},
                "def": {"type": "number", "description": "防御力"},
            },
            "required": ["atk", "def"],
        },
    },
    "code": "const damage = Math.max(0, params.atk - params.def);\n"
    "return { damage, remaining_hp: Math.max(0, state.hp - damage) };",
}
ACTION_GENERATOR = {
    "type": "llm",
    "trigger": "planning",
    "function": {
        "name": "action_generator",
        "description": "根据当前场景和玩家状态生成合理的行动选项",
        "parameters": {"type": "object", "properties": {}, "required": []},
    },
    "context": ["narrative_text", "state_summary", "user_input"],
    "system_prompt": "你是行动选项生成器。",
}
STATE_PANEL = {
    "type": "llm",
    "trigger": "post_pipeline",
    "function": {"name": "state_panel", "description": "状态面板"},
    "context": ["state_summary", "narrative_text"],
    "system_prompt": "输出 <state_panel>…</state_panel>",
    "output_tag": "state_panel",
    "tag_lookback": 3,
}


def entry(uid: int, comment: str, content: Any, **fields: Any) -> LoreEntry:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return LoreEntry(uid=uid, comment=comment, content=text, constant=True, **fields)


def tutorial_entries() -> list[LoreEntry]:
    return [
        entry(600, "[TOOL:roll_dice]", ROLL_DICE),
        entry(610, "[TOOL:damage_calc]", DAMAGE_CALC),
        entry(700, "[TOOL:action_generator]", ACTION_GENERATOR),
        entry(800, "[TOOL:state_panel]", STATE_PANEL),
        entry(1, "世界观", "这是一个赛博朋克世界。"),
    ]


def test_tutorial_tools_register_in_entry_order():
    toolset = load_tools(tutorial_entries())
    assert toolset.problems == []
    assert [t.name for t in toolset.tools] == [
        "roll_dice",
        "damage_calc",
        "action_generator",
        "state_panel",
    ]
    dice, damage, action, panel = toolset.tools
    assert dice.is_dice and dice.code == "" and dice.trigger == "planning"
    assert damage.type == "code" and "params.atk" in damage.code
    assert action.context == ("narrative_text", "state_summary", "user_input")
    assert action.system_prompt == "你是行动选项生成器。"
    assert (panel.trigger, panel.output_tag, panel.tag_lookback) == (
        "post_pipeline",
        "state_panel",
        3,
    )
    assert [t.name for t in toolset.planning()] == ["roll_dice", "damage_calc", "action_generator"]
    assert [t.name for t in toolset.post_pipeline()] == ["state_panel"]
    assert (damage.entry_uid, damage.entry_comment) == (610, "[TOOL:damage_calc]")


def test_tool_list_text_zh_matches_the_original_format():
    text = tool_list_text(load_tools(tutorial_entries()).tools, "zh")
    assert text == (
        "可用工具：\n"
        "- roll_dice: 执行技能检定掷骰，判断角色行动成败。"
        "参数: mode(检定类型), expr(骰子表达式，如 1d20+3), dc(目标难度，可选)\n"
        "- damage_calc: 根据攻防数值计算伤害结果。参数: atk(攻击力), def(防御力)\n"
        "- action_generator: 根据当前场景和玩家状态生成合理的行动选项。无参数"
    )


def test_tool_list_text_en_and_type_fallbacks():
    tool = {
        "type": "code",
        "function": {
            "name": "calc",
            "description": "Add numbers.",
            "parameters": {"properties": {"a": {"type": "number"}, "b": {}, "c": 3}},
        },
        "code": "return params.a",
    }
    text = tool_list_text(load_tools([entry(1, "[TOOL:calc]", tool)]).tools, "en")
    assert text == "Available tools:\n- calc: Add numbers. Parameters: a(number), b(any), c(any)"


def test_tool_list_without_planning_tools():
    post_only = load_tools([entry(800, "[TOOL:state_panel]", STATE_PANEL)]).tools
    assert tool_list_text(post_only, "zh") == (
        "当前没有可用工具，tool_calls 必须为空数组 []。不要自行发明任何工具。"
    )
    assert tool_list_text([], "en").startswith("No tools are available")


def test_content_only_tool_json_is_registered():
    # The original hid these from prompts but never registered them.
    toolset = load_tools([entry(5, "", DAMAGE_CALC), entry(6, "伤害规则（旧）", ROLL_DICE)])
    assert [t.name for t in toolset.tools] == ["damage_calc", "roll_dice"]
    assert toolset.problems == []


def test_chinese_and_hyphenated_names():
    chinese = dict(DAMAGE_CALC, function={"name": "伤害计算", "description": "算伤害"})
    hyphen = dict(ACTION_GENERATOR, function={"name": "npc-mood.v2"})
    toolset = load_tools(
        [entry(1, "[TOOL:伤害计算]", chinese), entry(2, "[TOOL:npc-mood]", hyphen)]
    )
    assert [t.name for t in toolset.tools] == ["伤害计算", "npc-mood.v2"]
    assert tool_list_text(toolset.tools, "zh").splitlines()[1] == "- 伤害计算: 算伤害。无参数"


def test_disabled_and_story_entries_are_not_tools():
    entries = [
        entry(1, "[TOOL:damage_calc]", DAMAGE_CALC, disabled=True),
        entry(2, "[TOOL:broken]", "not json", disabled=True),
        entry(3, "地点", "城市"),
        entry(4, "[initvar]", {"hp": 1}),
    ]
    toolset = load_tools(entries)
    assert toolset.tools == [] and toolset.problems == []


def test_roll_dice_needs_no_code_and_gets_default_parameters():
    bare = {"type": "code", "function": {"name": "roll_dice", "description": "掷骰"}}
    with_bad_code = dict(bare, code="this is not javascript {")
    tool = load_tools([entry(1, "[TOOL:roll_dice]", with_bad_code)]).tools[0]
    assert tool.is_dice and tool.code == ""
    assert tool.parameters == DICE_PARAMETERS
    assert "expr(骰子表达式，如 1d20+3、4d6kh3" in tool_list_text([tool], "zh")
    assert "skill(coc7：技能值)" in tool_list_text([tool], "zh")


def test_defaults_aliases_and_entry_fields():
    minimal = {"type": "llm", "function": {"name": "muse"}, "user_persona": "legacy prompt"}
    planned = dict(minimal, function={"name": "later"}, trigger="plan")
    keyed = LoreEntry(uid=9, comment="[TOOL:k]", content=json.dumps(minimal), keys=["魔法"])
    toolset = load_tools([entry(1, "", minimal), entry(2, "", planned), keyed])
    muse, later = toolset.tools
    assert muse.trigger == "planning" and muse.system_prompt == "legacy prompt"
    assert muse.parameters == {"type": "object", "properties": {}, "required": []}
    assert later.trigger == "planning"
    assert [p.message for p in toolset.problems] == [
        "duplicate tool name 'muse': entry 1 \"\" defines it first; ignored"
    ]


def test_non_constant_tool_keeps_its_keys():
    keyed = LoreEntry(
        uid=9, comment="[TOOL:k]", content=json.dumps(ACTION_GENERATOR), keys=["魔法"]
    )
    tool = load_tools([keyed]).tools[0]
    assert (tool.constant, tool.keys) == (False, ("魔法",))


def test_literal_newlines_inside_json_strings_are_accepted():
    content = (
        '{"type": "code", "function": {"name": "two_lines"},\n "code": "const a = 1;\nreturn a;"}'
    )
    tool = load_tools([entry(1, "[TOOL:two_lines]", content)]).tools[0]
    assert tool.code == "const a = 1;\nreturn a;"


def test_duplicate_names_first_wins():
    second = dict(DAMAGE_CALC, code="return 2")
    toolset = load_tools(
        [entry(1, "[TOOL:damage_calc]", DAMAGE_CALC), entry(2, "[TOOL:again]", second)]
    )
    assert [t.entry_uid for t in toolset.tools] == [1]
    assert str(toolset.problems[0]) == (
        "entry 2 \"[TOOL:again]\": duplicate tool name 'damage_calc': "
        'entry 1 "[TOOL:damage_calc]" defines it first; ignored'
    )


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(base))
    data.update(changes)
    return data


PROBLEMS = [
    ("", "content is empty"),
    ('{\n  "type": "code",\n  "function": }', "invalid JSON at line 3, column 15: Expecting value"),
    ('{"type": "code" "function": {}}', "invalid JSON at line 1, column 17"),
    ("[1, 2]", "content must be a JSON object, not an array"),
    (_with(ACTION_GENERATOR, type="python"), 'unknown type "python" (use "code" or "llm")'),
    ({"function": {"name": "x"}}, "unknown type (missing)"),
    ({"type": "llm"}, 'missing "function" object'),
    ({"type": "llm", "function": "x"}, 'missing "function" object'),
    ({"type": "llm", "function": {}}, "missing function.name"),
    ({"type": "llm", "function": {"name": "  "}}, "missing function.name"),
    ({"type": "llm", "function": {"name": 7}}, "missing function.name"),
    ({"type": "llm", "function": {"name": "two words"}}, 'function.name "two words" may hold'),
    (_with(ACTION_GENERATOR, trigger="later"), 'unknown trigger "later"'),
    ({"type": "code", "function": {"name": "calc"}}, 'a code tool needs "code"'),
    (_with(DAMAGE_CALC, code="   "), 'a code tool needs "code"'),
    (
        _with(DAMAGE_CALC, code="const a = 1;\nconst b = ;"),
        "code does not compile: syntax error: unexpected token in expression: ';' (line 2)",
    ),
    (_with(DAMAGE_CALC, code="return 1 }); (function () {"), "closes its function early"),
    (_with(ACTION_GENERATOR, context=["everything"]), 'unknown context key "everything" (known: '),
    (_with(ACTION_GENERATOR, context="user_input"), '"context" must be a list'),
    (
        _with(ACTION_GENERATOR, function={"name": "a", "parameters": []}),
        "function.parameters must be a JSON Schema object, not an array",
    ),
    (
        _with(ACTION_GENERATOR, function={"name": "a", "description": 5}),
        "function.description must be text, not a number",
    ),
    (_with(ACTION_GENERATOR, system_prompt=["a"]), "system_prompt must be text, not an array"),
    (_with(STATE_PANEL, output_tag="<state panel>"), 'output_tag "<state panel>" must be a tag'),
    (_with(STATE_PANEL, tag_lookback=-1), "tag_lookback -1 must be a whole number of turns"),
    (_with(STATE_PANEL, tag_lookback="three"), 'tag_lookback "three" must be a whole number'),
    (_with(STATE_PANEL, tag_lookback=True), "tag_lookback true must be a whole number"),
]


@pytest.mark.parametrize(("content", "message"), PROBLEMS)
def test_validation_problems_name_the_entry_and_the_fault(content: Any, message: str):
    toolset = load_tools([entry(42, "[TOOL:bad]", content)])
    assert toolset.tools == []
    [problem] = toolset.problems
    assert (problem.uid, problem.comment) == (42, "[TOOL:bad]")
    assert message in problem.message
    assert str(problem).startswith('entry 42 "[TOOL:bad]": ')
    assert "\n" not in str(problem)


def test_lookback_forms():
    for value, expected in [(3, 3), ("4", 4), (2.0, 2), (None, 0), (500, 50)]:
        tool = load_tools([entry(1, "", _with(STATE_PANEL, tag_lookback=value))]).tools[0]
        assert tool.tag_lookback == expected


def test_a_bad_entry_does_not_hide_the_good_ones():
    entries = [entry(1, "[TOOL:x]", "{oops"), *tutorial_entries()]
    toolset = load_tools(entries)
    assert len(toolset.tools) == 4 and len(toolset.problems) == 1
    assert toolset.problems[0].to_dict()["uid"] == 1
