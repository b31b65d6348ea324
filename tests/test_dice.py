"""The dice engine: grammar, modes, DC verdicts, criticals, bounds and the result lines."""

from __future__ import annotations

import random

import pytest

from narrative_cli.errors import ToolError
from narrative_cli.rng import new_rng, rng_from_state, rng_state
from narrative_cli.tools.dice import (
    MAX_EXPLOSIONS,
    DiceError,
    roll,
)
from narrative_cli.tools.dice_notation import BinOp, Dice, Num, parse, render

# (expr, mode, dc, seed) → the exact zh and en lines. Seeds were picked to show each case.
GOLDEN = [
    (
        ("1d20+5", "normal", 15, 7),
        "检定结果：1d20+5 = [11]+5 = 16 (DC 15) → 成功",
        "Check: 1d20+5 = [11]+5 = 16 (DC 15) → success",
    ),
    (
        ("1d20+5", "advantage", 15, 7),
        "检定结果：1d20+5 = [11 和 5，取高值]+5 = 16 (DC 15) → 成功",
        "Check: 1d20+5 = [11 and 5, keep higher]+5 = 16 (DC 15) → success",
    ),
    (
        ("1d20+5", "disadvantage", 15, 7),
        "检定结果：1d20+5 = [11 和 5，取低值]+5 = 10 (DC 15) → 失败",
        "Check: 1d20+5 = [11 and 5, keep lower]+5 = 10 (DC 15) → failure",
    ),
    (
        ("2d6+1", "exploding", 12, 20),
        "检定结果：2d6+1 = [6, 6，爆炸: 2, 3]+1 = 18 (DC 12) → 成功",
        "Check: 2d6+1 = [6, 6, exploded: 2, 3]+1 = 18 (DC 12) → success",
    ),
    (
        ("2d6+1d4-1", "normal", 10, 7),
        "检定结果：2d6+1d4-1 = [3, 2]+[4]-1 = 8 (DC 10) → 失败",
        "Check: 2d6+1d4-1 = [3, 2]+[4]-1 = 8 (DC 10) → failure",
    ),
    (
        ("2d6+1d4-1", "advantage", 10, 7),
        "检定结果：2d6+1d4-1 = [(3, 2 + 4) 和 (6, 1 + 1)，取高值]-1 = 8 (DC 10) → 失败",
        "Check: 2d6+1d4-1 = [(3, 2 + 4) and (6, 1 + 1), keep higher]-1 = 8 (DC 10) → failure",
    ),
    (
        ("D20 - 1d4", "normal", None, 7),
        "检定结果：1d20-1d4 = [11]-[2] = 9 → 无DC",
        "Check: 1d20-1d4 = [11]-[2] = 9 → no DC",
    ),
    (
        ("1d20+5", "normal", 30, 5),
        "检定结果：1d20+5 = [20]+5 = 25 (DC 30) → 大成功",
        "Check: 1d20+5 = [20]+5 = 25 (DC 30) → critical success",
    ),
    (
        ("1d20+5", "normal", 2, 31),
        "检定结果：1d20+5 = [1]+5 = 6 (DC 2) → 大失败",
        "Check: 1d20+5 = [1]+5 = 6 (DC 2) → critical failure",
    ),
]


@pytest.mark.parametrize(("args", "zh", "en"), GOLDEN)
def test_golden_lines_for_fixed_seeds(args: tuple[str, str, int | None, int], zh: str, en: str):
    expr, mode, dc, seed = args
    assert roll(expr, mode, dc, new_rng(seed)).line("zh") == zh
    assert roll(expr, mode, dc, new_rng(seed)).line("en") == en


def test_same_seed_same_roll_and_rng_state_round_trip():
    rng = new_rng(42)
    roll("3d6", "normal", None, rng)
    saved = rng_state(rng)
    after = roll("4d10+2", "exploding", 20, rng)
    replayed = roll("4d10+2", "exploding", 20, rng_from_state(saved))
    assert after.to_dict() == replayed.to_dict()


@pytest.mark.parametrize("seed", range(40))
def test_normal_total_is_sum_of_faces_plus_modifier(seed: int):
    rolled = roll("3d8+1d4-2", "normal", None, new_rng(seed))
    assert rolled.total == sum(rolled.rolls) - 2
    assert [t.sides for t in rolled.dice] == [8, 4]
    assert all(1 <= f <= 8 for f in rolled.dice[0].rolls) and len(rolled.rolls) == 4


@pytest.mark.parametrize("seed", range(40))
def test_advantage_keeps_higher_set_and_disadvantage_lower(seed: int):
    adv = roll("2d10", "advantage", None, new_rng(seed))
    sums = [sum(f for t in s.dice() for f in t.rolls) for s in adv.sets]
    assert adv.total == max(sums)
    assert adv.to_dict()["all_rolls"] == [[f for t in s.dice() for f in t.rolls] for s in adv.sets]
    dis = roll("2d10", "disadvantage", None, new_rng(seed))
    assert dis.total == min(sums)  # same seed, same two sets


def test_tie_keeps_the_first_set():
    rolled = roll("1d4", "disadvantage", None, new_rng(0))
    assert rolled.set_dice(0)[0].rolls == rolled.set_dice(1)[0].rolls
    assert rolled.chosen == 0 and rolled.to_dict()["chosen_index"] == 0


def test_exploding_is_capped_per_die():
    rolled = roll("3d1", "exploding", None, new_rng(0))  # a d1 always shows its maximum
    assert rolled.rolls == [1, 1, 1]
    assert len(rolled.explosions) == 3 * MAX_EXPLOSIONS
    assert rolled.total == 3 * (1 + MAX_EXPLOSIONS)


