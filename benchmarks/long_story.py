"""Per-turn cost at length, whole turn (issue 17 item 4): sandbox and store work included.

    python benchmarks/long_story.py [--long-turn 2000] [--samples 10] [--rounds 2]
    python benchmarks/long_story.py --trace-points 100,500,2000 [--samples 10]
    python benchmarks/long_story.py --profile 2000 [--samples 10]

``benchmarks/pipeline.py --parts e`` counts the CPU time of the turn's own thread, which leaves
out two things a long story makes grow: the sandbox helper process (the card's prompt-side
regex scripts run there, over the history) and the store's snapshot write. Here each turn is
played and committed as a session plays it (``run_turn`` then ``SessionStore.commit_turn``),
and the figure is its wall time outside ``Backend.complete`` (our overhead; the scripted
loopback server answers at once). The sample card ``lantern-keeper.png`` (serial: planning,
dice and code tool, writing, analysis, llm log tool, mvu_extract; prompt-side regex scripts)
is fast-forwarded to turn 10 and to turn ``--long-turn`` (that many turns of history and one
summary entry each; the session's store holds the same turns), the first turn after that is
left out (it runs the whole history through the scripts once, as a resume does), then
``--samples`` turns are played. Printed: the median overhead at each point, its ratio, and the
snapshot write alone (``pack`` of the turn's snapshot) at each point. Rounds alternate the two
points, so load from other jobs falls on both; read the ratios.

The fast-forwarded story is the one a long session has (wave two end, issue 17): its summary
entries folded into chapters and arcs as the ``compaction`` agent folds them at each cut of the
writers' window (``state.chapters.plan_fold``, the same rule; the chapter texts are scripted),
and the session database's text index attached, so the automatic search runs every turn.
``--no-chapters`` and ``--no-recall`` leave either out (the story as measured before).

``--trace-points``: the same turns played with ``--trace`` on, at each point; printed, the
bytes the trace folder gains per turn, by record kind (each agent's ``calls.jsonl`` lines, each
``turn-NNNN.md`` part). A folder that grows linearly gains the same bytes per turn at any length.
``--profile N``: cProfile of the turns played at turn N (the 25 costliest functions, cumulative).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline import (  # noqa: E402
    INPUTS,
    LANTERN,
    Session,
    TimedBackend,
    fast_forward,
    install,
    new_story,
    play,
    scripted_settings,
)
from tests.servers import ScriptedServer  # noqa: E402

from narrative_cli.agents.table import WINDOWS  # noqa: E402
from narrative_cli.backends import open_backend  # noqa: E402
from narrative_cli.backends.base import Backend  # noqa: E402
from narrative_cli.config import AgentSettings, Profile  # noqa: E402
from narrative_cli.context.recall import clip_to_tokens  # noqa: E402
from narrative_cli.context.window import window_first  # noqa: E402
from narrative_cli.pipeline.backendset import BackendSet  # noqa: E402
from narrative_cli.pipeline.orchestrator import run_turn  # noqa: E402
from narrative_cli.pipeline.story import Story  # noqa: E402
from narrative_cli.pipeline.trace import TraceWriter  # noqa: E402
from narrative_cli.state.chapters import Chapter, plan_fold  # noqa: E402
from narrative_cli.state.summaries import SummaryStore  # noqa: E402
from narrative_cli.store import SessionStore  # noqa: E402
from narrative_cli.store.blobs import pack  # noqa: E402
from narrative_cli.store.models import NewSession, SwipeData, TurnData  # noqa: E402


def stored(story: Story, folder: Path) -> tuple[SessionStore, int]:
    """A session holding the fast-forwarded story's turns (the last one with its snapshot)."""
    store = SessionStore(folder / "long.db")
    last = story.snapshot.turn
    turns = [
        TurnData(
            t.number,
            [SwipeData(
                {"number": t.number, "user_input": t.user_input, "narrative": t.narrative},
                story.snapshot.to_dict() if t.number == last else None,
            )],
        )
        for t in story.history
    ]
    spec = NewSession(name="long", card_path=str(LANTERN), card_hash="bench")
    return store, store.restore_session(spec, turns)


