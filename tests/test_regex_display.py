"""Card regex scripts on displayed text (compat Appendix A); prompts keep the raw text."""

from __future__ import annotations

import json
from pathlib import Path

from narrative_cli.domain import Card, RegexScript
from narrative_cli.load.regex import load_regex_scripts
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher
from narrative_cli.regex.scripts import RegexScripts, scripts_for
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.html_text import terminal_text
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import fixture_file
from tests.servers import ScriptedServer
from tests.story_replies import StoryScript

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures


def script(find: str, replace: str, **fields: object) -> RegexScript:
    values: dict[str, object] = {"placement": [2], "markdown_only": True}
    values.update(fields)
    return RegexScript(script_name="s", find_regex=find, replace_string=replace, **values)  # type: ignore[arg-type]


def test_markdown_only_script_rewrites_ai_output_but_not_user_input() -> None:
    display = RegexScripts([script(r"/<status>(.*?)<\/status>/g", "[$1]")])
    assert display.ai_output("Hi <status>oil 12</status>") == "Hi [oil 12]"
    assert display.user_input("Hi <status>oil 12</status>") == "Hi <status>oil 12</status>"


def test_prompt_only_scripts_never_change_what_is_shown() -> None:
    display = RegexScripts([script("/secret/g", "", markdown_only=False, prompt_only=True)])
    assert display.ai_output("a secret note") == "a secret note"
    assert not display.applies_to(2)


def test_the_prompt_target_takes_prompt_only_and_message_scripts_but_not_markdown_only() -> None:
    scripts = [
        script("/secret/g", "[hidden]", markdown_only=False, prompt_only=True),
        script("/teh/g", "the", markdown_only=False),
        script(r"/<status>.*?<\/status>/g", ""),
    ]
    prompt = RegexScripts(scripts, target="prompt")
    text = "teh secret <status>oil</status>"
    assert prompt.ai_output(text) == "the [hidden] <status>oil</status>"
    assert RegexScripts(scripts).ai_output(text) == "the secret "


def test_a_script_without_only_flags_rewrites_the_message_so_it_shows() -> None:
    display = RegexScripts([script("/teh/g", "the", markdown_only=False)])
    assert display.ai_output("teh lamp, teh fog") == "the lamp, the fog"


def test_markdown_only_and_prompt_only_together_still_apply_to_display() -> None:
    strip = script(r"/<Update>[\s\S]*?<\/Update>/gm", "", prompt_only=True)
    assert RegexScripts([strip]).ai_output("Story.<Update>x=1</Update>") == "Story."


def test_without_the_g_flag_only_the_first_match_is_replaced() -> None:
    assert RegexScripts([script("/o/", "0")]).ai_output("foo boo") == "f0o boo"
    assert RegexScripts([script("/o/g", "0")]).ai_output("foo boo") == "f00 b00"


def test_groups_match_macro_trim_strings_and_missing_groups() -> None:
    rule = script(
        r"/(?<who>\w+) says (\w+)/g",
        "{{match}} | $<who>: $2 | $3|",
        trim_strings=["a"],
    )
    # {{match}} is $0, and every group ($0 included) loses its trim strings, as in SillyTavern
    assert RegexScripts([rule]).ai_output("Edda says ahoy") == "Edd sys hoy | Edd: hoy | |"


def test_card_macros_in_the_replacement_are_expanded() -> None:
    card = Card(
        name="Edda",
        extensions={
            "regex_scripts": [
                {
                    "scriptName": "name tag",
                    "findRegex": "/<me>/g",
                    "replaceString": "{{char}}",
                    "placement": [2],
                    "markdownOnly": True,
                }
            ]
        },
    )
    assert scripts_for(card).ai_output("<me> smiles") == "Edda smiles"


