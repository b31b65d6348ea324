"""The search stage's own CPU time per turn (issue 17 item 4, session nine), two code versions
run alternately in child processes.

    python benchmarks/search_stage.py --log LOG --responses TRACE [--before SRC] [--runs 3]
    python benchmarks/search_stage.py --long 2000 [--before SRC] [--runs 2] [--samples 10]

``--log``: the recorded log replayed in one process (``narrative replay LOG --responses``);
the stage (``pipeline.search_recall.search_stage``: the index's sync and both searches) is
timed on the turn's thread each turn. Printed: its mean per turn, over turns 401-500 and over
the last 100, and its share of the process's CPU time (start-up included).

``--long N``: ``long_story.py``'s story fast-forwarded to turn 10 and to turn N (the session
database's index attached); the median stage time of ``--samples`` turns at each point (the
first two after the jump left out: the first writes the whole story into the index). Its
term memory is new at each point, so every word is asked of FTS5 at least once, as after a
resume.

With ``--before SRC`` the same is measured for the code in SRC (a copy of main's ``src``),
run for run alternately: read the ratios, the machine's speed moves.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CARD = ROOT / "sample_cards" / "lantern-keeper.png"


def _timed_stage() -> list[float]:
    """Wrap the orchestrator's ``search_stage`` so each call's thread time is noted."""
    import narrative_cli.pipeline.orchestrator as orchestrator

    times: list[float] = []
    stage = orchestrator.search_stage

    def timed(*args: Any) -> None:
        started = time.thread_time()
        stage(*args)
        times.append(time.thread_time() - started)

    orchestrator.search_stage = timed  # type: ignore[assignment]
    return times


def child_log(log: str, responses: str) -> dict[str, float]:
    times = _timed_stage()
    from narrative_cli.cli.app import main

    started = time.process_time()
    try:
        main(["replay", log, "--card", str(CARD), "--responses", responses])
    except SystemExit:
        pass
    total = time.process_time() - started
    return {
        "mean_ms": statistics.mean(times) * 1000,
        "t401_500_ms": statistics.mean(times[400:500]) * 1000,
        "last100_ms": statistics.mean(times[-100:]) * 1000,
        "share": sum(times) / total,
    }


def child_long(turn: int, samples: int) -> dict[str, float]:
    times = _timed_stage()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import long_story

    found = {}
    for point in (10, turn):
        times.clear()
        long_story.overhead_at(point, samples)
        found[str(point)] = statistics.median(times[2:]) * 1000
    return found


def run_child(source: str, arguments: list[str], home: Path) -> dict[str, float]:
    env = {**os.environ, "NARRATIVE_HOME": str(home)}
    env["PYTHONPATH"] = os.pathsep.join([source, *env.get("PYTHONPATH", "").split(os.pathsep)])
    command = [sys.executable, __file__, "--child", *arguments]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the measured child failed: {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log")
    parser.add_argument("--responses")
    parser.add_argument("--long", type=int, default=0)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--before", metavar="SRC")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        found = child_long(args.long, args.samples) if args.long else child_log(
            args.log, args.responses
        )
        print(json.dumps(found))
        return
    if not args.long and not (args.log and args.responses):
        parser.error("give --log and --responses, or --long N")
    arguments = ["--long", str(args.long), "--samples", str(args.samples)] if args.long else [
        "--log", args.log, "--responses", args.responses
    ]
    sources = {"AFTER": str(ROOT / "src")}
    if args.before:
        sources = {"BEFORE": args.before, **sources}
    found: dict[str, list[dict[str, float]]] = {name: [] for name in sources}
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            for name, source in sources.items():
                found[name].append(run_child(source, arguments, Path(folder) / f"{name}{run}"))
    load = os.getloadavg()[0]
    for name, results in found.items():
        keys = results[0].keys()
        medians = {key: statistics.median(r[key] for r in results) for key in keys}
        shown = ", ".join(
            f"{key} {value:.1%}" if key == "share" else f"{key} {value:.3f} ms"
            for key, value in medians.items()
        )
        print(f"{name}: {shown} (median of {args.runs}, load {load:.1f})")
        if args.long:
            ratio = medians[str(args.long)] / medians["10"]
            print(f"  turn {args.long} / turn 10: {ratio:.2f}x")


if __name__ == "__main__":
    main()
