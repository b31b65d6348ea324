"""A card's own book and a world file holding the same book load once; a linked world that was
not given is named in a hint (issue #15)."""

from __future__ import annotations

import json
from pathlib import Path

from narrative_cli.load import load_card, load_lorebook, select_lore
from narrative_cli.pipeline.opening import load_parts
from tests.conftest import fixture_file
from tests.pipeline_support import entry, write_card


def test_seraphina_with_the_eldoria_world_file_loads_its_book_once() -> None:
    card = load_card(fixture_file("st/seraphina-1.18.png"))
    world = load_lorebook(fixture_file("st/eldoria-1.18.json"))
    selection = select_lore(card, [world])
    assert len(selection.entries) == len(world.entries) == 4
    assert selection.books == [world]
    assert any("loaded once" in note for note in selection.skipped)


def world_file(folder: Path, name: str, contents: list[str]) -> Path:
    entries = {str(i): {"uid": i, "key": [f"k{i}"], "content": text, "constant": True,
                        "position": 0} for i, text in enumerate(contents)}
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"entries": entries}), encoding="utf-8")
    return path


def test_a_world_named_like_the_cards_book_replaces_it(tmp_path: Path) -> None:
    card = write_card(tmp_path, [entry(1, "OLD FERRY RULE", constant=True)],
                      extensions={"world": "Ferry"})  # the book is called "Ferry" too
    world = world_file(tmp_path, "Ferry", ["EDITED FERRY RULE"])
    parts = load_parts(card, [world], None, None, None, "en", None)
    contents = [e.content for e in parts.entries]
    assert contents == ["EDITED FERRY RULE"]
    assert not any("links the world" in p for p in parts.problems)


def test_a_different_world_is_added_to_the_cards_book(tmp_path: Path) -> None:
    card = write_card(tmp_path, [entry(1, "FERRY RULE", constant=True)])
    world = world_file(tmp_path, "Islands", ["ISLAND RULE"])
    parts = load_parts(card, [world], None, None, None, "en", None)
    assert sorted(e.content for e in parts.entries) == ["FERRY RULE", "ISLAND RULE"]


def test_a_linked_world_not_given_is_named_in_a_hint(tmp_path: Path) -> None:
    card = write_card(tmp_path, [], extensions={"world": "Ferry Lore"})
    parts = load_parts(card, [], None, None, None, "en", None)
    hints = [p for p in parts.problems if "Ferry Lore" in p]
    assert hints == ["lore: the card links the world 'Ferry Lore' (data.extensions.world), "
                     "which was not given; its entries are missing. Pass it with --lorebook "
                     "Ferry Lore.json"]


def test_a_world_holding_the_books_entries_and_more_replaces_it(tmp_path: Path) -> None:
    card = write_card(tmp_path, [entry(1, "FERRY RULE", keys=("k0",))], name="Oren")
    world = world_file(tmp_path, "Oren's edited lore", ["FERRY RULE", "NEW RULE"])
    parts = load_parts(card, [world], None, None, None, "en", None)
    assert sorted(e.content for e in parts.entries) == ["FERRY RULE", "NEW RULE"]


def test_a_linked_world_that_is_another_book_is_loaded_beside_the_cards_book() -> None:
    from tests.conftest import SAMPLES

    card = load_card(SAMPLES / "lantern-keeper.png")  # links sample-world, holds Greyholm Light
    world = load_lorebook(SAMPLES / "sample-world.json")
    assert len(select_lore(card, [world]).books) == 2
