"""Running tools: planning calls (dice, code, llm), post-pipeline tools, llm-tool prompts."""

from __future__ import annotations

import json
import math

import pytest

from narrative_cli.domain import LoreEntry
from narrative_cli.domain_chat import Message
from narrative_cli.errors import BackendTimeout
from narrative_cli.load import load_card
from narrative_cli.rng import new_rng
from narrative_cli.state.engine import GameState
from narrative_cli.state.mvu import parse_initvar
from narrative_cli.tools.definitions import ToolDef, ToolSet, load_tools
from narrative_cli.tools.llm_tools import (
    CANONICAL_CONTEXT_ORDER,
    PROMPT_ORDER,
    TOOL_HISTORY,
    LazyContext,
    tool_history,
    tool_messages,
    world_full,
)
from narrative_cli.tools.runner import (
    MAX_PLANNING_CALLS,
    ToolResult,
    code_state,
    dice_results_text,
    format_tool_results,
    run_planning_calls,
    run_post_pipeline,
    split_independent,
    tool_results_block,
    tool_results_rule,
)

from .conftest import SAMPLES
from .test_tool_definitions import ACTION_GENERATOR, STATE_PANEL, entry, tutorial_entries

GUARD_CHECK = {
    "tool": "roll_dice",
    "params": {
        "mode": "normal",
        "expr": "1d20+3",
        "dc": 15,
        "success_branch": "守卫被说服，点头放行",
        "failure_branch": "守卫摇头，要求出示通行证",
    },
    "reason": "说服守卫属于魅力检定",
}
JUDGE = {
    "type": "llm",
    "function": {"name": "judge", "description": "裁定"},
    "context": ["user_input", "dice_results", "world_full"],
    "system_prompt": "你是裁判。",
}


class RecordingLlm:
    """The pipeline's llm_call stand-in: records each request and replies from a script."""

    def __init__(self, *replies: str | Exception) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, list[Message]]] = []

    def __call__(self, tool: ToolDef, messages: list[Message]) -> str:
        self.calls.append((tool.name, messages))
        reply = self.replies.pop(0) if self.replies else "ok"
        if isinstance(reply, Exception):
            raise reply
        return reply


def toolset(*extra: LoreEntry) -> ToolSet:
    return load_tools([*tutorial_entries(), *extra])


def test_planning_calls_dice_code_and_llm_in_order():
    llm = RecordingLlm("  <actions>\n<action>亮出徽章</action>\n</actions>\n")
    calls = [GUARD_CHECK, {"tool": "damage_calc", "params": {"atk": 12, "def": 5}}]
    calls.append({"tool": "action_generator", "params": {}})
    context = {"user_input": "我要说服守卫", "state_summary": "生命值 30", "world_full": "世界"}
    results = run_planning_calls(
        calls, toolset(), {"hp": 30}, new_rng(0), llm, "zh", context=context
    )
    assert [(r.tool, r.kind, r.ok) for r in results] == [
        ("roll_dice", "dice", True),
        ("damage_calc", "code", True),
        ("action_generator", "llm", True),
    ]
    assert format_tool_results(results, "zh") == (
        "检定结果：1d20+3 = [13]+3 = 16 (DC 15) → 成功；走向：守卫被说服，点头放行\n"
        'damage_calc：{\n  "damage": 7,\n  "remaining_hp": 23\n}\n'
        "<actions>\n<action>亮出徽章</action>\n</actions>"
    )
    assert results[0].data["rolls"] == [13] and results[1].data == {"damage": 7, "remaining_hp": 23}
    [(name, messages)] = llm.calls
    assert name == "action_generator"
    assert [m.to_dict() for m in messages] == [
        {"role": "system", "content": "你是行动选项生成器。"},
        {
            "role": "user",
            "content": "请根据下述内容执行工具 action_generator。\n\n"
            "<state_summary>\n生命值 30\n</state_summary>\n\n"
            "<user_input>\n我要说服守卫\n</user_input>",
        },
    ]


