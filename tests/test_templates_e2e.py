"""Templates and variable macros in whole turns on the scripted server: our own small cards for
each construct, then the real MVU/EJS cards of ../shared/fixtures (skipped when absent).

Every request the turn sends is scanned: no template code and no variable macro may reach a
model, a gated entry is in the prompt exactly when its condition holds, and a failing template
is a warning naming its entry while the turn goes on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.pipeline.events import TurnWarning
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import Story, open_story

from . import servers
from .conftest import fixture_file
from .pipeline_support import (
    Script,
    backends_for,
    collect,
    entry,
    llm_tool,
    settings_for,
    tool_entry,
    write_card,
)
from .servers import ScriptedServer

scripted_server = servers.scripted_server

RAW_MARKS = ("<%", "%>", "{{get_message_variable", "{{format_message_variable", "{{getvar::")
GATE = "<% if (getvar('stat_data.理.好感度[0]') >= 60) { %>CONFESSION-EVENT<% } %>"


def initvar(affection: int) -> dict[str, Any]:
    tree = {"理": {"好感度": [affection, "0-100"], "情绪": "平静"}}
    return {**entry(1, json.dumps(tree, ensure_ascii=False), comment="[InitVar] 初始变量"),
            "enabled": False}


def gated_card(folder: Path, affection: int, *extra: dict[str, Any]) -> Path:
    entries = [
        initvar(affection),
        entry(2, GATE, constant=True, comment="角色事件-告白"),
        entry(3, "好感：{{get_message_variable::stat_data.理.好感度[0]}} 心情：{{getvar::mood}}",
              constant=True, comment="变量输出"),
        entry(4, "<%_ setvar('mood', '好') _%>\n阶段：<%= getvar('stat_data.理.情绪') %>",
              constant=True, comment="阶段"),
        *extra,
    ]
    description = "<%- charName %> 的好感是 <%= getvar('stat_data.理.好感度[0]') %>。"
    return write_card(folder, entries, name="Riri", description=description)


def sent_text(server: ScriptedServer) -> str:
    return "\n".join(json.dumps(r.json, ensure_ascii=False) for r in server.requests)


def play(server: ScriptedServer, card: Path, **story_options: Any) -> tuple[Story, Any, list[Any]]:
    Script().install(server)
    settings = settings_for(server)
    story_options.setdefault("lang", "zh")
    story = open_story(card, settings=settings, seed=11, **story_options)
    events, listener = collect()
    result = run_turn(story, "我来看你了。", backends_for(server, settings), listener=listener)
    return story, result, events


def assert_nothing_raw(server: ScriptedServer) -> None:
    assert server.requests
    text = sent_text(server)
    for mark in RAW_MARKS:
        assert mark not in text, mark


@pytest.mark.parametrize(("affection", "fires"), [(59, False), (60, True), (61, True)])
def test_gated_entry_fires_exactly_when_its_condition_holds(
    scripted_server: ScriptedServer, tmp_path: Path, affection: int, fires: bool
) -> None:
    _, result, _ = play(scripted_server, gated_card(tmp_path, affection))
    assert_nothing_raw(scripted_server)
    text = sent_text(scripted_server)
    assert ("CONFESSION-EVENT" in text) is fires
    assert f"好感：{affection}" in text  # the macro read the MVU path
    assert f"的好感是 {affection}。" in text  # the card field's template too
    assert "阶段：平静" in text
    assert result.warnings == []


def test_setvar_in_a_template_reaches_later_macros_next_turn(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    story, result, _ = play(scripted_server, gated_card(tmp_path, 10))
    assert result.snapshot.variables.get("mood") == "好"
    assert "心情：好" not in sent_text(scripted_server)  # macros ran before the template set it
    story.advance(result)
    scripted_server.requests.clear()
    run_turn(story, "再来。", backends_for(scripted_server, story.settings))
    assert "心情：好" in sent_text(scripted_server)


def test_runaway_template_is_a_warning_and_the_turn_goes_on(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    loop = entry(9, "LOOP-TEXT<% while(true){} %>", constant=True, comment="死循环")
    _, result, events = play(scripted_server, gated_card(tmp_path, 60, loop))
    assert_nothing_raw(scripted_server)
    text = sent_text(scripted_server)
    assert "LOOP-TEXT" not in text
    assert "CONFESSION-EVENT" in text  # the other templates still ran
    warnings = [e.message for e in events if isinstance(e, TurnWarning)]
    assert len(warnings) == 1 and '"死循环"' in warnings[0] and "秒" in warnings[0]
    assert result.warnings == warnings
    assert result.narrative


def test_broken_template_is_never_sent_raw(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    broken = entry(9, "BROKEN-TEXT <% if (x { %>", constant=True, comment="坏模板")
    story, result, _ = play(scripted_server, gated_card(tmp_path, 60, broken))
    opening = [p for p in story.problems if "坏模板" in p]
    assert len(opening) == 1 and "语法错误" in opening[0]  # known before the first turn
    assert_nothing_raw(scripted_server)
    assert "BROKEN-TEXT" not in sent_text(scripted_server)
    assert any('"坏模板"' in w and "语法错误" in w for w in result.warnings)


def test_unknown_macro_is_reported_once_when_the_story_opens(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    odd = entry(9, "{{sim_tracker}} 和 {{sim_tracker}}", constant=True, comment="extension")
    story, result, _ = play(scripted_server, gated_card(tmp_path, 60, odd))
    lines = [p for p in story.problems if "sim_tracker" in p]
    assert len(lines) == 1 and lines[0].count("sim_tracker") == 1
    assert "（世界书条目「extension」（uid 9））" in lines[0]  # a Chinese card: named in Chinese
    assert "{{sim_tracker}}" in sent_text(scripted_server)  # sent as written, as ST does


def test_llm_tool_reading_the_whole_world_gets_rendered_entries(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    tool = tool_entry(8, llm_tool("chronicle", "post_pipeline", ["world_full"]))
    keyed = entry(7, "<% if (getvar('stat_data.理.好感度[0]') >= 60) { %>WORLD-GATE<% } %>",
                  keys=("never-mentioned",), comment="keyed")
    play(scripted_server, gated_card(tmp_path, 70, tool, keyed))
    assert_nothing_raw(scripted_server)
    tool_requests = [r for r in scripted_server.requests if r.agent == "tool:chronicle"]
    assert tool_requests
    assert "WORLD-GATE" in json.dumps(tool_requests[0].json, ensure_ascii=False)


# ---------------------------------------------------------------- the real cards

REAL_CARDS = ["mvu/magvar-riri-mvu-update.png", "zh/ai-v3.json", "zh/nun-ninja-anime.png"]


@pytest.mark.parametrize("relative", REAL_CARDS)
def test_real_cards_send_no_template_code_or_variable_macros(
    scripted_server: ScriptedServer, relative: str
) -> None:
    card = fixture_file(relative)
    story, result, _ = play(scripted_server, card)
    assert_nothing_raw(scripted_server)
    assert not [w for w in result.warnings if "template" in w or "模板" in w]
    assert not [p for p in story.problems if "模板" in p or "template" in p]


def test_ai_card_phase_guide_follows_its_variable(scripted_server: ScriptedServer) -> None:
    card = fixture_file("zh/ai-v3.json")
    _, _, _ = play(scripted_server, card)
    text = sent_text(scripted_server)
    assert "磨合期:" in text  # the default phase when 系统.当前阶段 is not set
    assert "损友成型:" not in text


@pytest.mark.parametrize(("affection", "fires"), [(59, False), (60, True)])
def test_real_confession_event_fires_exactly_from_affection_60(
    scripted_server: ScriptedServer, affection: int, fires: bool
) -> None:
    """青空理's 角色事件-告白: the writer's _.set moves 好感度; the next turn's prompt holds the
    event's <story_override> exactly when the card's own condition holds."""
    card = fixture_file("mvu/magvar-riri-mvu-update.png")
    update = f"<UpdateVariable>\n_.set('理.好感度[0]', 15, {affection});//测试\n</UpdateVariable>"
    Script({"merged_writing": f"理微笑着看向你。\n\n{update}"}).install(scripted_server)
    settings = settings_for(scripted_server)
    # the affection-stage entry is ~14k estimated tokens of raw template (SillyTavern budgets
    # the raw text too): a lore budget that holds it, as a long-context profile would have
    settings.lore.update(budget_percent=100, max_context=131072)
    story = open_story(card, settings=settings, seed=11, greeting_index=1)
    first = run_turn(story, "我来看你了。", backends_for(scripted_server, settings))
    assert first.snapshot.mvu is not None
    assert first.snapshot.mvu["理"]["好感度"][0] == affection
    assert "<story_override>" not in sent_text(scripted_server)  # 15 at the first turn
    story.advance(first)
    scripted_server.requests.clear()
    second = run_turn(story, "我有话想对你说。", backends_for(scripted_server, settings))
    assert_nothing_raw(scripted_server)
    text = sent_text(scripted_server)
    assert ("<story_override>" in text) is fires
    assert ("理会立刻寻找合适的场合" in text) is fires
    # the affection-stage entry follows the same variable
    assert ("她已经将User视作亲密的朋友" in text) is (40 <= affection < 60)
    assert ("只要您与别人站得稍近" in text) is (60 <= affection < 80)
    assert "daily_performance" in text
    assert not [w for w in second.warnings if "template" in w or "模板" in w]


# ---------------------------------------------------------------- inspect


def test_inspect_lists_templates_and_unknown_macros(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from narrative_cli.cli.app import app

    odd = entry(9, "{{sim_tracker}} <% await execute('/echo') %>", constant=True, comment="ext")
    bad = entry(10, "<% if (x { %>", constant=True, comment="bad")
    card = gated_card(tmp_path, 60, odd, bad)
    result = CliRunner().invoke(app, ["inspect", str(card), "--json"])
    assert result.exit_code == 0, result.output
    macros = json.loads(result.stdout)["macros"]
    assert macros["unknown"] == [{"name": "sim_tracker", "where": 'lore entry "ext" (uid 9)'}]
    rows = {row["where"]: row for row in macros["templates"]}
    assert rows['lore entry "角色事件-告白" (uid 2)']["calls"] == ["getvar"]
    assert rows['lore entry "角色事件-告白" (uid 2)']["unavailable"] == []
    assert rows['lore entry "ext" (uid 9)']["unavailable"] == ["execute"]
    assert "card field description" in rows
    assert rows['lore entry "bad" (uid 10)']["error"]  # a JavaScript syntax error
    assert rows['lore entry "ext" (uid 9)']["error"] == ""
    shown = CliRunner().invoke(app, ["inspect", str(card)], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert 'EJS template in lore entry "角色事件-告白" (uid 2): getvar; runs in the sandbox' in (
        shown.output)
    assert "will fail at execute" in shown.output
    assert "unknown macro {{sim_tracker}}" in shown.output


def test_inspect_on_the_real_mvu_card_lists_its_templates() -> None:
    from click.testing import CliRunner

    from narrative_cli.cli.app import app

    card = fixture_file("mvu/magvar-riri-mvu-update.png")
    result = CliRunner().invoke(app, ["inspect", str(card), "--json"])
    assert result.exit_code == 0, result.output
    macros = json.loads(result.stdout)["macros"]
    wheres = [row["where"] for row in macros["templates"]]
    assert wheres == ['lore entry "变量分阶段-好感度" (uid 3)',
                      'lore entry "角色事件-告白" (uid 6)']
    assert all(row["unavailable"] == [] and row["error"] == "" for row in macros["templates"])
    assert macros["unknown"] == []


def test_greeting_templates_render_against_the_starting_variables(tmp_path: Path) -> None:
    greeting = ("<% if (getvar('stat_data.理.好感度[0]') >= 60) { %>你回来了！"
                "<% } else { %>你好。<% } %>")
    story = open_story(gated_card(tmp_path, 70), seed=1, lang="zh")
    assert story.history[0].narrative.startswith("The ferry bell")  # no template: as before
    card = write_card(tmp_path, [initvar(70)], name="Greeter", first_mes=greeting)
    assert open_story(card, seed=1, lang="zh").history[0].narrative == "你回来了！"
    broken = write_card(tmp_path, [initvar(70)], name="Broken", first_mes="hi <% while(1){} %>")
    story = open_story(broken, seed=1, lang="zh")
    assert story.history == []  # left out, never sent as code
    assert any(p.startswith("greeting 中的模板运行失败") for p in story.problems)


def test_same_inputs_give_the_same_prompts_with_random_and_clock_in_templates(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    from datetime import datetime

    dice = entry(9, "骰子：<%= _.random(1, 1000) %> 时间：<%= new Date().toISOString() %>",
                 constant=True, comment="随机")
    card = gated_card(tmp_path, 60, dice)
    prompts = []
    for _ in range(2):
        scripted_server.requests.clear()
        Script().install(scripted_server)
        settings = settings_for(scripted_server)
        story = open_story(card, settings=settings, seed=5, lang="zh")
        story.clock = lambda: datetime(2026, 1, 2, 3, 4, 5)
        run_turn(story, "掷骰。", backends_for(scripted_server, settings))
        prompts.append(sent_text(scripted_server))
    assert prompts[0] == prompts[1]
    assert "时间：2026-01-02T" in prompts[0]
    assert "骰子：" in prompts[0] and "<%" not in prompts[0]


def test_templates_in_the_persona_and_preset_prompts(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    from narrative_cli.domain_chat import Persona, Preset, PresetPrompt

    preset = Preset(name="p", prompts=[PresetPrompt(
        identifier="custom", name="阶段提示", role="system",
        content="<% if (getvar('stat_data.理.好感度[0]') >= 60) { %>PRESET-HIGH<% } else { %>"
                "PRESET-LOW<% } %>")])
    described = "<%= userName %> 的好感 <%= getvar('stat_data.理.好感度[0]') %>"
    persona = Persona(name="阿明", description=described)
    Script().install(scripted_server)
    settings = settings_for(scripted_server, preset_mode="split")
    story = open_story(gated_card(tmp_path, 65), settings=settings, seed=3, lang="zh",
                       preset=preset, persona=persona)
    run_turn(story, "你好。", backends_for(scripted_server, settings))
    assert_nothing_raw(scripted_server)
    text = sent_text(scripted_server)
    assert "PRESET-HIGH" in text and "PRESET-LOW" not in text
    assert "阿明 的好感 65" in text


def test_golden_prompt_of_a_templated_mvu_turn(
    scripted_server: ScriptedServer, tmp_path: Path, update_golden: bool
) -> None:
    """The writer's whole request for our gated MVU card at affection 60 (tests/golden; refresh
    with pytest --update-golden and read the diff)."""
    from datetime import datetime

    Script().install(scripted_server)
    settings = settings_for(scripted_server)
    story = open_story(gated_card(tmp_path, 60), settings=settings, seed=3, lang="zh")
    story.clock = lambda: datetime(2026, 1, 2, 3, 4, 5)
    run_turn(story, "我来看你了。", backends_for(scripted_server, settings))
    writer = next(r for r in scripted_server.requests if r.agent == "merged_writing")
    text = "\n\n".join(f"=== {m['role']} ===\n{m['content']}" for m in writer.messages) + "\n"
    path = Path(__file__).parent / "golden" / "prompts" / "merged_writing" / "ejs-mvu-gated.txt"
    if update_golden:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (pytest --update-golden)"
