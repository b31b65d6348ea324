"""A preset the user gives is used by the story: its prompts and samplers reach the writer
(issue #15), on the scripted server, with the default ``preset_mode: none``."""

from __future__ import annotations

import json
from pathlib import Path

from narrative_cli.config import AgentSettings
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import open_story
from tests import servers
from tests.pipeline_support import (
    LANTERN,
    Script,
    backends_for,
    requests_of,
    settings_for,
)
from tests.servers import ScriptedServer
from tests.test_run_linemode import narrative

scripted_server = servers.scripted_server

PRESET = {
    "temperature": 0.65, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "openai_max_tokens": 777,
    "frequency_penalty": 0.2, "presence_penalty": 0.1, "repetition_penalty": 1.05,
    "reasoning_effort": "low", "new_chat_prompt": "[New story]",
    "prompts": [
        {"identifier": "main", "content": "PRESET MAIN for {{char}}.", "system_prompt": True},
        {"identifier": "tone", "content": "PRESET TONE: keep it quiet.", "role": "user"},
        {"identifier": "off", "content": "PRESET OFF"},
        {"identifier": "chatHistory", "marker": True, "system_prompt": True},
    ],
    "prompt_order": [{"character_id": 100001, "order": [
        {"identifier": "main", "enabled": True}, {"identifier": "tone", "enabled": True},
        {"identifier": "off", "enabled": False}, {"identifier": "chatHistory", "enabled": True},
    ]}],
}


def write_preset(tmp_path: Path, value: object = PRESET, name: str = "Quiet.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_a_given_preset_shapes_the_writer_under_the_default_mode(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    Script().install(scripted_server)
    settings = settings_for(scripted_server)
    assert settings.pipeline.preset_mode == "none"
    settings.agents["writing"] = AgentSettings()  # nothing set per agent: the preset decides
    story = open_story(LANTERN, preset=write_preset(tmp_path), settings=settings, seed=3)
    run_turn(story, "I trim the wick.", backends_for(scripted_server, settings))
    body = requests_of(scripted_server, "writing")[0].json
    contents = [(m["role"], m["content"]) for m in body["messages"]]
    assert contents[0] == ("system", "PRESET MAIN for Edda.")
    assert ("user", "PRESET TONE: keep it quiet.") in contents
    assert ("system", "[New story]") in contents
    users = [c for role, c in contents if role == "user"]
    assert users[-1] == "I trim the wick."  # the chat ends with the input; markers the order
    assert contents[-1][0] == "system"  # leaves out follow it, as SillyTavern appends them
    assert all("PRESET OFF" not in c for _, c in contents)
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.65, 0.9, 777)
    assert (body["frequency_penalty"], body["presence_penalty"]) == (0.2, 0.1)
    assert (body["top_k"], body["min_p"], body["repetition_penalty"]) == (40, 0.05, 1.05)
    assert body["reasoning_effort"] == "low"
    planning = requests_of(scripted_server, "planning")[0].json
    assert planning.get("temperature") != 0.65  # the planner keeps its own settings
    assert "PRESET TONE" not in json.dumps(planning)  # user-role prompts are the writer's


def test_the_config_per_agent_wins_over_the_preset(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    Script().install(scripted_server)
    settings = settings_for(scripted_server)
    settings.agents["writing"] = AgentSettings(temperature=0.3, max_tokens=123)
    story = open_story(LANTERN, preset=write_preset(tmp_path), settings=settings, seed=3)
    run_turn(story, "I trim the wick.", backends_for(scripted_server, settings))
    body = requests_of(scripted_server, "writing")[0].json
    assert (body["temperature"], body["max_tokens"], body["top_p"]) == (0.3, 123, 0.9)


def test_run_refuses_an_instruct_template_as_preset_naming_its_kind(tmp_path: Path) -> None:
    template = write_preset(tmp_path, {"name": "ChatML", "input_sequence": "<|im_start|>user",
                                       "output_sequence": "<|im_start|>assistant"}, "ChatML.json")
    done = narrative(None, "run", str(LANTERN), "--preset", str(template), stdin="hi\n")
    assert done.returncode == 2
    assert "ChatML.json: this is an instruct template" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_the_writers_prompt_leaves_room_for_the_presets_reply(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    from narrative_cli.context.budget import prompt_limit

    Script().install(scripted_server)
    settings = settings_for(scripted_server)
    settings.agents["writing"] = AgentSettings()
    settings.profiles["scripted"].context_size = 3000
    preset = {**PRESET, "openai_max_tokens": 2400}
    story = open_story(LANTERN, preset=write_preset(tmp_path, preset), settings=settings, seed=3)
    result = run_turn(story, "I trim the wick.", backends_for(scripted_server, settings))
    cuts = [c for c in result.budget_cuts if c.agent == "writing"]
    assert cuts and cuts[0].limit == prompt_limit(3000, 2400)
    assert requests_of(scripted_server, "writing")[0].json["max_tokens"] == 2400


def test_a_preset_in_the_config_is_used_and_remembered(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    import os

    from narrative_cli.play import PlayOptions, PlaySession
    from narrative_cli.store import SessionStore

    Script().install(scripted_server)
    home = Path(os.environ["NARRATIVE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text(
        f"pipeline:\n  preset: {json.dumps(str(write_preset(tmp_path)))}\n", encoding="utf-8")
    options = PlayOptions(card=str(LANTERN), provider="openai",
                          base_url=scripted_server.base_url, model="m", seed=2)
    with SessionStore(tmp_path / "s.db") as store:
        play = PlaySession.open(store, options)
        try:
            assert play.story.preset is not None and play.story.preset.name == "Quiet"
            assert store.session(play.session_id).settings["preset"].endswith("Quiet.json")
            play.play("I trim the wick.")
        finally:
            play.close()
    body = requests_of(scripted_server, "writing")[0].json
    assert body["messages"][0]["content"] == "PRESET MAIN for Edda."


def test_the_trace_shows_the_presets_samplers(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    from narrative_cli.pipeline.trace import TraceWriter

    Script().install(scripted_server)
    settings = settings_for(scripted_server)
    settings.agents["writing"] = AgentSettings()
    story = open_story(LANTERN, preset=write_preset(tmp_path), settings=settings, seed=3)
    trace = TraceWriter(tmp_path / "trace")
    run_turn(story, "I trim the wick.", backends_for(scripted_server, settings), trace=trace)
    calls = [json.loads(line) for line in
             (tmp_path / "trace" / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    writing = next(c for c in calls if c["agent"] == "writing")
    request = writing["request"]
    assert request["temperature"] == 0.65 and request["top_k"] == 40
    assert request["reasoning_effort"] == "low" and request["max_tokens"] == 777


def test_an_unknown_preset_mode_or_note_position_is_refused_when_the_config_loads(
    tmp_path: Path,
) -> None:
    import os

    import pytest

    from narrative_cli.config import load_settings
    from narrative_cli.errors import ConfigError

    home = Path(os.environ["NARRATIVE_HOME"])
    config = home / "config.yaml"
    config.write_text("pipeline:\n  preset_mode: merge\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pipeline\.preset_mode: 'merge' is not one of none"):
        load_settings({})
    config.write_text("pipeline:\n  authors_note_position: top\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="authors_note_position: 'top' is not one of chat"):
        load_settings({})
