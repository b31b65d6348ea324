"""The first run on the bundled model shows the story first (#18 item 1).

With the bundled 135M model as the writer (the ``local`` profile without a ``model_path``),
``auto`` mode writes merged: no planning call before the story, even on a card whose
planning tools are active, and the turn's notes say the planner's tools did not run. Any
other writer, or ``--mode serial``, keeps the planner. The local profile's calls go to the
scripted server here (the backend opener is the only part replaced: no model is loaded).
"""

from __future__ import annotations

from narrative_cli.backends.openai_compat import OpenAIBackend
from narrative_cli.config import AgentSettings, Profile, Settings
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.orchestrator import SKIPPED_PLANNING, run_turn, small_local_writer
from narrative_cli.pipeline.story import open_story
from tests import servers
from tests.pipeline_support import LANTERN
from tests.servers import ScriptedServer
from tests.story_replies import NARRATIVES, StoryScript

scripted_server = servers.scripted_server


class SmallModel(OpenAIBackend):
    """The scripted server in the place of the bundled model (which says ``small_model``)."""

    small_model = True


def local_on(server: ScriptedServer, mode: str = "auto") -> BackendSet:
    """Settings of a first run (the default ``local`` profile), calls sent to ``server``."""
    settings = Settings()
    settings.pipeline.mode = mode

    def opener(profile: Profile, agent_settings: AgentSettings) -> OpenAIBackend:
        assert profile.provider == "local" and profile.model_path is None
        return SmallModel(server.profile(), agent_settings, api_key=None)

    return BackendSet.from_settings(settings, opener=opener)


def test_the_bundled_writer_streams_first_without_a_planning_call(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.reply_with(StoryScript())
    backends = local_on(scripted_server)
    assert small_local_writer(backends)
    story = open_story(LANTERN, settings=backends.settings, seed=3)
    assert any(tool.trigger == "planning" for tool in story.tools.tools)
    result = run_turn(story, "I climb the stairs.", backends)
    agents = [request.agent for request in scripted_server.requests]
    assert agents[0] == "merged_writing" and "planning" not in agents
    assert "analysis" in agents and agents.index("analysis") > 0  # after the story
    assert result.mode == "merged" and result.narrative == NARRATIVES[0]
    assert SKIPPED_PLANNING in result.notes


def test_serial_mode_or_another_model_keeps_the_planner(scripted_server: ScriptedServer) -> None:
    scripted_server.reply_with(StoryScript())
    backends = local_on(scripted_server, mode="serial")
    story = open_story(LANTERN, settings=backends.settings, seed=3)
    result = run_turn(story, "I climb the stairs.", backends)
    assert scripted_server.requests[0].agent == "planning" and SKIPPED_PLANNING not in result.notes

    assert not small_local_writer(BackendSet.single(OpenAIBackend(scripted_server.profile())))
