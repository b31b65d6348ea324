"""Fresh dice per regenerate (#18 item 5, architecture §8), checked in line mode.

Each ``/regen`` (and each new swipe an ``/edit`` makes) draws its own random stream, recorded
with the swipe; the same lines with the same seed roll the same dice again, so a replay is
exact.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.store import SessionStore
from tests import servers
from tests.servers import ScriptedServer
from tests.story_replies import StoryScript
from tests.test_run_control import CARD, narrative

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
ROLL = re.compile(r"Check: 10d100 = \[([0-9, ]+)\]")


class ManyDice(StoryScript):
    """The planner asks for ten d100 each time: equal rolls by chance are out of the question."""

    def plan(self) -> dict[str, Any]:
        return {**super().plan(), "tool_calls": [{"tool": "roll_dice",
                                                  "params": {"expr": "10d100"}}]}  # fmt: skip


def swipe_streams(home: Path) -> list[tuple[int, list[Any]]]:
    """(rng_stream, dice data) of every swipe of turn 1."""
    with SessionStore(home / "sessions.db") as store:
        info = store.list_sessions()[-1]
        last = list(store.iter_turns(info.id))[-1]
        out = []
        for swipe in last.swipes:
            record = TurnRecord.read(swipe.record)
            dice = [r.data for r in record.tool_results if r.kind == "dice"]
            out.append((record.rng_stream, dice))
        return out


def test_regen_and_a_new_swipe_roll_fresh_dice_recorded_per_swipe_and_replayable(
    scripted_server: ScriptedServer, clean_environ: Path, tmp_path: Path
) -> None:
    scripted_server.reply_with(ManyDice())
    lines = "I climb the stairs.\n/regen\n/regen\n/edit I climb the stairs at a run.\n"
    done = narrative(scripted_server, tmp_path, CARD, "--session", "a", "--seed", "5",
                     "--mode", "serial", stdin=lines)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rolls = ROLL.findall(done.stdout)
    assert len(rolls) == 4 and len(set(rolls)) == 4  # four tries, four different rolls
    swipes = swipe_streams(clean_environ)
    assert [stream for stream, _ in swipes] == [0, 1, 2, 3]
    assert len({str(dice) for _, dice in swipes}) == 4  # each swipe keeps its own dice

    scripted_server.reply_with(ManyDice())  # the same lines, the same seed: the same dice
    again = narrative(scripted_server, tmp_path, CARD, "--session", "b", "--seed", "5",
                      "--mode", "serial", stdin=lines)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert ROLL.findall(again.stdout) == rolls