def test_depth_limits_and_disabled_scripts() -> None:
    deep_only = script("/x/g", "y", min_depth=1)
    shallow_only = script("/a/g", "b", max_depth=0)
    off = script("/q/g", "Q", disabled=True)
    display = RegexScripts([deep_only, shallow_only, off])
    assert display.ai_output("xaq", depth=0) == "xbq"
    assert display.ai_output("xaq", depth=2) == "yaq"


def test_unusable_patterns_are_reported_not_raised() -> None:
    display = RegexScripts([script("/(a|aa)+$/g", "b"), script("/[unclosed/g", "b")])
    assert len(display.problems) == 1  # the unclosed one
    slow = "a" * 40 + "c"
    assert display.ai_output(slow) == slow  # stopped at the time limit, text unchanged
    assert len(display.problems) == 2 and "ran longer than" in display.problems[1]
    assert display.ai_output(slow) == slow and len(display.problems) == 2  # skipped after


def test_patterns_javascript_refuses_are_reported() -> None:
    display = RegexScripts([script("/[unclosed/g", "b"), script("/a/q", "b")])
    assert len(display.problems) == 2
    assert display.ai_output("aaaa") == "aaaa"


def test_real_status_bar_and_mvu_strip_scripts_of_a_chinese_card() -> None:
    scripts = load_regex_scripts(fixture_file("zh/nun-ninja-regex-statusbar.json"))
    scripts += load_regex_scripts(fixture_file("zh/nun-ninja-regex-strip-mvu.json"))
    display = RegexScripts(scripts)
    raw = "她推开门。\n<UpdateVariable>\n_.set('好感', 5)\n</UpdateVariable>\n"
    raw += "<StatusPlaceHolderImpl/>"
    shown = terminal_text(display.ai_output(raw))
    assert shown.startswith("她推开门。")
    assert "UpdateVariable" not in shown and "StatusPlaceHolderImpl" not in shown
    assert "圣露西亚教堂" in shown  # the status bar's headline, as text
    assert "<script" not in shown and "function" not in shown and "{" not in shown


def test_terminal_text_leaves_plain_text_alone() -> None:
    text = "Edda says: a < b, and 3 > 2."
    assert terminal_text(text) == text
    assert terminal_text("<div>oil</div><div>fog &amp; rain</div>") == "oil\nfog & rain"


def _card_with_status_script(tmp_path: Path) -> Path:
    data = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Edda",
            "description": "A lighthouse keeper.",
            "first_mes": "The lamp is lit.",
            "extensions": {
                "regex_scripts": [
                    {
                        "scriptName": "status",
                        "findRegex": "/<status>(.*?)<\\/status>/g",
                        "replaceString": "[status: $1]",
                        "placement": [2],
                        "markdownOnly": True,
                    }
                ]
            },
        },
    }
    path = tmp_path / "edda.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_played_turns_show_rewritten_text_while_prompts_keep_the_raw_text(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    card = _card_with_status_script(tmp_path)
    story = StoryScript()
    story.narratives.clear()
    story.narratives.extend(["The fog lifts. <status>oil 12</status>", "The bell rings."])
    scripted_server.reply_with(story)
    options = PlayOptions(
        card=str(card), provider="openai", base_url=scripted_server.base_url, model="m", seed=1
    )
    with SessionStore(tmp_path / "s.db") as store:
        play = PlaySession.open(store, options)
        consoles = recording_consoles(width=80)
        dispatcher = Dispatcher(play, RichScreen.for_play(play, consoles))
        dispatcher.handle("I look outside.")
        dispatcher.handle("I listen.")
        shown = captured(consoles.out)
        assert "The fog lifts. [status: oil 12]" in shown
        assert "<status>" not in shown
        stored = store.record(play.session_id, 1)["narrative"]
        assert stored == "The fog lifts. <status>oil 12</status>"
    second_writer = [r for r in scripted_server.requests if r.agent.endswith("writing")][1]
    prompt = "\n".join(m["content"] for m in second_writer.messages)
    assert "<status>oil 12</status>" in prompt
    assert "[status: oil 12]" not in prompt
