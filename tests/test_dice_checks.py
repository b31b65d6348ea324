"""The notation's semantics and errors, the check systems' rules, hidden rolls in the runner,
and the dice panel in both languages."""

from __future__ import annotations

import pytest
from rich.console import Console

from narrative_cli.rng import new_rng
from narrative_cli.tools.definitions import load_tools
from narrative_cli.tools.dice import roll
from narrative_cli.tools.dice_checks import check, coc_level
from narrative_cli.tools.dice_notation import DiceError, parse, render
from narrative_cli.tools.runner import run_planning_calls
from narrative_cli.ui.dice_view import dice_panel, ledger_table
from tests.test_tool_runner import entry


def faces(rolled: object) -> list[dict[str, object]]:
    return [f for node in rolled.to_dict()["dice"] for f in node["faces"]]  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(30))
def test_keep_drop_reroll_and_explode_do_what_they_say(seed: int) -> None:
    kept = roll("4d6kh3", "normal", None, new_rng(seed))
    values = sorted(kept.dice[0].rolls)
    assert kept.total == sum(values[1:]) and sum(1 for f in faces(kept) if f.get("dropped")) == 1
    low = roll("3d20kl1", "normal", None, new_rng(seed))
    assert low.total == min(low.dice[0].rolls)
    rerolled = roll("2d6r<3", "normal", None, new_rng(seed))
    assert all(f["value"] >= 3 for f in faces(rerolled) if not f.get("rerolled"))
    once = roll("1d6ro1", "normal", None, new_rng(seed))
    assert sum(1 for f in faces(once) if f.get("rerolled")) <= 1
    boom = roll("3d6!>=5", "normal", None, new_rng(seed))
    assert boom.total == sum(f["value"] for f in faces(boom))
    pool = roll("8d10>=7", "normal", None, new_rng(seed))
    assert pool.total == sum(1 for f in faces(pool) if f["value"] >= 7)


def test_arithmetic_follows_precedence_and_rounds_division_down() -> None:
    assert roll("1d1*3+2", "normal", None, new_rng(1)).total == 5
    assert roll("(1d1+2)*3", "normal", None, new_rng(1)).total == 9
    assert roll("7/2+1d1", "normal", None, new_rng(1)).total == 4
    assert roll("-1d1-2", "normal", None, new_rng(1)).total == -3
    assert render(parse("（2D6＋6）×5")) == "(2d6+6)*5"  # full-width input from Chinese IMEs
    assert render(parse("d%")) == "1d100"


@pytest.mark.parametrize(
    ("expr", "column", "en"),
    [
        ("4d6kx", 5, "expected + - * / or the end at character 5"),
        ("2d6+", 5, "expected a number, a die or '(' (the expression ended)"),
        ("(1d6+2", 7, "expected ')'"),
        ("1dx", 3, "expected the sides after 'd'"),
        ("4dFkh1", 4, "Fudge dice take no keep"),
    ],
)
def test_syntax_errors_point_at_the_character(expr: str, column: int, en: str) -> None:
    with pytest.raises(DiceError) as caught:
        parse(expr)
    assert en in caught.value.message and caught.value.column == column
    assert caught.value.caret().splitlines()[1] == "  " + " " * (column - 1) + "^"
    assert f"第 {column} 个字符" in caught.value.localized("zh")


def test_limits_refuse_rolls_that_could_not_finish() -> None:
    for expr, words in (
        ("1d6r<7", "would never stop"),
        ("2d6!>=1", "would never stop"),
        ("1d2/0", "division by zero"),
        ("(" * 9 + "1d6" + ")" * 9, "more than 8 deep"),
    ):
        with pytest.raises(DiceError) as caught:
            roll(expr, "normal", None, new_rng(1))
        assert words in caught.value.message, expr


def test_coc_levels_and_fumbles_follow_the_skill() -> None:
    assert coc_level(1, 10) == "critical_success"
    assert [coc_level(v, 60) for v in (12, 13, 30, 31, 60, 61)] == [
        "extreme_success", "hard_success", "hard_success", "regular_success",
        "regular_success", "failure",
    ]  # fmt: skip
    assert coc_level(96, 45) == "fumble" and coc_level(96, 50) == "failure"
    assert coc_level(99, 99) == "regular_success" and coc_level(100, 99) == "fumble"


@pytest.mark.parametrize("seed", range(40))
def test_coc_difficulty_and_pushed_rolls(seed: int) -> None:
    hard = check({"system": "coc7", "skill": 50, "difficulty": "困难", "pushed": True},
                 new_rng(seed))  # fmt: skip
    assert hard.success == (hard.total == 1 or (hard.total <= 25))
    assert "（孤注一掷）" in hard.line("zh") and "(skill 50, hard)" in hard.line("en")
    if not hard.success:
        assert "孤注一掷失败" in hard.line("zh")


@pytest.mark.parametrize("seed", range(60))
def test_dnd5e_attack_criticals_and_check_totals(seed: int) -> None:
    attack = check({"system": "dnd5e", "kind": "attack", "modifier": 3, "ac": 30}, new_rng(seed))
    natural = attack.info["natural"]
    assert attack.success == (natural == 20)  # AC 30: only a natural 20 hits
    assert (attack.outcome == "critical_failure") == (natural == 1)
    save = check({"system": "dnd5e", "kind": "save", "modifier": 3, "dc": 2}, new_rng(seed))
    assert save.success and save.outcome == "success"  # a natural 1 still totals 4 ≥ 2


