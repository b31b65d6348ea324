"""World files: absent-field semantics, key order, round trips, card-book conversion, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.domain import Lorebook
from narrative_cli.errors import LorebookError
from narrative_cli.load import (
    card_book_to_lorebook,
    load_lorebook,
    lorebook_to_card_book,
    parse_lorebook,
    world_to_dict,
)
from narrative_cli.lore.routing import classify

from .conftest import SAMPLES


def write_world(tmp_path: Path, value: object, name: str = "Harbor.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


LEGACY = {"uid": 0, "key": ["dock"], "keysecondary": [], "comment": "Dock", "content": "Boats.",
          "constant": False, "selective": False, "order": 100, "position": 0, "disable": False}


def full_entry(uid: int, **fields: Any) -> dict[str, Any]:
    entry = {**LEGACY, "uid": uid, "selectiveLogic": 3, "useProbability": True,
             "probability": 40, "depth": 2, "role": None, "group": "weather, sea",
             "groupOverride": True, "groupWeight": 30, "scanDepth": 5, "caseSensitive": True,
             "matchWholeWords": False, "useGroupScoring": None, "sticky": 2, "cooldown": 0,
             "delay": None, "delayUntilRecursion": True, "outletName": "", "triggers": ["normal"],
             "matchPersonaDescription": True, "matchScenario": True, "ignoreBudget": True,
             "characterFilter": {"isExclude": True, "names": ["Edda"], "tags": []},
             "automationId": "qr1", "displayIndex": 7, "vectorized": False, "addMemo": True,
             "extensions": {"chub": {"x": 1}}}
    entry.update(fields)
    return entry


def test_world_file_name_and_absent_fields(tmp_path: Path) -> None:
    minimal = {"uid": 1, "key": ["bell"], "content": "It rings.", "constant": True}
    book = load_lorebook(write_world(tmp_path, {"entries": {"0": LEGACY, "1": minimal}}))
    assert book.name == "Harbor" and book.source.endswith("Harbor.json")
    legacy, bare = book.entries
    assert (legacy.selective, legacy.use_probability, legacy.order) == (False, None, 100)
    assert (bare.selective, bare.use_probability, bare.order, bare.position) == (
        None, None, None, None)
    assert (bare.depth, bare.role, bare.probability, bare.selective_logic) == (4, 0, 100, 0)
    assert classify(bare).name == "unrouted"


def test_full_field_set_is_read(tmp_path: Path) -> None:
    book = load_lorebook(write_world(tmp_path, {"entries": {"3": full_entry(3)}}))
    entry = book.entries[0]
    assert (entry.selective_logic, entry.probability, entry.use_probability) == (3, 40, True)
    assert (entry.depth, entry.role, entry.scan_depth, entry.case_sensitive) == (2, 0, 5, True)
    assert (entry.sticky, entry.cooldown, entry.delay) == (2, 0, None)
    assert entry.delay_until_recursion == 1 and entry.ignore_budget
    assert entry.match_sources == ["persona_description", "scenario"]
    assert entry.character_filter["names"] == ["Edda"] and entry.triggers == ["normal"]
    assert entry.extensions == {"chub": {"x": 1}} and entry.extra == {"addMemo": True}
    assert entry.group == "weather, sea" and entry.group_override


def test_entries_follow_javascript_key_order(tmp_path: Path) -> None:
    entries = {key: {**LEGACY, "uid": uid} for key, uid in
               (("10", 10), ("b", "b"), ("2", 2), ("a", "a"), ("01", "01"), ("0", 0))}
    book = load_lorebook(write_world(tmp_path, {"entries": entries}))
    assert [e.uid for e in book.entries] == [0, 2, 10, "b", "a", "01"]


def test_world_round_trip_keeps_every_field(tmp_path: Path) -> None:
    original = {"entries": {"0": LEGACY, "5": full_entry(5, content="@@activate\nAlways.")},
                "originalData": {"name": "Harbor", "entries": []}, "name": "Harbor"}
    book = load_lorebook(write_world(tmp_path, original))
    assert book.entries[1].decorators == ["@@activate"] and book.entries[1].content == "Always."
    written = world_to_dict(book)
    assert written["entries"]["5"]["content"] == "@@activate\nAlways."
    assert written["originalData"] == original["originalData"]
    for key, value in original["entries"]["0"].items():
        assert written["entries"]["0"][key] == value
    assert "useProbability" not in written["entries"]["0"]  # absent stays absent
    assert parse_lorebook(written, "again.json", "Harbor").entries == book.entries


def test_world_to_card_book_and_back(tmp_path: Path) -> None:
    book = load_lorebook(write_world(tmp_path, {"entries": {"4": full_entry(4, position=4),
                                                            "0": LEGACY}}))
    card_book = lorebook_to_card_book(book)
    first, second = card_book["entries"]
    assert (first["id"], first["insertion_order"], first["enabled"]) == (0, 100, True)
    assert first["position"] == "before_char" and second["position"] == "after_char"
    assert second["extensions"]["position"] == 4 and second["use_regex"] is True
    assert second["extensions"]["useProbability"] is True and second["extensions"]["chub"]
    back = card_book_to_lorebook(card_book, "x", "Harbor")
    assert [(e.uid, e.position, e.keys, e.content) for e in back.entries] == [
        (e.uid, e.position, e.keys, e.content) for e in book.entries]
    assert back.entries[1].match_sources == ["persona_description", "scenario"]


def test_original_data_wins_when_exporting_to_a_card_book() -> None:
    original = {"name": "From card", "entries": [{"id": 9, "keys": ["x"], "content": "y"}]}
    book = Lorebook(name="w", extra={"originalData": original})
    assert lorebook_to_card_book(book) is original


def test_stand_alone_card_books_are_accepted(tmp_path: Path) -> None:
    entries = [{"id": 1, "keys": ["tea"], "content": "Tea house.", "enabled": True,
                "insertion_order": 5, "extensions": {"position": 0}}]
    v3 = load_lorebook(write_world(tmp_path, {"spec": "lorebook_v3",
                                              "data": {"name": "茶", "entries": entries}}))
    bare = load_lorebook(write_world(tmp_path, {"name": "Tea", "entries": entries}, "b.json"))
    assert v3.name == "茶" and bare.name == "Tea"
    assert v3.entries == bare.entries and v3.entries[0].position == 0


def test_javascript_shapes_load_as_sillytavern_reads_them(tmp_path: Path) -> None:
    entries = {"0": {**LEGACY, "key": "dock", "constant": "false"},
               "1": {**LEGACY, "uid": 1, "disable": "true", "selectiveLogic": "0",
                     "position": "after_char"}}
    book = load_lorebook(write_world(tmp_path, {"entries": entries}))
    first, second = book.entries
    assert first.keys == [] and first.constant is True  # "false" is truthy in JavaScript
    assert first.extra["key"] == "dock"  # kept as written, for export and lint
    assert second.disabled is False  # ST tests disable == true: "true" is not
    assert second.selective_logic == -1 and second.position is None


@pytest.mark.parametrize(("entry", "message"), [
    ({"key": ["dock", {"x": 1}]}, r"entry 0: 'key' must be a list of strings, but holds an object"),
    ({"content": ["a"]}, r"entry 0: 'content' must be text, got list"),
    ({"order": "first"}, r"entry 0: 'order' must be a number, got string"),
    ({"extensions": []}, r"entry 0: 'extensions' must be an object, got list"),
])
def test_wrong_types_name_the_file_entry_and_field(tmp_path: Path, entry: dict[str, Any],
                                                   message: str) -> None:
    path = write_world(tmp_path, {"entries": {"0": {**LEGACY, **entry}}})
    with pytest.raises(LorebookError, match=rf"Harbor\.json: {message}"):
        load_lorebook(path)


def test_not_a_lorebook(tmp_path: Path) -> None:
    with pytest.raises(LorebookError, match=r"not a lorebook: it has no 'entries' \(this looks "
                                            r"like a character card"):
        load_lorebook(write_world(tmp_path, {"spec": "chara_card_v2", "data": {}}))
    with pytest.raises(LorebookError, match="NovelAI"):
        load_lorebook(write_world(tmp_path, {"lorebookVersion": 5, "entries_": []}))
    with pytest.raises(LorebookError, match="entry 0 must be an object, got string"):
        load_lorebook(write_world(tmp_path, {"entries": {"0": "text"}}))
    with pytest.raises(LorebookError, match="'entries' must be an object or a list, got number"):
        load_lorebook(write_world(tmp_path, {"entries": 3}))


def test_sample_world_has_full_and_legacy_entries() -> None:
    book = load_lorebook(SAMPLES / "sample-world.json")
    raw = json.loads((SAMPLES / "sample-world.json").read_text(encoding="utf-8"))["entries"]
    assert book.name == "sample-world" and len(book.entries) == 6
    assert len(raw["0"]) > 35 and set(raw["3"]) == set(LEGACY)
    routes = {e.comment: classify(e).name for e in book.entries}
    assert routes["Weather signs"] == "worldinfo3" and routes["Weather outlet"] == "outlet"
    assert routes["Keeper superstitions (legacy, no position)"] == "unrouted"
    assert book.entries[2].sticky == 2 and book.entries[2].cooldown == 3
