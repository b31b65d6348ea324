"""Lore activation on real world files and cards from ../shared/fixtures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from narrative_cli.domain import LoreEntry
from narrative_cli.load import load_card, load_lorebook
from narrative_cli.lore.engine import (
    ActivationResult,
    LoreSettings,
    ScanContext,
    activate,
    routed_lore,
)

from .conftest import fixture_file

pytestmark = pytest.mark.fixtures

SERAPHINA = ScanContext(user_name="User", char_name="Seraphina")


def world(relative: str) -> list[LoreEntry]:
    return load_lorebook(fixture_file(relative)).entries


def run(entries: list[LoreEntry], text: str, **kwargs: Any) -> ActivationResult:
    kwargs.setdefault("context", SERAPHINA)
    return activate(entries, user_input=text, **kwargs)


def steps(result: ActivationResult) -> dict[int | str, int]:
    return {a.entry.uid: a.step for a in result.activated}


@pytest.mark.parametrize("relative", ["st/eldoria-1.18.json", "st/eldoria-1.12.json"])
def test_eldoria_forest_recurses_into_every_entry(relative: str) -> None:
    result = run(world(relative), "I walk in the magical forests")
    # "magical forest" has a space: a substring match; the content then names beasts,
    # the glade and magic, which activate the other three entries in recursion step 2.
    assert steps(result) == {0: 1, 1: 2, 2: 2, 3: 2}
    assert {a.entry.uid: a.reason for a in result.activated}[0] == 'key "magical forest"'
    assert all(a.route == "keyword" for a in result.activated)


@pytest.mark.parametrize("relative", ["st/eldoria-1.18.json", "st/eldoria-1.12.json"])
def test_eldoria_whole_words_and_recursion_off(relative: str) -> None:
    entries = world(relative)
    assert run(entries, "forests and woodland").activated == []
    result = run(entries, "Are there MONSTERS here?", settings=LoreSettings(recursive=False))
    assert [(a.entry.uid, a.reason) for a in result.activated] == [(1, 'key "monsters"')]


def test_long_reclamation_keys_without_recursion() -> None:
    entries = world("en/long-reclamation-world.json")
    flat = LoreSettings(recursive=False)
    text = "The raiders attacked Haven Point last night, and the PAS sent nobody."
    result = run(entries, text, settings=flat)
    assert sorted(a.entry.uid for a in result.activated) == [2, 3, 4, 24, 28]
    # every order is 100: SillyTavern's prompt order is the reverse of activation order
    assert [a.entry.uid for a in result.activated] == [28, 24, 4, 3, 2]
    quiet = run(entries, "Ghost and Doc went through the passage.", settings=flat)
    assert sorted(a.entry.uid for a in quiet.activated) == [12, 14]  # not PAS in "passage"


def test_long_reclamation_recursion_reaches_the_factions() -> None:
    result = run(world("en/long-reclamation-world.json"), "Ghost and Doc went through the passage.")
    found = steps(result)
    assert found[12] == 1 and found[14] == 1
    assert found[11] == 2  # Raven, named in Ghost's and Doc's entries
    assert (
        found[28] > 2 and "recursion step" in {a.entry.uid: a.reason for a in result.activated}[28]
    )
    assert 18 not in found  # "Team Rituals and Cohesion" has no keys
    assert result.tokens < result.budget


def test_nun_ninja_chinese_keys_constants_and_formatting_entries() -> None:
    entries = world("zh/nun-ninja-world.json")
    result = run(entries, "我们去露米埃尔", context=ScanContext(char_name="夜百合"))
    found = steps(result)
    assert found == {6: 1, 1: 1, 3: 1, 4: 1, 5: 1, 7: 2, 8: 2, 9: 2}
    assert 2 not in found and 0 not in found  # [mvu_update] and the disabled [initvar]
    routed = routed_lore(result)
    assert [e.uid for e in routed.worldinfo3] == [1, 3, 4, 5, 6, 7, 8, 9]
    assert routed.worldinfo1 == [] and routed.worldinfo2 == []


def test_nun_ninja_key_in_state_summary_and_narrow_depth() -> None:
    entries = world("zh/nun-ninja-world.json")
    settings = LoreSettings(recursive=False)
    result = run(entries, "出发吧", extra_text="地点：月影阁", settings=settings)
    assert sorted(a.entry.uid for a in result.activated if not a.entry.constant) == [7]
    old = run(
        entries,
        "出发吧",
        history=["去找铁匠", "好"],
        settings=LoreSettings(recursive=False, depth=2),
    )
    assert [a.entry.uid for a in old.activated if not a.entry.constant] == []


def test_ai_v3_card_routes_constants_by_extensions_position() -> None:
    card = load_card(fixture_file("zh/ai-v3.json"))
    assert card.character_book is not None
    result = run(card.character_book.entries, "你好", context=ScanContext(char_name=card.name))
    routed = routed_lore(result)
    assert [e.uid for e in routed.worldinfo1] == [22, 26]  # "after_char" but extensions 4
    assert [e.uid for e in routed.worldinfo2] == [0, 1]
    assert [e.uid for e in routed.worldinfo3] == [21]
    # constant contents name 玄天宗 and 李德, but every entry prevents recursion
    assert result.steps == 1
    keyed = run(
        card.character_book.entries, "去玄天宗找大师兄", context=ScanContext(char_name=card.name)
    )
    assert [e.uid for e in routed_lore(keyed).worldinfo3] == [21, 2, 8, 14]


def test_sillytavern_new_user_settings_read_as_lore_settings() -> None:
    data = json.loads(fixture_file("st/settings-1.18.json").read_text(encoding="utf-8"))
    settings = LoreSettings.from_dict(data["world_info_settings"])
    assert (settings.depth, settings.recursive, settings.match_whole_words) == (2, True, True)
    assert (settings.budget_percent, settings.budget_cap, settings.character_strategy) == (25, 0, 1)
