"""The REAL REPL with a group (issue 19): tmux runs ``narrative run WREN PIP``, we type and read.

The writers stream slowly, so the test sees the status line name who is speaking while each
member's reply arrives under its name, then /group, /mute and /next at the prompt. Skipped when
tmux is missing.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.pipeline_support import PLAN, Script
from tests.servers import RecordedRequest, Reply, ScriptedServer
from tests.test_repl_tmux import Terminal, at_prompt, exit_code

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
scripted_server = servers.scripted_server


def slow_writer(request: RecordedRequest) -> Reply:
    text = "\n".join(str(m["content"]) for m in request.messages)
    name = "Wren" if "Write only Wren's reply" in text else "Pip"
    story = f"{name} talks slowly about the fog and the buoys and the long dark water ahead."
    pieces = [story[i:i + 6] for i in range(0, len(story), 6)]
    return Reply(text=story, chunks=pieces, chunk_delay=0.1)


@pytest.fixture
def group_terminal(
    tmp_path: Path, clean_environ: Path, scripted_server: ScriptedServer
) -> Iterator[tuple[Terminal, Path]]:
    marker = tmp_path / "exit-code"
    env = f"NARRATIVE_HOME={shlex.quote(str(clean_environ))} NO_COLOR=1 TERM=xterm-256color"
    cards = " ".join(shlex.quote(str(SAMPLES / f"night-ferry-{n}.json")) for n in ("wren", "pip"))
    run = (f"{shlex.quote(sys.executable)} -m narrative_cli run {cards} --seed 4 "
           f"--provider openai --base-url {scripted_server.base_url} --model scripted")
    command = f"cd {shlex.quote(str(ROOT))} && env {env} {run}; echo $? > {marker}; sleep 30"
    term = Terminal(f"narrative-group-{os.getpid()}", command)
    try:
        yield term, marker
    finally:
        term.close()


def test_a_group_in_the_real_repl(
    group_terminal: tuple[Terminal, Path], scripted_server: ScriptedServer
) -> None:
    term, marker = group_terminal
    plan = {**PLAN, "speakers": [{"name": "Wren"}, {"name": "Pip"}]}
    Script({"writing": slow_writer, "planning": plan}).install(scripted_server)
    term.wait_for(lambda s: "Pip: *Pip swings a lantern" in s and at_prompt(s),
                  "both greetings and the prompt")
    term.type("Is the fog lifting?")
    term.keys("Enter")
    wren = term.wait_for(lambda s: "Writing · Wren ·" in s, "the status line naming Wren")
    assert "Wren:" in wren.split("Is the fog lifting?")[-1]
    term.wait_for(lambda s: "Writing · Pip ·" in s, "the status line naming Pip")
    done = term.wait_for(lambda s: "calls 4 · tokens" in s, "the turn to finish")
    after = done.split("Is the fog lifting?")[-1]
    assert after.index("Wren:") < after.index("Wren talks slowly") < after.index("Pip:")
    assert "Writing ·" not in done

    term.type("/mute Wren")
    term.keys("Enter")
    term.wait_for(lambda s: "Wren is muted" in s, "the mute")
    term.type("/group")
    term.keys("Enter")
    roster = term.wait_for(lambda s: "strategy" in s and "natural" in s, "the roster")
    assert "night-ferry-wren.json" in roster
    term.keys("C-d")
    assert exit_code(term, marker) == "0"
