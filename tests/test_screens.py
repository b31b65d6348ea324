"""Saved screens of each panel in Chinese and English at 60 and 120 columns (#18): the footer,
/help, /cost, /state, /vars, the dice panel, the status panel and the greeting menu.

Each screen is drawn by the real renderers from fixed data and compared with its file under
tests/golden/screens/panels (``pytest --update-golden`` rewrites them). Every screen also
keeps the layout rule that matters at 60 columns: no line wider than the terminal, nothing cut
with an ellipsis or folded in the middle of a word by a squeezed table column.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import RenderableType

from narrative_cli.i18n import t
from narrative_cli.pipeline.accounting import AgentUsage
from narrative_cli.play.commands import help_table
from narrative_cli.play.costs import Costs
from narrative_cli.play.reports import usage_table
from narrative_cli.rng import new_rng
from narrative_cli.state.engine import GameState, state_summary
from narrative_cli.state.mvu import mvu_summary
from narrative_cli.tools.dice_checks import check
from narrative_cli.ui import render
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.dice_view import dice_panel
from narrative_cli.ui.status_panel import status_panel

PANELS = Path(__file__).parent / "golden" / "screens" / "panels"
WIDTHS = (60, 120)
LANGS = ("zh", "en")

TREE = {
    "zh": {"日期": "03月15日", "教堂": {"持有资金": [45, "金币"], "民声": 16},
           "莉莉安": {"体力": 95, "心情": "平静", "所在地": "钟楼下的旧书店"}},
    "en": {"day": 3, "keeper": {"lamp_oil": 11, "mood": "tired", "place": "the lamp room"},
           "boat": {"late": True, "crew": ["Ann", "Bo"]}},
}  # fmt: skip
BEFORE = {
    "zh": {"日期": "03月15日", "教堂": {"持有资金": [30, "金币"], "民声": 16},
           "莉莉安": {"体力": 100, "心情": "平静", "所在地": "钟楼下的旧书店"}},
    "en": {"day": 3, "keeper": {"lamp_oil": 12, "mood": "tired", "place": "the lamp room"},
           "boat": {"late": True, "crew": ["Ann"]}},
}  # fmt: skip
STATE = {
    "zh": {"time": {"day": 2, "hour": 21, "minute": 30}, "location": "雾港码头",
           "inventory": {"铜钱": 30, "油灯": 1}, "relationships": {"阿澜": 15},
           "quests": {"找到老周": {"status": "active", "note": "渡船明早开"}},
           "flags": {"雾钟已响": True}},
    "en": {"time": {"day": 2, "hour": 21, "minute": 30}, "location": "Lamp room",
           "inventory": {"brass key": 1, "oil flask": 2}, "relationships": {"Edda": 15},
           "quests": {"Light the lamp": {"status": "active", "note": "before the fog"}},
           "flags": {"bell_rang": True}},
}  # fmt: skip
GREETINGS = {
    "zh": ["*浓雾从海面漫上码头，灯塔的光只剩一团模糊的黄。*"
           "“你就是今天唯一的乘客？”阿澜上下打量你。",
           "茶馆里人声鼎沸，说书人正讲到雾钟的来历。"],
    "en": ["*Fog rolls over the harbour and the lighthouse is a smudge of yellow.* \"You must be "
           "the only passenger today,\" Edda says, looking you up and down.",
           "The tea house is loud; the storyteller has reached the fog bell."],
}  # fmt: skip
AGENTS = {
    "planning": AgentUsage(calls=2, prompt_tokens=4_210, cached_tokens=2_048,
                           completion_tokens=312, latency_ms=2_400),
    "merged_writing": AgentUsage(calls=2, prompt_tokens=6_980, cached_tokens=4_096,
                                 cache_write_tokens=512, completion_tokens=1_204,
                                 latency_ms=9_800),
    "tool:keeper_log": AgentUsage(calls=2, prompt_tokens=1_200, completion_tokens=80,
                                  latency_ms=900, estimated=True),
}  # fmt: skip
COSTS = Costs(agents={"planning": 0.001642, "merged_writing": 0.013512,
                      "tool:keeper_log": None}, unpriced=["my-local-proxy"])  # fmt: skip


def _footer(lang: str) -> RenderableType:
    usage = AgentUsage(calls=5, failed_calls=1, prompt_tokens=12_345, cached_tokens=4_000,
                       completion_tokens=678)  # fmt: skip
    return render.footer(usage, lang, 3.24, cost="$0.0115")


def _help(lang: str) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    return Group(render.rows_table(*help_table(lang)), Text(t("help.keys", lang), style="dim"))


def _cost(lang: str) -> RenderableType:
    return render.rows_table(*usage_table(AGENTS, 2, COSTS, lang))


def _state(lang: str) -> RenderableType:
    title = f"{t('report.state', lang)} ({t('report.turn', lang, turn=4)})"
    return render.text_panel(title, state_summary(GameState.from_dict(STATE[lang]), lang))


def _vars(lang: str) -> RenderableType:
    title = f"{t('report.vars', lang)} ({t('report.turn', lang, turn=4)})"
    return render.text_panel(title, mvu_summary(TREE[lang], lang))


def _dice(lang: str) -> RenderableType:
    from rich.console import Group

    attack = check({"expr": "1d20+5", "dc": 15, "mode": "advantage"}, new_rng(7))
    coc = check({"system": "coc7", "skill": 60, "difficulty": "hard", "bonus": 1}, new_rng(3))
    return Group(dice_panel(attack, lang), dice_panel(coc, lang))


def _status(lang: str) -> RenderableType:
    return status_panel(TREE[lang], BEFORE[lang], lang)


def _greetings(lang: str) -> RenderableType:
    return render.greeting_menu(GREETINGS[lang], lang)


SCREENS: dict[str, Callable[[str], RenderableType]] = {
    "footer": _footer, "help": _help, "cost": _cost, "state": _state, "vars": _vars,
    "dice": _dice, "status": _status, "greetings": _greetings,
}  # fmt: skip


def draw(name: str, lang: str, width: int) -> str:
    consoles = recording_consoles(width)
    consoles.out.print(SCREENS[name](lang))
    return "\n".join(line.rstrip() for line in captured(consoles.out).splitlines()) + "\n"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", list(SCREENS))
def test_saved_screens_of_each_panel(name: str, lang: str, width: int,
                                     update_golden: bool) -> None:  # fmt: skip
    screen = draw(name, lang, width)
    path = PANELS / f"{name}-{lang}-{width}.txt"
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(screen, encoding="utf-8")
    assert screen == path.read_text(encoding="utf-8"), f"{path} differs (pytest --update-golden)"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("name", list(SCREENS))
def test_panels_hold_at_60_columns(name: str, lang: str) -> None:
    screen = draw(name, lang, 60)
    assert all(cell_len(line) <= 60 for line in screen.splitlines())
    boxed = [line for line in screen.splitlines() if line[:1] in "│┌└╭╰┏┃┡┗"]
    assert all(line[-1] in "│┐┘╮╯┓┃┩┛" for line in boxed), screen  # no border cut off
    if name != "greetings":  # greeting previews are cut on purpose, with an ellipsis
        assert "…" not in screen
    if name == "greetings":
        assert [line.split()[1] for line in screen.splitlines()[2:4]] == ["0", "1"]
        return
    headers = " ".join(t(key, lang) for key in ("help.command", "help.what", "cost.agent"))
    wide = draw(name, lang, 120)
    words = {word for line in wide.splitlines() for word in line.split() if word.isascii()
             and word.isalpha() and len(word) > 3 and word not in headers}  # fmt: skip
    narrow = {word for line in screen.splitlines() for word in line.split()}
    assert words <= narrow | {w + "," for w in narrow}, sorted(words - narrow)  # no word folded


def test_the_footer_is_one_line_when_it_fits_and_breaks_between_parts_at_60() -> None:
    assert len(draw("footer", "en", 120).splitlines()) == 1
    narrow = draw("footer", "zh", 60).splitlines()
    assert len(narrow) == 2 and " · ".join(narrow) == draw("footer", "zh", 120).strip()


def test_cost_is_a_table_at_120_and_stacked_per_agent_at_60() -> None:
    assert "┃" in draw("cost", "en", 120)
    narrow = draw("cost", "en", 60)
    assert "┃" not in narrow
    assert "merged_writing\n  calls 2 · prompt 6,980" in narrow and "cost $0.0135" in narrow
