"""Chat Completion presets (prompt order of character 100001) and personas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.errors import ConfigError, PresetError
from narrative_cli.load import load_persona, load_preset


def write(tmp_path: Path, name: str, value: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def prompt(identifier: str, **fields: Any) -> dict[str, Any]:
    return {"identifier": identifier, "name": identifier.title(), "role": "system",
            "content": f"{identifier} text", **fields}


PRESET = {
    "temperature": 0.8, "top_p": 0.95, "openai_max_tokens": 400, "wi_format": "[{0}]",
    "prompts": [prompt("main"), prompt("style", role="assistant", injection_position=1,
                                       injection_depth=2, injection_order=50,
                                       injection_trigger=["normal"]),
                prompt("chatHistory", marker=True, content=""), prompt("unused")],
    "prompt_order": [
        {"character_id": 100000, "order": [{"identifier": "unused", "enabled": True}]},
        {"character_id": 100001, "order": [{"identifier": "style", "enabled": False},
                                           {"identifier": "missing", "enabled": True},
                                           {"identifier": "main", "enabled": True},
                                           {"identifier": "chatHistory", "enabled": True}]},
    ],
}


def test_prompts_follow_the_100001_order_with_its_enabled_flags(tmp_path: Path) -> None:
    preset = load_preset(write(tmp_path, "Cozy.json", PRESET))
    assert preset.name == "Cozy"
    assert [(p.identifier, p.enabled) for p in preset.prompts] == [
        ("style", False), ("main", True), ("chatHistory", True)]
    style = preset.prompts[0]
    assert (style.role, style.injection_position, style.injection_depth,
            style.injection_order) == ("assistant", 1, 2, 50)
    assert style.extra == {"injection_trigger": ["normal"]}
    assert preset.prompts[2].marker
    assert [p.identifier for p in preset.enabled_prompts()] == ["main", "chatHistory"]
    assert preset.samplers == {"temperature": 0.8, "top_p": 0.95, "openai_max_tokens": 400}
    assert preset.extra["wi_format"] == "[{0}]"


def test_without_a_100001_list_the_default_order_is_used(tmp_path: Path) -> None:
    names = ["jailbreak", "main", "enhanceDefinitions", "nsfw", "chatHistory"]
    value = {"prompts": [prompt(n) for n in names],
             "prompt_order": [{"identifier": "main", "enabled": False}]}  # a malformed bare item
    preset = load_preset(write(tmp_path, "p.json", value))
    assert [(p.identifier, p.enabled) for p in preset.prompts] == [
        ("main", True), ("enhanceDefinitions", False), ("nsfw", True), ("chatHistory", True),
        ("jailbreak", True)]


def test_legacy_prompt_strings_become_prompts_except_in_default(tmp_path: Path) -> None:
    legacy = {"main_prompt": "Be {{char}}.", "jailbreak_prompt": "Stay in character.",
              "temperature": 1}
    preset = load_preset(write(tmp_path, "Old.json", legacy))
    assert [(p.identifier, p.content) for p in preset.prompts] == [
        ("main", "Be {{char}}."), ("jailbreak", "Stay in character.")]
    assert load_preset(write(tmp_path, "Default.json", legacy)).prompts == []


def test_bad_presets_are_named(tmp_path: Path) -> None:
    with pytest.raises(PresetError, match=r"p\.json: prompt main: 'role' must be system, user or"):
        load_preset(write(tmp_path, "p.json", {"prompts": [prompt("main", role="narrator")]}))
    with pytest.raises(PresetError, match="not a Chat Completion preset"):
        load_preset(write(tmp_path, "q.json", {"name": "a context template"}))
    with pytest.raises(PresetError, match="'prompts' must be a list of objects, got object"):
        load_preset(write(tmp_path, "r.json", {"prompts": {"main": "x"}}))


def test_persona_from_text_and_from_files(tmp_path: Path) -> None:
    assert load_persona("A tall traveller with a green scarf.").description.startswith("A tall")
    text = tmp_path / "wren.txt"
    text.write_text("Wren, an apprentice keeper.\n", encoding="utf-8")
    assert load_persona(str(text), name="Wren").name == "Wren"
    assert load_persona(str(text)).description == "Wren, an apprentice keeper."
    as_json = write(tmp_path, "wren.json", {"name": "Wren", "description": "Apprentice."})
    assert (load_persona(str(as_json)).name, load_persona(str(as_json)).description) == (
        "Wren", "Apprentice.")
    with pytest.raises(ConfigError, match=r"nobody\.txt: no such persona file"):
        load_persona(str(tmp_path / "nobody.txt"))


def test_persona_from_sillytavern_settings(tmp_path: Path) -> None:
    settings = {"username": "User", "user_avatar": "user-default.png", "power_user": {
        "personas": {"user-default.png": "User", "wren.png": "Wren"},
        "persona_descriptions": {"wren.png": {"description": "An apprentice.", "position": 0}},
        "default_persona": "wren.png"}}
    persona = load_persona(str(write(tmp_path, "settings.json", settings)))
    assert (persona.name, persona.description) == ("Wren", "An apprentice.")
