"""Issue #13 item 8: text from outside never puts a control sequence on the user's terminal.

Model replies, card fields, tool output, provider errors, stored sessions and traces can carry
``ESC]52`` (clipboard write), ``ESC]0`` (window title), ``ESC[2J`` (clear screen), C1 controls
and bidi overrides. Each view is driven for real (CLI subprocess or CliRunner-style ``main``,
the scripted server, real SQLite and trace files) and its output is searched for them.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from narrative_cli.cli.app import main
from narrative_cli.pipeline.events import TextDelta, ToolResultEvent
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.store import SessionStore
from narrative_cli.ui import render
from narrative_cli.ui.console import THEME, Consoles, SafeConsole, recording_consoles
from narrative_cli.ui.safe import StreamCleaner, safe_json, safe_text
from narrative_cli.ui.status import TurnView
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import StoryScript

scripted_server = servers.scripted_server

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
TITLE = "\x1b]0;owned\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
BIDI = "\u202e"
HOSTILE = f"Edda{CLIPBOARD} smiles{TITLE}.{CLEAR} The lamp{C1_CSI} burns{BIDI} low.\x1b"
MARKUP = "[bold red]loud[/bold red] [link=https://evil.example]click[/link]"
BAD = ("\x1b]52", "\x1b]0", "\x1b[2J", "\x9b", "\u202e", "\x07", "owned")


def assert_clean(output: str) -> None:
    for bad in BAD:
        assert bad not in output, f"{bad!r} reached the terminal"


def hostile_card(tmp_path: Path) -> Path:
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": f"Edda{TITLE}",
            "description": f"A keeper. {MARKUP} {CLIPBOARD}",
            "personality": f"dry{CLEAR}",
            "scenario": "The lighthouse.",
            "first_mes": f"Fog again.{CLIPBOARD} {MARKUP}",
            "mes_example": "",
            "creator_notes": f"notes{BIDI}",
            "tags": [f"tag{C1_CSI}"],
            "character_book": {
                "entries": [
                    {"keys": [f"lamp{CLEAR}"], "content": f"The lamp.{CLIPBOARD}",
                     "comment": f"[bold]lamp[/bold]{TITLE}", "enabled": True,
                     "insertion_order": 1, "id": 1}
                ]
            },
        },
    }
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(card), encoding="utf-8")
    return path


# --- the one function ---------------------------------------------------------------------
def test_safe_text_strips_sequences_and_controls_but_keeps_text_newlines_and_tabs() -> None:
    text = f"灯塔{HOSTILE}\r\n\tend\x00\x7f"
    cleaned = safe_text(text)
    assert cleaned == "灯塔Edda smiles. The lamp burns low.\n\tend"
    assert safe_text("plain 文字\n\tok") == "plain 文字\n\tok"
    assert safe_text(MARKUP) == MARKUP  # markup is a separate matter (escaped by views)


def test_the_stream_cleaner_matches_safe_text_wherever_the_chunks_split() -> None:
    text = f"{HOSTILE}\n{CLIPBOARD * 3}after\n\x1b]0;unterminated title\nnext line"
    expected = safe_text(text)
    for seed in range(200):
        rng = random.Random(seed)
        cleaner, out, index = StreamCleaner(), [], 0
        while index < len(text):
            size = rng.randint(1, 7)
            out.append(cleaner.feed(text[index : index + size]))
            index += size
        out.append(cleaner.flush())
        assert "".join(out) == expected, seed
    assert expected.endswith("after\n\nnext line")


def test_json_output_escapes_c1_and_bidi_but_stays_the_same_data() -> None:
    data = {"name": f"a{C1_CSI}b{BIDI}c\x1b"}
    text = safe_json(json.dumps(data, ensure_ascii=False))
    assert_clean(text)
    assert json.loads(text) == data


# --- streamed story: line mode and the live REPL view -------------------------------------
def test_streamed_text_is_cleaned_in_line_mode_even_when_a_sequence_is_split() -> None:
    consoles = recording_consoles()
    with TurnView(consoles, "en") as view:
        for piece in ("Edda\x1b", "]52;c;cm0", "=\x07 waits\x1b[", "2J.", "\u202e\n"):
            view(TextDelta("writing", piece))
    shown = consoles.out.file.getvalue()  # type: ignore[attr-defined]
    assert_clean(shown)
    assert "]52" not in shown and "[2J" not in shown
    assert shown == "Edda waits.\n"
    assert view.streamed.startswith("Edda\x1b]52")  # the record keeps what the model sent


def live_consoles() -> Consoles:
    def make() -> SafeConsole:
        return SafeConsole(file=io.StringIO(), theme=THEME, force_terminal=True, width=80,
                           color_system="standard")

    return Consoles(out=make(), err=make(), color=True, live=True)


def test_streamed_text_is_cleaned_in_the_live_repl_view_with_colour() -> None:
    consoles = live_consoles()
    with TurnView(consoles, "en") as view:
        for index in range(0, len(HOSTILE), 3):
            view(TextDelta("writing", HOSTILE[index : index + 3]))
        view(TextDelta("writing", "\nsecond line" + CLIPBOARD + "\n"))
        view(ToolResultEvent("roll_dice", "planning", False, f"boom{TITLE}{MARKUP}"))
    shown = consoles.out.file.getvalue()  # type: ignore[attr-defined]
    assert_clean(shown)
    assert "second line" in shown and "[bold red]loud" in shown


def test_held_preview_is_cleaned() -> None:
    consoles = recording_consoles()
    view = TurnView(consoles, "en", hold=True)
    view(TextDelta("writing", HOSTILE))
    assert_clean(view.preview())


# --- line mode end to end -----------------------------------------------------------------
def narrative(
    server: ScriptedServer, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "narrative_cli", *args, "--provider", "openai",
               "--base-url", server.base_url, "--model", "m"]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ), timeout=120)


@pytest.mark.parametrize("colour", [True, False], ids=["colour", "no-color"])
def test_line_mode_story_card_and_tool_output_are_clean(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    colour: bool,
) -> None:
    if colour:
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setenv("TERM", "xterm-256color")
    script = StoryScript()
    script.narratives.appendleft(HOSTILE)
    script.log_line = f"<keeper_log>log{CLIPBOARD}{MARKUP}</keeper_log>"
    script.summary = f"summary{CLEAR}"
    scripted_server.reply_with(script)
    flags = [] if colour else ["--no-color"]
    done = narrative(scripted_server, "run", str(SAMPLES / "lantern-keeper.png"), *flags,
                     stdin="I look.\n/summary\n/state\n")
    assert done.returncode == 0, done.stderr
    assert_clean(done.stdout + done.stderr)
    assert "Edda smiles. The lamp burns low." in done.stdout


def test_a_hostile_card_prints_literally_in_line_mode(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.reply_with(StoryScript())
    done = narrative(scripted_server, "run", str(hostile_card(tmp_path)), stdin="/lore\n")
    assert done.returncode == 0, done.stderr
    assert_clean(done.stdout + done.stderr)
    assert "[bold red]loud[/bold red]" in done.stdout  # markup printed, not applied


def test_provider_error_messages_are_cleaned(scripted_server: ScriptedServer) -> None:
    body = {"error": {"message": f"bad key{CLIPBOARD}{TITLE}", "type": "invalid_request"}}
    scripted_server.reply_with(lambda _body, _req: servers.Reply(fault="status", status=401,
                                                                  body=body))
    done = narrative(scripted_server, "run", str(SAMPLES / "lantern-keeper.png"),
                     stdin="I look.\n")
    assert done.returncode == 1
    assert "bad key" in done.stderr
    assert_clean(done.stdout + done.stderr)


# --- inspect, sessions show, trace show ---------------------------------------------------
def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as done:
        code = int(done.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_inspect_shows_hostile_card_fields_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_main(capsys, "inspect", str(hostile_card(tmp_path)))
    assert code == 0, out
    assert_clean(out)
    assert "[bold]lamp[/bold]" in out
    code, out = run_main(capsys, "inspect", str(hostile_card(tmp_path)), "--json")
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out and "\x9b" not in out


def played_session(server: ScriptedServer, trace: Path | None = None) -> None:
    script = StoryScript()
    script.narratives.appendleft(HOSTILE)
    server.reply_with(script)
    options = PlayOptions(card=str(SAMPLES / "lantern-keeper.png"), provider="openai",
                          base_url=server.base_url, model="m", seed=1, user_name=f"me{TITLE}",
                          session=f"s{CLEAR}", trace=str(trace) if trace else None)
    with SessionStore() as store:
        play = PlaySession.open(store, options)
        try:
            play.play("I look.", lambda event: None)
        finally:
            play.close()


def test_sessions_list_and_show_are_clean(
    scripted_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    played_session(scripted_server)
    code, out = run_main(capsys, "sessions", "list")
    assert code == 0, out
    assert_clean(out)
    code, out = run_main(capsys, "sessions", "show", "1")
    assert code == 0, out
    assert_clean(out)
    assert "Edda smiles" in out
    code, out = run_main(capsys, "sessions", "list", "--json")
    assert "\x1b" not in out and "\u202e" not in out


def test_trace_show_is_clean(
    scripted_server: ScriptedServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "trace"
    played_session(scripted_server, trace)
    calls = trace / "calls.jsonl"
    lines = [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines()]
    lines[0]["request"]["model"] = f"m{TITLE}"
    lines[0]["error"] = f"failed{CLEAR}{MARKUP}"
    lines[0]["request"]["messages"][0]["role"] = f"[bold]system{CLIPBOARD}"
    calls.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    code, out = run_main(capsys, "trace", "show", str(trace))
    assert code == 0, out
    assert_clean(out)
    assert "[link=https://evil.example]" in out


def test_panels_of_a_played_turn_are_clean() -> None:
    consoles = recording_consoles()
    consoles.out.print(render.outputs_panel({"keeper": f"log{CLIPBOARD}"}, "en"))
    consoles.out.print(render.tool_panel({"tool": f"t{TITLE}", "ok": True, "text": CLEAR}, "en"))
    consoles.out.print(render.rows_table(f"t{BIDI}", ["a"], [[MARKUP]]))
    consoles.out.print(render.state_changes([f"x{CLEAR}"], [], [], "en"))
    shown = consoles.out.file.getvalue()  # type: ignore[attr-defined]
    assert_clean(shown)
    assert MARKUP in shown
