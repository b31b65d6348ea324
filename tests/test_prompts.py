"""Each agent's prompt: golden files per agent, mode and language, and the rules behind them.

Golden files live in tests/golden/prompts/<agent>/<case>.txt; refresh them with
``pytest --update-golden`` and read the diff before committing.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from narrative_cli.agents.replies import Plan
from narrative_cli.agents.templates import LANGS, pick_language, template
from narrative_cli.context.blocks import Prompt, render_prompt_text
from narrative_cli.context.expand import apply_macros
from narrative_cli.context.router import (
    HistoryTurn,
    PromptInputs,
    SummaryEntry,
    WindowSettings,
    build_analysis,
    build_merged_writing,
    build_mvu_extract,
    build_planning,
    build_prompt,
    build_writing,
)
from narrative_cli.domain import Card
from narrative_cli.domain_chat import AuthorsNote, Persona, Preset, PresetPrompt
from narrative_cli.errors import ConfigError

GOLDEN = Path(__file__).parent / "golden" / "prompts"
CLOCK = datetime(2026, 5, 3, 21, 30)

EN = {
    "card": Card(
        name="Mira",
        description="{{char}} keeps the lighthouse on Gull Point: forty, weathered, plain-spoken.",
        personality="patient, wry, secretive about the drowned bell",
        scenario="A winter storm has stranded {{user}} at the lighthouse.",
        mes_example="<START>\n{{user}}: Is the lamp always lit?\n{{char}}: Every night.",
        first_mes="The lamp turns above you.",
        system_prompt="Write {{char}} as a grounded character. {{original}}",
        post_history_instructions="{{original}} Never speak for {{user}}.",
        extensions={"depth_prompt": {"prompt": "{{char}} avoids talk of the bell.", "depth": 4}},
    ),
    "persona": Persona("Tom", "A shipwrecked cartographer who hates the sea."),
    "worldinfo1": ["Gull Point is a bare rock; the lighthouse is its only building."],
    "worldinfo2": ["The storm lasts three days. Tonight is {{weekday}}.", "{{outlet::harbour}}"],
    "worldinfo3": ["The drowned bell rings once a year, rung by no one."],
    "outlets": {"harbour": ["The harbour below is closed to boats."]},
    "preset": [
        ("main", "system", "Write {{char}}'s next reply in a chat with {{user}}.", True),
        ("style", "system", "Prose: concrete and sensory; no purple prose.", False),
        ("reminder", "user", "{{user}} leads; {{char}} keeps her own will.", False),
        ("nsfw", "system", "Dark themes are allowed when the story calls for them.", True),
        ("jailbreak", "system", "[Stay in character.]", True),
    ],
    "user": "I ask about the bell again.",
    "user_word": "User",
    "state": "Time: Day 2 21:30\nLocation: lamp room\nItems: oil can x1\nNPCs: Mira: 10",
    "tools": "Available tools:\n- roll_dice: Roll dice. Params: expr(string), dc(number)",
    "tool_results": "Check: 1d20+2 = [15]+2 = 17 (DC 12) → success",
    "plan": {
        "narrative_direction": "Mira deflects, then slips: she names the year the bell sank.",
        "scene_setting": "The lamp room at night, rain on the glass.",
        "key_points": ["Mira deflects", "a slip about the year"],
        "tone": "tense",
        "pacing": "slow",
        "continuity_notes": ["the oil can"],
    },
    "summary": "[Turn {n}] Intent: step {n} | Story: event {n}",
    "turn_user": "I do thing {n}.",
    "turn_story": "Story of turn {n}.",
    "narrative": "Mira sets down the oil can. 'Eighteen ninety,' she says, too quickly.",
    "mvu_rules": ["When {{user}} is hurt, lower /hero/health."],
}

ZH = {
    "card": Card(
        name="沈雾",
        description="{{char}}是雾港的守灯人，三十岁上下，说话简短，对{{user}}心存戒备。",
        personality="冷静、寡言、心思细腻",
        scenario="暴雨夜，{{user}}的船在雾港触礁，只能在灯塔借宿。",
        mes_example="<START>\n{{user}}：这灯每晚都亮吗？\n{{char}}：二十年了，没断过。",
        first_mes="灯塔的光扫过海面。",
        system_prompt="请以细腻克制的笔触描写{{char}}。{{original}}",
        post_history_instructions="保持{{char}}的人设，不要替{{user}}说话。",
        extensions={"depth_prompt": {"prompt": "{{char}}不愿提起沉钟。", "depth": 4}},
    ),
    "persona": Persona("林舟", "一个落难的测绘师，怕水。"),
    "worldinfo1": ["雾港是一座孤岛，岛上只有一座灯塔。"],
    "worldinfo2": ["暴雨会持续三天。今天是{{weekday}}。", "{{outlet::harbour}}"],
    "worldinfo3": ["沉钟每年会在无人敲击时响一次。"],
    "outlets": {"harbour": ["港口已经封闭，船只无法出入。"]},
    "preset": [
        ("main", "system", "为{{char}}写下一条回复。", True),
        ("style", "system", "文风：具体、克制，多用感官细节。", False),
        ("reminder", "user", "{{user}}是主角，{{char}}也有自己的意志。", False),
        ("nsfw", "system", "故事需要时可以写黑暗的主题。", True),
        ("jailbreak", "system", "【保持角色】", True),
    ],
    "user": "我再次问起那口钟。",
    "user_word": "用户",
    "state": "时间：第2天 21:30\n地点：灯室\n物品：油壶x1\nNPC关系：沈雾: 10",
    "tools": "可用工具：\n- roll_dice: 掷骰。参数: expr(string), dc(number)",
    "tool_results": "检定结果：1d20+2 = [15]+2 = 17 (DC 12) → 成功",
    "plan": {
        "narrative_direction": "沈雾先是回避，随后失言，说出了沉钟沉没的年份。",
        "scene_setting": "夜里的灯室，雨水拍打着玻璃。",
        "key_points": ["沈雾回避", "失言说出年份"],
        "tone": "紧张",
        "pacing": "慢",
        "continuity_notes": ["油壶"],
    },
    "summary": "[第{n}轮] 用户意图：第{n}步 | 叙事要点：事件{n}",
    "turn_user": "我做第{n}件事。",
    "turn_story": "第{n}轮的故事。",
    "narrative": "沈雾放下油壶。“一八九〇年。”她说得太快了。",
    "mvu_rules": ["当{{user}}受伤时，减少 /主角/生命值"],
}

CASES = {"en": EN, "zh": ZH}


def make_preset(data: dict[str, object]) -> Preset:
    rows = data["preset"]
    assert isinstance(rows, list)
    prompts = [
        PresetPrompt(identifier=i, name=i, role=role, content=text, system_prompt=builtin)
        for i, role, text, builtin in rows
    ]
    prompts.insert(1, PresetPrompt("worldInfoBefore", marker=True, system_prompt=True))
    prompts.append(PresetPrompt("off", role="system", content="DISABLED TEXT", enabled=False))
    prompts.append(PresetPrompt("chatHistory", marker=True, system_prompt=True))
    return Preset(name="test preset", prompts=prompts)


def make_history(data: dict[str, object], turns: int) -> list[HistoryTurn]:
    """The greeting as turn 0, then ``turns - 1`` played turns."""
    card = data["card"]
    assert isinstance(card, Card)
    history = [HistoryTurn(0, "", card.first_mes)]
    for n in range(1, turns):
        user, story = str(data["turn_user"]), str(data["turn_story"])
        history.append(HistoryTurn(n, user.format(n=n), story.format(n=n)))
    return history


def make_inputs(lang: str = "en", mode: str = "none", turns: int = 10) -> PromptInputs:
    """A full turn: greeting + turns 1..turns-1 played, every block filled."""
    data = CASES[lang]
    history = make_history(data, turns)
    summaries = [SummaryEntry(t.number, str(data["summary"]).format(n=t.number)) for t in history]
    return PromptInputs(
        card=data["card"],  # type: ignore[arg-type]
        persona=data["persona"],  # type: ignore[arg-type]
        lang=lang,  # type: ignore[arg-type]
        turn=turns,
        user_input=str(data["user"]),
        history=history,
        summaries=summaries,
        state_summary=str(data["state"]),
        worldinfo1=list(data["worldinfo1"]),  # type: ignore[call-overload]
        worldinfo2=list(data["worldinfo2"]),  # type: ignore[call-overload]
        worldinfo3=list(data["worldinfo3"]),  # type: ignore[call-overload]
        outlets=dict(data["outlets"]),  # type: ignore[call-overload]
        preset=make_preset(data),
        preset_mode=mode,  # type: ignore[arg-type]
        plan=Plan.from_json(data["plan"]),  # type: ignore[arg-type]
        tool_list_text=str(data["tools"]),
        tool_results_text=str(data["tool_results"]),
        dice_in_results=True,  # the result line above is a roll: the writer gets the dice rule
        text_recall=history[2:3],
        mvu_rules=list(data["mvu_rules"]),  # type: ignore[call-overload]
        clock=CLOCK,
        rng=random.Random(5),
    )


def check_golden(prompt: Prompt, name: str, update: bool) -> None:
    path = GOLDEN / prompt.agent / f"{name}.txt"
    text = render_prompt_text(prompt)
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (pytest --update-golden)"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("mode", ["none", "split"])
@pytest.mark.parametrize("agent", ["planning", "writing", "merged_writing"])
def test_golden_story_prompts(agent: str, mode: str, lang: str, update_golden: bool) -> None:
    check_golden(build_prompt(agent, make_inputs(lang, mode)), f"{lang}-{mode}", update_golden)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_golden_no_preset_writer_with_an_authors_note_at_depth_2(
    lang: str, update_golden: bool
) -> None:
    """The Author's Note (depth 2, role system) and the card's note (depth 4) in the chat, the
    examples split on <START>: what SillyTavern sends, in the no-preset layout."""
    text = "The storm is getting worse." if lang == "en" else "暴风雨越来越猛。"
    note = AuthorsNote(text, depth=2)
    inputs = replace(make_inputs(lang, "none"), authors_note=note)
    check_golden(build_prompt("writing", inputs), f"{lang}-none-note-depth2", update_golden)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("agent", ["analysis", "mvu_extract"])
def test_golden_analysis_prompts(agent: str, lang: str, update_golden: bool) -> None:
    narrative = str(CASES[lang]["narrative"])
    check_golden(build_prompt(agent, make_inputs(lang), narrative), lang, update_golden)


def test_blocks_come_in_the_design_order() -> None:
    inputs = make_inputs("en", "split")
    assert build_planning(inputs).block_names() == [
        "preset_system", "worldinfo1", "planning_system", "tool_list", "planning_format",
        "character", "worldinfo2", "user_persona", "story_summary", "recent_turns",
        "worldinfo3", "state_summary", "user_input", "closing",
    ]  # fmt: skip
    inputs = make_inputs("en", "none")  # without a preset the writers follow the design
    assert build_writing(inputs).block_names() == [
        "card_system_prompt", "worldinfo1", "writing_system", "tool_rule",
        "dice_rule",
        "character", "worldinfo2", "user_persona", "recent_turns",
        "character_note", "recent_turns", "worldinfo3", "text_recall", "writing_guide",
        "tool_results", "user_input", "post_history_instructions",
    ]  # fmt: skip
    assert build_merged_writing(inputs).block_names() == [
        "card_system_prompt", "worldinfo1", "merged_writing_system",
        "character", "worldinfo2", "user_persona", "story_summary",
        "recent_turns", "character_note", "recent_turns", "worldinfo3", "text_recall",
        "state_summary", "user_input", "post_history_instructions", "closing",
    ]  # fmt: skip
    assert build_analysis(inputs, "x").block_names() == [
        "analysis_system", "story_summary", "state_summary", "turn_header", "user_input",
        "narrative_output", "closing",
    ]  # fmt: skip


@pytest.mark.parametrize("builder", [build_planning, build_writing, build_merged_writing])
def test_the_card_reaches_the_story_agents_in_the_stable_head(builder: object) -> None:
    prompt = builder(make_inputs("en"))  # type: ignore[operator]
    names = prompt.block_names()
    assert names.index("character") < names.index("worldinfo2")
    character = prompt.block("character")
    assert character is not None and character.stable
    text = character.text
    assert "Mira keeps the lighthouse on Gull Point" in text
    assert "secretive about the drowned bell" in text
    assert "stranded Tom at the lighthouse" in text
    has_examples = "Tom: Is the lamp always lit?" in text
    assert has_examples == (prompt.agent != "planning")
    assert prompt.stable_boundary is not None
    boundary_message, boundary_block = prompt.stable_boundary
    assert prompt.blocks[boundary_message][boundary_block].name == "recent_turns"


def test_card_system_prompt_and_instructions_honour_original() -> None:
    split = build_writing(make_inputs("en", "split"))
    contents = [m.content for m in split.messages]
    # The card's system prompt takes main's slot, first; {{original}} is the preset's main.
    assert contents[0] == (
        "Write Mira as a grounded character. Write Mira's next reply in a chat with Tom."
    )
    # Its post-history instructions take the jailbreak's slot, with the preset's text inside.
    assert "[Stay in character.] Never speak for Tom." in contents
    assert sum(c.count("[Stay in character.]") for c in contents) == 1
    none = build_writing(make_inputs("en", "none")).messages[0].content
    assert none.startswith("Write Mira as a grounded character.\n\n<worldinfo1>")


def test_depth_prompt_sits_in_the_chat_at_its_depth_and_role() -> None:
    messages = build_writing(make_inputs("en")).messages  # depth 4, role system
    assert [m.role for m in messages] == ["system", "user", "system", "user"]
    assert messages[1].content.endswith("[Turn 8] User: I do thing 8.\n</recent_turns>")
    assert messages[2].content == "Mira avoids talk of the bell."
    rest = messages[3].content  # four chat messages after it, the player's input the newest
    assert rest.startswith("<recent_turns>\n[Turn 8] AI: Story of turn 8.\n\n[Turn 9] User:")
    assert "<character_note>" not in rest


def test_preset_none_adds_no_preset_text_and_never_fails() -> None:
    inputs = make_inputs("en", "none")
    for agent in ("planning", "writing", "merged_writing"):
        text = "\n".join(m.content for m in build_prompt(agent, inputs).messages)
        assert "Prose: concrete" not in text and "<user_preset>" not in text
        assert "Dark themes" not in text
    bare = replace(inputs, preset=None)
    assert build_writing(bare).messages  # no preset at all is fine too


def test_preset_split_feeds_the_planner_system_head_and_shapes_the_writer() -> None:
    inputs = make_inputs("en", "split")
    head = "Prose: concrete and sensory; no purple prose.\n\nDark themes are allowed"
    assert build_planning(inputs).messages[0].content.startswith(head)
    assert "<user_preset>" not in build_planning(inputs).messages[1].content
    for builder in (build_planning, build_writing, build_merged_writing):
        every = "\n".join(m.content for m in builder(inputs).messages)
        assert "DISABLED TEXT" not in every
        assert "Write Mira's next reply in a chat with Tom." not in every.replace(
            "Write Mira as a grounded character. Write Mira's next reply in a chat with Tom.", ""
        )  # main appears only as the card's {{original}}
    for builder in (build_writing, build_merged_writing):
        messages = builder(inputs).messages
        pairs = [(m.role, m.content) for m in messages]
        style = pairs.index(("system", "Prose: concrete and sensory; no purple prose."))
        reminder = pairs.index(("user", "Tom leads; Mira keeps her own will."))
        nsfw = pairs.index(("system", "Dark themes are allowed when the story calls for them."))
        assert style < reminder < nsfw  # the preset's order, each prompt with its own role


def test_macros_apply_to_card_lore_and_preset_but_not_to_history_or_input() -> None:
    inputs = make_inputs("en", "split")
    weird = HistoryTurn(3, "I say {{char}}", "She says {{user}}")
    inputs = replace(inputs, history=[*inputs.history[:3], weird, *inputs.history[4:]])
    inputs = replace(inputs, user_input="I whisper {{char}}", writing_window=WindowSettings(9, 0))
    text = "\n".join(m.content for m in build_writing(inputs).messages)
    assert "Tonight is Sunday." in text and "The harbour below is closed to boats." in text
    assert "{{" not in text.replace("{{char}}", "").replace("{{user}}", "")
    assert "I say {{char}}" in text and "She says {{user}}" in text
    assert "I whisper {{char}}" in text


def test_same_inputs_give_the_same_prompt() -> None:
    lore = ["Omen: {{random::crows::gulls::seals}}, {{roll:1d100}}."]
    first = build_planning(replace(make_inputs("en"), worldinfo2=lore, rng=random.Random(3)))
    again = build_planning(replace(make_inputs("en"), worldinfo2=lore, rng=random.Random(3)))
    assert first.messages == again.messages


def test_applied_macros_are_not_applied_twice() -> None:
    inputs = apply_macros(replace(make_inputs("en"), worldinfo2=["{{random::a::b::c::d}}"]))
    texts = {build_planning(inputs).messages[1].content for _ in range(5)}
    assert len(texts) == 1


def test_empty_blocks_are_left_out() -> None:
    bare = PromptInputs(card=Card(name="Mira"), user_input="Hello.")
    for agent in ("planning", "writing", "merged_writing"):
        prompt = build_prompt(agent, bare)
        text = "\n".join(m.content for m in prompt.messages)
        for tag in ("worldinfo1", "worldinfo2", "worldinfo3", "story_summary", "recent_turns",
                    "text_recall", "writing_guide", "tool_results", "state_summary",
                    "user_preset", "character_note", "post_history_instructions"):  # fmt: skip
            assert f"<{tag}>\n" not in text, (agent, tag)
        assert "<character>\nName: Mira\n</character>" in text
        assert "<user_input>\nHello.\n</user_input>" in text
    analysis = build_analysis(bare, "Mira waves.")
    assert analysis.block_names()[1:] == [
        "turn_header",
        "user_input",
        "narrative_output",
        "closing",
    ]


def test_story_summary_covers_only_the_turns_before_the_window() -> None:
    inputs = make_inputs("en", turns=14)  # 14 finished turns; planning 4+4: window = 10..13
    planning = build_planning(inputs)
    summary = planning.block("story_summary")
    assert summary is not None
    assert summary.text.splitlines() == [
        f"[Turn {n}] Intent: step {n} | Story: event {n}" for n in range(10)
    ]
    turns = planning.block("recent_turns")
    assert turns is not None and turns.text.startswith("[Turn 10] User: I do thing 10.")
    analysis = build_analysis(inputs, "x").block("story_summary")
    assert analysis is not None and len(analysis.text.splitlines()) == 14  # analysis sees all


def _user_prefix(prompt: Prompt) -> str:
    """The first user message up to the end of its last history line (before
    ``</recent_turns>``; the writer's character note at depth 4 ends that message early)."""
    user = _first_chat(prompt)
    return user[: user.index("\n</recent_turns>")]


def _first_chat(prompt: Prompt) -> str:
    """The text of the messages up to the first one holding history lines."""
    texts = [m.content for m in prompt.messages]
    upto = next(i for i, t in enumerate(texts) if "</recent_turns>" in t)
    return "\n".join(texts[: upto + 1])


@pytest.mark.parametrize(("builder", "cuts"), [(build_planning, 5), (build_merged_writing, 6)])
def test_the_prefix_through_the_history_is_stable_between_cuts(builder: object, cuts: int) -> None:
    # one cut every m+1 = 5 turns; the writer's character note at depth 4 costs one more, on
    # the turn the chat first grows past its depth
    prompts = [builder(make_inputs("en", turns=k)) for k in range(2, 30)]  # type: ignore[operator]
    kept = cut = 0
    for before, after in zip(prompts, prompts[1:], strict=False):
        assert before.messages[0] == after.messages[0]  # the system message never changes
        if _first_chat(after).startswith(_user_prefix(before)):
            kept += 1
        else:
            cut += 1
    assert cut == cuts and kept == 27 - cuts


def test_analysis_puts_existing_summaries_first() -> None:
    user = build_analysis(make_inputs("zh"), str(ZH["narrative"])).messages[1].content
    assert user.startswith("<story_summary>\n[第0轮]")
    assert user.index("</story_summary>") < user.index("<state_summary>")
    assert user.index("<state_summary>") < user.index("【当前轮次：第10轮")
    assert user.endswith(
        "<narrative_output>\n" + str(ZH["narrative"]) + "\n</narrative_output>\n\n请输出分析结果。"
    )


def test_scene_setting_reaches_the_writing_guide() -> None:
    guide = build_writing(make_inputs("zh")).block("writing_guide")
    assert guide is not None
    assert guide.text.splitlines() == [
        "叙事方向：沈雾先是回避，随后失言，说出了沉钟沉没的年份。",
        "场景设置：夜里的灯室，雨水拍打着玻璃。",
        "要点：沈雾回避；失言说出年份",
        "基调：紧张，节奏：慢",
        "延续细节：油壶",
    ]


def test_tool_rule_stays_in_the_writers_head_while_tools_are_offered() -> None:
    rule = template("zh", "writing_tool_rule")
    offered = replace(make_inputs("zh"), tool_list_text="- roll_dice: 掷骰", dice_offered=True)
    rolled = build_writing(offered)
    assert rule in rolled.messages[0].content
    # a turn whose planner called no tool keeps the same system message (the cached head,
    # #17): the rules stay, only <tool_results> is gone
    quiet = build_writing(replace(offered, tool_results_text="", dice_in_results=False))
    assert quiet.messages[0].content == rolled.messages[0].content
    assert quiet.block("tool_results") is None
    # no tool offered and none called: no rule
    none = build_writing(replace(offered, tool_list_text="", dice_offered=False,
                                 tool_results_text="", dice_in_results=False))
    assert rule not in none.messages[0].content
    assert template("zh", "writing_dice_rule") not in none.messages[0].content


def test_mvu_extract_carries_the_update_rules() -> None:
    prompt = build_mvu_extract(make_inputs("en"), "Tom cuts his hand.")
    assert "When Tom is hurt, lower /hero/health." in prompt.messages[0].content
    # fixed text first, then the variable tree (kept while nothing changes), then this turn's
    # text (new every turn): nothing after the story is evaluated again each turn (#17)
    user = prompt.messages[1].content
    assert user.startswith("Run the tool mvu_extract on the content below.\n\n<state_summary>\n")
    assert user.endswith(
        "</state_summary>\n\n<narrative_text>\nTom cuts his hand.\n</narrative_text>"
    )


def test_unknown_preset_mode_is_a_clear_config_error() -> None:
    with pytest.raises(ConfigError, match="preset_mode must be none or split"):
        build_planning(replace(make_inputs("en"), preset_mode="merge"))  # type: ignore[arg-type]


def test_unknown_agent_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown agent"):
        build_prompt("poet", make_inputs("en"))


@pytest.mark.parametrize(
    ("card_lang", "flag", "expected"),
    [
        ("zh", "auto", "zh"),
        ("en", "auto", "en"),
        ("zh", "en", "en"),
        ("en", "zh", "zh"),
        (None, "auto", "en"),
        ("ja", None, "en"),
    ],  # fmt: skip
)
def test_language_follows_the_card_unless_given(
    card_lang: str | None, flag: str | None, expected: str
) -> None:
    assert pick_language(card_lang, flag) == expected


def test_a_bad_language_flag_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--lang"):
        pick_language("zh", "fr")


def test_templates_exist_in_both_languages_with_the_same_placeholders() -> None:
    folders = [
        Path(__file__).parents[1] / "src/narrative_cli/agents/templates" / lang for lang in LANGS
    ]
    names = [sorted(p.stem for p in folder.glob("*.txt")) for folder in folders]
    assert names[0] == names[1] and len(names[0]) >= 14
    for name in names[0]:
        holes = [
            {part.split("}")[0] for part in template(lang, name).split("${")[1:]} for lang in LANGS
        ]
        assert holes[0] == holes[1], name


# The sample cards shipped in sample_cards/, read by the real loaders and routed by the real
# routing table. Keyword entries are picked by a plain key match on the user's input here (the
# lore engine's activation has its own tests).
SAMPLE_CASES = {
    "lantern-keeper": ("lantern-keeper.png", "Tom", "I ask Edda why the bell tolls in the fog."),
    "fog-harbor-zh": ("fog-harbor-zh.json", "林舟", "我问阿澜，渡船明天还开吗？"),
    "qingshi-trpg-zh": ("qingshi-trpg-zh.json", "周明", "我仔细搜查沈宅的前厅。"),
}


def sample_inputs(case: str) -> PromptInputs:
    from narrative_cli.context.macros import env_for, expand
    from narrative_cli.load.cards import load_card
    from narrative_cli.load.language import card_language
    from narrative_cli.lore.routing import classify
    from narrative_cli.state.engine import GameState, state_summary
    from narrative_cli.tools.dice_rules import describes_checks

    file, user_name, user_input = SAMPLE_CASES[case]
    path = Path(__file__).resolve().parents[1] / "sample_cards" / file
    if not path.exists():
        pytest.skip(f"sample_cards/{file} is not available")
    card = load_card(path)
    lang = card_language(card)
    entries = sorted(card.character_book.entries if card.character_book else [], key=_order)
    routed = [(classify(e).name, e) for e in entries]

    def texts(route: str) -> list[str]:
        return [e.content for name, e in routed if name == route]

    keyword = [
        e.content
        for name, e in routed
        if name == "keyword" and any(k.lower() in user_input.lower() for k in e.keys)
    ]
    persona = Persona(user_name)
    greeting = expand(card.first_mes, env_for(card, persona, lang=lang))
    rules = [card.description, card.scenario, *(e.content for n, e in routed if n != "tool")]
    return PromptInputs(
        card=card,
        persona=persona,
        lang=lang,  # type: ignore[arg-type]
        turn=1,
        user_input=user_input,
        history=[HistoryTurn(0, "", greeting)],
        state_summary=state_summary(GameState(), lang),
        worldinfo1=texts("worldinfo1"),
        worldinfo2=texts("worldinfo2"),
        worldinfo3=texts("worldinfo3") + keyword,
        mvu_rules=texts("mvu_update"),
        dice_rules=describes_checks(rules),
        clock=CLOCK,
        rng=random.Random(1),
    )


def _order(entry: object) -> float:
    return getattr(entry, "order", None) or 0


@pytest.mark.parametrize("case", sorted(SAMPLE_CASES))
@pytest.mark.parametrize("agent", ["planning", "writing", "merged_writing", "analysis"])
def test_golden_sample_card_prompts(agent: str, case: str, update_golden: bool) -> None:
    inputs = sample_inputs(case)
    narrative = "The bell is quiet tonight." if inputs.lang == "en" else "雾里传来一声钟响。"
    check_golden(build_prompt(agent, inputs, narrative), f"sample-{case}", update_golden)


def test_sample_cards_reach_the_prompt_as_characters() -> None:
    edda = build_merged_writing(sample_inputs("lantern-keeper"))
    character = edda.block("character")
    assert character is not None and character.text.startswith("Name: Edda\nDescription:\n")
    note = edda.block("character_note")  # in the chat, at its depth
    assert note is not None and note.text == "Edda speaks in short, plain sentences."
    harbor = build_planning(sample_inputs("fog-harbor-zh"))
    assert harbor.messages[1].content.startswith("<character>\n名字：雾港\n描述：")
    wi3 = harbor.block("worldinfo3")
    assert wi3 is not None and "渡船由船夫老周驾驶" in wi3.text
