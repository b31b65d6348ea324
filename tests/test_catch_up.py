"""Issue #17 item 3: an imported SillyTavern chat keeps its past through the catch_up agent.

A 12-turn chat with the sample card is imported into a real SQLite store; the scripted server
answers the catch_up agent turn by turn (a summary line, a move, an MVU command for odd turns),
and every assertion reads what the next turn's prompts, the store or the screen carry.
"""

from __future__ import annotations

import _thread
import io
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.play import PlayOptions, PlaySession, catch_up
from narrative_cli.play.commands import Dispatcher
from narrative_cli.play.launch import run_session
from narrative_cli.store import SessionStore
from narrative_cli.store import catch_up as stored
from narrative_cli.store.chat_import import import_chat_file
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.front import TerminalFront
from narrative_cli.ui.lineio import run_lines
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import SAMPLES, fixture_file
from tests.servers import RecordedRequest, Reply, ScriptedServer
from tests.story_replies import StoryScript

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
CARD = SAMPLES / "lantern-keeper.png"
_TURN = re.compile(r"\[Turn (\d+)\] AI:")


def write_chat(path: Path, turns: int = 12) -> Path:
    """A SillyTavern chat with the sample card: the greeting and ``turns`` exchanges; turn 2's
    reply carries its own MVU block (the lamp loses 2 litres), as MVU cards' replies do."""
    lines: list[dict[str, Any]] = [
        {"user_name": "Wren", "character_name": "Edda", "chat_metadata": {}},
        _message("Edda", False, "*Fog at the window.* \"Tonight you learn the lamp.\""),
    ]
    for n in range(1, turns + 1):
        lines.append(_message("Wren", True, f"I do chore number {n}."))
        reply = f"Edda nods at chore {n}. Night {n} passes by the lamp."
        if n == 2:
            reply += "\n<UpdateVariable>\n_.add('keeper.lamp_oil', -2);//spilled\n</UpdateVariable>"
        lines.append(_message("Edda", False, reply))
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return path


def _message(name: str, is_user: bool, text: str) -> dict[str, Any]:
    return {"name": name, "is_user": is_user, "is_system": False, "mes": text, "extra": {},
            "send_date": "2026-01-01T20:00:00.000Z"}


@dataclass
class CatchUpScript(StoryScript):
    """StoryScript for a played turn; for catch_up, one item per turn of the batch."""

    batches: list[list[int]] = field(default_factory=list)
    hang_on_batch: int | None = None  # this batch (0-based) is left to the queue

    def __call__(self, body: Any, request: Any) -> Reply | str | dict[str, Any] | None:
        if request.agent != "catch_up":
            return super().__call__(body, request)
        numbers = [int(n) for n in _TURN.findall(request.messages[-1]["content"])]
        self.batches.append(numbers)
        if self.hang_on_batch == len(self.batches) - 1:
            return None
        return {"turns": [_item(n) for n in numbers]}


def _item(n: int) -> dict[str, Any]:
    return {
        "turn": n,
        "events": [{"type": "move", "params": {"location": f"Landing {n}"}}],
        "summary_entries": [f"fact-{n}: the keeper logged night {n}"],
        "mvu_update": "_.add('keeper.lamp_oil', -1);//a night" if n % 2 else _EVEN.get(n, ""),
    }


# Turn 2's message carried its own block: the agent's command for it must not apply as well.
_EVEN = {2: "_.add('keeper.lamp_oil', -5);//never applied: the message had its own block"}


@dataclass
class Imported:
    store: SessionStore
    play: PlaySession
    server: ScriptedServer
    script: CatchUpScript
    screen: RichScreen

    def out(self) -> str:
        return captured(self.screen.consoles.out) + captured(self.screen.consoles.err)


def _open(store: SessionStore, session_id: int, server: ScriptedServer) -> PlaySession:
    options = PlayOptions(card=str(CARD), provider="openai", base_url=server.base_url,
                          model="scripted-model", resume=str(session_id))
    return PlaySession.open(store, options)


@pytest.fixture
def imported(tmp_path: Path, scripted_server: ScriptedServer) -> Iterator[Imported]:
    script = CatchUpScript()
    scripted_server.reply_with(script)
    store = SessionStore(tmp_path / "sessions.db")
    result = import_chat_file(store, write_chat(tmp_path / "chat.jsonl"), CARD, seed=7)
    play = _open(store, result.session_id, scripted_server)
    screen = RichScreen.for_play(play, recording_consoles(width=120))
    yield Imported(store, play, scripted_server, script, screen)
    play.close()
    store.close()


