"""Every file of ../shared/fixtures through the loaders: names, counts, positions, chunks, routes.

Skipped when ../shared is absent. Facts come from the fixture README and the files themselves.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from narrative_cli.cli.app import app
from narrative_cli.domain import Card, Lorebook
from narrative_cli.errors import CardError
from narrative_cli.load import (
    book_from_card,
    card_language,
    card_to_json,
    card_to_png,
    chat_to_jsonl,
    load_card,
    load_chat,
    load_lorebook,
    load_persona,
    load_preset,
    load_regex_scripts,
    parse_card_bytes,
    parse_card_object,
    parse_chat,
    parse_lorebook,
    regex_problem,
    regex_scripts,
    world_to_dict,
)
from narrative_cli.load.png import text_chunks
from narrative_cli.lore.routing import classify

from .conftest import fixture_file

pytestmark = pytest.mark.fixtures


def routes(book: Lorebook) -> Counter[tuple[int | None, str]]:
    return Counter((e.position, classify(e).name) for e in book.entries)


def chunk_json(path: Path, keyword: str) -> dict[str, Any]:
    chunk = next(c for c in text_chunks(path.read_bytes()) if c.keyword == keyword)
    value: dict[str, Any] = json.loads(base64.b64decode(chunk.text))
    return value


def assert_round_trips(card: Card, original: dict[str, Any]) -> None:
    """Export equals the file's JSON; the PNG export reloads to the same JSON."""
    assert card_to_json(card) == original
    again = parse_card_bytes(card_to_png(card), "again.png")
    assert again.source == "png:ccv3"
    strip = {"spec", "spec_version"}
    exported = card_to_json(again)
    assert {k: v for k, v in exported.items() if k not in strip} == {
        k: v for k, v in original.items() if k not in strip}


# ------------------------------------------------------------------ st/


def test_seraphina_118_ccv3_wins_and_round_trips() -> None:
    path = fixture_file("st/seraphina-1.18.png")
    assert [c.keyword for c in text_chunks(path.read_bytes())] == ["chara", "ccv3"]
    card = load_card(path)
    assert (card.name, card.spec, card.source) == ("Seraphina", "chara_card_v3", "png:ccv3")
    assert chunk_json(path, "chara")["spec"] == "chara_card_v2"
    assert card.extensions["talkativeness"] == "0.5" and card.extensions["world"] == "Eldoria"
    assert card.extensions["depth_prompt"] == {"prompt": "", "depth": 4, "role": "system"}
    assert card.depth_prompt is None  # an empty Character's Note is no note
    book = book_from_card(card)
    assert (book.name, len(book.entries)) == ("Eldoria", 4)
    assert routes(book) == Counter({(0, "keyword"): 4})
    assert all(e.selective and e.extra["use_regex"] is True for e in book.entries)
    assert book.entries[0].keys == ["eldoria", "wood", "forest", "magical forest"]
    assert card.top_level["talkativeness"] == "0.5" and card.top_level["avatar"] == "none"
    assert_round_trips(card, chunk_json(path, "ccv3"))


def test_seraphina_112_single_chara_chunk() -> None:
    path = fixture_file("st/seraphina-1.12.png")
    card = load_card(path)
    assert (card.spec, card.source) == ("chara_card_v2", "png:chara")
    book = book_from_card(card)
    assert [e.selective for e in book.entries] == [False] * 4
    assert set(card.raw_book["entries"][0]["extensions"]) == {  # type: ignore[index]
        "position", "probability", "useProbability"}
    assert_round_trips(card, chunk_json(path, "chara"))


def test_eldoria_worlds_full_and_legacy_field_sets() -> None:
    new = load_lorebook(fixture_file("st/eldoria-1.18.json"))
    old = load_lorebook(fixture_file("st/eldoria-1.12.json"))
    assert len(new.entries) == len(old.entries) == 4
    assert [e.keys for e in new.entries] == [e.keys for e in old.entries]
    first = new.entries[0]
    assert (first.role, first.delay_until_recursion, first.sticky, first.display_index) == (
        0, 0, 0, 0)
    assert first.use_probability is True and old.entries[0].use_probability is None
    assert old.entries[0].scan_depth is None and old.entries[0].selective is False
    for book in (new, old):
        assert parse_lorebook(world_to_dict(book), "again", book.name).entries == book.entries
        assert routes(book) == Counter({(0, "keyword"): 4})


