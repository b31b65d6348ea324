"""EJS templates in regex replacements, global regex scripts and the reasoning placement (#14).

ST-Prompt-Template renders the templates SillyTavern's regex scripts write, in prompts and on
screen; SillyTavern runs its global scripts before a card's. No fixture card has a template in
a regex replacement, so these cards are our own; every turn runs in a real PlaySession (SQLite
file, Rich screen on recording consoles) against the scripted server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from narrative_cli.cli.app import app
from narrative_cli.domain import RegexScript
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher
from narrative_cli.regex.scripts import RegexScripts
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.pipeline_support import Script, entry, requests_of, write_card
from tests.servers import ScriptedServer

scripted_server = servers.scripted_server

AFFECTION = "<%= getvar('stat_data.理.好感度[0]') %>"


def regex(name: str, find: str, replace: str, placement: list[int], **flags: Any) -> dict[str, Any]:
    return {"scriptName": name, "findRegex": find, "replaceString": replace,
            "placement": placement, **flags}  # fmt: skip


def mvu_card(folder: Path, scripts: list[dict[str, Any]], first_mes: str = "理看着你。") -> Path:
    tree = {"理": {"好感度": [55, "0-100"], "情绪": "平静"}}
    init = {**entry(1, json.dumps(tree, ensure_ascii=False), comment="[InitVar] 初始变量"),
            "enabled": False}  # fmt: skip
    return write_card(folder, [init], name="Riri", first_mes=first_mes,
                      extensions={"regex_scripts": scripts})  # fmt: skip


@pytest.fixture
def opened() -> Iterator[list[PlaySession]]:
    plays: list[PlaySession] = []
    yield plays
    for play in plays:
        play.close()


def start(
    tmp_path: Path, server: ScriptedServer, card: Path, plays: list[PlaySession], **more: Any
) -> tuple[PlaySession, Dispatcher, Any]:
    options = PlayOptions(card=str(card), provider="openai", base_url=server.base_url,
                          model="scripted-model", seed=7, session="rx", **more)  # fmt: skip
    play = PlaySession.open(SessionStore(tmp_path / "sessions.db"), options)
    plays.append(play)
    consoles = recording_consoles(width=100)
    return play, Dispatcher(play, RichScreen.for_play(play, consoles)), consoles


def writer_text(server: ScriptedServer) -> str:
    writers = requests_of(server, "writing") or requests_of(server, "merged_writing")
    assert writers
    return "\n".join(str(m["content"]) for m in writers[-1].messages)


def all_sent(server: ScriptedServer) -> str:
    return "\n".join(json.dumps(r.json, ensure_ascii=False) for r in server.requests)


# ------------------------------------------------------------- templates in replacements


def test_a_replacement_template_renders_and_the_models_own_code_does_not() -> None:
    script = RegexScript("hp", "/HP:(\\d+)/g", "HP <%= Number('$1') + 1 %>", placement=[2])
    text = "HP:41 and <%= 'model code' %> HP:9"
    assert RegexScripts([script]).ai_output(text) == "HP 42 and <%= 'model code' %> HP 10"


def test_a_failing_replacement_template_is_left_out_and_named() -> None:
    scripts = RegexScripts([RegexScript("boom", "/X/g", "<% throw new Error('nope') %>",
                                        placement=[2])])  # fmt: skip
    assert scripts.ai_output("a X b") == "a  b"
    assert any("'boom'" in p and "nope" in p for p in scripts.problems)


def test_prompt_replacement_template_reads_the_turns_variables(
    tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession]
) -> None:
    scripts = [regex("好感", "/<status\\/>/g", f"[好感 {AFFECTION}]", [2], promptOnly=True),
               regex("名字", "/<me>/g", "<%= userName %>·<%= charName %>", [1], promptOnly=True)]
    card = mvu_card(tmp_path, scripts, first_mes="理看着你。<status/>")
    Script().install(scripted_server)
    _, dispatcher, _ = start(tmp_path, scripted_server, card, opened, user_name="阿明")
    dispatcher.handle("<me> 走进教堂。")
    sent = writer_text(scripted_server)
    assert "理看着你。[好感 55]" in sent  # the greeting, at its depth in the history
    assert "阿明·Riri 走进教堂。" in sent  # this turn's input (placement 1)
    assert "<%" not in all_sent(scripted_server)


def test_display_replacement_template_shows_the_value(
    tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession]
) -> None:
    scripts = [regex("状态", "/<status\\/>/g", f"好感：{AFFECTION}/100", [2], markdownOnly=True)]
    card = mvu_card(tmp_path, scripts)
    update = "<UpdateVariable>\n_.set('理.好感度[0]', 55, 60);//开心\n</UpdateVariable>"
    reply = f"理笑了。\n<status/>\n{update}"
    Script({"writing": reply, "merged_writing": reply}).install(scripted_server)
    _, dispatcher, consoles = start(tmp_path, scripted_server, card, opened)
    dispatcher.handle("我送你一朵花。")
    shown = captured(consoles.out)
    assert "好感：60/100" in shown  # rendered with the variables after this turn's update
    assert "<%" not in shown and "getvar" not in shown
    assert "<%" not in all_sent(scripted_server)


def test_a_runaway_replacement_template_is_a_warning_and_the_turn_goes_on(
    tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession]
) -> None:
    scripts = [regex("loop", "/<status\\/>/g", "<% while (true) {} %>", [2], promptOnly=True)]
    card = mvu_card(tmp_path, scripts, first_mes="理看着你。<status/>")
    Script().install(scripted_server)
    play, dispatcher, consoles = start(tmp_path, scripted_server, card, opened)
    dispatcher.handle("你好。")
    assert play.turn == 1
    assert "'loop'" in captured(consoles.out)  # the warning names the script
    assert "<%" not in all_sent(scripted_server) and "while (true)" not in all_sent(scripted_server)


# ------------------------------------------------------------- global scripts


def script_file(folder: Path, name: str, scripts: list[dict[str, Any]]) -> Path:
    path = folder / name
    path.write_text(json.dumps(scripts, ensure_ascii=False), encoding="utf-8")
    return path


def test_config_global_scripts_run_before_the_cards(
    tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession], monkeypatch: Any
) -> None:
    card_scripts = [regex("card", "/BETA/g", "GAMMA", [1], promptOnly=True)]
    card = write_card(tmp_path, [], name="Edda", extensions={"regex_scripts": card_scripts})
    globals_ = script_file(tmp_path, "global.json", [
        regex("global", "/ALPHA/g", "BETA", [1], promptOnly=True),
        regex("slash only", "/x/g", "y", [3]),
        regex("broken", "/(unclosed/g", "y", [1]),
    ])  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    config = f"pipeline:\n  regex_scripts: [{json.dumps(str(globals_))}]\n"
    (home / "config.yaml").write_text(config, encoding="utf-8")
    monkeypatch.setenv("NARRATIVE_HOME", str(home))
    Script().install(scripted_server)
    play, dispatcher, _ = start(tmp_path, scripted_server, card, opened)
    dispatcher.handle("I say ALPHA.")
    assert "I say GAMMA." in writer_text(scripted_server)  # global first, then the card's
    notes = "\n".join(play.story.problems)
    assert "'slash only' (global)" in notes and "slash commands" in notes
    assert "'broken' (global): it cannot run: invalid regex" in notes


def test_a_bad_config_value_for_global_scripts_is_refused(tmp_path: Path, monkeypatch: Any) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("pipeline:\n  regex_scripts: {a: 1}\n", encoding="utf-8")
    monkeypatch.setenv("NARRATIVE_HOME", str(home))
    done = CliRunner().invoke(app, ["config", "show"])  # reported as app.main() does
    assert done.exit_code == 2 and done.output.startswith("error: ")
    assert "config.yaml: pipeline.regex_scripts: expected a list of texts" in done.output


def test_st_data_global_scripts_apply_and_unreadable_ones_are_named(
    tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession]
) -> None:
    root = tmp_path / "default-user"
    for sub in ("characters", "worlds", "chats", "groups", "OpenAI Settings"):
        (root / sub).mkdir(parents=True)
    write_card(root / "characters", [], name="Mira")
    settings = {"extension_settings": {"regex": [
        regex("fog", "/fog/g", "mist", [1, 2], promptOnly=True),
        {"scriptName": "bad", "findRegex": "/a/g", "placement": "everywhere"},
        regex("thinking", "/hmm/g", "", [6]),
    ]}}  # fmt: skip
    (root / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    Script().install(scripted_server)
    play, dispatcher, _ = start(tmp_path, scripted_server, root / "characters" / "mira.json",
                                opened, st_data=str(root))  # fmt: skip
    dispatcher.handle("The fog rolls in.")
    assert "The mist rolls in." in writer_text(scripted_server)
    notes = "\n".join(play.story.problems)
    assert "extension_settings.regex[1]" in notes and "placement" in notes
    assert "'thinking' (global): its reasoning placement has nothing to act on" in notes


def test_a_presets_own_scripts_run_between_the_global_and_the_cards(
    tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession], monkeypatch: Any
) -> None:
    card_scripts = [regex("card", "/GAMMA/g", "DELTA", [1], promptOnly=True)]
    card = write_card(tmp_path, [], name="Edda", extensions={"regex_scripts": card_scripts})
    globals_ = script_file(tmp_path, "global.json",
                           [regex("global", "/ALPHA/g", "BETA", [1], promptOnly=True)])
    preset = tmp_path / "preset.json"
    preset.write_text(json.dumps({
        "prompts": [{"identifier": "chatHistory", "marker": True, "system_prompt": True}],
        "prompt_order": [{"character_id": 100001, "order": [
            {"identifier": "chatHistory", "enabled": True}]}],
        "extensions": {"regex_scripts": [
            regex("preset", "/BETA/g", "GAMMA", [1], promptOnly=True),
            "not a script"]}}), encoding="utf-8")  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    config = f"pipeline:\n  regex_scripts: [{json.dumps(str(globals_))}]\n"
    (home / "config.yaml").write_text(config, encoding="utf-8")
    monkeypatch.setenv("NARRATIVE_HOME", str(home))
    Script().install(scripted_server)
    play, dispatcher, _ = start(tmp_path, scripted_server, card, opened, preset=str(preset))
    dispatcher.handle("I say ALPHA.")
    assert "I say DELTA." in writer_text(scripted_server)  # global, then preset, then card
    notes = "\n".join(play.story.problems)
    assert "extensions.regex_scripts[1]" in notes and "this preset script is not used" in notes


# ------------------------------------------------------------- the reasoning placement


def test_a_card_script_on_reasoning_is_reported_when_the_story_opens(
    tmp_path: Path, scripted_server: ScriptedServer, opened: list[PlaySession]
) -> None:
    scripts = [regex("think strip", "/<think>[\\s\\S]*?<\\/think>/g", "", [2, 6]),
               regex("think only", "/x/g", "", [6]),
               regex("off", "/x/g", "", [6], disabled=True)]
    card = mvu_card(tmp_path, scripts)
    Script().install(scripted_server)
    play, _, _ = start(tmp_path, scripted_server, card, opened)
    notes = [p for p in play.story.problems if "reasoning" in p]
    assert len(notes) == 2  # the disabled one does nothing anywhere
    assert any("'think strip' (the card's): its reasoning placement has nothing to act on" in n
               for n in notes)  # fmt: skip
    assert any("'think only'" in n for n in notes)
    assert all(n in play.warnings for n in notes)  # shown when the story opens