def _requests(server: ScriptedServer, agent: str) -> list[RecordedRequest]:
    return [r for r in server.requests if r.agent == agent]


def _prompt(request: RecordedRequest) -> str:
    return "\n".join(str(m["content"]) for m in request.messages)


def test_the_estimate_comes_first_and_says_calls_and_tokens(imported: Imported) -> None:
    found = catch_up.pending(imported.play)
    assert found is not None
    assert [len(b.turns) for b in found.batches] == [8, 4]  # 12 turns, 8 a call
    assert found.estimate.calls == 2 and found.estimate.turns == 12
    assert found.estimate.prompt_tokens > 500 and found.estimate.reply_tokens == 2 * 4096
    text = catch_up.estimate_text(found, "en")
    assert "12 turns (1-12)" in text and "2 call(s)" in text
    assert imported.server.requests == []  # nothing sent before the player says yes


def test_after_catching_up_the_next_turn_carries_summary_state_and_variables(
    imported: Imported,
) -> None:
    outcome = catch_up.run(imported.play, imported.screen)
    assert outcome.finished and outcome.turns == 12 and outcome.calls == 2
    assert imported.script.batches == [list(range(1, 9)), list(range(9, 13))]
    out = imported.out()
    assert "Catching up: 8/12" in out and "Catching up: 12/12" in out
    assert "Caught up on turns 1-12: 2 call(s)" in out

    story = imported.play.story
    assert story.snapshot.turn == 12
    assert story.snapshot.state["location"] == "Landing 12"
    # six odd nights at 1 litre, turn 2's own block 2 litres; the agent's -5 for an even turn
    # whose message had a block is not applied twice
    assert story.snapshot.mvu is not None
    assert story.snapshot.mvu["keeper"]["lamp_oil"][0] == 12 - 6 - 2

    imported.play.play("I watch the sea.")
    analysis = _prompt(_requests(imported.server, "analysis")[-1])
    planning = _prompt(_requests(imported.server, "planning")[-1])
    for n in range(1, 13):
        assert f"fact-{n}:" in analysis
    for n in range(1, 10):  # the planner's window shows the latest turns in full
        assert f"fact-{n}:" in planning or f"chore {n}." in planning
    assert "lamp_oil" in planning and "4" in planning.split("lamp_oil", 1)[1][:40]


def test_a_stopped_catch_up_keeps_its_finished_batches_and_goes_on_from_there(
    imported: Imported,
) -> None:
    imported.script.hang_on_batch = 1
    imported.server.queue_fault("status", status=400, body={"error": {"message": "bad batch"}})
    first = catch_up.run(imported.play, imported.screen)
    assert not first.finished and first.through == 8 and "bad batch" in first.stopped
    assert stored.state(imported.store, imported.play.session_id) == stored.CatchUpState(
        8, 12, "running"
    )
    assert "catch-up stopped after turn 8" in imported.out()
    assert imported.play.story.snapshot.turn == 12  # the story is where it was

    imported.script.hang_on_batch = None
    again = catch_up.run(imported.play, imported.screen)
    assert again.finished and again.turns == 4
    assert imported.script.batches[-1] == [9, 10, 11, 12]  # only what was left
    assert imported.play.story.snapshot.state["location"] == "Landing 12"
    summaries = imported.play.story.snapshot.summaries
    assert len(summaries["entries"]) == 12


def test_ctrl_c_during_a_batch_keeps_the_earlier_ones(imported: Imported) -> None:
    imported.script.hang_on_batch = 1
    imported.server.queue_fault("hang", seconds=10)
    timer = threading.Timer(1.5, _thread.interrupt_main)
    timer.start()
    try:
        outcome = catch_up.run(imported.play, imported.screen)
    finally:
        timer.cancel()
    assert outcome.stopped.startswith("cancelled") and outcome.through == 8
    found = catch_up.pending(imported.play)
    assert found is not None and found.first == 9 and found.estimate.calls == 1


