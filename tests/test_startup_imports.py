"""A fast start (issue 12, item 7): ``inspect`` and ``lore test`` import what their work needs
for the card given, and each lazy import is still reached by a card that needs it.

No timing here (``benchmarks/startup.py`` measures it): these guard the imports that made the
difference, each of them a fresh ``narrative`` process, as a user runs it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from narrative_cli.regex.quickjs_run import (
    LOCAL_PATTERN_CHARS,
    JsScript,
    helper_pattern_errors,
    pattern_errors,
)
from narrative_cli.ui.console import SafeConsole
from tests.conftest import ROOT, fixture_file
from tests.test_cli_help import PROBE, heavy, plain_card

SAMPLE = str(ROOT / "sample_cards" / "lantern-keeper.png")
# Loaded only by a card or a command that uses them: YAML values, CHARX cards, the user's
# folders, HTML entities in a variable path, emoji codes, the MVU patch engine and the game
# state, the regex and template runners.
ON_DEMAND = ("yaml", "zipfile", "platformdirs", "html.entities", "rich._emoji_codes",
             "narrative_cli.state.mvu", "narrative_cli.state.events", "narrative_cli.state.game",
             "narrative_cli.regex.scripts", "narrative_cli.tools.templates",
             "narrative_cli.load.charx", "narrative_cli.load.chats", "narrative_cli.held",
             "narrative_cli.paths")  # fmt: skip
# A card's own types, not a chat's: messages, chats, presets, personas, the Author's Note
# (``domain_chat``) load with a chat or a preset.
CHAT_TYPES = ("narrative_cli.domain_chat",)


HELPER = """
sandbox = sys.modules.get("narrative_cli.tools.sandbox")
started = sandbox is not None and sandbox._WORKER._process is not None
sys.stderr.write("HELPER %s\\n" % started)
"""


def modules_of(home: Path, *args: str) -> tuple[set[str], str]:
    """The modules a fresh ``narrative ARGS`` has loaded, and its stdout; run as a user runs
    it (no NARRATIVE_HOME: the folders come from ``HOME``, here an empty one). The module
    list gets ``helper`` when the sandbox's helper process was started."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NARRATIVE_", "XDG_"))}
    env.update(HOME=str(home), NO_COLOR="1", COLUMNS="100")
    done = subprocess.run(
        [sys.executable, "-c", PROBE + HELPER, *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=60, check=True,
    )  # fmt: skip
    modules = set(done.stderr.rsplit("MODULES ", 1)[1].split("\n", 1)[0].split())
    if "HELPER True" in done.stderr:
        modules.add("helper")
    return modules, done.stdout


def test_inspect_of_an_mvu_card_loads_the_mvu_reader_and_nothing_it_does_not_use(
    tmp_path: Path,
) -> None:
    modules, shown = modules_of(tmp_path, "inspect", SAMPLE)
    assert "MVU variables after greeting 0" in shown and "lamp_oil: 12" in shown  # it ran
    assert "Hide keeper log from prompts" in shown  # and checked the regex script
    assert {"narrative_cli.state.mvu_init", "rich.table"} <= modules
    # its one regex script's pattern is in the plain part of the syntax (lore.jsplain): valid
    # without starting QuickJS, and the command logs nothing, so logging and the scrub stay out
    assert heavy(modules, ("quickjs", "logging", "narrative_cli.credentials")) == []
    # its greeting holds no update command: the update engine is not loaded
    assert heavy(modules, ("narrative_cli.state.mvu_update", "narrative_cli.state.mvu_commands",
                           "narrative_cli.state.mvu_record")) == []  # fmt: skip
    assert heavy(modules, ON_DEMAND + ("helper",)) == []  # the pattern was checked in-process:
    # not by the script runner, the sandbox or the lore key translator
    script_runner = ("narrative_cli.regex.quickjs_run", "narrative_cli.tools.sandbox",
                     "narrative_cli.lore.jsregex")  # fmt: skip
    assert heavy(modules, script_runner) == []
    assert "narrative_cli.context.macros" not in modules  # no template: no macro engine
    assert heavy(modules, CHAT_TYPES) == []


def test_a_pattern_outside_the_plain_syntax_is_still_checked_by_quickjs(tmp_path: Path) -> None:
    card = plain_card(tmp_path)
    data = json.loads(card.read_text())
    data["data"]["extensions"] = {"regex_scripts": [
        {"scriptName": "named", "findRegex": "/(?<word>lamp)/g", "replaceString": "",
         "placement": [2]},
        {"scriptName": "broken", "findRegex": "/(?<=a)*/g", "replaceString": "",
         "placement": [2]}]}  # fmt: skip
    card.write_text(json.dumps(data))
    modules, shown = modules_of(tmp_path, "inspect", str(card))
    assert "quickjs" in modules and "helper" not in modules  # in this process
    assert "named" in shown and "broken" in shown
    assert shown.count("invalid") == 1  # JavaScript refuses the quantified lookbehind only


def test_lore_test_loads_the_lore_engine_and_not_the_card_extras(tmp_path: Path) -> None:
    modules, shown = modules_of(tmp_path, "lore", "test", SAMPLE, "I trim the lamp")
    assert "The lamp" in shown and {"narrative_cli.lore.engine", "rich.table"} <= modules
    config = ("platformdirs", "narrative_cli.paths")  # where config.yaml is looked for
    extras = tuple(name for name in ON_DEMAND if name not in config)
    assert heavy(modules, extras + ("narrative_cli.state", "narrative_cli.regex")) == []
    assert "platformdirs" in modules  # it looks for the user's config.yaml (there is none)
    assert heavy(modules, CHAT_TYPES + ("hashlib",)) == []  # hashlib: a replay's dice streams
    # settings without a config file: no table of agents, no prices
    assert heavy(modules, ("narrative_cli.agents", "narrative_cli.pricing")) == []


def test_the_chat_types_still_load_with_a_chat_or_a_preset(tmp_path: Path) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"user_name": "Ada", "character_name": "Edda"}\n'
                    '{"name": "Ada", "is_user": true, "mes": "the lamp is out"}\n')  # fmt: skip
    modules, shown = modules_of(tmp_path, "lore", "test", SAMPLE, "--chat", str(chat))
    assert "The lamp" in shown and "narrative_cli.domain_chat" in modules


