"""The sandbox's helper starts as soon as a card that needs it is read (``play.warm``), so a
story's first code tool check or script run does not wait 0.1–0.2 s for it; a card that
needs no JavaScript starts none (#17: replay start-up)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.load import load_card, select_lore
from narrative_cli.play.warm import needs_helper, warm_up_for_file
from narrative_cli.tools import sandbox
from tests.conftest import ROOT
from tests.pipeline_support import DICE_TOOL, entry, llm_tool, tool_entry, write_card

SAMPLE = ROOT / "sample_cards" / "lantern-keeper.png"
CLOCK = {
    "type": "code",
    "trigger": "planning",
    "function": {"name": "tide_clock", "description": "The tide now."},
    "code": "return {tide: 'low'};",
}


def script(find: str, replace: str = "", **extra: Any) -> dict[str, Any]:
    return {"scriptName": "s", "findRegex": find, "replaceString": replace, "placement": [2],
            **extra}  # fmt: skip


def needs(folder: Path, entries: list[dict[str, Any]], **fields: Any) -> bool:
    card = load_card(write_card(folder, entries, **fields))
    return needs_helper(card, select_lore(card, [], "auto").entries)


@pytest.fixture
def stopped() -> Iterator[None]:
    sandbox.shutdown()
    yield
    sandbox.shutdown()


def test_code_tools_and_templates_need_the_helper_and_dice_or_llm_tools_do_not(
    tmp_path: Path,
) -> None:
    plain = [entry(0, "The ferry is old.", constant=True)]
    assert not needs(tmp_path, plain)
    assert not needs(tmp_path, [*plain, tool_entry(1, DICE_TOOL)])  # the dice engine is Python
    assert not needs(tmp_path, [tool_entry(1, llm_tool("log", "post_pipeline", ["story"]))])
    assert needs(tmp_path, [*plain, tool_entry(1, CLOCK)])  # its syntax is checked at opening
    assert needs(tmp_path, [entry(0, "<%= 1 + 1 %> lamps", constant=True)])  # an EJS template
    assert needs(tmp_path, plain, description="It is <% if (true) { %>night<% } %>.")


def test_regex_scripts_need_it_unless_python_runs_them(tmp_path: Path) -> None:
    hide = script("/<log>[\\s\\S]*?<\\/log>/g")  # the block-hiding shape: run in Python
    assert not needs(tmp_path, [], extensions={"regex_scripts": [hide]})
    assert needs(tmp_path, [], extensions={"regex_scripts": [script("/(\\d+) gold/g", "$1 coins")]})
    assert needs(tmp_path, [], extensions={"regex_scripts": [script("/a+/g", trimStrings=["x"])]})
    off = script("/(\\d+) gold/g", "$1 coins", disabled=True)
    assert not needs(tmp_path, [], extensions={"regex_scripts": [hide, off]})


def test_reading_the_sample_card_starts_the_helper_and_a_plain_card_starts_none(
    tmp_path: Path, stopped: None
) -> None:
    plain = write_card(tmp_path, [entry(0, "The ferry is old.", constant=True)])
    assert warm_up_for_file(str(plain)) is not None
    assert sandbox._WORKER._process is None

    card = warm_up_for_file(str(SAMPLE))

    assert card is not None and card.name == "Edda"
    assert sandbox._WORKER._process is not None  # started, not waited for
    assert sandbox.check_syntax("return 1;") is None  # and it answers


def test_a_card_that_does_not_load_is_left_to_the_story_to_report(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not a card", encoding="utf-8")
    assert warm_up_for_file(str(broken)) is None
    assert warm_up_for_file(str(tmp_path / "missing.png")) is None