def test_declining_is_remembered_and_catchup_runs_it_later(imported: Imported) -> None:
    assert catch_up.offer(imported.play, imported.screen, False, None) is None
    assert stored.state(imported.store, imported.play.session_id).status == "declined"
    assert "Catch-up skipped; /catchup runs it later." in imported.out()
    assert catch_up.offer(imported.play, imported.screen, None, None) is None  # not again
    assert imported.server.requests == []
    dispatcher = Dispatcher(imported.play, imported.screen)
    assert dispatcher.handle("/catchup").failed is False
    assert imported.play.story.snapshot.state["location"] == "Landing 12"
    again = dispatcher.handle("/catchup")
    assert again.failed and "already caught up" in imported.out()


def test_catchup_is_refused_once_turns_were_played_after_the_import(imported: Imported) -> None:
    imported.play.play("I watch the sea.")
    dispatcher = Dispatcher(imported.play, imported.screen)
    outcome = dispatcher.handle("/catchup")
    assert outcome.failed and outcome.usage_error
    assert "turns were played after the import" in imported.out()
    assert _requests(imported.server, "catch_up") == []


def test_a_session_not_imported_has_nothing_to_catch_up(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    scripted_server.reply_with(StoryScript())
    options = PlayOptions(card=str(CARD), provider="openai", base_url=scripted_server.base_url,
                          model="m", seed=3)
    with SessionStore(tmp_path / "s.db") as store:
        play = PlaySession.open(store, options)
        try:
            play.play("I climb.")
            assert catch_up.pending(play) is None
            consoles = recording_consoles(width=100)
            outcome = Dispatcher(play, RichScreen.for_play(play, consoles)).handle("/catchup")
            assert outcome.usage_error
            assert "not imported from a SillyTavern chat" in captured(consoles.err)
        finally:
            play.close()


@pytest.mark.parametrize(
    ("fixture", "turns"),
    [("chats/zh-plague-apartment.jsonl", 1), ("chats/legacy-megumin-2023.jsonl", 0)],
)
def test_real_sillytavern_chats_import_and_catch_up(
    tmp_path: Path, scripted_server: ScriptedServer, fixture: str, turns: int
) -> None:
    chat = fixture_file(fixture)
    script = CatchUpScript()
    scripted_server.reply_with(script)
    with SessionStore(tmp_path / "s.db") as store:
        result = import_chat_file(store, chat, CARD, seed=1)
        assert result.last_turn == turns
        play = _open(store, result.session_id, scripted_server)
        try:
            found = catch_up.pending(play)
            if turns == 0:  # a greeting alone: nothing to read
                assert found is None
                return
            assert found is not None and found.estimate.calls == 1
            screen = RichScreen.for_play(play, recording_consoles(width=100))
            outcome = catch_up.run(play, screen, found)
            assert outcome.finished and script.batches == [[1]]
            sent = _prompt(_requests(scripted_server, "catch_up")[0])
            assert "<past_turns>" in sent and "[Turn 1] User:" in sent
            assert play.story.snapshot.state["location"] == "Landing 1"
            assert play.story.snapshot.summaries["entries"]
        finally:
            play.close()


class TerminalLikeFront(TerminalFront):
    """The real terminal front as on a TTY (its question is answered on stdin)."""

    def __init__(self, lines: str) -> None:
        super().__init__(recording_consoles(width=120), io.StringIO(lines))

    @property
    def interactive(self) -> bool:
        return True

    def read_lines(self, dispatcher: Dispatcher) -> int:
        return run_lines(dispatcher, self.source, self.consoles)


@pytest.mark.parametrize(("answer", "caught_up"), [("y\n", True), ("n\n", False)])
def test_on_a_terminal_the_player_is_asked_first(
    tmp_path: Path, scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch,
    answer: str, caught_up: bool,
) -> None:
    script = CatchUpScript()
    scripted_server.reply_with(script)
    store = SessionStore(tmp_path / "s.db")
    result = import_chat_file(store, write_chat(tmp_path / "chat.jsonl"), CARD, seed=7)
    monkeypatch.setattr("sys.stdin", io.StringIO(answer))
    front = TerminalLikeFront("/quit\n")
    options = PlayOptions(provider="openai", base_url=scripted_server.base_url, model="m",
                          resume=str(result.session_id))
    assert run_session(options, front, store=store) == 0
    shown = captured(front.consoles.out)
    assert "12 turns (1-12)" in shown and "Catch up now? [Y/n]" in shown
    assert (len(script.batches) == 2) is caught_up
    with SessionStore(tmp_path / "s.db") as again:
        progress = stored.state(again, result.session_id)
        assert progress is not None and progress.status == ("done" if caught_up else "declined")