def test_failure_branch_and_definition_defaults():
    failing = run_planning_calls([GUARD_CHECK], toolset(), {}, new_rng(1), RecordingLlm(), "zh")
    assert failing[0].text == (
        "检定结果：1d20+3 = [5]+3 = 8 (DC 15) → 失败；走向：守卫摇头，要求出示通行证"
    )
    dice = {"type": "code", "function": {"name": "roll_dice"}, "success_branch": "门开了"}
    tools = load_tools([entry(1, "[TOOL:roll_dice]", dice)])
    call = {"tool": "roll_dice", "params": {"expr": "1d20+3", "dc": 15}}
    passing = run_planning_calls([call], tools, {}, new_rng(0), RecordingLlm(), "en")
    assert passing[0].text == "Check: 1d20+3 = [13]+3 = 16 (DC 15) → success; Outcome: 门开了"
    no_dc = dict(call, params={"expr": "1d20"})
    assert (
        "Outcome" not in run_planning_calls([no_dc], tools, {}, new_rng(0), RecordingLlm())[0].text
    )


def test_code_result_success_flag_picks_a_branch():
    lock = {
        "type": "code",
        "function": {"name": "pick_lock"},
        "code": "return {success: params.skill >= state.lock, margin: params.skill - state.lock}",
        "success_branch": "锁开了",
        "failure_branch": "撬锁失败，警报响起",
    }
    tools = load_tools([entry(1, "[TOOL:pick_lock]", lock)])
    calls = [{"tool": "pick_lock", "params": {"skill": 3}}]
    [result] = run_planning_calls(calls, tools, {"lock": 5}, new_rng(0), RecordingLlm())
    assert result.text.endswith("}\n走向：撬锁失败，警报响起")


def test_dice_results_context_carries_the_rolls():
    llm = RecordingLlm("判定：成功")
    tools = toolset(entry(900, "[TOOL:judge]", JUDGE))
    calls = [GUARD_CHECK, {"tool": "judge"}]
    context = {"user_input": "说服", "world_full": "  "}
    results = run_planning_calls(calls, tools, {}, new_rng(0), llm, "zh", context=context)
    user = llm.calls[0][1][1].content
    assert user == (
        "请根据下述内容执行工具 judge。\n\n<user_input>\n说服\n</user_input>\n\n"
        f"<dice_results>\n{results[0].text}\n</dice_results>"
    )
    assert dice_results_text(results) == results[0].text


def test_unknown_and_misplaced_tools_are_visible_warnings():
    calls = [{"tool": "fly", "params": {}}, {"tool": "state_panel"}, "junk", {"params": {}}]
    results = run_planning_calls(calls, toolset(), {}, new_rng(0), RecordingLlm(), "zh")
    assert [(r.kind, r.ok) for r in results] == [("warning", False)] * 4
    assert results[0].text == (
        "工具警告：未知工具「fly」，已跳过（可用工具：roll_dice, damage_calc, action_generator）"
    )
    assert "post_pipeline" in results[1].text
    assert results[2].text == "工具警告：第 3 个工具调用没有工具名，已跳过"
    assert format_tool_results(results, "zh") == ""  # the writer is not told
    assert "未知工具「fly」" in format_tool_results(results, "zh", include_warnings=True)
    en = run_planning_calls(calls[:1], ToolSet(), {}, new_rng(0), RecordingLlm(), "en")
    assert en[0].text == 'Tool warning: unknown tool "fly" skipped (available: none)'


