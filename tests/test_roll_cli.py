"""``narrative roll``: the dice engine from the command line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from narrative_cli.cli.app import app
from narrative_cli.rng import new_rng
from narrative_cli.tools.dice import roll

runner = CliRunner()


def test_panel_shows_the_line_and_verdict():
    result = runner.invoke(app, ["roll", "1d20+5", "--dc", "15", "--seed", "7", "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert "Check: 1d20+5 = [11]+5 = 16 (DC 15) → success" in result.output
    assert "verdict" in result.output and "16" in result.output


def test_chinese_panel_and_mode():
    args = ["roll", "1d20+5", "--mode", "advantage", "--dc", "15", "--seed", "7", "--lang", "zh"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "检定结果：1d20+5 = [11 和 5，取高值]+5 = 16 (DC 15) → 成功" in result.output
    assert "优势" in result.output


def test_json_output_matches_the_engine_for_the_same_seed():
    result = runner.invoke(app, ["roll", "2d6", "+", "3", "--seed", "11", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    expected = roll("2d6+3", "normal", None, new_rng(11)).to_dict()
    assert {k: data[k] for k in expected} == expected
    assert data["total"] == sum(data["rolls"]) + 3
    assert data["line"].endswith("→ no DC")


def test_same_seed_same_output():
    first = runner.invoke(app, ["roll", "4d6", "--seed", "5", "--json"])
    second = runner.invoke(app, ["roll", "4d6", "--seed", "5", "--json"])
    assert first.output == second.output


def test_bad_expression_exits_2_with_one_line():
    result = runner.invoke(app, ["roll", "2x6"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        "error: invalid dice expression '2x6': use terms like 2d6, d20 or 3 joined by + or -"
    ]
    assert "Traceback" not in result.output


def test_bad_expression_in_chinese():
    result = runner.invoke(app, ["roll", "1d0", "--lang", "zh"])
    assert result.exit_code == 2
    assert result.output.strip() == "error: 「1d0」：骰子面数应在 1 到 1000 之间"


def test_unknown_mode_and_too_many_dice_exit_2():
    assert runner.invoke(app, ["roll", "1d20", "--mode", "sideways"]).exit_code == 2
    result = runner.invoke(app, ["roll", "500d6"])
    assert result.exit_code == 2 and "at most 100" in result.output
