"""Budget truth (issue #15): the lore budget is SillyTavern's share of the writer's prompt room,
a constant entry it drops is a visible warning naming it and the budget, and ``/lore`` lists
activated, dropped-by-budget and rejected entries with reasons."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from narrative_cli.config import AgentSettings
from narrative_cli.pipeline.lore_budget import lore_settings
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import open_story
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.pipeline_support import Script, backends_for, entry, settings_for, write_card
from tests.servers import ScriptedServer
from tests.story_replies import StoryScript
from tests.test_commands import Game

scripted_server = servers.scripted_server
BIG = "The combat rules of the island: " + "each blow costs stamina and time. " * 60


def preset_file(tmp_path: Path, context: int, reply: int) -> Path:
    path = tmp_path / "Small.json"
    path.write_text(json.dumps({"openai_max_context": context, "openai_max_tokens": reply,
                                "prompts": [{"identifier": "main", "content": "M"}]}),
                    encoding="utf-8")
    return path


def card(tmp_path: Path) -> Path:
    return write_card(tmp_path, [
        entry(1, "The island is small.", constant=True, comment="core setting", order=100),
        entry(2, BIG, constant=True, comment="combat rules", order=10),
    ])


def test_the_budget_is_a_share_of_the_writers_room(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    settings = settings_for(scripted_server)
    settings.agents["writing"] = AgentSettings()
    story = open_story(card(tmp_path), preset=preset_file(tmp_path, 1000, 600),
                       settings=settings, seed=1)
    backends = backends_for(scripted_server, settings)
    assert lore_settings(story, backends).budget == 100  # 25% of (1000 - 600)
    settings.profiles["scripted"].context_size = 4000  # the profile states the context
    assert lore_settings(story, backends).budget == 850  # 25% of (4000 - 600)
    settings.agents["writing"] = AgentSettings(max_tokens=1000)
    assert lore_settings(story, backends).budget == 750  # the config's reply room wins
    settings.lore = {"max_context": 2000}
    assert lore_settings(story, backends).budget == 500  # an explicit setting wins


def test_a_dropped_constant_entry_is_a_warning_naming_it_and_the_budget(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    Script().install(scripted_server)
    settings = settings_for(scripted_server)
    settings.agents["writing"] = AgentSettings()
    story = open_story(card(tmp_path), preset=preset_file(tmp_path, 1000, 600),
                       settings=settings, seed=1)
    result = run_turn(story, "I look around.", backends_for(scripted_server, settings))
    warnings = [w for w in result.warnings if "combat rules" in w]
    assert len(warnings) == 1
    assert "the lore budget is 100 tokens (25% of 400 prompt tokens)" in warnings[0]
    dropped = [r for r in result.lore_rejected if r.comment == "combat rules"]
    assert dropped and dropped[0].reason.startswith("budget")
    assert any(a.comment == "core setting" for a in result.lore)


@pytest.fixture
def game(tmp_path: Path, scripted_server: ScriptedServer) -> Iterator[Game]:
    script = StoryScript()
    scripted_server.reply_with(script)
    options = PlayOptions(card=str(card(tmp_path)), provider="openai",
                          base_url=scripted_server.base_url, model="m", seed=11,
                          preset=str(preset_file(tmp_path, 1000, 600)))
    store = SessionStore(tmp_path / "sessions.db")
    play = PlaySession.open(store, options)
    consoles = recording_consoles(width=160)
    yield Game(play, Dispatcher(play, RichScreen.for_play(play, consoles)), consoles, store,
               script, scripted_server)
    play.close()
    store.close()


def test_lore_command_lists_activated_and_dropped_entries_with_reasons(game: Game) -> None:
    _, out, _ = game.run("I look around.")
    assert "combat rules" in out  # the warning is shown with the turn
    _, out, _ = game.run("/lore")
    rows = [line for line in out.splitlines() if "core setting" in line or "combat" in line]
    assert any("core setting" in r and "activated" in r for r in rows)
    assert any("combat rules" in r and "dropped by budget" in r for r in rows)
    # a stored turn keeps its rejections: they show again after a resume
    game.play.close()  # one process holds a session at a time (#13): let go before resuming
    again = PlaySession.resume(game.store, str(game.play.session_id))
    try:
        assert any(r.comment == "combat rules" for r in again.last.lore_rejected)  # type: ignore[union-attr]
    finally:
        again.close()
