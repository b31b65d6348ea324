"""A given preset shapes the writer's request as SillyTavern's prompt manager would (#15).

The reference files in tests/reference/st_requests/ were derived from SillyTavern's
``populateChatCompletion`` (openai.js) and ``getPromptCollection`` (PromptManager.js) for the
fixture presets and the card and chat below. They name where each message's text comes from
(a preset prompt by identifier, a preset setting, or literal text of this test's card and
chat), so no fixture text is copied into the project.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.context.expand import apply_macros, macro_env
from narrative_cli.context.inputs import HistoryTurn, PromptInputs
from narrative_cli.context.macros import expand
from narrative_cli.context.preset_prompt import build_preset_writing
from narrative_cli.context.router import build_planning, build_writing
from narrative_cli.domain import Card
from narrative_cli.domain_chat import Persona, Preset
from narrative_cli.errors import PresetError
from narrative_cli.load import load_preset
from narrative_cli.pipeline.samplers import preset_samplers

from .conftest import fixture_file

REFERENCE = Path(__file__).parent / "reference" / "st_requests"
PRESETS = {
    "preset-default-1.18": "st/preset-default-1.18.json",
    "preset-default-1.12": "st/preset-default-1.12.json",
    "zh-gemi-base": "presets/zh-gemi-base.json",
    "en-lucid-loom-v0.1": "presets/en-lucid-loom-v0.1.json",
}
CARD = Card(
    name="Mira",
    description="{{char}} keeps the lighthouse on Gull Point.",
    personality="wry, patient",
    scenario="{{user}} is stranded by the storm.",
    first_mes="The lamp turns above you.",
    mes_example=("<START>\n{{user}}: Is the lamp lit?\n{{char}}: Every night.\n*She smiles.*\n"
                 "<start>\n{{char}}: The bell rang."),
    creator_notes="CREATOR NOTES: never sent",
    extensions={"depth_prompt": {"prompt": "{{char}} never speaks of the bell.", "depth": 2,
                                 "role": "system"}},
)
OVERRIDE = replace(CARD, system_prompt="Card rules. {{original}}",
                   post_history_instructions="Never speak for {{user}}.")


def inputs_for(preset: Preset, card: Card = CARD) -> PromptInputs:
    return PromptInputs(
        card=card, persona=Persona("Tom", "A shipwrecked cartographer."), lang="en", turn=2,
        user_input="Tell me about the bell.",
        history=[HistoryTurn(0, "", card.first_mes),
                 HistoryTurn(1, "Hello, keeper.", "Mira nods once.")],
        worldinfo2=["Gull Point is a bare rock."],
        worldinfo3=["The drowned bell rings once a year."],
        preset=preset, preset_mode="split",
    )


def expected_messages(reference: dict[str, Any], preset: Preset,
                      inputs: PromptInputs) -> list[dict[str, str]]:
    """The reference's messages with their text resolved against the preset file."""
    env = macro_env(inputs)
    by_id = {p.identifier: p for p in preset.prompts}

    def text(item: dict[str, Any] | str) -> str:
        if isinstance(item, str):
            return item
        if "prompt" in item:
            return expand(by_id[item["prompt"]].content, env).strip()
        if "setting" in item or "format" in item:
            key = item.get("setting") or item["format"]
            return expand(str(preset.extra[key]), env).strip()
        if "parts" in item:
            return "".join(text(part) for part in item["parts"]).strip()
        return str(item["content"])

    out = []
    for item in reference["messages"]:
        message = {"role": item["role"], "content": text(item)}
        if item.get("name"):
            message["name"] = item["name"]
        # SillyTavern's squash merges runs of unnamed system messages with a newline, except
        # the new-chat and example-chat notes.
        squash = item["role"] == "system" and not item.get("name") and "setting" not in item
        out.append((message, squash and reference["squash_system_messages"]))
    merged: list[tuple[dict[str, str], bool]] = []
    for message, squash in out:
        if not message["content"]:
            continue  # SillyTavern drops empty messages
        if squash and merged and merged[-1][1]:
            merged[-1][0]["content"] += "\n" + message["content"]
            continue
        merged.append((message, squash))
    return [m for m, _ in merged]


