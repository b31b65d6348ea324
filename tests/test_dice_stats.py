"""The dice engine's distributions against their exact probabilities (chi-square, fixed seeds).

Each exact distribution is computed by enumerating every outcome (or by the closed form for
exploding dice); each test rolls 10,000 times with a fixed seed and compares the counts with
a chi-square test at p = 0.001. The seeds are fixed, so a test gives the same verdict on
every run; a wrong distribution (a keep-lowest where keep-highest belongs, a bonus die that
keeps the worse result, an explosion that stops early) fails it by a wide margin.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import pytest

from narrative_cli.rng import new_rng
from narrative_cli.tools.dice import roll
from narrative_cli.tools.dice_checks import check, coc_d100
from narrative_cli.tools.dice_eval import MAX_EXPLOSIONS

ROLLS = 10_000


def chi_square(observed: Counter[int], exact: dict[int, Fraction], n: int) -> tuple[float, int]:
    """(statistic, degrees of freedom), merging the rarest outcomes until each bin expects ≥ 5."""
    bins: list[tuple[float, int]] = []
    expected_acc, observed_acc = 0.0, 0
    for value in sorted(exact):
        expected_acc += float(exact[value]) * n
        observed_acc += observed.get(value, 0)
        if expected_acc >= 5:
            bins.append((expected_acc, observed_acc))
            expected_acc, observed_acc = 0.0, 0
    if expected_acc and bins:
        last_e, last_o = bins.pop()
        bins.append((last_e + expected_acc, last_o + observed_acc))
    assert sum(o for _, o in bins) == n, "an outcome the exact distribution does not allow"
    statistic = sum((o - e) ** 2 / e for e, o in bins)
    return statistic, len(bins) - 1


def critical_value(df: int, z: float = 3.090) -> float:
    """The chi-square value exceeded with probability 0.001 (Wilson–Hilferty)."""
    h = 2 / (9 * df)
    return df * (1 - h + z * math.sqrt(h)) ** 3


def assert_matches(sample: Callable[[], int], exact: dict[int, Fraction]) -> None:
    assert sum(exact.values()) == 1
    observed = Counter(sample() for _ in range(ROLLS))
    statistic, df = chi_square(observed, exact, ROLLS)
    assert statistic < critical_value(df), (statistic, df, observed.most_common(5))


def enumerate_dist(
    faces: list[range], value: Callable[[tuple[int, ...]], int]
) -> dict[int, Fraction]:
    outcomes = list(itertools.product(*faces))
    counts = Counter(value(o) for o in outcomes)
    return {k: Fraction(v, len(outcomes)) for k, v in counts.items()}


def test_advantage_on_a_d20() -> None:
    rng = new_rng(101)
    exact = {k: Fraction(2 * k - 1, 400) for k in range(1, 21)}
    assert_matches(lambda: roll("1d20", "advantage", None, rng).total, exact)
    lowest = {21 - k: p for k, p in exact.items()}
    assert_matches(lambda: roll("1d20", "disadvantage", None, rng).total, lowest)
    assert_matches(lambda: roll("2d20kh1", "normal", None, rng).total, exact)


def test_keep_highest_three_of_four_d6() -> None:
    rng = new_rng(202)
    exact = enumerate_dist([range(1, 7)] * 4, lambda o: sum(sorted(o)[1:]))
    assert_matches(lambda: roll("4d6kh3", "normal", None, rng).total, exact)
    assert_matches(lambda: roll("4d6dl1", "normal", None, rng).total, exact)


def test_exploding_d6() -> None:
    rng = new_rng(303)
    exact: dict[int, Fraction] = {}
    for chain in range(MAX_EXPLOSIONS + 1):  # chain sixes, then a face 1-5 (or the cap)
        for last in range(1, 6):
            exact[6 * chain + last] = Fraction(1, 6) ** (chain + 1)
    exact[6 * (MAX_EXPLOSIONS + 1)] = Fraction(1, 6) ** (MAX_EXPLOSIONS + 1)
    assert_matches(lambda: roll("1d6!", "normal", None, rng).total, exact)


@pytest.mark.parametrize(("net", "seed"), [(1, 404), (2, 405), (-1, 406), (0, 407)])
def test_call_of_cthulhu_bonus_and_penalty_dice(net: int, seed: int) -> None:
    rng = new_rng(seed)
    pick = min if net > 0 else max

    def value(outcome: tuple[int, ...]) -> int:
        units, *tens = outcome
        return pick(t * 10 + units or 100 for t in tens)

    exact = enumerate_dist([range(10)] * (2 + abs(net)), value)
    assert_matches(lambda: coc_d100(net, rng)[0], exact)


def test_call_of_cthulhu_check_uses_the_bonus_dice() -> None:
    rng = new_rng(408)
    exact = enumerate_dist(
        [range(10)] * 3, lambda o: min(o[1] * 10 + o[0] or 100, o[2] * 10 + o[0] or 100)
    )
    assert_matches(lambda: check({"system": "coc7", "skill": 50, "bonus": 1}, rng).total, exact)


def test_success_pool_and_fudge_dice() -> None:
    rng = new_rng(509)
    binomial = {k: Fraction(math.comb(6, k)) * Fraction(3, 10) ** k * Fraction(7, 10) ** (6 - k)
                for k in range(7)}  # fmt: skip
    assert_matches(lambda: roll("6d10>=8", "normal", None, rng).total, binomial)
    fudge = enumerate_dist([range(-1, 2)] * 4, sum)
    assert_matches(lambda: roll("4dF", "normal", None, rng).total, fudge)


def test_the_test_catches_a_wrong_distribution() -> None:
    """Keep-lowest measured against keep-highest fails: the check has teeth."""
    rng = new_rng(610)
    exact = enumerate_dist([range(1, 7)] * 4, lambda o: sum(sorted(o)[1:]))
    with pytest.raises(AssertionError):
        assert_matches(lambda: roll("4d6kl3", "normal", None, rng).total, exact)