def test_default_presets() -> None:
    new = load_preset(fixture_file("st/preset-default-1.18.json"))
    old = load_preset(fixture_file("st/preset-default-1.12.json"))
    for preset in (new, old):
        assert len(preset.prompts) == 12 and sum(p.marker for p in preset.prompts) == 8
        assert [p.identifier for p in preset.prompts][:3] == [
            "main", "worldInfoBefore", "personaDescription"]
        assert [p.identifier for p in preset.prompts if not p.enabled] == ["enhanceDefinitions"]
        assert preset.samplers["temperature"] == 1
    assert "jailbreak_system" in old.extra and "jailbreak_system" not in new.extra
    assert new.prompts[0].content.startswith("Write {{char}}'s next reply")


def test_settings_as_persona_source() -> None:
    persona = load_persona(str(fixture_file("st/settings-1.18.json")))
    assert (persona.name, persona.description) == ("User", "")


def test_no_card_png_is_an_ordinary_image() -> None:
    path = fixture_file("st/no-card.png")
    assert text_chunks(path.read_bytes()) == []
    with pytest.raises(CardError, match="holds no character card"):
        load_card(path)
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2 and "no-card.png" in result.stderr


# ------------------------------------------------------------------ zh/


def test_nun_ninja_png_and_json_are_the_same_card() -> None:
    png_path = fixture_file("zh/nun-ninja-anime.png")
    json_path = fixture_file("zh/nun-ninja-v2.json")
    assert [c.keyword for c in text_chunks(png_path.read_bytes())] == ["prompt", "chara", "ccv3"]
    from_png, from_json = load_card(png_path), load_card(json_path)
    assert from_png.source == "png:ccv3" and from_json.source == "json"
    assert from_png.name == from_json.name == "修女与女忍的双面日常"
    assert card_language(from_png) == "zh"
    assert book_from_card(from_png).entries == book_from_card(from_json).entries
    book = book_from_card(from_png)
    assert routes(book) == Counter({(1, "worldinfo3"): 4, (1, "mvu_update"): 1,
                                    (0, "keyword"): 4, (0, "initvar"): 1})
    keyed = [e for e in book.entries if e.keys]
    assert "露米埃尔" in keyed[0].keys and all(e.selective for e in keyed)
    initvar = next(e for e in book.entries if classify(e).name == "initvar")
    assert initvar.comment == "[initvar]初始变量" and initvar.disabled and not initvar.constant
    assert [s.script_name for s in regex_scripts(from_png)] == ["MVU·去除变量更新", "状态栏渲染"]
    assert "tavern_helper" in from_png.extensions
    assert_round_trips(from_json, json.loads(json_path.read_text(encoding="utf-8")))


def test_nun_ninja_world() -> None:
    book = load_lorebook(fixture_file("zh/nun-ninja-world.json"))
    assert len(book.entries) == 10
    assert all(e.extra.get("automation_id") == "" for e in book.entries)  # non-ST key, kept
    initvar = book.entries[0]
    assert (initvar.comment, initvar.disabled, classify(initvar).name) == (
        "[initvar]初始变量", True, "initvar")
    assert isinstance(json.loads(initvar.content), dict)
    assert world_to_dict(book)["entries"]["0"]["automation_id"] == ""


def test_nun_ninja_regex_files() -> None:
    (statusbar,) = load_regex_scripts(fixture_file("zh/nun-ninja-regex-statusbar.json"))
    assert statusbar.find_regex == "/<StatusPlaceHolderImpl\\/>/g"
    assert statusbar.placement == [2] and statusbar.markdown_only and statusbar.run_on_edit
    assert len(statusbar.replace_string) == 6135 and regex_problem(statusbar) is None
    (strip,) = load_regex_scripts(fixture_file("zh/nun-ninja-regex-strip-mvu.json"))
    assert strip.markdown_only and strip.prompt_only and strip.extra["id"] == "lilian-regex-0"
    assert strip.find_regex.endswith("/gm") and regex_problem(strip) is None


