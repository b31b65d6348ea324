"""``narrative roll``: the dice engine from the command line."""

from __future__ import annotations

import json

from click.testing import CliRunner

from narrative_cli.cli.app import app
from narrative_cli.rng import new_rng
from narrative_cli.tools.dice import roll

runner = CliRunner()


def test_panel_shows_the_line_and_verdict():
    result = runner.invoke(app, ["roll", "1d20+5", "--dc", "15", "--seed", "7", "--lang", "en"])
    assert result.exit_code == 0, result.output
    assert "Check: 1d20+5 = [11]+5 = 16 (DC 15) → success" in result.output
    assert "outcome" in result.output and "16" in result.output


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
        "error: invalid dice expression '2x6': expected + - * / or the end at character 2",
        "  2x6",
        "   ^",
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


NOTATION = [
    ("4d6kh3", "4d6kh3 = ["),
    ("3d6*5", "3d6*5 = ["),
    ("d%", "1d100 = ["),
    ("(2d6+6)*5", "(2d6+6)*5 = (["),
    ("4dF+1", "4dF+1 = ["),
    ("2d6!", "2d6! = ["),
    ("1d6r1", "1d6r1 = ["),
    ("1d6ro<3", "1d6ro<3 = ["),
    ("4d6dl1", "4d6dl1 = ["),
    ("6d10>=8", "successes"),
]


def test_every_notation_is_accepted_with_its_line():
    for expr, expected in NOTATION:
        result = runner.invoke(app, ["roll", expr, "--seed", "3", "--lang", "en", "--json"])
        assert result.exit_code == 0, (expr, result.output)
        assert expected in json.loads(result.output)["line"], expr


def test_check_systems_from_the_command_line():
    coc = ["roll", "--system", "coc7", "--skill", "60", "--bonus", "1", "--seed", "2", "--json"]
    data = json.loads(runner.invoke(app, coc).output)
    assert data["system"] == "coc7" and len(data["info"]["tens"]) == 2
    assert data["outcome"] in ("critical_success", "extreme_success", "hard_success",
                               "regular_success", "failure", "fumble")  # fmt: skip
    attack = ["roll", "--system", "dnd5e", "--kind", "attack", "--modifier", "5", "--dc", "15",
              "--mode", "advantage", "--seed", "5", "--lang", "zh"]  # fmt: skip
    result = runner.invoke(app, attack)
    assert result.exit_code == 0, result.output
    assert "(AC 15)" in result.output and "D&D 5e" in result.output
    pool = runner.invoke(app, ["roll", "6d10>=8", "-s", "pool", "--need", "2", "--lang", "zh"])
    assert "需要成功数 2" in pool.output and "骰池" in pool.output
    pool = runner.invoke(app, ["roll", "5d6", "-s", "pool", "--target", "5", "--json"])
    assert json.loads(pool.output)["expr"] == "5d6>=5"


def test_bad_check_parameters_exit_2():
    result = runner.invoke(app, ["roll", "--system", "coc7", "--lang", "en"])
    assert result.exit_code == 2 and "needs skill" in result.output
    result = runner.invoke(app, ["roll", "1d20", "--system", "gurps"])
    assert result.exit_code == 2 and "unknown check system 'gurps'" in result.output
    result = runner.invoke(app, ["roll", "--system", "coc7", "--skill", "50", "--bonus", "3"])
    assert result.exit_code == 2 and "bonus must be a whole number from 0 to 2" in result.output


def test_options_the_system_does_not_use_are_refused() -> None:
    result = runner.invoke(app, ["roll", "1d20", "--skill", "40"])
    assert result.exit_code == 2 and "--system none does not use --skill" in result.output
    result = runner.invoke(app, ["roll", "--system", "coc7", "--skill", "40", "-m", "advantage"])
    assert result.exit_code == 2 and "--system coc7 does not use --mode" in result.output
