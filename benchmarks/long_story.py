"""Per-turn cost at length, whole turn (issue 17 item 4): sandbox and store work included.

    python benchmarks/long_story.py [--long-turn 2000] [--samples 10] [--rounds 2]

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
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
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

from narrative_cli.backends import open_backend  # noqa: E402
from narrative_cli.backends.base import Backend  # noqa: E402
from narrative_cli.config import AgentSettings, Profile  # noqa: E402
from narrative_cli.pipeline.backendset import BackendSet  # noqa: E402
from narrative_cli.pipeline.orchestrator import run_turn  # noqa: E402
from narrative_cli.pipeline.story import Story  # noqa: E402
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


def overhead_at(turn: int, samples: int) -> tuple[list[float], list[float]]:
    """(wall seconds outside the model per turn, seconds to pack its snapshot) for
    ``samples`` turns after the story was fast-forwarded to ``turn``."""
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
        store, session_id = stored(story, Path(folder))
        walls, packs = [], []
        for index in range(samples + 1):
            before = sum(t.spent for t in timed)
            started = time.perf_counter()
            result = run_turn(story, INPUTS[index % len(INPUTS)], backends)
            snapshot = result.snapshot.to_dict()
            store.commit_turn(session_id, result.to_record(), snapshot)
            story.advance(result)
            wall = time.perf_counter() - started - (sum(t.spent for t in timed) - before)
            packed = time.perf_counter()
            pack(snapshot)
            if index:  # the first turn after the jump reads the whole history once
                walls.append(wall)
                packs.append(time.perf_counter() - packed)
        store.close()
        backends.close()
    return walls, packs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long-turn", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    points = (10, args.long_turn)
    walls: dict[int, list[float]] = {p: [] for p in points}
    packs: dict[int, list[float]] = {p: [] for p in points}
    for _ in range(args.rounds):
        for point in points:
            wall, packed = overhead_at(point, args.samples)
            walls[point] += wall
            packs[point] += packed
    short, long = (statistics.median(walls[p]) for p in points)
    pack_short, pack_long = (statistics.median(packs[p]) for p in points)
    print(f"whole-turn overhead (wall, outside the model), median of {len(walls[10])} turns:")
    print(f"  turn 10: {short * 1000:.1f} ms   turn {args.long_turn}: {long * 1000:.1f} ms"
          f"   ratio {long / short:.2f}x (target <= 1.5x)")
    print(f"snapshot pack: turn 10 {pack_short * 1000:.2f} ms, turn {args.long_turn} "
          f"{pack_long * 1000:.2f} ms ({pack_long / pack_short:.2f}x)")


if __name__ == "__main__":
    main()