@pytest.mark.parametrize("variant", ["plain", "override"])
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_writer_request_matches_sillytavern(name: str, variant: str) -> None:
    preset = load_preset(fixture_file(PRESETS[name]))
    reference = json.loads((REFERENCE / f"{name}-{variant}.json").read_text(encoding="utf-8"))
    card = OVERRIDE if variant == "override" else CARD
    inputs = apply_macros(inputs_for(preset, card))
    prompt = build_preset_writing(inputs, "writing", [], [])  # SillyTavern's part alone
    sent = [m.to_dict() for m in prompt.messages]
    expected = expected_messages(reference, preset, inputs)
    assert [(m["role"], m.get("name")) for m in sent] == [
        (m["role"], m.get("name")) for m in expected]
    assert sent == expected
    assert all("CREATOR NOTES" not in m["content"] for m in sent)


def test_the_writer_adds_its_rules_after_main_and_nothing_else() -> None:
    preset = load_preset(fixture_file(PRESETS["preset-default-1.18"]))
    inputs = inputs_for(preset)
    bare = build_preset_writing(apply_macros(inputs), "writing", [], []).messages
    full = build_writing(inputs)
    assert full.messages[0] == bare[0]  # main
    assert full.block_names()[1] == "writing_system"
    assert full.messages[2:] == bare[1:]


def test_the_planner_sees_the_presets_system_prompts_and_no_markers() -> None:
    """The design's split rule: the preset's own system prompts head the planner's system
    message; main (the writer's role text), markers and the chat stay out."""
    preset = load_preset(fixture_file(PRESETS["zh-gemi-base"]))
    inputs = inputs_for(preset)
    head = build_planning(inputs).messages[0].content
    assert head.startswith(preset.prompts[1].content.strip()[:40])
    assert preset.prompts[0].content.strip()[:40] not in head
    assert "[Start a new Chat]" not in head and "Tell me about the bell." not in head


@pytest.mark.parametrize(("name", "expected"), [
    ("preset-default-1.18", {"temperature": 1.0, "top_p": 1.0, "max_tokens": 300,
                             "presence_penalty": 0.0, "frequency_penalty": 0.0}),
    ("zh-gemi-base", {"temperature": 1.0, "top_p": 1.0, "max_tokens": 50000,
                      "presence_penalty": 0.0, "frequency_penalty": 0.0,
                      "extra": {"top_a": 1, "repetition_penalty": 1.1,
                                "reasoning_effort": "medium"}}),
    ("en-lucid-loom-v0.1", {"temperature": 1.0, "top_p": 0.95, "max_tokens": 32768,
                            "presence_penalty": 0.0, "frequency_penalty": 0.0,
                            "extra": {"top_a": 1, "min_p": 0.025}}),
])
def test_sampler_values_sillytavern_sends(name: str, expected: dict[str, Any]) -> None:
    assert preset_samplers(load_preset(fixture_file(PRESETS[name]))) == expected


def test_the_malformed_prompt_order_uses_its_100001_list() -> None:
    preset = load_preset(fixture_file(PRESETS["zh-gemi-base"]))
    ids = [p.identifier for p in preset.prompts]
    assert len(ids) == 20 and ids[0] == "main" and ids[-1] == "jailbreak"