@pytest.mark.parametrize("seed", range(60))
def test_exploding_rerolls_only_maximum_faces(seed: int):
    rolled = roll("4d4", "exploding", None, new_rng(seed))
    for face, term in ((f, t) for t in rolled.dice for f in t.rolls):
        assert 1 <= face <= term.sides
    chain_starts = sum(1 for f in rolled.rolls if f == 4)
    assert (chain_starts == 0) == (rolled.explosions == [])
    assert rolled.total == sum(rolled.rolls) + sum(rolled.explosions)


def test_criticals_only_on_a_single_d20():
    # Same faces, different dice: a d6 showing 1 or a d100 showing 20 is no critical.
    for seed in range(200):
        small = roll("1d6", "normal", 3, new_rng(seed))
        assert small.critical is None
        big = roll("1d100", "normal", 50, new_rng(seed))
        assert big.critical is None
        two = roll("2d20", "normal", None, new_rng(seed))
        assert two.critical is None


def test_critical_overrides_the_dc_and_needs_an_added_d20():
    hit = roll("1d20+5", "normal", 30, new_rng(5))
    assert (hit.critical, hit.success) == ("success", True)
    miss = roll("1d20+5", "normal", 2, new_rng(31))
    assert (miss.critical, miss.success) == ("failure", False)
    subtracted = roll("10-1d20", "normal", None, new_rng(5))
    assert subtracted.critical is None
    with_bonus_die = roll("1d20+1d4", "normal", None, new_rng(5))
    assert with_bonus_die.dice[0].rolls == (20,) and with_bonus_die.critical == "success"


def test_dc_from_text_and_no_dc():
    assert roll("1d20", "normal", "15", new_rng(7)).dc == 15
    assert roll("1d20", "normal", 15.0, new_rng(7)).dc == 15
    no_dc = roll("1d20", None, "", new_rng(7))
    assert no_dc.dc is None and no_dc.success is None and no_dc.mode == "normal"


def test_mode_aliases():
    assert roll("d20", "优势", None, new_rng(1)).mode == "advantage"
    assert roll("d20", "ADV", None, new_rng(1)).mode == "advantage"
    assert roll("d20", "爆炸", None, new_rng(1)).mode == "exploding"


def test_grammar_accepts_spaces_case_and_bare_d():
    tree = parse(" 2D6 + d4 - 3 ")
    assert tree == BinOp("-", BinOp("+", Dice(2, 6), Dice(1, 4)), Num(3))
    assert render(tree) == "2d6+1d4-3"
    assert roll(" 2D6 + d4 - 3 ", "normal", None, new_rng(1)).expr == "2d6+1d4-3"


def test_plus_zero_prints_only_when_written():
    assert roll("1d6", "normal", None, new_rng(1)).line("zh").startswith("检定结果：1d6 = [")
    assert "]+0 = " in roll("1d6+0", "normal", None, new_rng(1)).line("zh")


ERRORS = [
    ("", "normal", None, "missing dice expression", "缺少骰子表达式"),
    (None, "normal", None, "missing dice expression", "缺少骰子表达式"),
    ("2x6", "normal", None, "invalid dice expression '2x6'", "无法识别的骰子表达式「2x6」"),
    ("1d20+", "normal", None, "invalid dice expression '1d20+'", "无法识别"),
    ("1d20 5", "normal", None, "invalid dice expression '1d20 5'", "无法识别"),
    ("1 d20", "normal", None, "invalid dice expression '1 d20'", "无法识别"),
    ("d", "normal", None, "invalid dice expression 'd'", "无法识别"),
    ("5", "normal", None, "has no dice", "没有骰子"),
    ("0d6", "normal", None, "'0d6' rolls no dice", "至少掷 1 个"),
    ("1d0", "normal", None, "'1d0': a die has 1 to 1000 sides", "面数应在 1 到 1000"),
    ("1d1001", "normal", None, "a die has 1 to 1000 sides", "面数"),
    ("101d6", "normal", None, "rolls 101 dice, at most 100", "要掷 101 个骰子"),
    ("60d6+41d4", "normal", None, "rolls 101 dice, at most 100", "每次最多 100 个"),
    ("1d6+20000", "normal", None, "at most 10000", "最大为 10000"),
    ("1d2" + "+1" * 20, "normal", None, "has 21 terms, at most 20", "最多 20 项"),
    ("1d6" * 40, "normal", None, "too long (120 characters, at most 100)", "过长"),
    ("1d20", "sideways", None, "unknown dice mode 'sideways'", "未知的掷骰模式「sideways」"),
    ("1d20", "normal", "hard", "dc must be a whole number, got 'hard'", "dc 必须是整数"),
    ("1d20", "normal", 12.5, "got '12.5'", "「12.5」"),
    ("1d20", "normal", True, "got 'True'", "dc 必须是整数"),
    ("1d20", "normal", "nan", "got 'nan'", "dc 必须是整数"),
]


@pytest.mark.parametrize(("expr", "mode", "dc", "en", "zh"), ERRORS)
def test_errors_name_what_is_wrong(expr: str, mode: str, dc: object, en: str, zh: str):
    with pytest.raises(DiceError) as caught:
        roll(expr, mode, dc, new_rng(1))
    assert en in caught.value.message
    assert zh in caught.value.localized("zh")
    assert "\n" not in caught.value.message
    assert isinstance(caught.value, ToolError)


def test_huge_counts_fail_fast_without_rolling():
    rng = new_rng(3)
    before = rng.getstate()
    with pytest.raises(DiceError):
        roll("99999999999d6", "normal", None, rng)
    assert rng.getstate() == before


def test_uses_only_the_given_rng():
    random.seed(1)
    global_before = random.getstate()
    roll("10d10", "advantage", None, new_rng(9))
    assert random.getstate() == global_before
