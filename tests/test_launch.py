"""``narrative run``'s wiring (play.launch) with the terminal front end on recording consoles."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest

from narrative_cli.errors import BackendUnavailable
from narrative_cli.play import PlayOptions
from narrative_cli.play.launch import run_session
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.front import TerminalFront
from tests.pipeline_support import write_card
from tests.servers import ScriptedServer
from tests.story_replies import StoryScript


class AskingFront(TerminalFront):
    """The terminal front as on a TTY: it is asked for a greeting and answers 1.

    While the menu is up, the card file is replaced by another card: the story must come
    from the card that was read for the menu, not from a second reading of the file.
    """

    def __init__(self, card: Path, lines: str) -> None:
        super().__init__(recording_consoles(width=100), io.StringIO(lines))
        self.card = card
        self.menus: list[list[str]] = []

    @property
    def interactive(self) -> bool:
        return True

    def choose_greeting(self, greetings: list[str], lang: str) -> int:  # type: ignore[override]
        self.menus.append(list(greetings))
        data = json.loads(self.card.read_text(encoding="utf-8"))
        data["data"]["name"] = "Someone Else"
        data["data"]["alternate_greetings"] = []
        self.card.write_text(json.dumps(data), encoding="utf-8")
        return 1

    def read_lines(self, dispatcher) -> int:  # type: ignore[no-untyped-def, override]
        from narrative_cli.ui.lineio import run_lines

        return run_lines(dispatcher, self.source, self.consoles)


def test_the_card_is_read_once_for_the_greeting_menu_and_the_story(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    card = write_card(tmp_path, [])
    scripted_server.reply_with(StoryScript())
    options = PlayOptions(
        card=str(card), provider="openai", base_url=scripted_server.base_url,
        model="scripted-model", seed=3, session="ferry",
    )  # fmt: skip
    front = AskingFront(card, "/quit\n")
    code = run_session(options, front, store=SessionStore(tmp_path / "s.db"))
    assert code == 0
    assert front.menus == [
        ["The ferry bell rings. Mira waves User aboard.", "Rain drums on the ferry roof."]
    ]
    shown = captured(front.consoles.out)
    assert "Mira" in shown and "Someone Else" not in shown
    assert "Rain drums on the ferry roof." in shown
    store = SessionStore(tmp_path / "s.db")  # run_session closed its own
    [info] = store.list_sessions()
    assert info.character_name == "Mira" and info.greeting_index == 1
    store.close()


def test_the_greeting_menu_waits_for_the_preflight(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    card = write_card(tmp_path, [])
    options = PlayOptions(
        card=str(card), provider="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m",
    )  # fmt: skip
    front = AskingFront(card, "/quit\n")
    with pytest.raises(BackendUnavailable, match="does not answer"):
        run_session(options, front, store=SessionStore(tmp_path / "s.db"))
    assert front.menus == []  # no greeting was shown
    store = SessionStore(tmp_path / "s.db")
    assert store.list_sessions() == []
    store.close()
