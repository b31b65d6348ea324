"""Benchmark ``narrative replay`` with recorded responses (no model): turns per second.

    python benchmarks/replay.py [--turns 500] [--logs 20] [--log-turns 50] [--jobs 4] [--rounds 3]

Setup (not timed): the sample card ``lantern-keeper.png`` (dice and code tools, an llm tool,
MVU variables: every stage of the pipeline runs), a SillyTavern log of ``--turns`` user
messages and ``--logs`` logs of ``--log-turns`` messages, each replayed once live against the
scripted loopback server (``tests/servers.py``) with ``--trace`` to record the responses.

Measured, ``--rounds`` times each, every round into a fresh session database:

1. the long log replayed with ``--responses``: turns per second; the baseline is the same log
   replayed live against the loopback server in the same run (the recording pass);
2. per-turn cost at turn 10 against turn ``--turns``: wall time per turn (medians of the ten
   turns around each point) and prompt tokens per turn, as ratios;
3. the ``--logs`` logs with ``--responses`` and ``--jobs N``: turns per second; the baseline is
   the same logs with ``--jobs 1``.

With ``--whole-process N,M,...`` (issue 17) only this runs instead: for each length a log is
recorded live, then ``narrative replay LOG --card CARD --responses TRACE`` runs as its own
process: turns per second with start-up included (wall time, and per CPU second of the process
and its QuickJS helper, which a loaded machine does not inflate), the peak memory (max RSS),
and the trace folder's size; each length against the first. ``--keep DIR`` keeps the recorded
logs and traces in DIR and reuses them next time (recording 2,000 turns live takes half an
hour on a loaded machine); ``--runs N`` replays each N times and keeps the fastest.

    python benchmarks/replay.py --whole-process 500,2000 --keep /tmp/replay-logs --runs 2
    python benchmarks/replay.py --whole-process 500 --keep /tmp/replay-logs --before /work/main/src

The recorded story differs every turn (``VariedStory``). The replays read our modules'
compiled bytecode, compiled once beforehand (and by a first, uncounted replay for the standard
library's modules) as an installed package's is (``--no-bytecode``:
each run compiles them, as the dev environment's ``PYTHONDONTWRITEBYTECODE`` makes it do);
``--before SRC`` replays the code in SRC too, alternating run for run, for a baseline.

Medians are printed; the machine is noisy (2 cores), so read the ratios, not the absolutes.
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
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.servers import ScriptedServer  # noqa: E402
from tests.story_replies import NARRATIVES, StoryScript, folded  # noqa: E402

from narrative_cli.play.options import PlayOptions  # noqa: E402
from narrative_cli.replay.logs import read_logs  # noqa: E402
from narrative_cli.replay.runner import Progress, ReplayOptions, ReplayRun, replay_logs  # noqa: E402

CARD = Path(__file__).resolve().parents[1] / "sample_cards" / "lantern-keeper.png"
ACTIONS = ("I trim the wick.", "I check the oil.", "I look out at the fog.", "I write in the log.")


def make_log(folder: Path, name: str, turns: int) -> Path:
    lines: list[dict[str, object]] = [
        {"chat_metadata": {}, "user_name": "unused", "character_name": "unused"},
        {"name": "Edda", "is_user": False, "mes": "The lamp room is cold tonight."},
    ]
    for number in range(1, turns + 1):
        text = f"{ACTIONS[number % len(ACTIONS)]} (step {number})"
        stamp = (
            f"2026-01-01T{20 + number // 3600 % 4:02d}:{number // 60 % 60:02d}:{number % 60:02d}Z"
        )
        lines.append({"name": "Lan", "is_user": True, "mes": text, "send_date": stamp})
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return path


@dataclass
class VariedStory(StoryScript):
    """The scripted story with a narrative and a summary line of its own every turn, as a
    real story has: ``StoryScript`` repeats "The fog rolls on." after four turns, which lets
    anything that remembers a text's result (regex scripts, search) look cheaper than it is.
    It also answers the ``compaction`` agent, as a model does: without that every fold failed
    (a warning at each cut) and ``<story_summary>`` grew without end, so the prompts, the trace
    and the replay's cost per turn grew with the story's length (logs recorded before
    2026-12-02 were made so)."""

    narratives: deque[str] = field(default_factory=deque)
    night: int = 0

    def __call__(self, body: Any, request: Any) -> Any:
        if request.agent == "compaction":
            return folded(request)
        return super().__call__(body, request)

    def writing(self) -> Any:
        self.night += 1
        base = NARRATIVES[self.night % len(NARRATIVES)]
        self.narratives.append(f"{base} Night {self.night}: the fog lifts and falls again.")
        return super().writing()

    def analysis(self) -> dict[str, Any]:
        self.summary = f"Night {self.night}: the apprentice kept the lamp with Edda."
        return super().analysis()


def record(logs: list[Path], trace: Path, jobs: int, store: Path, varied: bool = False) -> float:
    """Replay ``logs`` live on the loopback server into ``trace``; returns the seconds taken.
    ``varied``: every turn's story text differs (``VariedStory``)."""
    with ScriptedServer() as server:
        server.reply_with(VariedStory() if varied else StoryScript())
        options = PlayOptions(
            card=str(CARD),
            provider="openai",
            base_url=server.base_url,
            model="scripted-model",
            trace=str(trace),
        )
        started = time.perf_counter()
        run = replay_logs(read_logs(logs), ReplayOptions(options, jobs=jobs, store_path=store))
        seconds = time.perf_counter() - started
    _check(run)
    return seconds