def test_ai_v3_positions_extension_wins() -> None:
    path = fixture_file("zh/ai-v3.json")
    card = load_card(path)
    assert (card.name, card.spec, card.spec_version) == ("爱", "chara_card_v3", "3.0")
    book = book_from_card(card)
    assert len(book.entries) == 27
    assert Counter(e.position for e in book.entries) == Counter({0: 8, 1: 14, 4: 5})
    raw = {e["id"]: e for e in card.raw_book["entries"]}  # type: ignore[index]
    at_depth = [e for e in book.entries if e.position == 4]
    assert all(raw[e.uid]["position"] == "after_char" for e in at_depth)
    assert all(e.depth == 0 for e in book.entries)
    kinds = Counter(classify(e).name for e in book.entries)
    assert (kinds["initvar"], kinds["mvu_update"], kinds["worldinfo1"]) == (1, 2, 2)
    initvar = next(e for e in book.entries if classify(e).name == "initvar")
    assert initvar.comment == "[InitVar]请勿打开" and initvar.disabled
    assert len(regex_scripts(card)) == 5
    assert_round_trips(card, json.loads(path.read_text(encoding="utf-8")))


# ------------------------------------------------------------------ mvu/


def test_magvar_card_both_chunks_carry_v3() -> None:
    path = fixture_file("mvu/magvar-riri-mvu-update.png")
    assert chunk_json(path, "chara") == chunk_json(path, "ccv3")
    card = load_card(path)
    assert (card.name, card.spec, card.source) == ("青空 理", "chara_card_v3", "png:ccv3")
    assert len(card.alternate_greetings) == 3 and "<StatusPlaceHolderImpl/>" in card.first_mes
    book = book_from_card(card)
    assert len(book.entries) == 13
    assert Counter(e.position for e in book.entries) == Counter({0: 3, 1: 2, 4: 8})
    initvars = [e.comment for e in book.entries if classify(e).name == "initvar"]
    assert initvars == ["[InitVar]初始变量1", "[initvar]初始变量2"]
    assert sum(classify(e).name == "mvu_update" for e in book.entries) == 3
    assert {e.depth for e in book.entries} == {0, 1, 4}
    (role_user,) = [e for e in book.entries if e.role == 1]
    assert (role_user.position, classify(role_user).name) == (4, "worldinfo1")
    assert len(regex_scripts(card)) == 6 and "TavernHelper_scripts" in card.extensions
    assert_round_trips(card, chunk_json(path, "ccv3"))


def test_magvar_initvar_yaml_reads_as_an_initvar_entry(tmp_path: Path) -> None:
    content = fixture_file("mvu/magvar-riri-initvar1.yaml").read_text(encoding="utf-8")
    world = tmp_path / "mvu.json"
    world.write_text(json.dumps({"entries": {"0": {"uid": 0, "key": [], "comment": "[initvar]",
                                                   "content": content, "disable": True}}}),
                     encoding="utf-8")
    card = tmp_path / "c.json"
    card.write_text(json.dumps({"name": "C"}), encoding="utf-8")
    result = CliRunner().invoke(app, ["inspect", str(card), "--lorebook", str(world), "--json"])
    (initvar,) = json.loads(result.stdout)["mvu"]["initvar"]
    assert initvar["format"] == "json" and initvar["variables"][0] == "<user>"
    assert "地点" in initvar["variables"]


# ------------------------------------------------------------------ chats/


