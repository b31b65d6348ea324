"""Benchmark the tools layer: code-tool calls in QuickJS and dice rolls.

    python benchmarks/tools.py [--rounds 15]

Prints medians over ``--rounds`` batches, and ratios against a baseline measured in the same
run: a pure-Python function doing the same arithmetic, and a bare ``rng.randint`` roll.

- code tool, run_code: what the runner pays per call: a round trip to the helper process, a new
  QuickJS context there, the host bootstrap, compiling the tool body, running it, JSON both ways.
- code tool, fresh context in-process: the same without the helper process (its IPC cost).
- code tool, warm: the compiled function called again in an existing context: the cost a pooled
  context would have, i.e. what the fresh-context isolation costs on top.
The helper process start (once per session) is timed on its own.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import quickjs

from narrative_cli.rng import new_rng
from narrative_cli.tools.dice import roll
from narrative_cli.tools.sandbox import run_code, run_in_process, shutdown

CODE = "const dmg = params.base_damage - (params.armor || 0); return Math.max(1, dmg);"
PARAMS = {"base_damage": 12, "armor": 5}
STATE = {"hp": 30, "主角": {"生命值": 80, "装备": ["扫描器", "维修工具包"]}}


def per_call_us(fn: Callable[[], object], calls: int, rounds: int) -> float:
    """Median microseconds per call over ``rounds`` batches of ``calls`` calls."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def python_damage() -> object:
    params = json.loads(json.dumps(PARAMS))
    return max(1, params["base_damage"] - (params.get("armor") or 0))


def warm_call() -> Callable[[], object]:
    context = quickjs.Context()
    context.set_memory_limit(32 * 1024 * 1024)
    context.set_time_limit(1.0)
    function = context.eval(f"(function (params, state) {{\n{CODE}\n}})")
    params_json, state_json = json.dumps(PARAMS), json.dumps(STATE, ensure_ascii=False)

    def call() -> object:
        result = function(context.parse_json(params_json), context.parse_json(state_json))
        return json.loads(json.dumps(result))

    return call


def in_process() -> object:
    request = {"op": "run", "code": CODE, "params": json.dumps(PARAMS), "seed": 1}
    request.update(state=json.dumps(STATE), time=1.0, memory=32 * 1024 * 1024)
    return run_in_process(request).value


def helper_start_ms(rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        shutdown()
        start = time.perf_counter()
        run_code("return 1", {}, {})
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    assert run_code(CODE, PARAMS, STATE).value == python_damage() == 7

    baseline = per_call_us(python_damage, 2000, rounds)
    start = helper_start_ms(max(3, rounds // 3))
    cold = per_call_us(lambda: run_code(CODE, PARAMS, STATE), 200, rounds)
    fresh = per_call_us(in_process, 200, rounds)
    warm = per_call_us(warm_call(), 2000, rounds)
    print(f"code tool (median of {rounds} rounds, µs per call)")
    print(f"  pure-Python baseline          {baseline:9.2f}")
    print(f"  run_code (helper, new ctx)    {cold:9.2f}   ×{cold / baseline:.0f} baseline")
    print(f"  fresh context, in-process     {fresh:9.2f}   ×{fresh / baseline:.0f} baseline")
    print(f"  warm (reused context)         {warm:9.2f}   ×{warm / baseline:.0f} baseline")
    print(f"  cold/warm ×{cold / warm:.0f}; helper process start {start:.0f} ms (once)")

    rng = new_rng(1)
    bare = per_call_us(lambda: rng.randint(1, 20) + 5 >= 15, 20000, rounds)
    cases = [
        ("1d20+5 dc15", "1d20+5", "normal", 15),
        ("1d20+5 advantage", "1d20+5", "advantage", 15),
        ("2d6+1d4+3", "2d6+1d4+3", "normal", None),
        ("6d6 exploding", "6d6", "exploding", None),
    ]
    print(f"dice (median of {rounds} rounds)")
    print(f"  bare rng.randint baseline {1e6 / bare:12,.0f} rolls/s")
    for label, expr, mode, dc in cases:
        us = per_call_us(lambda e=expr, m=mode, d=dc: roll(e, m, d, rng), 5000, rounds)
        print(f"  {label:<25} {1e6 / us:12,.0f} rolls/s   ×{us / bare:.0f} baseline time")


if __name__ == "__main__":
    main()