def replay_recorded(
    logs: list[Path], trace: Path, jobs: int, store: Path
) -> tuple[float, ReplayRun, list[float]]:
    """Replay ``logs`` from ``trace``; (seconds, run, wall time of each turn of the first log)."""
    stamps: list[float] = []
    first = logs[0].stem

    def progress(event: Progress) -> None:
        if event.label == first and event.kind in ("start", "turn"):
            stamps.append(time.perf_counter())

    options = ReplayOptions(PlayOptions(card=str(CARD)), str(trace), jobs=jobs, store_path=store)
    started = time.perf_counter()
    run = replay_logs(read_logs(logs), options, progress)
    seconds = time.perf_counter() - started
    _check(run)
    return seconds, run, [b - a for a, b in zip(stamps, stamps[1:], strict=False)]


def _check(run: ReplayRun) -> None:
    for outcome in run.outcomes:
        if outcome.status != "done":
            raise SystemExit(f"{outcome.log.label}: {outcome.status}: {outcome.error}")


def around(values: list[float], turn: int) -> float:
    """The median of the ten values around ``turn`` (1-based)."""
    start = max(0, min(turn - 5, len(values) - 10))
    return statistics.median(values[start : start + 10])


def prompt_tokens(run: ReplayRun, turn: int) -> int:
    record = run.outcomes[0].records[turn - 1]
    return sum(usage.prompt_tokens for usage in record.usage.agents.values())


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def bytecode_env(folder: Path) -> dict[str, str]:
    """The environment of a replay that reads our modules' compiled bytecode, as an installed
    package does (pip compiles it at install time). The dev environment sets
    ``PYTHONDONTWRITEBYTECODE``, so every process there compiles about 180 modules from source
    first: 0.8 s of a replay's start-up that no user pays. The cache goes to ``folder``
    (``PYTHONPYCACHEPREFIX``), filled here for the package the child will import."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(folder)
    where = subprocess.run(
        [sys.executable, "-c", "import narrative_cli; print(narrative_cli.__path__[0])"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], env=env, check=True)
    return env


def whole_process(
    log: Path, trace: Path, home: Path, base: dict[str, str] | None = None
) -> tuple[float, float, int]:
    """``narrative replay --responses`` as its own process: (seconds, CPU seconds, peak RSS in
    bytes). CPU time (user + system, the QuickJS helper's included) is what a loaded machine
    does not inflate; the peak is the largest of the process and its helper. ``base``: the
    environment (``bytecode_env``), else this process's."""
    env = {**(base if base is not None else os.environ), "NARRATIVE_HOME": str(home)}
    command = [sys.executable, "-m", "narrative_cli", "replay", str(log), "--card", str(CARD)]
    command += ["--responses", str(trace)]
    errors = home.with_suffix(".stderr")
    started = time.perf_counter()
    with errors.open("wb") as sink:  # a file, not a pipe: nothing waits on a full pipe buffer
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=sink)
        _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"replay failed: {errors.read_text(errors='replace')[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, cpu, usage.ru_maxrss * 1024  # kilobytes on Linux