def test_errors_become_results_and_the_turn_goes_on():
    looping = {"type": "code", "function": {"name": "spin"}, "code": "for (;;) {}"}
    broken = {"type": "code", "function": {"name": "broken"}, "code": "return state.a.b.c"}
    tools = toolset(entry(901, "", looping), entry(902, "", broken))
    llm = RecordingLlm(BackendTimeout("deepseek: no reply within 60 s"), "   ")
    calls = [
        {"tool": "spin"},
        {"tool": "broken"},
        {"tool": "roll_dice", "params": {"mode": "normal"}},
        {"tool": "roll_dice", "params": {"expr": "2x6"}},
        {"tool": "damage_calc", "params": [1, 2]},
        {"tool": "action_generator"},
        {"tool": "action_generator"},
        {"tool": "damage_calc", "params": {"atk": 9, "def": 4}},
    ]
    results = run_planning_calls(calls, tools, {"hp": 5}, new_rng(0), llm, "zh", time_limit=0.2)
    assert [r.text for r in results[:7]] == [
        "工具错误：spin：代码运行超过 0.2 秒，已被中止",
        "工具错误：broken：TypeError: cannot read property 'b' of undefined",
        "工具错误：roll_dice：缺少骰子表达式",
        "工具错误：roll_dice：无法识别的骰子表达式「2x6」：第 2 个字符处应为 + - * / 或表达式结束",
        "工具错误：damage_calc：params 必须是对象",
        "工具错误：action_generator：deepseek: no reply within 60 s",
        "工具错误：action_generator：模型没有返回内容",
    ]
    assert not any(r.ok for r in results[:7])
    assert results[7].ok and results[7].data == {"damage": 5, "remaining_hp": 0}


def test_call_count_is_capped_with_a_warning():
    calls = [{"tool": "roll_dice", "params": {"expr": "d6"}}] * (MAX_PLANNING_CALLS + 3)
    results = run_planning_calls(calls, toolset(), {}, new_rng(0), RecordingLlm(), "en")
    assert len(results) == MAX_PLANNING_CALLS + 1
    assert results[-1].text == "Tool warning: at most 10 tool calls run per turn; 3 more skipped"


def test_same_seed_same_results():
    random_tool = {"type": "code", "function": {"name": "luck"}, "code": "return Math.random()"}
    tools = toolset(entry(903, "", random_tool))
    calls = [GUARD_CHECK, {"tool": "luck"}, {"tool": "roll_dice", "params": {"expr": "3d6"}}]
    first = run_planning_calls(calls, tools, {}, new_rng(4), RecordingLlm())
    again = run_planning_calls(calls, tools, {}, new_rng(4), RecordingLlm())
    other = run_planning_calls(calls, tools, {}, new_rng(5), RecordingLlm())
    assert [r.to_dict() for r in first] == [r.to_dict() for r in again]
    assert [r.text for r in first] != [r.text for r in other]
    assert [ToolResult.from_dict(r.to_dict()) for r in first] == first


def test_tool_results_block_and_rule():
    results = run_planning_calls([GUARD_CHECK], toolset(), {}, new_rng(0), RecordingLlm())
    block = tool_results_block(results, "zh")
    assert block.startswith("<tool_results>\n检定结果：") and block.endswith("\n</tool_results>")
    assert tool_results_block([], "zh") == ""
    assert tool_results_rule("zh") == (
        "- 工具执行结果已由系统确定，必须严格按照结果中的走向来写作，不得自行改变工具执行结果"
    )


def test_post_pipeline_code_tools_run_as_code_not_as_llm_calls():
    panel_code = {
        "type": "code",
        "trigger": "post_pipeline",
        "function": {"name": "hp_bar"},
        "context": ["narrative_text"],
        "code": "return '<hp>' + state.hp + '</hp> ' + params.narrative_text.length",
    }
    silent = dict(panel_code, function={"name": "silent"}, code="return")
    tools = load_tools([entry(1, "", panel_code), entry(2, "", silent), entry(3, "", STATE_PANEL)])
    llm = RecordingLlm("  <state_panel>HP 30</state_panel>  ")
    context = {"narrative_text": "五个字的文", "state_summary": "HP 30", "user_input": "x"}
    results = run_post_pipeline(tools.post_pipeline(), context, {"hp": 30}, new_rng(0), llm, "zh")
    assert [(r.tool, r.kind, r.ok, r.text) for r in results] == [
        ("hp_bar", "code", True, "<hp>30</hp> 5"),
        ("silent", "code", True, ""),
        ("state_panel", "llm", True, "<state_panel>HP 30</state_panel>"),
    ]
    assert {r.trigger for r in results} == {"post_pipeline"}
    assert [name for name, _ in llm.calls] == ["state_panel"]


