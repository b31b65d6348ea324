"""The garbage collector around a story command's start-up (cli/entry.py, cli/collector.py).

The console script starts with the collector off; ``run`` and ``replay`` turn it back on only
once they have imported the pipeline, so no pass walks the modules while they load, and a
long story then runs with the collector on (its reference cycles are freed as it goes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import SAMPLES
from tests.servers import ScriptedServer

from .test_replay_cli import recorded_trace

# The console script's own entry point, with a count of the collector's passes from the
# moment the pipeline's first module starts loading until the command body is running.
PROBE = """
import gc, sys
from narrative_cli.cli.entry import main
passes = {"loading": 0, "after": 0}
phase = ["before"]
def count(stage, info):
    if stage == "start" and phase[0] in passes:
        passes[phase[0]] += 1
gc.callbacks.append(count)
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "narrative_cli.pipeline" and phase[0] == "before":
            phase[0] = "loading"
        return None
sys.meta_path.insert(0, Watch())
import narrative_cli.cli.collector as collector
on = collector.collector_on
def collector_on():
    phase[0] = "after"
    on()
collector.collector_on = collector_on
for name in ("narrative_cli.cli.replay", "narrative_cli.cli.run"):
    __import__(name)
    sys.modules[name].collector_on = collector_on
sys.argv = ["narrative", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
sys.stderr.write(f"GC {gc.isenabled()} {phase[0]} {passes['loading']}\\n")
"""


def probe(*args: object, stdin: str = "") -> tuple[bool, str, int]:
    """(collector on at exit, last phase seen, passes while the pipeline loaded)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *(str(a) for a in args)],
        input=stdin, capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "120"},
    )  # fmt: skip
    line = done.stderr.rsplit("GC ", 1)[1].split("\n", 1)[0].split()
    return line[0] == "True", line[1], int(line[2])


def test_replay_turns_the_collector_on_after_loading_the_pipeline(tmp_path: Path) -> None:
    card, log, trace = recorded_trace(tmp_path)

    enabled, phase, passes = probe("replay", log, "--card", card, "--responses", trace)

    assert enabled and phase == "after"
    assert passes == 0


def test_run_turns_the_collector_on_before_the_story_starts() -> None:
    with ScriptedServer() as server:  # (the story ends before its first call)
        enabled, phase, passes = probe(
            "run", SAMPLES / "lantern-keeper.png", "--provider", "openai",
            "--base-url", server.base_url, "--model", "m", stdin="/quit\n",
        )  # fmt: skip

    assert enabled and phase == "after"
    assert passes == 0


def test_other_commands_turn_it_on_as_the_command_line_is_parsed() -> None:
    enabled, phase, _ = probe("inspect", SAMPLES / "lantern-keeper.png")

    assert enabled