def test_plague_apartment_chat() -> None:
    path = fixture_file("chats/zh-plague-apartment.jsonl")
    chat = load_chat(path)
    assert (chat.user_name, chat.character_name) == ("琉阡", "疫病公寓")
    assert chat.create_date == "2025-04-22@18h00m52s" and chat.skipped_lines == 0
    assert {"timedWorldInfo", "variables", "world_info", "quickReply"} <= set(chat.chat_metadata)
    greeting, user, last = chat.messages
    assert len(greeting.swipes) == 3 and greeting.swipe_id == 0
    assert greeting.mes != greeting.swipes[0]  # kept as the file has it
    assert greeting.raw["swipe_info"] == []
    assert user.is_user and "force_avatar" in user.raw and user.extra["isSmallSys"] is not None
    assert last.is_system is False and {"gen_started", "gen_finished", "title"} <= set(last.raw)
    assert last.extra["time_to_first_token"] is not None
    text = path.read_text(encoding="utf-8")
    again = parse_chat(chat_to_jsonl(chat), "again")
    assert again.messages == chat.messages and again.header == chat.header
    original = [json.loads(line) for line in text.split("\n")]
    written = [json.loads(line) for line in chat_to_jsonl(chat).split("\n")]
    assert written[:3] == original[:3]  # header and fully-specified lines are identical
    assert written[3] == {**original[3], "is_system": False}


def test_plague_apartment_chat_lorebook() -> None:
    book = load_lorebook(fixture_file("chats/zh-plague-apartment-chatlore.json"))
    (entry,) = book.entries
    assert (entry.constant, entry.position, classify(entry).name) == (True, 1, "worldinfo3")
    assert entry.delay_until_recursion == 0 and entry.comment == "聊天记录缓存"


def test_legacy_megumin_chat() -> None:
    chat = load_chat(fixture_file("chats/legacy-megumin-2023.jsonl"))
    assert (chat.user_name, chat.character_name, chat.create_date) == (
        "You", "Megumin", 1674559900991)
    (message,) = chat.messages
    assert message.send_date == 1674563153854 and message.raw == {"is_name": True}
    assert message.swipes == [] and message.is_system is False
    assert chat.header == {"user_name": "You", "character_name": "Megumin",
                           "create_date": 1674559900991}


# ------------------------------------------------------------------ en/


def test_sakana_v2_book() -> None:
    path = fixture_file("en/sakana-v2-book.png")
    card = load_card(path)
    assert (card.name, card.spec, card.source) == ("Sakana", "chara_card_v2", "png:chara")
    book = book_from_card(card)
    assert (book.name, len(book.entries)) == ("Sakana-WI", 14)
    assert routes(book) == Counter({(1, "keyword"): 14})
    assert all(e.selective for e in book.entries)
    assert sum(bool(e.secondary_keys) for e in book.entries) == 4
    assert any(" " in key for e in book.entries for key in e.keys)  # multi-word keys
    assert_round_trips(card, chunk_json(path, "chara"))


def test_amy_chara_chunk_holds_v3() -> None:
    path = fixture_file("en/amy-chara-chunk-v3.png")
    assert chunk_json(path, "chara")["spec"] == "chara_card_v3"
    card = load_card(path)
    assert (card.name, card.source, card.character_book) == ("Amy", "png:ccv3", None)
    assert {"group_greetings", "group_greetings_mode"} <= set(card.extensions)
    assert card.extensions["talkativeness"] == "1" and len(card.alternate_greetings) == 1
    assert card.depth_prompt is None or card.depth_prompt.depth == 0
    assert card.extensions["depth_prompt"]["depth"] == 0
    assert card.top_level["creator"] == "" and card.creator == "Wolfram Ravenwolf"
    assert_round_trips(card, chunk_json(path, "ccv3"))


def test_megumin_v1_card() -> None:
    path = fixture_file("en/megumin-v1.png")
    card = load_card(path)
    assert (card.name, card.spec, card.source) == ("Megumin", "chara_card_v1", "png:chara")
    assert "\r\n" in card.mes_example
    original = chunk_json(path, "chara")
    exported = card_to_json(card)
    assert exported["spec"] == "chara_card_v2"
    assert {k: exported[k] for k in original} == original  # every V1 field kept at top level
    assert exported["data"]["mes_example"] == original["mes_example"]


def test_default_chan_ccv3_only() -> None:
    path = fixture_file("en/default-chan-ccv3-only.png")
    assert [c.keyword for c in text_chunks(path.read_bytes())] == ["ccv3"]
    card = load_card(path)
    assert (card.name, card.source, card.top_level, card.extensions) == (
        "Default-chan", "png:ccv3", {}, {})
    assert len(card.alternate_greetings) == 2
    assert_round_trips(card, chunk_json(path, "ccv3"))