def test_post_pipeline_llm_tool_sees_its_own_history():
    tools = load_tools([entry(3, "", STATE_PANEL)])
    past = {
        1: "<context>…</context>\n\n<state_panel>HP 40</state_panel>",
        2: "<context>没有面板的一轮</context>",
        3: "<STATE_PANEL>HP 35</STATE_PANEL>",
    }
    llm = RecordingLlm("<state_panel>HP 30</state_panel>")
    context = {"state_summary": "HP 30", "narrative_text": "战斗"}
    run_post_pipeline(
        tools.tools, context, {}, new_rng(0), llm, "zh", past_outputs=past, current_turn=4
    )
    user = llm.calls[0][1][1].content
    assert user == (
        "请根据下述内容执行工具 state_panel。\n\n<state_summary>\nHP 30\n</state_summary>\n\n"
        "<tool_history>\n<state_panel>\n--- 第 1 轮 ---\nHP 40\n\n--- 第 3 轮 ---\nHP 35\n"
        "</state_panel>\n</tool_history>\n\n<narrative_text>\n战斗\n</narrative_text>"
    )


def test_split_independent():
    tools = toolset(entry(900, "", JUDGE)).tools
    independent, dependent = split_independent(tools)
    assert [t.name for t in dependent] == ["action_generator", "state_panel"]  # state_summary
    assert [t.name for t in independent] == ["roll_dice", "damage_calc", "judge"]


def test_code_state_merges_state_manager_and_mvu():
    state = code_state({"location": "港口", "hp": 1}, {"hp": 100, "主角": {"生命值": 80}})
    assert state["hp"] == 100 and state["location"] == "港口" and state["主角"]["生命值"] == 80
    assert state["game"] == {"location": "港口", "hp": 1}
    assert state["stat_data"] == {"hp": 100, "主角": {"生命值": 80}}
    assert code_state(None, None) == {"game": {}, "stat_data": {}}


# --- llm_tools: message construction, world_full, tool_history -------------------------------


def _llm_tool(context: list[str], system_prompt: str = "sys") -> ToolDef:
    return ToolDef(name="t", type="llm", context=tuple(context), system_prompt=system_prompt)


def test_context_keys_follow_the_stable_first_order():
    declared = list(reversed(CANONICAL_CONTEXT_ORDER))
    context = {key: f"[{key}]" for key in CANONICAL_CONTEXT_ORDER}
    history = "<tool_history>\n<t>\nold\n</t>\n</tool_history>"
    user = tool_messages(_llm_tool(declared), context, history, "zh")[1].content
    assert set(PROMPT_ORDER) == {*CANONICAL_CONTEXT_ORDER, TOOL_HISTORY}  # every key placed
    blocks = {key: f"<{key}>\n[{key}]\n</{key}>" for key in CANONICAL_CONTEXT_ORDER}
    blocks[TOOL_HISTORY] = history
    positions = [user.index(blocks[key]) for key in PROMPT_ORDER]
    assert positions == sorted(positions)
    # what each turn rewrites comes after what stays: the world before this turn's story
    assert user.index("[world_full]") < user.index("[story_summary]") < user.index("old")
    assert user.index("old") < user.index("[narrative_text]")


def test_a_tool_prompt_grows_by_its_end_while_the_story_stays_put():
    """Two turns of a tool reading the world and the summary: the second prompt starts with
    the whole stable part of the first (what a prefix cache serves again), the instruction to
    run included: it is fixed text, so it comes first, not after this turn's story (#17)."""
    tool = _llm_tool(["narrative_text", "story_summary", "world_full"])
    first = {"world_full": "W", "story_summary": "s1", "narrative_text": "turn one"}
    second = {"world_full": "W", "story_summary": "s1\ns2", "narrative_text": "turn two"}
    one = tool_messages(tool, first, "", "en")[1].content
    two = tool_messages(tool, second, "", "en")[1].content
    assert two.startswith(
        "Run the tool t using the content below.\n\n"
        "<world_full>\nW\n</world_full>\n\n<story_summary>\ns1\n"
    )
    assert one.endswith("<narrative_text>\nturn one\n</narrative_text>")
    assert one.index("turn one") > one.index("s1")


