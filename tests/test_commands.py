"""Every slash command through the shared dispatcher, on a real PlaySession.

The session plays the sample card against the scripted server and stores turns in a SQLite
file under tmp_path; the screen is the real Rich screen printing to fixed-width recording
consoles, so assertions read what a user would see.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from narrative_cli.load import load_chat
from narrative_cli.pipeline.events import PipelineEvent, TextDelta
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import COMMANDS, Dispatcher, Outcome, completions
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import Consoles, recording_consoles
from narrative_cli.ui.screen import RichScreen
from narrative_cli.ui.status import TurnView
from tests import servers
from tests.conftest import SAMPLES
from tests.reliability_support import run_line
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures


@dataclass
class Game:
    play: PlaySession
    dispatcher: Dispatcher
    consoles: Consoles
    store: SessionStore
    script: StoryScript
    server: ScriptedServer

    def run(self, line: str) -> tuple[Outcome, str, str]:
        """Handle a line; return its outcome and what it printed on stdout and stderr."""
        return run_line(self.dispatcher, self.consoles, line)


@pytest.fixture
def game(tmp_path: Path, scripted_server: ScriptedServer) -> Iterator[Game]:
    script = StoryScript()
    scripted_server.reply_with(script)
    options = PlayOptions(
        card=str(SAMPLES / "lantern-keeper.png"),
        provider="openai",
        base_url=scripted_server.base_url,
        model="scripted-model",
        seed=11,
        session="night watch",
    )
    store = SessionStore(tmp_path / "sessions.db")
    play = PlaySession.open(store, options)
    consoles = recording_consoles(width=100)
    dispatcher = Dispatcher(play, RichScreen.for_play(play, consoles))
    yield Game(play, dispatcher, consoles, store, script, scripted_server)
    play.close()
    store.close()


def test_a_plain_line_plays_a_turn_commits_it_and_shows_everything(game: Game) -> None:
    outcome, out, err = game.run("I climb the stairs to the lamp.")
    assert outcome == Outcome() and err == ""
    assert game.store.resume(game.play.session_id).number == 1
    assert NARRATIVES[0] in out
    assert "Dice 1d20+2" in out and "→ success" in out
    assert "keeper_log" in out and "20:00. Fog thick. Lamp lit." in out
    # one status: the card has MVU variables, so the built-in game state is not shown beside them
    assert "Location: Start → Lamp room" not in out
    assert "/keeper/lamp_oil: 12 → 11" in out
    assert "✗ 1 change rejected · /state" in out and '{"item"' not in out  # no raw JSON
    assert "[Turn 1] The apprentice climbed to the lamp room with Edda." in out
    assert "calls 5 · tokens" in out
    assert out.index("Dice 1d20+2") < out.index(NARRATIVES[0]) < out.index("State")


def test_state_lists_the_rejected_changes_of_the_last_turn_in_words(game: Game) -> None:
    game.run("I climb the stairs to the lamp.")
    outcome, out, _ = game.run("/state")
    assert outcome == Outcome()
    assert "Rejected this turn:" in out
    assert '✗ remove_item (item: ghost lantern, quantity: 1): not enough "ghost lantern"' in out


def test_help_lists_every_command(game: Game) -> None:
    _, out, _ = game.run("/help")
    for command in COMMANDS:
        assert f"/{command.name}" in out


def test_state_vars_summary_lore_and_tools(game: Game) -> None:
    _, out, _ = game.run("/vars")
    assert "lamp_oil: 12" in out  # MVU variables exist from the greeting on
    game.run("I climb the stairs to the lamp.")
    _, out, _ = game.run("/state")
    assert "State (turn 1)" in out and "lamp_oil: 11" in out and "Location:" not in out
    _, out, _ = game.run("/vars")
    assert "lamp_oil: 11" in out and "supply_boat: late" in out
    _, out, _ = game.run("/summary")
    assert "[Turn 1] The apprentice climbed to the lamp room with Edda." in out
    _, out, _ = game.run("/lore")
    assert "The lamp" in out and 'key "lamp"' in out and "worldinfo1" in out
    _, out, _ = game.run("/tools")
    for name in ("roll_dice", "tide_clock", "keeper_log", "post_pipeline"):
        assert name in out


def test_summary_off_hides_the_new_entry_and_a_bad_toggle_is_a_usage_error(game: Game) -> None:
    outcome, out, _ = game.run("/summary off")
    assert outcome == Outcome() and "hidden" in out
    _, out, _ = game.run("I climb the stairs.")
    assert "[Turn 1]" not in out and "State" in out
    outcome, _, err = game.run("/summary maybe")
    assert outcome.usage_error and "expected on or off" in err


def test_roll_shows_a_dice_panel_without_touching_the_story(game: Game) -> None:
    before = game.play.story.snapshot.to_dict()
    outcome, out, _ = game.run("/roll 1d20+3 adv dc 5")
    assert outcome == Outcome()
    assert "Dice 1d20+3" in out and "advantage" in out and "DC 5" in out
    assert game.play.story.snapshot.to_dict() == before
    outcome, _, err = game.run("/roll 3x7")
    assert outcome.usage_error and err.startswith("error:")
    assert game.run("/roll")[0].usage_error


def test_roll_takes_the_new_notation_and_coc_checks(game: Game) -> None:
    outcome, out, _ = game.run("/roll 4d6kh3")
    assert outcome == Outcome() and "Dice 4d6kh3" in out and "dropped" in out
    outcome, out, _ = game.run("/roll coc 60 hard bonus")
    assert outcome == Outcome() and "CoC 7e" in out and "(skill 60, hard)" in out
    assert "tens" in out and "units" in out
    outcome, _, err = game.run("/roll coc 60 sideways")
    assert outcome.usage_error and "unknown word 'sideways'" in err
    outcome, out, _ = game.run("/dice")
    assert outcome == Outcome() and "No rolls yet this session." in out


def test_regen_keeps_the_old_reply_as_a_swipe_and_swipe_moves_the_state(game: Game) -> None:
    game.run("I climb the stairs.")
    game.script.location = "Gallery"
    outcome, out, _ = game.run("/regen")
    assert outcome == Outcome() and NARRATIVES[1] in out
    assert game.play.turn == 1
    assert game.play.story.snapshot.state["location"] == "Gallery"
    _, out, _ = game.run("/swipe")
    assert "*1" in out and NARRATIVES[0][:30] in out and NARRATIVES[1][:30] in out
    outcome, out, _ = game.run("/swipe 0")
    assert outcome == Outcome() and "reply 0 of 2" in out and NARRATIVES[0] in out
    assert game.play.story.snapshot.state["location"] == "Lamp room"
    assert game.play.story.history[-1].narrative == NARRATIVES[0]
    outcome, _, err = game.run("/swipe 7")
    assert outcome.failed and "has swipes 0..1" in err
    assert game.run("/swipe x")[0].usage_error


def test_undo_goes_back_a_turn_and_refuses_at_the_greeting(game: Game) -> None:
    game.run("I climb the stairs.")
    outcome, out, _ = game.run("/undo")
    assert outcome == Outcome() and "back at turn 0" in out
    assert game.play.turn == 0 and game.store.resume(game.play.session_id).number == 0
    assert "Three days of fog" in out  # the greeting is shown again
    outcome, _, err = game.run("/undo")
    assert outcome.failed and "nothing to undo" in err


def test_branch_continues_in_a_new_session_and_leaves_the_old_one(game: Game) -> None:
    game.run("I climb the stairs.")
    old_id = game.play.session_id
    outcome, out, _ = game.run("/branch what if")
    assert outcome == Outcome() and "what if" in out
    assert game.play.session_id != old_id
    game.run("I ring the bell.")
    assert game.store.resume(game.play.session_id).number == 2
    assert game.store.resume(old_id).number == 1


def test_a_failed_turn_saves_nothing_and_retry_plays_the_same_input(game: Game) -> None:
    game.script.fail_writing = 3  # the first attempt and both retries
    outcome, _, err = game.run("I ring the bell.")
    assert outcome.failed and not outcome.usage_error
    assert "error:" in err and "/retry" in err
    assert game.store.resume(game.play.session_id).number == 0
    outcome, out, _ = game.run("/retry")
    assert outcome == Outcome() and NARRATIVES[0] in out
    assert game.store.record(game.play.session_id, 1)["user_input"] == "I ring the bell."
    outcome, _, err = game.run("/retry")
    assert outcome.failed and "nothing to retry" in err


def test_continue_extends_the_last_reply_in_the_same_turn(game: Game) -> None:
    outcome, _, err = game.run("/continue")
    assert outcome.failed and "greeting" in err
    game.run("I climb the stairs.")
    outcome, out, _ = game.run("/continue")
    assert outcome == Outcome()
    assert game.play.turn == 1
    record = game.store.record(game.play.session_id, 1)
    assert record["narrative"] == f"{NARRATIVES[0]}\n\n{NARRATIVES[1]}"
    assert [s.selected for s in game.play.swipes()] == [False, True]
    writer = [r for r in game.server.requests if r.agent == "writing"][-1]
    assert writer.messages[-2] == {"role": "assistant", "content": NARRATIVES[0]}
    assert out.count(NARRATIVES[0]) == 1 and NARRATIVES[1] in out


def test_trace_on_writes_calls_and_trace_off_stops(game: Game, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    outcome, out, _ = game.run(f"/trace on {trace}")
    assert outcome == Outcome() and str(trace) in out
    game.run("I climb the stairs.")
    calls = [json.loads(line) for line in (trace / "calls.jsonl").read_text().splitlines()]
    assert {c["agent"] for c in calls} >= {"planning", "writing", "analysis"}
    assert (trace / "turn-0001.md").exists()
    game.run("/trace off")
    game.run("I trim the wick.")
    assert len((trace / "calls.jsonl").read_text().splitlines()) == len(calls)
    assert not (trace / "turn-0002.md").exists()
    assert game.run("/trace sideways")[0].usage_error


def test_cost_shows_session_totals_and_what_the_cache_served(game: Game) -> None:
    _, out, _ = game.run("/cost")
    assert "No model calls yet" in out
    game.run("I climb the stairs.")
    game.run("/regen")
    _, out, _ = game.run("/cost")
    total = game.play.account.total()
    assert total.calls == 10  # both replies of turn 1 count
    assert "planning" in out and "mvu_extract" in out and "total" in out
    assert f"{total.prompt_tokens:,}" in out
    assert "The cache served 0 of" in out


def test_mode_shows_and_switches_the_pipeline_mode(game: Game) -> None:
    _, out, _ = game.run("/mode")
    assert "Mode: auto" in out
    game.run("/mode merged")
    game.run("I climb the stairs.")
    agents = {r.agent for r in game.server.requests}
    assert "merged_writing" in agents and "planning" not in agents
    outcome, _, err = game.run("/mode fast")
    assert outcome.usage_error and "unknown mode" in err


def test_export_writes_a_sillytavern_chat_or_a_json_dump(game: Game, tmp_path: Path) -> None:
    game.run("I climb the stairs.")
    outcome, out, _ = game.run(f"/export {tmp_path / 'night.jsonl'}")
    assert outcome == Outcome() and "Wrote 3 messages" in out
    chat = load_chat(tmp_path / "night.jsonl")
    assert chat.messages[1].mes == "I climb the stairs."
    assert chat.messages[2].mes.startswith(NARRATIVES[0])  # then the keeper's log line
    game.run(f"/export {tmp_path / 'night.json'}")
    dump = json.loads((tmp_path / "night.json").read_text())
    assert len(dump["turns"]) == 2
    assert game.run("/export")[0].usage_error


def test_quit_unknown_commands_escapes_and_bad_quotes(game: Game) -> None:
    assert game.run("/quit")[0].quit and game.run("/exit")[0].quit
    outcome, _, err = game.run("/dance")
    assert outcome.usage_error and "unknown command /dance" in err
    outcome, _, err = game.run('/export "unclosed')
    assert outcome.usage_error and "cannot read the command" in err
    assert game.run("   ")[0] == Outcome()
    game.run("//shout into the fog")
    assert game.store.record(game.play.session_id, 1)["user_input"] == "/shout into the fog"


class _InterruptingScreen(RichScreen):
    """A screen whose turn view presses Ctrl-C when the story starts to stream."""

    @contextmanager
    def turn(self, prefix: str = "") -> Iterator[TurnView]:
        with super().turn(prefix) as view:

            def press_ctrl_c(event: PipelineEvent) -> None:
                view(event)
                if isinstance(event, TextDelta):
                    raise KeyboardInterrupt

            yield press_ctrl_c  # type: ignore[misc]


def test_ctrl_c_during_a_turn_saves_nothing_and_play_goes_on(game: Game) -> None:
    game.dispatcher.screen = _InterruptingScreen(game.consoles, "en")
    outcome, out, _ = game.run("I climb the stairs.")
    assert outcome.cancelled and "Turn cancelled; nothing was saved." in out
    assert game.store.resume(game.play.session_id).number == 0
    assert game.play.turn == 0
    game.dispatcher.screen = RichScreen.for_play(game.play, game.consoles)
    assert game.run("I climb the stairs.")[0] == Outcome()
    assert game.store.resume(game.play.session_id).number == 1


def test_resume_continues_where_the_session_stopped(game: Game) -> None:
    game.run("I climb the stairs.")
    game.play.close()  # one process, one open session: the lock goes with close()
    resumed = PlaySession.resume(game.store, "night watch")
    assert resumed.session_id == game.play.session_id and resumed.turn == 1
    assert resumed.story.snapshot.state["location"] == "Lamp room"
    assert resumed.last is not None and resumed.last.narrative == NARRATIVES[0]
    assert resumed.account.total().calls == 5
    resumed.close()


def test_completion_of_commands_and_arguments() -> None:
    assert list(completions("/sw")) == ["/swipe"]
    assert set(completions("/s")) == {"/state", "/summary", "/swipe"}
    assert list(completions("/mode s")) == ["serial"]
    assert list(completions("/trace o")) == ["on", "off"]
    assert list(completions("hello")) == []


def test_an_exported_session_imported_again_resumes_and_plays_on(
    game: Game, tmp_path: Path
) -> None:
    from narrative_cli.store.chat_import import import_chat_file

    game.run("I climb the stairs to the lamp.")
    game.run("I trim the wick.")
    exported = tmp_path / "night.jsonl"
    _, out, err = game.run(f"/export {exported}")
    assert exported.exists(), out + err
    imported = import_chat_file(game.store, exported, SAMPLES / "lantern-keeper.png", name="again")
    options = PlayOptions(
        card=str(SAMPLES / "lantern-keeper.png"),
        provider="openai",
        base_url=game.server.base_url,
        model="scripted-model",
        resume=str(imported.session_id),
    )
    again = PlaySession.open(game.store, options)  # earlier turns of an export hold no snapshot
    try:
        assert again.story.snapshot.turn == 2 and again.previous is None
        again.play("I watch the sea.")
        assert game.store.resume(imported.session_id).number == 3
    finally:
        again.close()


def test_an_imported_sillytavern_chat_resumes_under_its_own_user_name(
    game: Game, tmp_path: Path
) -> None:
    """sample-chat.jsonl was played by "Wren": going on with it, the prompts must keep that
    name, not the default persona's "User" (and a --user-name given on resume still wins)."""
    from narrative_cli.store.chat_import import import_chat_file

    chat = SAMPLES / "sample-chat.jsonl"
    imported = import_chat_file(game.store, chat, SAMPLES / "lantern-keeper.png", name="wren")

    def resumed(**flags: str) -> str:
        options = PlayOptions(provider="openai", base_url=game.server.base_url,
                              model="scripted-model", resume=str(imported.session_id), **flags)
        again = PlaySession.open(game.store, options)
        try:
            start = len(game.server.requests)
            again.play("I check the wick again.")
            writer = [r for r in game.server.requests[start:] if r.agent == "writing"][-1]
            return "\n".join(str(m.get("content")) for m in writer.messages)
        finally:
            again.close()

    assert "[User name] Wren" in resumed()  # the persona block, and {{user}} in the card
    assert "[User name] Ash" in resumed(user_name="Ash")
