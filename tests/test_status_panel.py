"""The terminal's status panel and HTML layout (issue #14 item 5): saved screens, layout rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from narrative_cli.ui.html_text import terminal_html
from narrative_cli.ui.status_panel import status_panel

GOLDEN = Path(__file__).parent / "golden" / "screens"

TREES = {
    "zh": (
        {"日期": "03月15日", "教堂": {"持有资金": [45, "金币"], "民声": 16},
         "莉莉安": {"体力": 95, "心情": "平静", "情绪": {"愉悦": 0.2, "信任": 3}}},
        {"日期": "03月15日", "教堂": {"持有资金": [30, "金币"], "民声": 16},
         "莉莉安": {"体力": 100, "心情": "平静", "情绪": {"愉悦": 0.2, "信任": 3}}},
    ),
    "en": (
        {"day": 3, "keeper": {"lamp_oil": 11, "mood": "tired", "_hidden": 1},
         "boat": {"late": True, "crew": ["Ann", "Bo"]}, "$meta": {"extensible": True}},
        {"day": 3, "keeper": {"lamp_oil": 12, "mood": "tired", "_hidden": 1},
         "boat": {"late": True, "crew": ["Ann"]}, "$meta": {"extensible": True}},
    ),
}  # fmt: skip


def screen(lang: str) -> str:
    console = Console(width=48, record=True, color_system=None, force_terminal=False)
    tree, before = TREES[lang]
    console.print(status_panel(tree, before, lang))
    return console.export_text()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_status_panel_screens_match_the_saved_ones(lang: str, update_golden: bool) -> None:
    path = GOLDEN / f"status-panel-{lang}.txt"
    text = screen(lang)
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (pytest --update-golden)"


def test_cjk_rows_line_up_and_changes_are_marked_with_the_old_value() -> None:
    lines = screen("zh").splitlines()
    assert len({cell_len(line) for line in lines}) == 1  # the right border in one column
    assert any("● 45  (30)" in line for line in lines)
    assert any("● 100" not in line and "● 95  (100)" in line for line in lines)
    assert not any("● 16" in line or "● 平静" in line for line in lines)


def test_bookkeeping_keys_are_not_shown() -> None:
    text = screen("en")
    assert "_hidden" not in text and "$meta" not in text and "extensible" not in text
    assert "● Ann, Bo" in text


def test_tables_keep_rows_and_columns_with_wide_characters() -> None:
    html = "<table><tr><th>名字</th><th>HP</th></tr><tr><td>莉莉安</td><td>95</td></tr>"
    html += "<tr><td>Bob</td><td>7</td></tr></table>"
    rows = ["名字    HP", "──────  ──", "莉莉安  95", "Bob     7"]
    assert terminal_html(html).text.splitlines() == rows


def test_details_lists_and_label_pairs_are_laid_out() -> None:
    html = (
        "<details><summary>物品</summary><ul><li>头纱</li><li>十字架</li></ul>"
        "<ol><li>first</li><li>second</li></ol></details>"
        '<div class="property"><div class="property-name">身份</div>'
        '<div class="property-value">新来的牧师</div></div>'
        "<p>Line <b>one</b><br>line two</p>"
    )
    assert terminal_html(html).text.splitlines() == [
        "▸ 物品", "  • 头纱", "  • 十字架", "  1. first", "  2. second",
        "身份：新来的牧师", "Line one", "line two",
    ]  # fmt: skip


def test_buttons_and_scripts_are_left_out_and_reported() -> None:
    html = '<div><button onclick="go()">click to start</button><script>go()</script>Ready</div>'
    laid_out = terminal_html(html)
    assert laid_out.text == "Ready" and laid_out.interactive
    assert not terminal_html("<div>plain</div>").interactive
    assert terminal_html("a < b and c > d").text == "a < b and c > d"


def test_control_sequences_in_variables_never_reach_the_terminal() -> None:
    console = Console(width=48, record=True, color_system=None, force_terminal=False)
    console.print(status_panel({"名\x1b]0;x\x07": "值\x1b[2J\u202e"}, None, "zh"))
    text = console.export_text()
    assert "\x1b" not in text and "\u202e" not in text and "名" in text and "值" in text