def test_undeclared_and_blank_keys_are_left_out():
    tool = _llm_tool(["user_input", "story_summary", "known_context"])
    context = {"user_input": "hi", "story_summary": " \n ", "world_full": "not declared"}
    assert tool_messages(tool, context, "", "en")[1].content == (
        "Run the tool t using the content below.\n\n<user_input>\nhi\n</user_input>"
    )
    assert tool_messages(tool, {}, "", "zh")[1].content == (
        "请根据下述内容执行工具 t。\n\n（无可用上下文）"
    )
    assert [m.role for m in tool_messages(_llm_tool([], " "), {}, "", "zh")] == ["user"]


def test_a_context_key_is_rendered_only_when_a_tool_declares_it():
    """The whole world is rendered for a tool that asks for it, and never otherwise."""

    def whole_world() -> str:
        rendered.append("world_full")
        return "the whole world"

    rendered: list[str] = []
    context = LazyContext({"world_full": whole_world, "user_input": lambda: "hi"})
    quiet = tool_messages(_llm_tool(["user_input"]), context, "", "en")[1].content
    assert "the whole world" not in quiet and rendered == []
    asks = _llm_tool(["world_full", "user_input"])
    for _ in range(2):
        assert (
            "<world_full>\nthe whole world\n</world_full>"
            in tool_messages(asks, context)[1].content
        )
    assert rendered == ["world_full"]  # once, then kept
    outcome = run_planning_calls(
        [{"tool": "t", "params": {}}],
        ToolSet([ToolDef(name="t", type="llm", context=("user_input",), system_prompt="s")]),
        {},
        new_rng(1),
        lambda tool, messages: "ok",
        "en",
        context=LazyContext({"world_full": whole_world, "user_input": lambda: "hi"}),
    )
    assert outcome[0].ok and rendered == ["world_full"]


def test_world_full_sorts_by_order_and_skips_formatting_entries():
    entries = [
        LoreEntry(uid=1, comment="城市", content="霓虹之城", order=50),
        LoreEntry(uid=2, comment="", keys=["", "魔法"], content="魔法很稀有", order=10),
        LoreEntry(uid=3, comment="", content="无名设定", order=30),
        LoreEntry(uid=4, comment="关闭的", content="x", disabled=True),
        LoreEntry(uid=5, comment="[TOOL:roll_dice]", content="{}"),
        LoreEntry(uid=6, comment="", content=json.dumps(ACTION_GENERATOR)),
        LoreEntry(uid=7, comment="[initvar]", content='{"hp": 1}'),
        LoreEntry(uid=8, comment="空的", content="  "),
    ]
    assert world_full(entries) == (
        "--- 魔法 ---\n魔法很稀有\n\n--- 未命名 ---\n无名设定\n\n--- 城市 ---\n霓虹之城"
    )
    assert "--- untitled ---" in world_full(entries, "en")


def test_tool_history_labels_each_output_with_its_turn():
    outputs = {
        5: "<panel>five</panel>",
        6: "no panel this turn",
        8: "<panel> eight-a </panel> text <panel>eight-b</panel> <panel>  </panel>",
    }
    assert tool_history(outputs, "panel", 5, 9, "zh") == (
        "<tool_history>\n<panel>\n--- 第 5 轮 ---\nfive\n\n--- 第 8 轮 ---\neight-a\n\neight-b\n"
        "</panel>\n</tool_history>"
    )
    english = tool_history(outputs, "panel", 5, 9, "en")
    assert "--- turn 5 ---\nfive" in english and "--- turn 8 ---\neight-a" in english


def test_tool_history_keeps_a_past_output_word_for_word_as_turns_pass():
    """A past output reads the same in every turn that still shows it (its label is its own
    turn, not its distance), so a prompt cache that reuses moved text keeps it (#17)."""
    outputs = {turn: f"<log>entry {turn}</log>" for turn in range(1, 12)}
    at_10 = tool_history(outputs, "log", 3, 10, "en")
    at_11 = tool_history(outputs, "log", 3, 11, "en")
    both = "--- turn 8 ---\nentry 8\n\n--- turn 9 ---\nentry 9"
    assert both in at_10 and both in at_11
    assert at_10.index("--- turn 7 ---") < at_10.index(both)
    assert "turn 7" not in at_11 and at_11.index(both) < at_11.index("--- turn 10 ---\nentry 10")


