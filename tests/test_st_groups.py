"""SillyTavern group files (#19): read from a data folder built like SillyTavern 1.18's, written
back field for field, and refused with one clear line when they cannot be used."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from narrative_cli.errors import EXIT_USAGE, GroupError
from narrative_cli.group.commands import mute, unmute
from narrative_cli.group.loading import group_from_cards
from narrative_cli.group.st_groups import (
    chat_ids,
    find_st_group,
    load_st_group,
    st_group_json,
    write_st_group,
)
from tests.group_data import GROUP_ID, group_file, install_group, st_json, write_png_card


def group_path(root: Path) -> Path:
    return root / "groups" / f"{GROUP_ID}.json"


def test_a_sillytavern_group_reads_members_muting_codes_and_notes(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    group = load_st_group(group_path(root), characters=root / "characters")
    assert group.name == "Tea Party" and group.group_id == GROUP_ID
    assert [(m.key, m.name, m.talkativeness) for m in group.members] == [
        ("alice.png", "Alice", 0.9), ("bob.png", "Bob", 0.2), ("露米.png", "露米埃尔", 0.5)]
    assert group.muted == {"bob.png", "露米.png"}
    assert [m.name for m in group.active()] == ["Alice"]
    assert group.strategy == "pooled" and group.generation_mode == "join"
    assert group.allow_self_responses is True
    assert (group.join_prefix, group.join_suffix) == ("<{{char}}>", "</{{char}}>")
    assert group.scenario_override == "A rainy afternoon."  # from the open chat's header
    assert group.extra["some_extension"] == {"kept": [1, 2, 3]}
    assert chat_ids(group) == ["1714000000000", "1713000000000"]


def test_a_group_file_round_trips_byte_for_byte(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    original = group_path(root).read_text(encoding="utf-8")
    group = load_st_group(group_path(root), characters=root / "characters")
    assert st_group_json(group) == json.loads(original)
    out = tmp_path / "out.json"
    write_st_group(group, out)
    assert out.read_text(encoding="utf-8") == original


def test_muting_changes_write_back_as_sillytavern_would(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    group = load_st_group(group_path(root), characters=root / "characters")
    changed = mute(unmute(group, "露米埃尔").group, "alice").group
    data = st_group_json(changed)
    assert data["disabled_members"] == ["bob.png", "alice.png"]  # kept order, then appended
    assert {k: v for k, v in data.items() if k != "disabled_members"} == {
        k: v for k, v in group_file().items() if k != "disabled_members"}


def test_members_are_found_next_to_the_group_file(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    from_groups_folder = load_st_group(group_path(root))  # data/groups/ -> data/characters/
    assert [m.name for m in from_groups_folder.members] == ["Alice", "Bob", "露米埃尔"]
    loose = tmp_path / "loose"
    loose.mkdir()
    for card in (root / "characters").iterdir():
        shutil.copy(card, loose / card.name)
    shutil.copy(group_path(root), loose / "party.json")
    group = load_st_group(loose / "party.json")
    assert [m.key for m in group.members] == ["alice.png", "bob.png", "露米.png"]
    assert group.scenario_override == ""  # no group chats/ folder next to it


def test_a_member_may_be_named_by_card_name_as_sillytavern_allows(tmp_path: Path) -> None:
    root = install_group(tmp_path, members=["Alice", "bob.png"], disabled_members=[])
    group = load_st_group(group_path(root), characters=root / "characters")
    assert [(m.key, m.name) for m in group.members] == [("Alice", "Alice"), ("bob.png", "Bob")]
    assert st_group_json(group)["members"] == ["Alice", "bob.png"]


def test_an_older_group_keeps_its_scenario_in_the_group_file(tmp_path: Path) -> None:
    root = install_group(tmp_path, chat_metadata={"scenario": "Old scenario.", "note": 1},
                         chat_id="none-such")
    group = load_st_group(group_path(root))
    assert group.scenario_override == "Old scenario."
    assert st_group_json(group)["chat_metadata"] == {"scenario": "Old scenario.", "note": 1}


def test_defaults_when_sillytavern_left_fields_out(tmp_path: Path) -> None:
    folder = tmp_path / "g"
    folder.mkdir()
    write_png_card(folder, "a.png", "A")
    (folder / "g.json").write_text('{"members": ["a.png"], "activation_strategy": "1"}',
                                   encoding="utf-8")
    group = load_st_group(folder / "g.json")
    assert (group.name, group.strategy, group.generation_mode) == ("g", "list", "swap")
    assert group.muted == frozenset() and not group.allow_self_responses


def test_an_ad_hoc_group_is_written_as_sillytavern_creates_one(tmp_path: Path) -> None:
    cards = tmp_path / "characters"
    cards.mkdir()
    paths = [write_png_card(cards, "a.png", "Ann"), write_png_card(cards, "b.png", "Ben")]
    group = group_from_cards(paths)
    data = st_group_json(group, new_id="42")
    assert data == {
        "id": "42", "name": "Ann, Ben", "members": ["a.png", "b.png"],
        "allow_self_responses": False, "activation_strategy": 0, "generation_mode": 0,
        "disabled_members": [], "chat_id": "42", "chats": ["42"], "auto_mode_delay": 5,
        "generation_mode_join_prefix": "", "generation_mode_join_suffix": ""}
    (tmp_path / "groups").mkdir()
    (tmp_path / "groups" / "42.json").write_text(st_json(data), encoding="utf-8")
    again = load_st_group(tmp_path / "groups" / "42.json")
    assert [m.name for m in again.members] == ["Ann", "Ben"]


def test_find_a_group_by_name_id_or_file(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    for name in ("Tea Party", "tea party", GROUP_ID, f"{GROUP_ID}.json"):
        assert find_st_group(root, name) == group_path(root)
    (root / "groups" / "2.json").write_text(st_json(group_file(id="2")), encoding="utf-8")
    with pytest.raises(GroupError) as twice:
        find_st_group(root, "Tea Party")
    assert "2 groups are named 'Tea Party' (1714000000000.json, 2.json)" in twice.value.message
    with pytest.raises(GroupError) as unknown:
        find_st_group(root, "Picnic")
    assert unknown.value.message.endswith("no group named 'Picnic' (groups: Tea Party, Tea Party)")


# -- bad input: one clear line each ----------------------------------------------------------


def refused(path: Path, **kwargs: object) -> str:
    with pytest.raises(GroupError) as caught:
        load_st_group(path, **kwargs)  # type: ignore[arg-type]
    assert caught.value.exit_code == EXIT_USAGE
    assert "\n" not in caught.value.message
    return caught.value.message


def test_a_missing_member_card_is_named(tmp_path: Path) -> None:
    root = install_group(tmp_path, members=["alice.png", "carol.png", "dave.png"])
    message = refused(group_path(root), characters=root / "characters")
    assert message == (f"{group_path(root)}: member card 'carol.png', 'dave.png' not found in "
                       f"{root / 'characters'}")


def test_broken_json_names_the_line_and_column(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    group_path(root).write_text('{\n    "name": "Tea",\n    "members": [,]\n}', encoding="utf-8")
    message = refused(group_path(root))
    assert message.startswith(f"{group_path(root)}: invalid JSON in the group file (line 3,")


def test_an_unknown_strategy_or_mode_code_is_named(tmp_path: Path) -> None:
    root = install_group(tmp_path, activation_strategy=7)
    assert refused(group_path(root)) == (
        f"{group_path(root)}: activation_strategy 7 is not one of SillyTavern's "
        "(0 natural, 1 list, 2 manual, 3 pooled)")
    root2 = install_group(tmp_path / "2", generation_mode="join")
    assert "generation_mode 'join' is not one of SillyTavern's (0 swap, 1 join, 2 join_disabled)" \
        in refused(group_path(root2))


def test_files_that_are_not_groups_are_refused(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    cases = {
        "[1, 2]": "not a SillyTavern group (a JSON object with \"members\")",
        '{"name": "x"}': "not a SillyTavern group (a JSON object with \"members\")",
        '{"members": "alice.png"}': "members must be a list of card file names",
        '{"members": []}': "the group has no members",
        '{"members": ["../characters/alice.png"]}': "member card '../characters/alice.png'",
        '{"members": ["alice.png"], "name": 3}': "name must be text, not number",
        '{"members": ["alice.png"], "disabled_members": [1]}': "disabled_members must be a list",
    }
    for text, expected in cases.items():
        group_path(root).write_text(text, encoding="utf-8")
        assert expected in refused(group_path(root)), text
    missing = root / "groups" / "nope.json"
    assert refused(missing) == f"{missing}: no such group file"


def test_a_member_card_that_is_not_a_card_is_named(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    (root / "characters" / "bob.png").write_bytes(b"not a png at all")
    message = refused(group_path(root))
    assert message.startswith(f"{group_path(root)}: member 'bob.png': ")
