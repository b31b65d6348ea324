"""Budget truth (#15): the writer's context size from the provider when the profile states none.

The scripted server lists its model with a context window (OpenRouter's ``context_length``,
vLLM's ``max_model_len``, llama.cpp's ``meta.n_ctx_train``) or answers llama.cpp's ``/props``;
the lore budget is 25% of that size minus the writer's reply room (300 tokens here). A server
that states nothing gets the assumed size, said once per session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import open_story
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.store import SessionStore
from tests import servers
from tests.pipeline_support import Script, collect, entry, settings_for, write_card
from tests.servers import ScriptedServer

scripted_server = servers.scripted_server


def card(folder: Path) -> Path:
    big = "The harbour law is long. " * 120  # far above 25% of 2000 - 300 tokens
    return write_card(folder, [entry(1, big, constant=True, comment="harbour law"),
                               entry(2, "The ferry runs at dusk.", constant=True,
                                     comment="ferry")])  # fmt: skip


def turns(server: ScriptedServer, folder: Path, count: int = 1) -> list[list[str]]:
    Script().install(server)
    settings = settings_for(server)
    story = open_story(card(folder), settings=settings, seed=3)
    warnings = []
    with BackendSet.from_settings(settings) as backends:
        for n in range(count):
            _, listener = collect()
            result = run_turn(story, f"I wait {n}.", backends, listener=listener)
            story.advance(result)
            warnings.append(result.warnings)
    return warnings


@pytest.mark.parametrize("fields", [{"context_length": 2000}, {"max_model_len": 2000},
                                    {"meta": {"n_ctx_train": 2000}}])  # fmt: skip
def test_the_model_lists_context_sets_the_lore_budget(
    fields: dict[str, Any], scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.models = ["scripted-model"]
    scripted_server.model_fields = fields
    warnings = turns(scripted_server, tmp_path, count=2)
    dropped = [w for w in warnings[0] if "'harbour law' was dropped" in w]
    assert dropped and "25% of 1700 prompt tokens" in dropped[0]
    assert not any("not known" in w for turn in warnings for w in turn)
    listed = [g for g in scripted_server.gets if g.path.endswith("/models")]
    assert len(listed) == 1  # asked once for the session


def test_llama_cpp_props_gives_the_context_when_the_list_does_not(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    scripted_server.props = {"default_generation_settings": {"n_ctx": 2000}}
    warnings = turns(scripted_server, tmp_path)
    assert any("'harbour law' was dropped" in w and "25% of 1700" in w for w in warnings[0])


def test_a_server_that_states_nothing_gets_the_assumed_size_said_once(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    Script().install(scripted_server)
    options = PlayOptions(card=str(card(tmp_path)), provider="openai",
                          base_url=scripted_server.base_url, model="scripted-model", seed=3)
    play = PlaySession.open(SessionStore(tmp_path / "s.db"), options)
    try:
        said = [w for w in play.warnings if "context size is not known" in w]
        assert len(said) == 1 and "32768 tokens are assumed" in said[0]
        first, second = play.play("I wait."), play.play("I wait more.")
    finally:
        play.close()
    for result in (first, second):  # not repeated by the turns
        assert not any("context size is not known" in w for w in result.warnings)
        assert not any("'harbour law' was dropped" in w for w in result.warnings)
    stated = PlayOptions(card=str(card(tmp_path)), provider="openai", seed=3,
                         base_url=scripted_server.base_url, model="scripted-model")
    scripted_server.models, scripted_server.model_fields = ["scripted-model"], {
        "context_length": 2000}
    again = PlaySession.open(SessionStore(tmp_path / "t.db"), stated)
    try:
        assert not any("context size is not known" in w for w in again.warnings)
    finally:
        again.close()
