"""Dice engine: our grammar against the ``d20`` package, for correctness and speed.

    python benchmarks/dice.py [--rolls 3000] [--speed 20000]

``d20`` is optional (``pip install d20`` into any directory on PYTHONPATH); without it only
our figures are printed. Correctness: for each expression in the notation Chinese TRPG cards
and Roll20 use, does the engine accept it, and over ``--rolls`` seeded rolls does every result
stay inside the exact range and the mean land within 4 standard errors of the exact mean?
Speed: rolls per second on the expressions both engines accept, and the ratio (same run, same
machine, so the ratio holds when the machine is busy).
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import statistics
import time
from collections.abc import Callable
from fractions import Fraction

from narrative_cli.tools.dice import roll

Exact = dict[int, Fraction]


def _dist(faces: list[range], value: Callable[[tuple[int, ...]], int]) -> Exact:
    outcomes = list(itertools.product(*faces))
    counts: dict[int, int] = {}
    for outcome in outcomes:
        counts[value(outcome)] = counts.get(value(outcome), 0) + 1
    return {k: Fraction(v, len(outcomes)) for k, v in counts.items()}


def _pool() -> Exact:
    return {k: Fraction(math.comb(6, k)) * Fraction(3, 10) ** k * Fraction(7, 10) ** (6 - k)
            for k in range(7)}  # fmt: skip


def _explode() -> Exact:
    exact: Exact = {}
    for chain in range(11):
        for last in range(1, 6):
            exact[6 * chain + last] = Fraction(1, 6) ** (chain + 1)
    exact[66] = Fraction(1, 6) ** 11
    return exact


def _reroll_once_below_3() -> Exact:
    """A 1 or 2 is rolled again once: each face gets 2/36 from the reroll, 3-6 also 1/6."""
    return {f: Fraction(2, 36) + (Fraction(1, 6) if f >= 3 else 0) for f in range(1, 7)}


d6, d10, d20 = range(1, 7), range(1, 11), range(1, 21)
CASES: list[tuple[str, Exact]] = [
    ("1d20+5", {k + 5: Fraction(1, 20) for k in d20}),
    ("4d6kh3", _dist([d6] * 4, lambda o: sum(sorted(o)[1:]))),
    ("4d6dl1", _dist([d6] * 4, lambda o: sum(sorted(o)[1:]))),
    ("2d20kh1", _dist([d20] * 2, max)),
    ("3d6*5", _dist([d6] * 3, lambda o: 5 * sum(o))),
    ("(2d6+6)*5", _dist([d6] * 2, lambda o: 5 * (sum(o) + 6))),
    ("d%", {k: Fraction(1, 100) for k in range(1, 101)}),
    ("4dF", _dist([range(-1, 2)] * 4, sum)),
    ("6d10>=8", _pool()),
    ("1d6!", _explode()),
    ("1d6r1", {k: Fraction(1, 5) for k in range(2, 7)}),
    ("1d6ro<3", _reroll_once_below_3()),
]


def ours(expr: str, rng: random.Random) -> int:
    return roll(expr, "normal", None, rng).total


def load_d20() -> Callable[[str, random.Random], int] | None:
    try:
        import d20  # type: ignore[import-not-found]
    except ImportError:
        return None

    def theirs(expr: str, rng: random.Random) -> int:
        d20.expression.random = rng  # d20 draws from the random module it imported
        return int(d20.roll(expr).total)

    return theirs


def correctness(engine: Callable[[str, random.Random], int], rolls: int) -> list[str]:
    verdicts = []
    for expr, exact in CASES:
        assert sum(exact.values()) == 1, expr
        rng = random.Random(20)
        try:
            values = [engine(expr, rng) for _ in range(rolls)]
        except Exception as error:  # noqa: BLE001 - any refusal is the verdict
            verdicts.append(f"refused ({type(error).__name__})")
            continue
        mean = float(sum(k * p for k, p in exact.items()))
        sd = math.sqrt(float(sum((k - mean) ** 2 * p for k, p in exact.items())))
        inside = all(v in exact for v in values)
        close = abs(statistics.fmean(values) - mean) <= 4 * sd / math.sqrt(rolls) + 1e-9
        verdicts.append("correct" if inside and close else "WRONG")
    return verdicts


def speed(engine: Callable[[str, random.Random], int], exprs: list[str], n: int) -> float:
    rng = random.Random(7)
    started = time.perf_counter()
    for index in range(n):
        engine(exprs[index % len(exprs)], rng)
    return n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rolls", type=int, default=3000, help="rolls per correctness case")
    parser.add_argument("--speed", type=int, default=20000, help="rolls per speed run")
    parser.add_argument("--rounds", type=int, default=3, help="speed runs; the median is shown")
    args = parser.parse_args()
    theirs = load_d20()
    mine = correctness(ours, args.rolls)
    other = correctness(theirs, args.rolls) if theirs else ["(d20 not installed)"] * len(CASES)
    print(f"{'expression':<12} {'narrative-cli':<16} d20")
    for (expr, _), a, b in zip(CASES, mine, other, strict=True):
        print(f"{expr:<12} {a:<16} {b}")
    print(f"correct: ours {mine.count('correct')}/{len(CASES)}, "
          f"d20 {other.count('correct')}/{len(CASES)}")  # fmt: skip
    both = [e for (e, _), a, b in zip(CASES, mine, other, strict=True) if a == b == "correct"]
    both = both or [e for e, _ in CASES if e in ("1d20+5", "4d6kh3", "3d6*5")]
    rates: list[tuple[float, float]] = []
    for _ in range(args.rounds):  # alternate, so a busy moment hits both engines
        mine_rate = speed(ours, both, args.speed)
        their_rate = speed(theirs, both, args.speed) if theirs else float("nan")
        rates.append((mine_rate, their_rate))
    ours_rate = statistics.median(r[0] for r in rates)
    print(f"speed on {', '.join(both)}: ours {ours_rate:,.0f} rolls/s", end="")
    if theirs:
        their_rate = statistics.median(r[1] for r in rates)
        ratios = sorted(a / b for a, b in rates)
        print(f", d20 {their_rate:,.0f} rolls/s (ours {ours_rate / their_rate:.2f}×; "
              f"per round {', '.join(f'{r:.2f}×' for r in ratios)})")  # fmt: skip
    else:
        print()


if __name__ == "__main__":
    main()
