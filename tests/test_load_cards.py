"""Cards from JSON and YAML, the embedded book, export round trips, language, the samples."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.domain import Lorebook
from narrative_cli.errors import CardError, ConfigError
from narrative_cli.load import (
    book_from_card,
    card_language,
    card_to_json,
    card_to_png,
    load_card,
    load_lorebook,
    parse_card_bytes,
    parse_card_object,
    regex_problem,
    regex_scripts,
    select_lore,
)
from narrative_cli.load.regex import compile_find_regex
from narrative_cli.lore.routing import classify

from .conftest import SAMPLES


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def v2_card(**data: Any) -> dict[str, Any]:
    base = {"name": "Ann", "description": "A baker.", "personality": "", "scenario": "",
            "first_mes": "Hi!", "mes_example": "", "creator_notes": "", "system_prompt": "",
            "post_history_instructions": "", "alternate_greetings": [], "tags": [],
            "creator": "", "character_version": "", "extensions": {}}
    base.update(data)
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": base}


def book_entry(**fields: Any) -> dict[str, Any]:
    entry = {"id": 0, "keys": ["bread"], "content": "Bread facts.", "enabled": True,
             "insertion_order": 10, "extensions": {}}
    entry.update(fields)
    return entry


def test_v1_card_is_read_and_exported_as_v2_keeping_every_v1_field(tmp_path: Path) -> None:
    v1 = {"name": "Old", "description": "d", "personality": "p", "scenario": "s",
          "first_mes": "f", "mes_example": "m", "creatorcomment": "notes", "avatar": "none",
          "chat": "Old - 2023", "create_date": "2023-1-1", "talkativeness": "0.5"}
    card = load_card(write_json(tmp_path / "old.json", v1))
    assert (card.spec, card.name, card.creator_notes) == ("chara_card_v1", "Old", "notes")
    out = card_to_json(card)
    assert out["spec"] == "chara_card_v2"
    assert {k: out[k] for k in v1} == v1
    assert out["data"]["description"] == "d" and out["data"]["creator_notes"] == "notes"


def test_gradio_card_fields_are_mapped() -> None:
    card = parse_card_object({"char_name": "Gus", "char_persona": "A guard.",
                              "char_greeting": "Halt!", "world_scenario": "A gate."}, "gus.json")
    assert (card.name, card.description, card.first_mes, card.scenario) == (
        "Gus", "A guard.", "Halt!", "A gate.")


def test_data_wins_over_the_top_level_mirror_and_export_refreshes_the_mirror() -> None:
    obj = {**v2_card(name="Data name"), "name": "Mirror name", "description": "old",
           "creator": "kept as is"}
    card = parse_card_object(obj, "c.json")
    assert card.name == "Data name"
    card.description = "Edited."
    out = card_to_json(card)
    assert out["name"] == "Data name" and out["description"] == "Edited."
    assert out["creator"] == "kept as is"  # not a field SillyTavern mirrors


def test_v3_fields_and_unknown_fields_survive_a_round_trip() -> None:
    obj = {"spec": "chara_card_v3", "spec_version": "3.0", "top_secret": {"x": 1},
           "data": {"name": "Vee", "first_mes": "Hey", "group_only_greetings": ["Hi all"],
                    "nickname": "V", "creator_notes_multilingual": {"en": "hi", "zh": "你好"},
                    "source": ["https://example.invalid/vee"], "creation_date": 1700000000,
                    "assets": [{"type": "icon", "uri": "ccdefault:", "name": "main",
                                "ext": "png"}],
                    "extensions": {"risuai": {"utilityBot": False}, "depth_prompt":
                                   {"prompt": "Be brief.", "depth": 2, "role": "user"}},
                    "custom_field": [1, 2]}}
    card = parse_card_object(copy.deepcopy(obj), "vee.json")
    assert card.nickname == "V" and card.group_only_greetings == ["Hi all"]
    assert card.source_urls == ["https://example.invalid/vee"]
    assert card.extra == {"custom_field": [1, 2]} and card.top_level == {"top_secret": {"x": 1}}
    assert card.depth_prompt is not None and card.depth_prompt.role == "user"
    assert card_to_json(card) == obj
    again = parse_card_bytes(card_to_png(card), "vee.png")
    assert card_to_json(again) == obj


def test_lenient_shapes_tags_string_and_single_greeting() -> None:
    card = parse_card_object(v2_card(tags="cozy, bakery ,", alternate_greetings="Morning!"), "c")
    assert card.tags == ["cozy", "bakery"]
    assert card.greetings == ["Hi!", "Morning!"]


def test_yaml_card(tmp_path: Path) -> None:
    path = tmp_path / "ooba.yaml"
    path.write_text("name: Yara\ncontext: A sailor.\ngreeting: Ahoy!\n", encoding="utf-8")
    card = load_card(path)
    assert (card.name, card.description, card.first_mes, card.source) == (
        "Yara", "A sailor.", "Ahoy!", "yaml")


def test_wrong_field_types_are_named() -> None:
    with pytest.raises(CardError, match=r"c\.json: data: 'description' must be text, got object"):
        parse_card_object(v2_card(description={"x": 1}), "c.json")
    with pytest.raises(CardError, match="has no name"):
        parse_card_object(v2_card(name="  "), "c.json")
    with pytest.raises(CardError, match="it is a lorebook, pass it with --lorebook"):
        parse_card_object({"spec": "lorebook_v3", "data": {}}, "c.json")


def test_card_book_conversion_follows_sillytavern_import_rules() -> None:
    book = {"name": "Bakery", "entries": [
        book_entry(id=0, position="after_char", extensions={"position": 4, "depth": 0}),
        book_entry(id=1, position="before_char", enabled=None, extensions={}),
        book_entry(id=2, position="before_char", selective=None, secondary_keys=["rye"],
                   extensions={"position": None, "useProbability": False, "sticky": 2}),
        book_entry(id=1, comment="later duplicate", position="before_char"),
        book_entry(id=3, content="@@activate\n@@@fallback\nAlways here."),
    ]}
    card = parse_card_object(v2_card(character_book=book), "c.json")
    entries = {e.uid: e for e in book_from_card(card).entries}
    assert [e.uid for e in book_from_card(card).entries] == [0, 1, 2, 3]
    assert (entries[0].position, entries[0].depth) == (4, 0)  # extensions.position wins
    assert entries[1].comment == "later duplicate" and entries[1].disabled is False
    assert entries[2].position == 0 and entries[2].selective is False
    assert entries[2].use_probability is False and entries[2].sticky == 2
    assert entries[3].decorators == ["@@activate", "@@@fallback"]
    assert entries[3].content == "Always here." and entries[3].position == 1
    missing_enabled = parse_card_object(v2_card(character_book={"entries": [
        {"id": 5, "keys": ["x"], "content": "y"}]}), "c.json")
    assert book_from_card(missing_enabled).entries[0].disabled is True


def test_unchanged_book_is_exported_verbatim_and_an_edited_one_is_converted() -> None:
    book = {"name": "Bakery", "odd_book_key": 1, "entries": [
        book_entry(content="@@dont_activate\nHidden.", extensions={"position": 1, "x_tool": 7},
                   priority=5)]}
    card = parse_card_object(v2_card(character_book=copy.deepcopy(book)), "c.json")
    assert card_to_json(card)["data"]["character_book"] == book
    assert card.character_book is not None
    card.character_book.entries[0].keys = ["rye"]
    exported = card_to_json(card)["data"]["character_book"]["entries"][0]
    assert exported["keys"] == ["rye"]
    assert exported["content"] == "@@dont_activate\nHidden."
    assert exported["extensions"]["x_tool"] == 7 and exported["extensions"]["position"] == 1
    assert exported["priority"] == 5


def test_card_language() -> None:
    zh = parse_card_object(v2_card(description="<div class='status'>{{user}}</div>雾港是一座"
                                                "终年被浓雾笼罩的海港小城。"), "c")
    en = parse_card_object(v2_card(description="A lighthouse keeper on a foggy island."), "c")
    assert card_language(zh) == "zh" and card_language(en) == "en"


def test_regex_scripts_are_parsed_and_checked() -> None:
    scripts = [{"scriptName": "names", "findRegex": "/(?<who>\\w+): (\\k<who>)/gi",
                "replaceString": "$<who>", "placement": [1, 2], "promptOnly": True, "id": "a"},
               {"scriptName": "broken", "findRegex": "/([a-z/g", "placement": [2]},
               "not a script"]
    card = parse_card_object(v2_card(extensions={"regex_scripts": scripts}), "c")
    parsed = regex_scripts(card)
    assert [s.script_name for s in parsed] == ["names", "broken"]
    assert parsed[0].extra == {"id": "a"} and parsed[0].prompt_only
    assert regex_problem(parsed[0]) is None
    assert compile_find_regex(parsed[0].find_regex).sub(r"\g<who>!", "Ann: ANN") == "Ann!"
    assert (regex_problem(parsed[1]) or "").startswith("invalid regex")


def test_world_book_source_setting(tmp_path: Path) -> None:
    card = load_card(SAMPLES / "lantern-keeper.png")
    world = load_lorebook(SAMPLES / "sample-world.json")
    auto = select_lore(card, [world], "auto")
    assert auto.source == "card+world"
    assert [b.name for b in auto.books] == ["Greyholm Light", world.name]
    assert auto.skipped == []
    only_world = select_lore(card, [world], "world")
    assert only_world.books == [world] and "skips the card's book" in only_world.skipped[0]
    only_card = select_lore(card, [world], "card")
    assert [b.name for b in only_card.books] == ["Greyholm Light"]
    assert world.name in only_card.skipped[0]
    bare = parse_card_object(v2_card(), "bare.json")
    assert select_lore(bare, [world], "auto").source == "world"
    assert select_lore(bare, [], "card").source == "none"
    assert len(select_lore(card, [world], "card").entries) == 14
    with pytest.raises(ConfigError, match="worldbook source 'both' is unknown"):
        select_lore(card, [world], "both")


def test_lantern_keeper_sample_exercises_every_route() -> None:
    card = load_card(SAMPLES / "lantern-keeper.png")
    assert (card.name, card.spec, card.source) == ("Edda", "chara_card_v2", "png:chara")
    assert card_language(card) == "en" and len(card.greetings) == 2
    book = book_from_card(card)
    routes = {e.comment: classify(e).name for e in book.entries}
    assert set(routes.values()) == {"worldinfo1", "worldinfo2", "worldinfo3", "keyword", "tool",
                                    "initvar", "mvu_update", "ui", "disabled"}
    positions = {e.position for e in book.entries if e.constant and classify(e).name.startswith(
        "worldinfo")}
    assert positions == {0, 1, 4}
    logic = {e.comment: (e.selective_logic, e.secondary_keys) for e in book.entries
             if e.secondary_keys}
    assert sorted(v[0] for v in logic.values()) == [0, 2, 3]
    tools = {json.loads(e.content)["function"]["name"]: json.loads(e.content)
             for e in book.entries if routes[e.comment] == "tool"}
    assert set(tools) == {"roll_dice", "tide_clock", "keeper_log"}
    assert tools["roll_dice"]["trigger"] == "planning" and tools["roll_dice"]["type"] == "code"
    assert "return" in tools["tide_clock"]["code"]
    assert (tools["keeper_log"]["trigger"], tools["keeper_log"]["output_tag"],
            tools["keeper_log"]["tag_lookback"]) == ("post_pipeline", "keeper_log", 3)
    initvar = next(e for e in book.entries if routes[e.comment] == "initvar")
    assert json.loads(initvar.content)["keeper"]["lamp_oil"] == [
        12, "litres of lamp oil; the lamp burns one litre a night"]


def test_fog_harbor_sample_is_a_chinese_v3_card() -> None:
    card = load_card(SAMPLES / "fog-harbor-zh.json")
    assert (card.name, card.spec, card_language(card)) == ("雾港", "chara_card_v3", "zh")
    book = book_from_card(card)
    routes = [classify(e).name for e in book.entries]
    assert {"worldinfo1", "worldinfo2", "worldinfo3", "keyword", "initvar"} <= set(routes)
    assert any("灯塔" in e.keys for e in book.entries)
    initvar = book.entries[routes.index("initvar")]
    assert initvar.content.startswith("港口:\n  雾气: 浓")


def test_committed_samples_match_the_generator() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, data in module.outputs().items():
        assert (SAMPLES / name).read_bytes() == data, f"rerun sample_cards/make_samples.py: {name}"


def test_book_from_a_card_without_book_is_empty() -> None:
    card = parse_card_object(v2_card(), "bare.json")
    assert book_from_card(card) == Lorebook(name="Ann", source="card:Ann")
