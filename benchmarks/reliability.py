"""Reliability checks benchmark (issue #13): what the new guards cost, and how fast a hostile
reply is refused.

1. Reply parsing: ``parse_analysis`` on an ordinary analysis reply (5 events, 2 summary
   entries) against the baseline ``json.loads`` of the same text, in the same run: the ratio
   is the price of repair, schema checks, the depth / NaN walks and the surrogate scan.
2. Hostile replies: a 200,000-level nesting bomb, a 1 MB summary entry and a reply full of
   NaN, each through ``parse_analysis``: time to a clean refusal (before: RecursionError, a
   stored megabyte, an unstorable turn).
3. The export guard: ``held.check_target`` per call, against a bare ``os.stat`` baseline.

    python benchmarks/reliability.py [--rounds 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from narrative_cli import held  # noqa: E402
from narrative_cli.agents.parsing import parse_analysis  # noqa: E402

ORDINARY = json.dumps(
    {
        "events": [
            {"type": "move", "params": {"location": "灯塔顶层"}},
            {"type": "add_item", "params": {"item": "brass key", "quantity": 1}},
            {"type": "modify_relationship", "params": {"npc": "Edda", "delta": 5}},
            {"type": "set_flag", "params": {"flag": "lamp_lit", "value": True}},
            {"type": "pass_time", "params": {"minutes": 20}},
        ],
        "summary_entries": ["雾中，学徒和艾达点亮了灯。", "A ship answered the light."],
    },
    ensure_ascii=False,
)
BOMB = '{"events": ' + "[" * 200_000 + "]" * 200_000 + ', "summary_entries": []}'
HUGE = json.dumps({"events": [], "summary_entries": ["fog " * 262_144]})
NAN_EVENT = '{"type": "set_flag", "params": {"flag": "f", "value": NaN}}'
NANS = '{"events": [' + ",".join([NAN_EVENT] * 12) + '], "summary_entries": ["x"]}'


def median_us(action: Callable[[], object], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2000)
    rounds = parser.parse_args().rounds

    ours = median_us(lambda: parse_analysis(ORDINARY), rounds)
    base = median_us(lambda: json.loads(ORDINARY), rounds)
    print(f"ordinary reply: parse_analysis {ours:.1f} µs, json.loads {base:.1f} µs "
          f"({ours / base:.1f}× the baseline)")
    for label, text in (("200,000-level bomb", BOMB), ("1 MB summary entry", HUGE),
                        ("12 NaN events", NANS)):
        result = parse_analysis(text)
        took = median_us(lambda t=text: parse_analysis(t), max(3, rounds // 200))
        what = "; ".join(result.errors or result.cuts)[:70]
        print(f"{label}: {took / 1000:.2f} ms to refuse ({what}…)")

    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "out.jsonl"
        held.hold(Path(folder) / "sessions.db", "a test database", sidecars=True)
        guard = median_us(lambda: held.check_target(target, force=True), rounds)
        stat = median_us(lambda: os.path.lexists(target), rounds)
        print(f"export guard: {guard:.1f} µs per check, os.path.lexists {stat:.1f} µs "
              f"(+{guard - stat:.1f} µs per export)")


if __name__ == "__main__":
    main()