def child_env(bytecode: bool, folder: Path, source: str | None) -> dict[str, str] | None:
    """The replay's environment: ``source`` first on ``PYTHONPATH`` (the code measured), and
    its bytecode compiled once into a cache of its own (``bytecode_env``)."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([source, *env.get("PYTHONPATH", "").split(os.pathsep)])
    if not bytecode:
        return env if source is not None else None
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        return bytecode_env(Path(tempfile.mkdtemp(prefix="pycache-", dir=folder)))
    finally:
        os.environ.clear()
        os.environ.update(saved)


def part_whole_process(
    lengths: list[int],
    keep: Path | None = None,
    runs: int = 1,
    bytecode: bool = True,
    before: str | None = None,
) -> None:
    """Record each length's log once (or reuse it from ``keep``), then replay it ``runs``
    times as its own process; the best run of each length is printed (least disturbed).
    ``bytecode``: the replay reads compiled bytecode, as an installed package does.
    ``before``: a source folder (``/work/main/src``) replayed too, run for run alternately
    with this code, on the same recorded log: the BEFORE row and the ratio."""
    folder = keep or Path(tempfile.mkdtemp(prefix="replay-whole-"))
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["NARRATIVE_HOME"] = str(folder / "home")
    print("bytecode: " + ("compiled once, as installed" if bytecode else "compiled by each run"))
    codes = {"after": child_env(bytecode, folder, None)}
    if before is not None:
        codes = {"before": child_env(bytecode, folder, before), **codes}
    rows = []
    for turns in lengths:
        log, trace = folder / f"log{turns}.jsonl", folder / f"trace-{turns}"
        if not (trace / "calls.jsonl").is_file():
            log = make_log(folder, f"log{turns}", turns)
            record([log], trace, 1, folder / f"record-{turns}.db", varied=True)
        if bytecode and turns == lengths[0]:  # the stdlib's and our lazy imports compile too
            for name, env in codes.items():
                warm = Path(tempfile.mkdtemp(prefix=f"warm-{name}-", dir=folder))
                whole_process(log, trace, warm, env)
        results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in codes}
        for run in range(runs):
            for name, env in codes.items():
                home = Path(tempfile.mkdtemp(prefix=f"home-{turns}-{run}-", dir=folder))
                results[name].append(whole_process(log, trace, home, env))
        best = {name: min(found) for name, found in results.items()}
        for name, (seconds, cpu, rss) in best.items():
            print(
                f"{turns} turns{'' if before is None else ' ' + name.upper()}: "
                f"{turns / seconds:.1f} turns/s whole process ({seconds:.1f} s), "
                f"{turns / cpu:.1f} turns per CPU second ({cpu:.1f} s), "
                f"peak memory {rss / 2**20:.1f} MB, trace folder "
                f"{folder_bytes(trace) / 2**20:.1f} MB, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        if before is not None:
            (old_s, old_cpu, _), (new_s, new_cpu, _) = best["before"], best["after"]
            print(
                f"{turns} turns AFTER against BEFORE: {old_s / new_s:.2f}x wall, "
                f"{old_cpu / new_cpu:.2f}x per CPU second"
            )
        seconds, cpu, rss = best["after"]
        rows.append((turns, turns / seconds, turns / cpu, rss, folder_bytes(trace)))
    first = rows[0]
    for turns, rate, per_cpu, rss, size in rows[1:]:
        print(
            f"{turns} against {first[0]} turns: speed {rate / first[1]:.2f}x "
            f"(per CPU second {per_cpu / first[2]:.2f}x), memory {rss / first[3]:.2f}x, "
            f"trace folder {size / first[4]:.2f}x ({size / turns / (first[4] / first[0]):.2f}x "
            "per turn)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--logs", type=int, default=20)
    parser.add_argument("--log-turns", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--whole-process", metavar="N,M", help="only the whole-process part")
    parser.add_argument(
        "--keep", type=Path, help="whole process: keep (and reuse) the recorded logs here"
    )
    parser.add_argument("--runs", type=int, default=1, help="whole process: replays per log")
    parser.add_argument(
        "--before", metavar="SRC", help="whole process: also replay the code in SRC (a baseline)"
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="whole process: let each run compile our modules (PYTHONDONTWRITEBYTECODE as set)",
    )
    args = parser.parse_args()
    if args.whole_process:
        lengths = [int(n) for n in args.whole_process.split(",")]
        part_whole_process(lengths, args.keep, args.runs, not args.no_bytecode, args.before)
        return
    folder = Path(tempfile.mkdtemp(prefix="replay-bench-"))
    os.environ["NARRATIVE_HOME"] = str(folder / "home")
    long_log = make_log(folder, "long", args.turns)
    many = [make_log(folder, f"log{i:02d}", args.log_turns) for i in range(args.logs)]

    live = record([long_log], folder / "trace-long", 1, folder / "record-long.db")
    record(many, folder / "trace-many", args.jobs, folder / "record-many.db")
    print(f"setup: recorded {args.turns} + {args.logs}x{args.log_turns} turns in {folder}")

    long_runs = [
        replay_recorded([long_log], folder / "trace-long", 1, folder / f"long-{i}.db")
        for i in range(args.rounds)
    ]
    seconds = statistics.median(r[0] for r in long_runs)
    rate, live_rate = args.turns / seconds, args.turns / live
    print(f"\n1 log x {args.turns} turns, recorded responses: {seconds:.1f} s, {rate:.1f} turns/s")
    print(
        f"  live on loopback (recording pass): {live_rate:.1f} turns/s; "
        f"ratio {rate / live_rate:.2f}x"
    )

    per_turn = [
        statistics.median(values) for values in zip(*(r[2] for r in long_runs), strict=True)
    ]
    early, late = around(per_turn, 10), around(per_turn, args.turns)
    tokens_early = prompt_tokens(long_runs[0][1], 10)
    tokens_late = prompt_tokens(long_runs[0][1], args.turns)
    print(
        f"  per-turn wall time: turn 10 {early * 1000:.1f} ms, turn {args.turns} "
        f"{late * 1000:.1f} ms; ratio {late / early:.2f}x"
    )
    print(
        f"  prompt tokens per turn: turn 10 {tokens_early:,}, turn {args.turns} "
        f"{tokens_late:,}; ratio {tokens_late / tokens_early:.2f}x"
    )

    total = args.logs * args.log_turns
    parallel, serial = [], []
    for i in range(args.rounds):
        serial.append(replay_recorded(many, folder / "trace-many", 1, folder / f"s-{i}.db")[0])
        parallel.append(
            replay_recorded(many, folder / "trace-many", args.jobs, folder / f"p-{i}.db")[0]
        )
    fast, slow = total / statistics.median(parallel), total / statistics.median(serial)
    print(f"\n{args.logs} logs x {args.log_turns} turns, recorded responses:")
    print(
        f"  --jobs {args.jobs}: {fast:.1f} turns/s; --jobs 1: {slow:.1f} turns/s; "
        f"ratio {fast / slow:.2f}x (medians of {args.rounds})"
    )


if __name__ == "__main__":
    main()