def fold_as_played(story: Story) -> None:
    """Fold the fast-forwarded summary as ``compaction`` would have at every cut of the
    writers' window (the same ``plan_fold`` rule, at most three folds a cut, shown from the
    turn after the cut); the chapter texts are scripted lines of the fold's length."""
    settings = story.settings.pipeline
    windows = {
        "planning": (settings.recent_turns_for_planning, settings.planning_growth_margin),
        "writing": (settings.recent_turns_for_writing, settings.writing_growth_margin),
    }
    store = SummaryStore.from_dict(story.snapshot.summaries or {}, story.lang)
    budget = settings.summary_budget
    numbers = [t.number for t in story.history]
    n, m = windows["writing"]
    for length in range(2, len(numbers) + 1):  # after the turn numbers[length - 1]
        if budget <= 0 or window_first(length, n, m) == window_first(length - 1, n, m):
            continue
        turn = numbers[length - 1]
        before = min(
            numbers[first] if first < length else turn + 1
            for first in (window_first(length, *windows[w]) for w in WINDOWS)
        )
        entries = [(t, line) for t, line in store.labelled_entries if t <= turn]
        for _ in range(3):
            fold = plan_fold(entries, store.chapters, before, budget, story.lang)
            if fold is None:
                break
            text = " ".join(f"Nights {fold.first} to {fold.last}: fog, lessons, the log."
                            for _ in range(fold.limit_tokens // 12 or 1))
            text = clip_to_tokens(text, fold.limit_tokens)
            store = store.with_chapter(Chapter(fold.first, fold.last, fold.level, text, turn + 1))
    story.snapshot = replace(story.snapshot, summaries=store.to_dict())


def helpers_cpu() -> float:
    """CPU seconds used so far by this process's child processes that are still running (the
    sandbox helper), from /proc (0 where there is none); clock-tick resolution."""
    total = 0
    for children in Path("/proc/self/task").glob("*/children"):
        for pid in children.read_text().split():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


CPU: dict[int, list[float]] = {}  # point → CPU seconds per turn outside the model


def overhead_at(
    turn: int, samples: int, *, chapters: bool = True, recall: bool = True,
    trace: Path | None = None, profile: cProfile.Profile | None = None,
) -> tuple[list[float], list[float]]:
    """(wall seconds outside the model per turn, seconds to pack its snapshot) for
    ``samples`` turns after the story was fast-forwarded to ``turn``; with ``trace``, the
    turns are traced into that folder (the first turn after the jump's trace removed).
    The CPU time of the same turns outside the model (the turn's thread and the sandbox
    helper) is added to ``CPU[turn]``, one figure per round: on a loaded machine it is the
    steadier measure."""
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as folder:
        session = Session("en")
        install(server, session)
        settings = scripted_settings(server)
        timed: list[TimedBackend] = []

        def opener(profile: Profile, agent: AgentSettings) -> Backend:
            timed.append(TimedBackend(open_backend(profile, agent)))
            return timed[-1]

        backends = BackendSet.from_settings(settings, opener)
        story = new_story(LANTERN, settings)
        play(story, backends, 1, INPUTS)
        fast_forward(story, turn, session)
        if chapters:
            fold_as_played(story)
        store, session_id = stored(story, Path(folder))
        if recall:
            story.text_index = store.text_index(session_id)
        writer = None if trace is None else TraceWriter(trace, session="bench")
        walls, packs = [], []
        cpu_started = helpers = 0.0
        for index in range(samples + 1):
            if index == 1:  # counted from the second turn on
                cpu_started = time.thread_time() - sum(t.cpu for t in timed)
                helpers = helpers_cpu()
            if index == 1 and trace is not None:  # the first turn after the jump: not counted
                for path in trace.iterdir():
                    path.unlink()
            if index == 1 and profile is not None:
                profile.enable()
            before = sum(t.spent for t in timed)
            started = time.perf_counter()
            result = run_turn(story, INPUTS[index % len(INPUTS)], backends, trace=writer)
            snapshot = result.snapshot.to_dict()
            store.commit_turn(session_id, result.to_record(), snapshot)
            story.advance(result)
            wall = time.perf_counter() - started - (sum(t.spent for t in timed) - before)
            packed = time.perf_counter()
            pack(snapshot)
            if index:  # the first turn after the jump reads the whole history once
                walls.append(wall)
                packs.append(time.perf_counter() - packed)
        ours = time.thread_time() - sum(t.cpu for t in timed) - cpu_started
        ours -= sum(packs)  # the benchmark's own pack, outside the turn
        CPU.setdefault(turn, []).append((ours + helpers_cpu() - helpers) / samples)
        if profile is not None:
            profile.disable()
        store.close()
        backends.close()
    return walls, packs


def trace_kinds(folder: Path) -> dict[str, int]:
    """Bytes of a trace folder by record kind: ``calls.jsonl`` by agent, ``turn-*.md`` by
    part (the calls' prompts and replies, then each ``## `` section after them)."""
    kinds: dict[str, int] = {}
    for line in (folder / "calls.jsonl").read_bytes().splitlines(keepends=True):
        agent = re.search(rb'"agent": "([^"]*)"', line)
        key = "calls.jsonl " + (agent.group(1).decode() if agent else "?")
        kinds[key] = kinds.get(key, 0) + len(line)
    for path in sorted(folder.glob("turn-*.md")):
        text = path.read_bytes()
        parts = re.split(rb"(?m)^(## .*)$", text)
        kinds["turn.md head"] = kinds.get("turn.md head", 0) + len(parts[0])
        for title, body in zip(parts[1::2], parts[2::2], strict=True):
            key = "turn.md " + title.decode()[3:]
            kinds[key] = kinds.get(key, 0) + len(title) + len(body)
    return kinds


def trace_points(points: list[int], samples: int) -> None:
    """Bytes per traced turn at each point, by kind, and the ratio to the first point."""
    per_turn: dict[int, dict[str, float]] = {}
    for point in points:
        with tempfile.TemporaryDirectory() as folder:
            overhead_at(point, samples, trace=Path(folder))
            kinds = trace_kinds(Path(folder))
        per_turn[point] = {k: v / samples for k, v in kinds.items()}
    names = sorted({k for kinds in per_turn.values() for k in kinds})
    print(f"trace bytes per turn ({samples} traced turns at each point):")
    print("  " + "kind".ljust(34) + "".join(f"turn {p}".rjust(12) for p in points))
    for name in [*names, "total"]:
        values = [
            sum(per_turn[p].values()) if name == "total" else per_turn[p].get(name, 0.0)
            for p in points
        ]
        print("  " + name[:34].ljust(34) + "".join(f"{v:12.0f}" for v in values))
    first, last = (sum(per_turn[p].values()) for p in (points[0], points[-1]))
    print(f"  turn {points[-1]} / turn {points[0]}: {last / first:.2f}x per turn"
          " (1.00x: the folder grows linearly)")


def profile_at(turn: int, samples: int) -> None:
    profile = cProfile.Profile()
    overhead_at(turn, samples, profile=profile)
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long-turn", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-chapters", action="store_true")
    parser.add_argument("--no-recall", action="store_true")
    parser.add_argument("--trace-points", default="")
    parser.add_argument("--profile", type=int, default=0)
    args = parser.parse_args()
    if args.trace_points:
        trace_points([int(p) for p in args.trace_points.split(",")], args.samples)
        return
    if args.profile:
        profile_at(args.profile, args.samples)
        return
    points = (10, args.long_turn)
    walls: dict[int, list[float]] = {p: [] for p in points}
    packs: dict[int, list[float]] = {p: [] for p in points}
    for _ in range(args.rounds):
        for point in points:
            wall, packed = overhead_at(
                point, args.samples, chapters=not args.no_chapters, recall=not args.no_recall
            )
            walls[point] += wall
            packs[point] += packed
    short, long = (statistics.median(walls[p]) for p in points)
    pack_short, pack_long = (statistics.median(packs[p]) for p in points)
    print(f"whole-turn overhead (wall, outside the model), median of {len(walls[10])} turns:")
    print(f"  turn 10: {short * 1000:.1f} ms   turn {args.long_turn}: {long * 1000:.1f} ms"
          f"   ratio {long / short:.2f}x (target <= 1.5x)")
    cpu_short, cpu_long = (statistics.median(CPU[p]) for p in points)
    print(f"CPU outside the model (turn's thread + sandbox helper), mean per turn, median of "
          f"{args.rounds} rounds:")
    print(f"  turn 10: {cpu_short * 1000:.1f} ms   turn {args.long_turn}: {cpu_long * 1000:.1f} ms"
          f"   ratio {cpu_long / cpu_short:.2f}x")
    print(f"snapshot pack: turn 10 {pack_short * 1000:.2f} ms, turn {args.long_turn} "
          f"{pack_long * 1000:.2f} ms ({pack_long / pack_short:.2f}x)")


if __name__ == "__main__":
    main()
