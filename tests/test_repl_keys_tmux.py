"""The REPL's keys that keep work (#18 item 4), typed into the REAL REPL in tmux.

- Ctrl-C while the reply streams: one question; ``k`` keeps the shown text as turn N.
- Ctrl-O and Ctrl-X Ctrl-E: ``$EDITOR`` (a tiny script the test writes) edits the input; the
  edited text comes back into the input and is not sent until Enter.
- Keys typed while a turn runs: not drawn over the status line, not sent; they are the next
  input's draft.
- ``/help`` lists the multi-line and editor keys.

Skipped when tmux is missing (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.store import SessionStore
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript
from tests.test_repl_tmux import Terminal, at_prompt, exit_code

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
EDITOR = "#!/bin/sh\nprintf '%s + from the editor' \"$(cat \"$1\")\" > \"$1\"\n"


@pytest.fixture
def repl(
    tmp_path: Path, clean_environ: Path, scripted_server: ScriptedServer
) -> Iterator[tuple[Terminal, Path]]:
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR, encoding="utf-8")
    editor.chmod(0o755)
    marker = tmp_path / "exit-code"
    env = (
        f"NARRATIVE_HOME={shlex.quote(str(clean_environ))} NO_COLOR=1 TERM=xterm-256color"
        f" EDITOR={shlex.quote(str(editor))} VISUAL={shlex.quote(str(editor))}"
    )
    run = (
        f"{shlex.quote(sys.executable)} -m narrative_cli run "
        f"{shlex.quote(str(SAMPLES / 'lantern-keeper.png'))} --greeting 0 --seed 4 "
        f"--provider openai --base-url {scripted_server.base_url} --model scripted"
    )
    command = f"cd {shlex.quote(str(ROOT))} && env {env} {run}; echo $? > {marker}; sleep 30"
    term = Terminal(f"narrative-keys-{os.getpid()}", command)
    try:
        yield term, marker
    finally:
        term.close()


def greeted(term: Terminal) -> None:
    term.wait_for(lambda s: "Three days of fog" in s and at_prompt(s), "the greeting and prompt")


def stored_turns(home: Path) -> list[TurnRecord]:
    with SessionStore(home / "sessions.db") as store:
        info = store.list_sessions()[0]
        return [TurnRecord.read(store.record(info.id, t.number)) for t in store.turns(info.id)]


def test_ctrl_c_mid_reply_k_keeps_the_shown_text_as_the_turn(
    repl: tuple[Terminal, Path], scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    term, marker = repl
    scripted_server.reply_with(StoryScript(chunk_delay=0.25))
    greeted(term)
    term.type("I climb the stairs.")
    term.keys("Enter")
    term.wait_for(lambda s: NARRATIVES[0][:12] in s, "the story to start streaming")
    term.keys("C-c")
    term.wait_for(lambda s: "Keep what is shown (k, Enter)" in s, "the keep-or-drop question")
    term.type("k")
    term.keys("Enter")
    kept = "Kept the unfinished reply as turn 1"
    term.wait_for(lambda s: kept in s and at_prompt(s[s.index(kept) :]), "the kept turn")
    term.keys("C-d")
    assert exit_code(term, marker) == "0"
    turns = stored_turns(clean_environ)
    assert len(turns) == 2 and turns[1].analysis_pending == "unfinished reply (Ctrl-C)"
    assert NARRATIVES[0].startswith(turns[1].narrative) and turns[1].narrative != NARRATIVES[0]


@pytest.mark.parametrize("keys", [("C-o",), ("C-x", "C-e")], ids=["ctrl-o", "ctrl-x-ctrl-e"])
def test_editor_keys_edit_the_input_without_sending_it(
    repl: tuple[Terminal, Path],
    scripted_server: ScriptedServer,
    clean_environ: Path,
    keys: tuple[str, ...],
) -> None:
    term, marker = repl
    scripted_server.reply_with(StoryScript())
    greeted(term)
    term.type("I climb")
    term.wait_for(lambda s: "> I climb" in s, "the half-typed line")
    term.keys(*keys)
    edited = "> I climb + from the editor"
    term.wait_for(lambda s: edited in s, "the edited input back at the prompt")
    assert "calls " not in term.screen()  # not sent: no turn ran
    term.keys("Enter")
    term.wait_for(lambda s: "calls " in s and at_prompt(s[s.index("calls ") :]), "the turn")
    term.keys("C-d")
    assert exit_code(term, marker) == "0"
    assert [t.user_input for t in stored_turns(clean_environ)][1:] == [
        "I climb + from the editor"
    ]


def test_keys_typed_during_a_turn_become_the_next_draft_and_are_not_sent(
    repl: tuple[Terminal, Path], scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    term, marker = repl
    scripted_server.reply_with(StoryScript(chunk_delay=0.2))
    greeted(term)
    term.type("I climb the stairs.")
    term.keys("Enter")
    term.wait_for(lambda s: NARRATIVES[0][:12] in s, "the story to start streaming")
    term.type("I trim the wikk")
    term.keys("BSpace", "BSpace")
    term.type("ck.")
    term.keys("Enter")  # during the turn: a line break in the draft, never a send
    term.type("Then I rest.")
    during = term.screen()
    assert "I trim" not in during and "Writing ·" in during  # not drawn over the status
    done = term.wait_for(lambda s: "calls " in s, "the turn to finish")
    term.wait_for(lambda s: "> I trim the wick." in s, "the draft in the next input")
    done = term.screen()
    assert "Then I rest." in done.split("> I trim the wick.")[-1]
    assert len(stored_turns(clean_environ)) == 2  # the draft was not played
    term.keys("C-d")  # Ctrl-D with text in the input does not leave; clear, then leave
    term.keys("C-c")
    term.wait_for(lambda s: "I trim the wick." not in s.split("calls ")[-1], "the cleared line")
    term.keys("C-d")
    assert exit_code(term, marker) == "0"
    assert len(stored_turns(clean_environ)) == 2


def test_help_lists_the_multi_line_and_editor_keys(
    repl: tuple[Terminal, Path], scripted_server: ScriptedServer
) -> None:
    term, marker = repl
    scripted_server.reply_with(StoryScript())
    greeted(term)
    term.type("/help")
    term.keys("Enter")
    shown = term.wait_for(lambda s: "Ctrl-X Ctrl-E / Ctrl-O" in s, "the keys table")
    assert "Esc Enter / Alt-Enter" in shown and "line break" in shown
    assert "edit the input in $EDITOR" in shown
    term.keys("C-d")
    assert exit_code(term, marker) == "0"
