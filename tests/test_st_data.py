"""``--st-data DIR`` on a folder laid out like a SillyTavern install (issue #15): ``narrative
cards`` lists the characters, ``narrative run NAME`` finds one, its linked world comes from
``worlds/``, and the global worlds and world-info settings of ``settings.json`` apply."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from narrative_cli.cli.app import app
from narrative_cli.play import PlayOptions
from narrative_cli.play.opening import load_story, with_st_data
from tests import servers
from tests.conftest import SAMPLES
from tests.pipeline_support import write_card
from tests.servers import ScriptedServer
from tests.story_replies import StoryScript
from tests.test_run_linemode import narrative

scripted_server = servers.scripted_server


def world(folder: Path, name: str, text: str) -> None:
    path = folder / "worlds" / f"{name}.json"
    path.write_text(json.dumps({"entries": {"0": {
        "uid": 0, "key": [], "content": text, "constant": True, "position": 0}}}),
        encoding="utf-8")


def install(tmp_path: Path) -> Path:
    """``data/default-user`` of a SillyTavern install, as the tests need it."""
    root = tmp_path / "SillyTavern" / "data" / "default-user"
    for sub in ("characters", "worlds", "chats", "groups", "OpenAI Settings"):
        (root / sub).mkdir(parents=True)
    write_card(root / "characters", [], name="Mira", extensions={"world": "Ferry Lore"})
    write_card(root / "characters", [], name="Oren", extensions={"world": "Lost Atlas"})
    shutil.copy(SAMPLES / "lantern-keeper.png", root / "characters" / "Edda.png")
    world(root, "Ferry Lore", "FERRY WORLD: the ferry crosses twice a day.")
    world(root, "Global Rules", "GLOBAL WORLD: magic is rare.")
    settings = {"world_info_settings": {
        "world_info": {"globalSelect": ["Global Rules"]},
        "world_info_depth": 3, "world_info_budget": 40, "world_info_recursive": False}}
    (root / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return root


def test_cards_lists_the_characters_and_their_worlds(tmp_path: Path) -> None:
    root = install(tmp_path)
    done = CliRunner().invoke(app, ["cards", "--st-data", str(root)])
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[0].startswith("Edda  [Edda.png]")
    assert "Mira  [mira.json]  world: Ferry Lore" in lines
    assert "Oren  [oren.json]  world: Lost Atlas (not in worlds/)" in lines
    data = json.loads(CliRunner().invoke(app, ["cards", "--st-data", str(root), "--json"]).output)
    assert [c["name"] for c in data["characters"]] == ["Edda", "Mira", "Oren"]
    bad = narrative(None, "cards", "--st-data", str(tmp_path))
    assert bad.returncode == 2 and "no characters/ folder" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) <= 2 and "Traceback" not in bad.stderr


def test_a_name_finds_the_card_with_its_linked_and_global_worlds_and_settings(
    tmp_path: Path,
) -> None:
    root = install(tmp_path)
    options, notes = with_st_data(PlayOptions(card="mira", st_data=str(root)))
    assert Path(options.card).name == "mira.json" and notes == []
    assert [Path(p).stem for p in options.lorebooks] == ["Ferry Lore", "Global Rules"]
    story, settings = load_story(options, 0, seed=1)
    assert sorted(e.content.split(":")[0] for e in story.entries) == ["FERRY WORLD",
                                                                     "GLOBAL WORLD"]
    assert settings.lore["world_info_budget"] == 40 and settings.lore["world_info_depth"] == 3
    again, _ = with_st_data(options)  # resolving twice adds nothing
    assert again.lorebooks == options.lorebooks
    oren, notes = with_st_data(PlayOptions(card="Oren", st_data=str(root)))
    assert notes == [f"lore: the world 'Lost Atlas' is not in {root / 'worlds'}"]


def test_run_name_plays_the_card_from_the_folder(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    root = install(tmp_path)
    scripted_server.reply_with(StoryScript())
    done = narrative(scripted_server, "run", "Mira", "--st-data", str(root),
                     stdin="I board the ferry.\n")
    assert done.returncode == 0, done.stderr
    assert scripted_server.requests, done.stdout + done.stderr
    text = json.dumps([r.messages for r in scripted_server.requests], ensure_ascii=False)
    assert "FERRY WORLD" in text and "GLOBAL WORLD" in text
    missing = narrative(None, "run", "Nobody", "--st-data", str(root), stdin="hi\n")
    assert missing.returncode == 2 and "no card named 'Nobody'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_presets_come_from_openai_settings_by_name_or_the_settings_selection(
    tmp_path: Path,
) -> None:
    root = install(tmp_path)
    preset = {"temperature": 0.5, "prompts": [{"identifier": "main", "content": "M"}]}
    (root / "OpenAI Settings" / "Calm.json").write_text(json.dumps(preset), encoding="utf-8")
    named, _ = with_st_data(PlayOptions(card="Mira", preset="Calm", st_data=str(root)))
    assert named.preset == str(root / "OpenAI Settings" / "Calm.json")
    unselected, notes = with_st_data(PlayOptions(card="Mira", st_data=str(root)))
    assert unselected.preset is None and notes == []
    data = json.loads((root / "settings.json").read_text(encoding="utf-8"))
    data["oai_settings"] = {"preset_settings_openai": "Calm"}
    (root / "settings.json").write_text(json.dumps(data), encoding="utf-8")
    selected, notes = with_st_data(PlayOptions(card="Mira", st_data=str(root)))
    assert selected.preset == named.preset
    assert notes == ["preset: 'Calm', the one selected in SillyTavern's settings.json "
                     "(--preset chooses another)"]
    story, _ = load_story(selected, 0, seed=1)
    assert story.preset is not None and story.preset.samplers["temperature"] == 0.5
    missing = narrative(None, "run", "Mira", "--st-data", str(root), "--preset", "Wild")
    assert missing.returncode == 2 and "no preset of that name" in missing.stderr


def test_the_greeting_menu_finds_the_card_by_name(tmp_path: Path) -> None:
    from narrative_cli.play.launch import choose_greeting
    from narrative_cli.store import SessionStore

    class Menu:
        asked: list[str] = []

        def choose_greeting(self, greetings: list[str], lang: str) -> int:
            self.asked.extend(greetings)
            return 1

    root = install(tmp_path)
    with SessionStore(tmp_path / "s.db") as store:
        options, card = choose_greeting(PlayOptions(card="Mira", st_data=str(root)), store,
                                        Menu())  # type: ignore[arg-type]
    assert card is not None and card.name == "Mira"
    assert Path(options.card).name == "mira.json" and options.greeting == 1