def test_dnd5e_critical_damage_doubles_the_dice_not_the_modifier() -> None:
    hit = check({"system": "dnd5e", "kind": "damage", "expr": "2d6+3", "critical": True},
                new_rng(3))  # fmt: skip
    assert hit.expr == "4d6+3" and len(hit.rolls) == 4 and hit.total == sum(hit.rolls) + 3
    assert hit.line("zh").startswith("伤害掷骰：4d6+3（重击，骰子加倍）")
    with pytest.raises(DiceError, match="rolls one d20"):
        check({"system": "dnd5e", "expr": "2d6"}, new_rng(1))


def test_a_pool_needs_a_target_and_counts_against_need() -> None:
    with pytest.raises(DiceError, match="needs a target"):
        check({"system": "pool", "expr": "6d10"}, new_rng(1))
    rolled = check({"system": "pool", "expr": "6d10", "target": 8, "need": 2}, new_rng(4))
    assert rolled.expr == "6d10>=8" and rolled.success == (rolled.total >= 2)


def test_a_hidden_roll_reaches_the_writer_but_not_the_player() -> None:
    book = {"type": "code", "function": {"name": "roll_dice"}, "reveal_hidden": True}
    tools = load_tools([entry(1, "[TOOL:roll_dice]", book)])
    call = {
        "tool": "roll_dice",
        "params": {"system": "coc7", "skill": 55, "label": "理智", "hidden": True},
    }
    result = run_planning_calls([call], tools, {}, new_rng(5), lambda *_: "", "zh")[0]
    assert result.text.startswith("暗骰结果（玩家看不到）：理智 1d100 = [")
    assert result.shown == "进行了一次暗骰检定" and result.data["reveal"] is True
    assert result.to_dict()["public"] == "进行了一次暗骰检定"
    bad = {"type": "llm", "function": {"name": "x"}, "reveal_hidden": True}
    assert "applies only to the roll_dice tool" in str(load_tools([entry(2, "", bad)]).problems[0])


def render_text(renderable: object, width: int = 100) -> str:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_panel_shows_dice_kept_and_dropped_target_and_outcome_in_both_languages() -> None:
    rolled = roll("4d6kh3+2", "normal", 12, new_rng(2))
    zh, en = render_text(dice_panel(rolled, "zh")), render_text(dice_panel(rolled, "en"))
    for word in ("规则", "骰子", "加值", "目标", "结果", "DC 12", "+2", "舍弃"):
        assert word in zh
    for word in ("system", "dice", "modifier", "target", "outcome", "dropped"):
        assert word in en
    dropped = next(f for f in faces(rolled) if f.get("dropped"))
    assert "4d6kh3: " in en and str(dropped["value"]) in en.split("4d6kh3: ", 1)[1]
    coc = check({"system": "coc7", "skill": 60, "bonus": 1}, new_rng(3))
    assert "十位" in render_text(dice_panel(coc, "zh")) and "克苏鲁 7版" in render_text(
        dice_panel(coc, "zh")
    )


def test_the_ledger_masks_hidden_rolls_until_revealed() -> None:
    secret = check({"system": "coc7", "skill": 40, "label": "聆听", "hidden": True}, new_rng(8))
    rows = [{"turn": 3, "roll": secret.to_dict()}]
    masked = render_text(ledger_table(rows, "en", reveal=False), 140)
    shown = render_text(ledger_table(rows, "en", reveal=True), 140)
    assert "(hidden)" in masked and secret.verdict("en") not in masked.split("聆听", 1)[1]
    assert secret.verdict("en") in shown and "(hidden)" not in shown
    assert "No rolls yet" in render_text(ledger_table([], "en", reveal=False))


def test_parameters_the_system_does_not_use_are_reported() -> None:
    tools = load_tools(
        [entry(1, "[TOOL:roll_dice]", {"type": "code", "function": {"name": "roll_dice"}})]
    )
    call = {
        "tool": "roll_dice",
        "params": {
            "system": "coc7",
            "skill": 50,
            "mode": "advantage",
            "dc": 40,
            "reason": "a card's own key",
        },
    }
    warning, rolled = run_planning_calls([call], tools, {}, new_rng(1), lambda *_: "", "en")
    assert warning.kind == "warning"
    assert warning.text == "Tool warning: roll_dice system coc7 does not use mode, dc; ignored"
    assert rolled.ok and rolled.data["system"] == "coc7"


@pytest.mark.parametrize("seed", range(20))
def test_dnd5e_advantage_rolls_only_the_d20_twice(seed: int) -> None:
    blessed = check({"system": "dnd5e", "expr": "1d20+1d4", "modifier": 2, "dc": 10,
                     "mode": "advantage"}, new_rng(seed))  # fmt: skip
    d20, d4 = blessed.dice
    assert len(d20.faces) == 2 and len(d4.faces) == 1 and blessed.mode == "advantage"
    assert blessed.total == max(f.value for f in d20.faces) + d4.faces[0].value + 2
    assert blessed.info["natural"] == max(f.value for f in d20.faces)


def test_llm_tools_see_a_hidden_roll_only_as_its_notice() -> None:
    from narrative_cli.tools.runner import dice_results_text

    tools = load_tools([entry(1, "[TOOL:roll_dice]", {"type": "code",
                                                      "function": {"name": "roll_dice"}})])
    calls = [{"tool": "roll_dice", "params": {"expr": "1d20", "hidden": True}},
             {"tool": "roll_dice", "params": {"expr": "1d6"}}]  # fmt: skip
    results = run_planning_calls(calls, tools, {}, new_rng(1), lambda *_: "", "en")
    text = dice_results_text(results, "en")
    assert text.splitlines()[0] == "A hidden check was made"
    assert text.splitlines()[1].startswith("Check: 1d6 = [")