def write(tmp_path: Path, value: object, name: str = "p.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_the_100000_list_is_used_without_a_100001_list(tmp_path: Path) -> None:
    value = {"prompts": [{"identifier": "main", "content": "M"},
                         {"identifier": "style", "content": "S"}],
             "prompt_order": [{"character_id": 100000, "order": [
                 {"identifier": "style", "enabled": True},
                 {"identifier": "main", "enabled": False}]}]}
    preset = load_preset(write(tmp_path, value))
    assert [(p.identifier, p.enabled) for p in preset.prompts] == [("style", True),
                                                                 ("main", False)]


@pytest.mark.parametrize(("value", "kind"), [
    ({"name": "Alpaca", "input_sequence": "### Instruction:", "output_sequence": "### Response:"},
     "an instruct template"),
    ({"name": "Default", "story_string": "{{description}}"}, "a context template"),
    ({"temp": 0.7, "rep_pen": 1.1, "top_p": 0.9, "top_k": 40}, "a text-completion preset"),
    ({"name": "Neutral", "content": "You are {{char}}."}, "a system prompt template"),
])
def test_a_file_of_another_kind_is_refused_naming_it(tmp_path: Path, value: dict[str, Any],
                                                      kind: str) -> None:
    with pytest.raises(PresetError, match=f"p.json: this is {kind}, not a Chat Completion"):
        load_preset(write(tmp_path, value))


def test_absolute_prompts_land_at_their_depth_order_and_role(tmp_path: Path) -> None:
    value = {
        "prompts": [
            {"identifier": "main", "content": "Main."},
            {"identifier": "chatHistory", "marker": True, "system_prompt": True},
            {"identifier": "deep", "content": "DEEP", "injection_position": 1,
             "injection_depth": 99, "role": "system"},
            {"identifier": "late", "content": "LATE", "injection_position": 1,
             "injection_depth": 0, "injection_order": 200, "role": "user"},
            {"identifier": "early", "content": "EARLY", "injection_position": 1,
             "injection_depth": 0, "injection_order": 50, "role": "system"},
            {"identifier": "one_sys", "content": "ONE-SYS", "injection_position": 1,
             "injection_depth": 1, "role": "system"},
            {"identifier": "one_ai", "content": "ONE-AI", "injection_position": 1,
             "injection_depth": 1, "role": "assistant"},
            {"identifier": "off", "content": "OFF", "injection_position": 1,
             "injection_depth": 0},
            {"identifier": "swipe_only", "content": "SWIPE", "injection_trigger": ["swipe"]},
        ],
        "prompt_order": [{"character_id": 100001, "order": [
            {"identifier": i, "enabled": i != "off"} for i in
            ("main", "chatHistory", "deep", "late", "early", "one_sys", "one_ai", "off",
             "swipe_only")]}],
        "new_chat_prompt": "[Start]",
    }
    preset = load_preset(write(tmp_path, value))
    card = replace(CARD, extensions={"depth_prompt": {"prompt": "NOTE", "depth": 1,
                                                      "role": "system"}})
    prompt = build_preset_writing(apply_macros(inputs_for(preset, card)), "writing", [], [])
    got = [(m.role, m.content) for m in prompt.messages]
    assert got == [
        ("system", "Main."), ("system", "[Start]"),
        ("system", "DEEP"),  # beyond the history: at its top
        ("assistant", "The lamp turns above you."), ("user", "Hello, keeper."),
        ("assistant", "Mira nods once."),
        ("assistant", "ONE-AI"), ("system", "ONE-SYS\nNOTE"),  # depth 1: before the last
        ("user", "Tell me about the bell."),
        ("system", "EARLY"), ("user", "LATE"),  # depth 0: after it, higher order later
        # content markers the order leaves out come after it, as SillyTavern appends them
        ("system", "Gull Point is a bare rock."), ("system", "The drowned bell rings once a year."),
        ("system", "Mira keeps the lighthouse on Gull Point."), ("system", "wry, patient"),
        ("system", "Tom is stranded by the storm."), ("system", "A shipwrecked cartographer."),
    ]


@pytest.mark.parametrize(("behaviour", "user", "name"), [
    (-1, "Tell me about the bell.", None), (0, "Tell me about the bell.", None),
    (2, "Tom: Tell me about the bell.", None), (1, "Tell me about the bell.", "Tom"),
])
def test_names_behaviour(tmp_path: Path, behaviour: int, user: str, name: str | None) -> None:
    value = {"names_behavior": behaviour, "prompts": [
        {"identifier": "chatHistory", "marker": True, "system_prompt": True}],
        "prompt_order": [{"character_id": 100001, "order": [
            {"identifier": "chatHistory", "enabled": True}]}]}
    preset = load_preset(write(tmp_path, value))
    prompt = build_preset_writing(apply_macros(inputs_for(preset)), "writing", [], [])
    last_user = [m for m in prompt.messages if m.role == "user"][-1].to_dict()
    assert (last_user["content"], last_user.get("name")) == (user, name)
    if behaviour == 2:
        assert ("assistant", "Mira: Mira nods once.") in [
            (m.role, m.content) for m in prompt.messages]


def test_forbid_overrides_keeps_the_presets_main_and_jailbreak(tmp_path: Path) -> None:
    value = {"prompts": [
        {"identifier": "main", "content": "PRESET MAIN", "forbid_overrides": True},
        {"identifier": "chatHistory", "marker": True, "system_prompt": True},
        {"identifier": "jailbreak", "content": "PRESET JB", "forbid_overrides": True}],
        "prompt_order": [{"character_id": 100001, "order": [
            {"identifier": i, "enabled": True} for i in ("main", "chatHistory", "jailbreak")]}]}
    preset = load_preset(write(tmp_path, value))
    prompt = build_preset_writing(apply_macros(inputs_for(preset, OVERRIDE)), "writing", [], [])
    texts = [m.content for m in prompt.messages]
    assert texts[0] == "PRESET MAIN" and "PRESET JB" in texts
    assert not any("Card rules." in t or "Never speak for Tom." in t for t in texts)
    value["prompts"][0]["forbid_overrides"] = False  # type: ignore[index]
    preset = load_preset(write(tmp_path, value))
    prompt = build_preset_writing(apply_macros(inputs_for(preset, OVERRIDE)), "writing", [], [])
    assert prompt.messages[0].content == "Card rules. PRESET MAIN"  # {{original}}


def test_what_sillytavern_changed_after_1_12_is_followed(tmp_path: Path) -> None:
    """SillyTavern 1.13+ (checked against 1.18.0's openai.js and PromptManager.js): a main
    prompt disabled for the character takes no card override; an empty personality or
    scenario format sends the field itself; an example block without turns still sends its
    [Example Chat] line."""
    value = {"prompts": [
        {"identifier": "main", "content": "PRESET MAIN"},
        {"identifier": "charPersonality", "marker": True, "system_prompt": True},
        {"identifier": "scenario", "marker": True, "system_prompt": True},
        {"identifier": "dialogueExamples", "marker": True, "system_prompt": True},
        {"identifier": "chatHistory", "marker": True, "system_prompt": True}],
        "personality_format": "", "scenario_format": "",
        "prompt_order": [{"character_id": 100001, "order": [
            {"identifier": "main", "enabled": False},
            *({"identifier": i, "enabled": True} for i in (
                "charPersonality", "scenario", "dialogueExamples", "chatHistory"))]}]}
    preset = load_preset(write(tmp_path, value))
    card = replace(OVERRIDE, mes_example="<START>\nJust narration, no speaker.")
    prompt = build_preset_writing(apply_macros(inputs_for(preset, card)), "writing", [], [])
    texts = [m.content for m in prompt.messages]
    assert not any("Card rules." in t for t in texts)  # main is disabled: no override
    assert "wry, patient" in texts and "Tom is stranded by the storm." in texts
    assert "[Example Chat]" in texts


def test_wrap_in_quotes_is_not_applied_and_is_named(tmp_path: Path) -> None:
    from narrative_cli.pipeline.story import open_story

    value = {"prompts": [{"identifier": "chatHistory", "marker": True, "system_prompt": True}],
             "wrap_in_quotes": True,
             "prompt_order": [{"character_id": 100001, "order": [
                 {"identifier": "chatHistory", "enabled": True}]}]}  # fmt: skip
    path = write(tmp_path, value)
    prompt = build_preset_writing(apply_macros(inputs_for(load_preset(path))), "writing", [], [])
    texts = [m.content for m in prompt.messages]
    assert "Tell me about the bell." in texts and '"Tell me about the bell."' not in texts
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0",
                                "data": {"name": "Mira", "first_mes": "Hi."}}), encoding="utf-8")
    story = open_story(card, preset=path)
    assert any("wrap_in_quotes is not applied" in p for p in story.problems)


def test_creator_notes_never_reach_any_agent() -> None:
    from narrative_cli.context.router import build_prompt

    for preset in (None, load_preset(fixture_file(PRESETS["preset-default-1.18"]))):
        inputs = replace(inputs_for(Preset()), preset=preset,
                         preset_mode="split" if preset else "none")
        for agent in ("planning", "writing", "merged_writing", "analysis"):
            text = json.dumps([m.to_dict() for m in build_prompt(agent, inputs, "x").messages])
            assert "CREATOR NOTES" not in text
