"""Two versions of the lore engine, pass by pass in lock-step: is the new one faster?

On a shared machine the load changes from one second to the next, so timing one version and
then the other compares the load as much as the code. Here two worker processes, one per source
tree, build the same synthetic world as ``benchmarks/lore.py`` and take turns: base cold, new
cold, base warm, new warm, and so on (the order flips every round). The figures are medians and
minima of each, and the median of the per-round ratios new / base, which the load barely moves.

    python benchmarks/lore_ab.py BASE_SRC [NEW_SRC] [--size 5000] [--rounds 101]

BASE_SRC is a ``src`` folder of the old code, e.g. from ``git worktree add /tmp/base main``;
NEW_SRC defaults to this checkout's ``src``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = """
import sys, time
sys.path.insert(0, {benchmarks!r})
import lore
from narrative_cli.lore.engine import LoreSettings, activate
from narrative_cli.lore.index import index_for
entries, history = lore.make_world({size})
settings = LoreSettings(depth=None)
user_input = history.pop()
index = index_for(entries, settings)
activate(index, history=history, user_input=user_input, settings=settings)
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "cold":
        index.probes.clear_memo()
    wall, cpu = time.perf_counter(), time.process_time()
    activate(index, history=history, user_input=user_input, settings=settings)
    print((time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3, flush=True)
"""
Times = dict[tuple[str, str], list[tuple[float, float]]]


def start(src: str, size: int) -> subprocess.Popen[str]:
    code = WORKER.format(benchmarks=str(ROOT / "benchmarks"), size=size)
    worker = subprocess.Popen(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=src),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdin is not None and worker.stdout is not None
    if worker.stdout.readline().strip() != "ready":
        raise SystemExit(f"the worker for {src} did not start")
    return worker


def one_pass(worker: subprocess.Popen[str], mode: str) -> tuple[float, float]:
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(mode + "\n")
    worker.stdin.flush()
    wall, cpu = worker.stdout.readline().split()
    return float(wall), float(cpu)


def measure(trees: dict[str, str], size: int, rounds: int) -> Times:
    workers = {name: start(src, size) for name, src in trees.items()}
    times: Times = {(name, mode): [] for name in trees for mode in ("cold", "warm")}
    try:
        for round_no in range(rounds):
            order = list(workers.items())
            if round_no % 2:
                order.reverse()
            for mode in ("cold", "warm"):
                for name, worker in order:
                    times[(name, mode)].append(one_pass(worker, mode))
    finally:
        for worker in workers.values():
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait()
    return times


def report(times: Times, size: int, rounds: int) -> None:
    print(f"{size} entries, {rounds} rounds, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'pass':<5} {'code':<5} {'wall med':>9} {'wall min':>9} {'cpu med':>8} {'cpu min':>8}")
    for mode in ("cold", "warm"):
        for name in ("base", "new"):
            walls = [wall for wall, _ in times[(name, mode)]]
            cpus = [cpu for _, cpu in times[(name, mode)]]
            print(
                f"{mode:<5} {name:<5} {statistics.median(walls):9.2f} {min(walls):9.2f} "
                f"{statistics.median(cpus):8.2f} {min(cpus):8.2f}"
            )
        pairs = zip(times[("base", mode)], times[("new", mode)], strict=True)
        ratio = statistics.median(new[0] / base[0] for base, new in pairs)
        print(f"{mode:<5} new / base wall, median of the per-round ratios: {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", help="src folder of the code to compare with")
    parser.add_argument("new", nargs="?", default=str(ROOT / "src"), help="default: ./src")
    parser.add_argument("--size", type=int, default=5000, help="entries (default 5000)")
    parser.add_argument("--rounds", type=int, default=101, help="rounds (default 101)")
    args = parser.parse_args()
    times = measure({"base": args.base, "new": args.new}, args.size, args.rounds)
    report(times, args.size, args.rounds)


if __name__ == "__main__":
    main()
