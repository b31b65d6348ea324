"""Regex-script benchmark: what the prompt history costs through a card's prompt-side scripts.

Our own scripts (MVU-style: strip the update block, hide the status placeholder, a named-group
rewrite, a depth-limited summary strip) over a history of N turns of about 1,000 characters
each. Measured in one run, with the sandbox's helper process already started:

1. batched: every text of the history in one sandbox call (``RegexScripts.apply_many``, what a
   turn does);
2. baseline: the same texts, one sandbox call each (``RegexScripts.apply``).

Medians in milliseconds and the ratio batched / baseline.

    python benchmarks/regex_scripts.py [--turns 20] [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from narrative_cli.domain import RegexScript  # noqa: E402
from narrative_cli.regex.scripts import AI_OUTPUT, USER_INPUT, RegexScripts  # noqa: E402

SCRIPTS = [
    RegexScript("strip update", r"/<UpdateVariable>[\s\S]*?<\/UpdateVariable>/gm", "",
                placement=[2], prompt_only=True),
    RegexScript("hide placeholder", "<StatusPlaceHolderImpl/>", "", placement=[2],
                prompt_only=True),
    RegexScript("named", r"/(?<=HP:\s*)(?<hp>\d+)/g", "$<hp> points", placement=[1, 2]),
    RegexScript("old summaries", r"/<summary>([\s\S]*?)<\/summary>/g", "$1", placement=[2],
                prompt_only=True, min_depth=10),
]  # fmt: skip
TEXT = "她推开门，晨光洒进来。HP: 12。" * 60 + "\n<UpdateVariable>_.set('a', 1);</UpdateVariable>"


def items(turns: int) -> list[tuple[str, int, int | None]]:
    out: list[tuple[str, int, int | None]] = []
    for depth in range(1, 2 * turns, 2):
        out += [
            (TEXT + "\n<StatusPlaceHolderImpl/>", AI_OUTPUT, depth),
            ("我走。", USER_INPUT, depth + 1),
        ]
    return out


def median_ms(run: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    scripts = RegexScripts(SCRIPTS, target="prompt")
    history = items(args.turns)
    batched = scripts.apply_many(history)
    assert batched == [scripts.apply(t, p, d) for t, p, d in history], "batched output differs"
    many = median_ms(lambda: scripts.apply_many(history), args.runs)
    each = median_ms(lambda: [scripts.apply(t, p, d) for t, p, d in history], args.runs)
    print(f"history of {args.turns} turns ({len(history)} texts), median of {args.runs} runs")
    print(f"batched (one call):      {many:8.1f} ms")
    print(f"baseline (call per text): {each:8.1f} ms")
    print(f"batched / baseline:       {many / each:8.2f}")


if __name__ == "__main__":
    main()
