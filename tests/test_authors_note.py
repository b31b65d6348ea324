"""The Author's Note as SillyTavern has it (issue #15): the chat's note (text, interval,
position, depth, role), the character's note, the config default; ``/note`` shows and sets it;
it is stored with the session, exported to ``chat_metadata`` and kept on import."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from narrative_cli.config import PipelineSettings, default_authors_note
from narrative_cli.context.expand import apply_macros
from narrative_cli.context.inputs import HistoryTurn, PromptInputs
from narrative_cli.context.preset_prompt import build_preset_writing
from narrative_cli.context.router import build_writing
from narrative_cli.domain import Card
from narrative_cli.domain_chat import AuthorsNote, Persona, Preset, PresetPrompt
from narrative_cli.load import load_chat
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher
from narrative_cli.store import SessionStore
from narrative_cli.store.chat_import import import_chat_file
from narrative_cli.ui.console import recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import ScriptedServer
from tests.story_replies import StoryScript
from tests.test_commands import Game

scripted_server = servers.scripted_server
CARD_PATH = SAMPLES / "lantern-keeper.png"
PRESET = Preset(name="p", prompts=[PresetPrompt("main", content="MAIN", system_prompt=True),
                                   PresetPrompt("chatHistory", marker=True, system_prompt=True)],
                extra={"new_chat_prompt": ""})


def inputs(note: AuthorsNote | None, turn: int = 3, depth_prompt: bool = False) -> PromptInputs:
    extensions = {"depth_prompt": {"prompt": "CHAR NOTE", "depth": 1, "role": "system"}} if (
        depth_prompt) else {}
    history = [HistoryTurn(0, "", "Greeting.")] + [
        HistoryTurn(n, f"U{n}", f"A{n}") for n in range(1, turn)]
    return PromptInputs(card=Card(name="Mira", extensions=extensions), persona=Persona("Tom"),
                        turn=turn, user_input=f"U{turn}", history=history, preset=PRESET,
                        preset_mode="split", authors_note=note)


def chat(prompt_inputs: PromptInputs) -> list[tuple[str, str]]:
    built = build_preset_writing(apply_macros(prompt_inputs), "writing", [], [])
    return [(m.role, m.content) for m in built.messages]


def test_the_chats_note_goes_in_at_its_depth_and_role() -> None:
    got = chat(inputs(AuthorsNote("NOTE", depth=2, role="user")))
    assert got[-4:] == [("user", "U2"), ("user", "NOTE"), ("assistant", "A2"), ("user", "U3")]
    assert chat(inputs(AuthorsNote("NOTE", depth=0)))[-1] == ("system", "NOTE")


def test_the_note_and_the_characters_note_share_a_depth_in_sillytaverns_order() -> None:
    got = chat(inputs(AuthorsNote("NOTE", depth=1), depth_prompt=True))
    assert got[-2:] == [("system", "NOTE\nCHAR NOTE"), ("user", "U3")]


def test_the_interval_counts_the_players_messages() -> None:
    note = AuthorsNote("NOTE", interval=3)
    sent = [t for t in range(1, 8) if ("system", "NOTE") in chat(inputs(note, turn=t))]
    assert sent == [3, 6]
    assert not any(("system", "NOTE") in chat(inputs(replace(note, interval=0), turn=t))
                   for t in range(1, 4))


def test_before_and_after_main_positions() -> None:
    assert chat(inputs(AuthorsNote("NOTE", position=2)))[:2] == [("system", "NOTE"),
                                                                 ("system", "MAIN")]
    assert chat(inputs(AuthorsNote("NOTE", position=0)))[:2] == [("system", "MAIN"),
                                                                 ("system", "NOTE")]


def test_without_a_preset_the_note_goes_in_the_chat_at_its_depth_and_role() -> None:
    bare = replace(inputs(AuthorsNote("NOTE", depth=2, role="user")), preset=None,
                   preset_mode="none")  # fmt: skip
    messages = build_writing(bare).messages
    at = next(i for i, m in enumerate(messages) if m.content == "NOTE")
    assert messages[at].role == "user"
    after = "\n".join(m.content for m in messages[at + 1 :])
    # two chat messages after it: the last reply and the player's input
    assert after.count("] AI: ") == 1 and after.count("] User: ") == 0
    assert "<user_input>" in after and "<authors_note>" not in after
    before = build_writing(replace(bare, authors_note=AuthorsNote("NOTE", position=2)))
    assert [(m.role, m.content) for m in before.messages[:2]][0] == ("system", "NOTE")
    off = build_writing(replace(bare, authors_note=AuthorsNote("NOTE", interval=0)))
    assert all(m.content != "NOTE" for m in off.messages)


def test_metadata_round_trip_and_config_default() -> None:
    note = AuthorsNote("N", interval=2, position=0, depth=6, role="assistant")
    assert AuthorsNote.from_metadata(note.to_metadata()) == note
    default = default_authors_note(PipelineSettings(authors_note="D", authors_note_depth=2))
    assert default == AuthorsNote("D", depth=2)
    assert AuthorsNote.from_metadata({"note_prompt": "X"}, default) == AuthorsNote("X", depth=2)


@pytest.fixture
def game(tmp_path: Path, scripted_server: ScriptedServer) -> Iterator[Game]:
    script = StoryScript()
    scripted_server.reply_with(script)
    options = PlayOptions(card=str(CARD_PATH), provider="openai",
                          base_url=scripted_server.base_url, model="m", seed=11)
    store = SessionStore(tmp_path / "sessions.db")
    play = PlaySession.open(store, options)
    consoles = recording_consoles(width=100)
    yield Game(play, Dispatcher(play, RichScreen.for_play(play, consoles)), consoles, store,
               script, scripted_server)
    play.close()
    store.close()


def writer_text(server: ScriptedServer) -> str:
    writing = [r for r in server.requests if r.agent == "writing"][-1]
    return json.dumps(writing.messages, ensure_ascii=False)


def test_note_command_sets_it_the_writer_sees_it_and_it_survives_resume_export_import(
    game: Game, tmp_path: Path
) -> None:
    _, out, _ = game.run("/note")
    assert "(none)" in out
    _, out, _ = game.run("/note The fog never lifts.")
    assert "The fog never lifts." in out and "in the chat at depth 4 as system" in out
    game.run("I climb the stairs to the lamp.")
    assert "The fog never lifts." in writer_text(game.server)
    exported = tmp_path / "night.jsonl"
    game.run(f"/export {exported}")
    metadata = load_chat(exported).chat_metadata
    assert (metadata["note_prompt"], metadata["note_depth"], metadata["note_role"]) == (
        "The fog never lifts.", 4, 0)
    game.play.close()  # one process holds a session at a time (#13): let go before resuming
    resumed = PlaySession.resume(game.store, str(game.play.session_id))
    assert resumed.story.authors_note == AuthorsNote("The fog never lifts.")
    resumed.set_note("")  # what `/note off` does
    resumed.close()
    imported = import_chat_file(game.store, exported, CARD_PATH, name="again")
    again = PlaySession.resume(game.store, str(imported.session_id))
    assert again.story.authors_note == AuthorsNote("The fog never lifts.")
    again.close()
    off = PlaySession.resume(game.store, str(game.play.session_id))
    assert off.story.authors_note == AuthorsNote("")
    off.close()


def test_an_imported_chats_note_is_used_at_its_depth(
    game: Game, tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    game.run("I climb the stairs to the lamp.")
    exported = tmp_path / "st.jsonl"
    game.run(f"/export {exported}")
    lines = exported.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["chat_metadata"].update({"note_prompt": "IMPORTED NOTE", "note_interval": 1,
                                    "note_position": 1, "note_depth": 1, "note_role": 1})
    exported.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    imported = import_chat_file(game.store, exported, CARD_PATH, name="st")
    options = PlayOptions(card=str(CARD_PATH), provider="openai",
                          base_url=scripted_server.base_url, model="m",
                          resume=str(imported.session_id))
    again = PlaySession.open(game.store, options)
    try:
        assert again.story.authors_note == AuthorsNote("IMPORTED NOTE", depth=1, role="user")
        again.play("I watch the sea.")
        assert "IMPORTED NOTE" in writer_text(scripted_server)
    finally:
        again.close()