def test_tool_history_window_single_match_and_current_turn():
    outputs = {1: "<p>old</p>", 3: "<p>recent</p>", 4: "<p>this turn</p>"}
    assert tool_history(outputs, "p", 2, 4) == "<tool_history>\n<p>\nrecent\n</p>\n</tool_history>"
    assert tool_history(outputs, "p", 0, 4) == ""
    assert tool_history(outputs, "", 3, 4) == ""
    assert tool_history(outputs, "p", 1, 3) == ""  # turn 2 had nothing


@pytest.mark.parametrize("tag", ["a.b", "x+", "状态(面板)", "a|b"])
def test_tool_history_escapes_the_tag(tag: str):
    outputs = {1: f"<{tag}>mine</{tag}> <aXb>not mine</aXb> <x>no</x> <a>no</a>"}
    history = tool_history(outputs, tag, 1, 2)
    assert history == f"<tool_history>\n<{tag}>\nmine\n</{tag}>\n</tool_history>"


def test_context_values_are_used_verbatim():
    tool = _llm_tool(["narrative_text"])
    user = tool_messages(tool, {"narrative_text": "  缩进\n"}, "", "zh")[1].content
    assert user == "请根据下述内容执行工具 t。\n\n<narrative_text>\n  缩进\n\n</narrative_text>"


# --- the sample card's tools, end to end at the tools layer -----------------------------------


def test_sample_card_tools_plan_and_post_pipeline():
    card = load_card(SAMPLES / "lantern-keeper.png")
    assert card.character_book is not None
    entries = card.character_book.entries
    tools = load_tools(entries)
    assert [t.name for t in tools.tools] == ["roll_dice", "tide_clock", "keeper_log"]
    assert tools.problems == []
    initvar = next(e for e in entries if e.comment.startswith("[initvar]"))
    game = GameState.from_dict({"time": {"day": 2, "hour": 6, "minute": 0}})
    state = code_state(game.to_dict(), parse_initvar(initvar.content))

    calls = [
        {"tool": "roll_dice", "params": {"expr": "1d20+2", "dc": 12}},
        {"tool": "tide_clock", "params": {}},
        {"tool": "tide_clock", "params": {"hour": 0}},
    ]
    results = run_planning_calls(calls, tools, state, new_rng(3), RecordingLlm(), "en")
    assert [r.ok for r in results] == [True, True, True]
    for result, hour in zip(results[1:], (6, 0), strict=True):
        tide = 1.6 + 1.4 * math.cos(2 * math.pi * (hour % 12.4) / 12.4)
        height = math.floor(tide * 10 + 0.5) / 10  # JavaScript's Math.round
        causeway = "open" if height < 0.8 else "flooded"
        assert result.data == {"hour": hour, "tide_m": height, "causeway": causeway}
    assert results[0].text.startswith("Check: 1d20+2 = [")

    llm = RecordingLlm("<keeper_log>06:00. Fog. Lamp trimmed.</keeper_log>")
    context = {"narrative_text": "You climb the tower.", "state_summary": "lamp oil 12 L"}
    past = {1: "<keeper_log>Day 1, dusk. Fog.</keeper_log>"}
    post = run_post_pipeline(
        tools.post_pipeline(),
        context,
        state,
        new_rng(3),
        llm,
        "en",
        past_outputs=past,
        current_turn=2,
    )
    assert post[0].text == "<keeper_log>06:00. Fog. Lamp trimmed.</keeper_log>"
    system, user = llm.calls[0][1]
    assert system.content.startswith("You are the logbook of Greyholm Light.")
    assert "<tool_history>\n<keeper_log>\nDay 1, dusk. Fog.\n</keeper_log>\n</tool_history>" in (
        user.content
    )