def test_a_library_caller_meets_the_secret_rules_with_its_first_error() -> None:
    """``errors`` loads ``credentials`` when an error is made: a report built without one
    never loads it, and the first error's message is scrubbed all the same."""
    code = f"""
import sys
from pathlib import Path
from narrative_cli.load import load_card
from narrative_cli.play.inspect import inspect_report
inspect_report(load_card(Path({SAMPLE!r})), [], None, "en")
sys.stdout.write("before %s\\n" % ("narrative_cli.credentials" in sys.modules))
from narrative_cli.errors import NarrativeError
error = NarrativeError("bad key sk-abcdefghijklmnopqrstuvwx at https://u:pw@host/v1")
sys.stdout.write("after %s %s\\n" % ("narrative_cli.credentials" in sys.modules, error))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, check=True)  # fmt: skip
    before, after = done.stdout.splitlines()
    assert before == "before False" and after.startswith("after True bad key ***")
    assert "sk-abc" not in after and "pw@" not in after


def test_a_yaml_initvar_still_loads_yaml(tmp_path: Path) -> None:
    card = plain_card(tmp_path)
    data = json.loads(card.read_text())
    data["data"]["character_book"]["entries"].append(
        {"id": 2, "keys": [], "content": "keeper:\n  mood: steady\n  oil: 12\n",
         "comment": "[initvar] keeper", "enabled": False, "insertion_order": 200,
         "extensions": {}}
    )  # fmt: skip
    card.write_text(json.dumps(data))
    modules, shown = modules_of(tmp_path, "inspect", str(card), "--json")
    assert json.loads(shown)["mvu"]["variables"] == {"keeper": {"mood": "steady", "oil": 12}}
    assert "yaml" in modules
    assert heavy(modules, ("narrative_cli.state.mvu", "narrative_cli.state.events")) == []


def test_a_real_mvu_card_with_templates_loads_the_template_sandbox_not_the_engine(
    tmp_path: Path,
) -> None:
    card = fixture_file("mvu/magvar-riri-mvu-update.png")
    modules, shown = modules_of(tmp_path, "inspect", str(card), "--json")
    report = json.loads(shown)
    assert report["mvu"]["detected"] and report["macros"]["templates"]  # EJS: syntax-checked
    assert {"narrative_cli.state.mvu_init", "narrative_cli.tools.templates", "helper"} <= modules
    assert heavy(modules, ("narrative_cli.state.mvu", "narrative_cli.state.events",
                           "narrative_cli.state.game", "rich")) == []  # fmt: skip


def test_the_safe_console_draws_exactly_what_rich_draws() -> None:
    """It skips Rich's emoji table for text without a ``:code:``; the output must not move."""
    texts = ["keeper:\n  lamp_oil: 12", "routes: keyword 4", "a :smile: b", ":thumbs_up-text:",
             "time 08:30:00", "[bold]x[/bold]: y", "no colon", ":", "a:b: c", "::"]  # fmt: skip
    for markup in (True, False):
        ours, rich_own = io.StringIO(), io.StringIO()
        for out, console in ((ours, SafeConsole), (rich_own, Console)):
            draw = console(file=out, width=60, color_system=None, force_terminal=False)
            for text in texts:
                draw.print(text, markup=markup, highlight=False)
        assert ours.getvalue() == rich_own.getvalue()
    assert "😄" in ours.getvalue()  # an emoji code still becomes the emoji, as in Rich


def test_a_warmed_up_sandbox_helper_serves_the_first_request() -> None:
    """``inspect`` starts the helper before it needs it (its start-up overlaps the report):
    the request then uses that helper, not a second one."""
    from narrative_cli.tools import sandbox

    sandbox.shutdown()
    try:
        sandbox.warm_up()
        started = sandbox._WORKER._process
        assert started is not None
        result = sandbox.run_code("return params.a + 1", {"a": 1}, {})
        assert result.ok and result.value == 2
        sandbox.warm_up()  # a running helper is kept
        assert sandbox._WORKER._process is started
    finally:
        sandbox.shutdown()


def test_patterns_checked_in_process_get_the_helpers_verdict() -> None:
    """Short patterns are compiled by QuickJS here (no helper to start), long ones in the
    helper process: the verdict and JavaScript's reason are the same either way."""
    patterns = [("<keeper_log>[\\s\\S]*?<\\/keeper_log>", "g"), ("(a", "g"), ("[", ""),
                ("a{2,1}", ""), ("x", "gq"), ("(?<n>a)\\k<n>", "u"), ("\\p{L}", "u"),
                ("(?i)x", ""), ("a**", "g"), ("ok", "gimsuy"), ("\\8", ""), ("\\8", "u")]
    scripts = [JsScript(str(i), body, flags, "") for i, (body, flags) in enumerate(patterns)]
    local = pattern_errors(scripts)
    assert local == helper_pattern_errors(scripts)
    assert set(local) == {1, 2, 3, 4, 7, 8, 11}  # the refused ones, with JavaScript's reason
    long = [JsScript("long", "a|" * LOCAL_PATTERN_CHARS + "(", "g", ""), *scripts]
    assert set(pattern_errors(long)) == {0} | {i + 1 for i in local}  # through the helper