def test_long_reclamation_world() -> None:
    book = load_lorebook(fixture_file("en/long-reclamation-world.json"))
    assert len(book.entries) == 38
    assert Counter(e.position for e in book.entries) == Counter({0: 21, 1: 17})
    kinds = Counter(classify(e).name for e in book.entries)
    assert kinds == Counter({"keyword": 37, "unrouted": 1})
    (unrouted,) = [e for e in book.entries if classify(e).name == "unrouted"]
    assert unrouted.comment == "Team Rituals and Cohesion" and unrouted.keys == []
    assert all(e.character_filter == {"isExclude": False, "names": [], "tags": []}
               for e in book.entries)
    assert parse_lorebook(world_to_dict(book), "again", book.name).entries == book.entries


# ------------------------------------------------------------------ presets/


def test_gemi_preset_with_malformed_prompt_order() -> None:
    preset = load_preset(fixture_file("presets/zh-gemi-base.json"))
    raw = json.loads(fixture_file("presets/zh-gemi-base.json").read_text(encoding="utf-8"))
    assert len(raw["prompts"]) == 24
    assert len(preset.prompts) == 20 and len(preset.enabled_prompts()) == 17
    order = next(o for o in raw["prompt_order"] if o.get("character_id") == 100001)["order"]
    assert [p.identifier for p in preset.prompts] == [o["identifier"] for o in order]
    assert preset.extra["chat_completion_source"] == "custom"
    assert preset.extra["function_calling"] is True


def test_lucid_loom_preset() -> None:
    preset = load_preset(fixture_file("presets/en-lucid-loom-v0.1.json"))
    assert len(preset.prompts) == 105 and len(preset.enabled_prompts()) == 35
    assert Counter(p.role for p in preset.prompts) == Counter({"system": 102, "assistant": 3})
    assert preset.extra["squash_system_messages"] is True and preset.extra["names_behavior"] == -1
    assert sum("{{getvar" in p.content for p in preset.prompts) > 0


# ------------------------------------------------------------------ specs/


def spec_fields(text: str, opener: str) -> list[str]:
    """Field names of the TypeScript block that starts at ``opener`` in a spec document."""
    block = text[text.index(opener):]
    names = []
    for line in block.splitlines()[1:]:
        if line.strip().startswith("}"):
            break
        match = re.match(r"^ {4}(\w+)\??:", line)
        if match:
            names.append(match.group(1))
    return names


def sample_value(name: str) -> Any:
    if name in ("tags", "alternate_greetings", "group_only_greetings", "source"):
        return [f"{name} 1"]
    if name in ("creation_date", "modification_date"):
        return 1700000000
    if name in ("extensions", "creator_notes_multilingual"):
        return {"en": name}
    if name == "assets":
        return [{"type": "icon", "uri": "ccdefault:", "name": "main", "ext": "png"}]
    if name == "character_book":
        return {"entries": []}
    return f"{name} text"


@pytest.mark.parametrize(("relative", "spec", "opener"), [
    ("specs/SPEC_V3.md", "chara_card_v3", "  data: {"),
    ("specs/spec_v2.md", "chara_card_v2", "  data: {"),
])
def test_every_field_of_the_card_specs_is_modelled(relative: str, spec: str, opener: str) -> None:
    names = spec_fields(fixture_file(relative).read_text(encoding="utf-8"), opener)
    assert "name" in names and "extensions" in names
    data = {name: sample_value(name) for name in names}
    card = parse_card_object({"spec": spec, "spec_version": "3.0", "data": data}, relative)
    assert card.extra == {}  # nothing the spec defines falls into the unknown bucket
    assert card_to_json(card)["data"] == data


def test_v1_spec_fields_are_modelled() -> None:
    text = fixture_file("specs/spec_v1.md").read_text(encoding="utf-8")
    names = [m.group(1) for m in re.finditer(r"^  (\w+): string$", text, flags=re.M)]
    assert names == ["name", "description", "personality", "scenario", "first_mes", "mes_example"]
    card = parse_card_object({name: f"{name} text" for name in names}, "v1.json")
    assert [getattr(card, name) for name in names] == [f"{name} text" for name in names]
