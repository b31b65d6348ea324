"""Both languages everywhere (#18 item 7): the message catalogs are complete, the language is
chosen by --lang, then the card, then the locale, a Chinese story's REPL screens carry no
English UI words, and every ``--help`` screen has its Chinese text.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from narrative_cli.i18n import catalog, choose, cli_zh, en, help_lang, locale_lang, t, zh
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import COMMANDS, Dispatcher
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import ROOT, SAMPLES
from tests.servers import Reply, ScriptedServer
from tests.story_replies import StoryScript

scripted_server = servers.scripted_server
SRC = ROOT / "src" / "narrative_cli"


def _literal_keys() -> dict[str, str]:
    """Every catalog key written as a literal in src: ``t("key", …)`` / ``has("key", …)``
    (both keys of ``t("a" if x else "b", …)``)."""
    found: dict[str, str] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("t", "has") and node.args):  # fmt: skip
                for key in _keys(node.args[0]):
                    found[key] = f"{path.relative_to(ROOT)}:{node.lineno}"
            for key in _worded_keys(node):
                found[key] = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
    return found


def _worded_keys(node: ast.AST) -> list[str]:
    """The keys of ``worded(Error, "key", hint=("hint_key", {…}), …)``, and of a hint made
    elsewhere as a ``("hint_key", {…})`` pair."""
    if (isinstance(node, ast.Tuple) and len(node.elts) == 2
            and isinstance(node.elts[1], ast.Dict)):  # fmt: skip
        return _keys(node.elts[0])
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("Phrase", "PngError") and node.args):  # fmt: skip
        return _keys(node.args[0])
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "worded" and len(node.args) > 1):  # fmt: skip
        return []
    keys = _keys(node.args[1])
    for keyword in node.keywords:
        if keyword.arg == "hint" and isinstance(keyword.value, ast.Tuple):
            keys += _keys(keyword.value.elts[0])
    return keys


def _keys(node: ast.expr) -> list[str]:
    """The literal keys of a ``t`` argument: a string, or both sides of ``"a" if x else "b"``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return _keys(node.body) + _keys(node.orelse)
    return []


def test_both_catalogs_have_the_same_keys() -> None:
    assert sorted(set(en.MESSAGES) - set(zh.MESSAGES)) == []
    assert sorted(set(zh.MESSAGES) - set(en.MESSAGES)) == []


def test_every_key_used_in_the_code_is_in_both_languages() -> None:
    used = _literal_keys()
    assert len(used) > 100  # the scan sees the calls
    missing = {key: where for key, where in used.items()
               if key not in en.MESSAGES or key not in zh.MESSAGES}  # fmt: skip
    assert missing == {}


def test_every_command_has_its_help_line_in_both_languages() -> None:
    for command in COMMANDS:
        assert f"cmd.{command.name}" in en.MESSAGES, command.name
        assert f"cmd.{command.name}" in zh.MESSAGES, command.name


def test_placeholders_match_between_the_languages() -> None:
    fields = re.compile(r"\{(\w+)\}")
    for key, text in en.MESSAGES.items():
        assert set(fields.findall(text)) == set(fields.findall(zh.MESSAGES[key])), key


def test_the_chinese_catalog_is_chinese() -> None:
    english = re.compile(r"\b(?:the|and|of|to|is|a|an|with)\b")
    leaks = {k: v for k, v in zh.MESSAGES.items() if english.search(v)}
    assert leaks == {}


@pytest.mark.parametrize(
    ("flag", "card", "env", "expected"),
    [
        ("en", "zh", {"LANG": "zh_CN.UTF-8"}, "en"),  # --lang wins
        ("auto", "zh", {"LANG": "en_US.UTF-8"}, "zh"),  # then the card
        (None, None, {"LANG": "zh_CN.UTF-8"}, "zh"),  # then the locale
        (None, None, {"LC_ALL": "en_GB.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"),  # LC_ALL first
        (None, None, {"LANG": "C.UTF-8"}, "en"),
        (None, None, {}, "en"),
    ],
)
def test_the_language_is_the_flag_then_the_card_then_the_locale(
    flag: str | None, card: str | None, env: dict[str, str], expected: str
) -> None:
    assert choose(flag, card, env) == expected


def test_help_language_reads_lang_anywhere_then_the_locale() -> None:
    assert help_lang(["run", "--lang", "zh", "--help"], {}) == "zh"
    assert help_lang(["run", "--lang=en", "--help"], {"LANG": "zh_CN"}) == "en"
    assert help_lang(["run", "--help"], {"LANG": "zh_CN.UTF-8"}) == "zh"
    assert locale_lang({"LC_MESSAGES": "zh_TW"}) == "zh"


# -- a Chinese story shows no English UI words ----------------------------------------------

class RecordingScript(StoryScript):
    """The story's replies, remembered so the test can allow their words on screen."""

    def __init__(self) -> None:
        super().__init__()
        self.said: list[str] = []

    def __call__(self, body: Any, request: Any) -> Reply | str | dict[str, Any] | None:
        answer = super().__call__(body, request)
        if isinstance(answer, Reply):
            self.said.append(answer.text)
        elif answer is not None:
            self.said.append(answer if isinstance(answer, str) else json.dumps(answer))
        return answer


WORD = re.compile(r"[A-Za-z][A-Za-z_-]*(?:'[A-Za-z]+)?")
COMMAND_WORDS = {w for c in COMMANDS for w in WORD.findall(f"{c.name} {c.args}")}
COMMAND_WORDS |= {w for c in COMMANDS for w in c.choices} | {"EDITOR", "Ctrl", "Esc", "Enter",
                  "MVU", "DIR", "TEXT", "N", "FILE", "uid", "jsonl", "json", "md", "txt",
                  "CoC", "D", "e", "Dice", "dc", "d"}  # fmt: skip


@pytest.fixture
def chinese(tmp_path: Path, scripted_server: ScriptedServer) -> Iterator[tuple[Any, ...]]:
    script = RecordingScript()
    scripted_server.reply_with(script)
    options = PlayOptions(card=str(SAMPLES / "fog-harbor-zh.json"), provider="openai",
                          base_url=scripted_server.base_url, model="scripted-model",
                          seed=3)  # fmt: skip
    store = SessionStore(tmp_path / "s.db")
    play = PlaySession.open(store, options)
    consoles = recording_consoles(width=100)
    screen = RichScreen.for_play(play, consoles)
    yield play, Dispatcher(play, screen), consoles, script, screen
    play.close()
    store.close()


# Lore routes are identifiers (the reasons beside them are translated: lore/reasons.py).
LORE_WORDS = {"worldinfo1", "worldinfo2", "worldinfo3", "keyword"}
KEYS = {"Ctrl-C", "Ctrl-D", "Ctrl-E", "Ctrl-O", "Ctrl-R", "Ctrl-X", "Alt", "DC", "config", "yaml",
        "prices", "worldinfo", "zh",
        "context_size", "openai_max_context"}  # config and preset keys a note names


def _words(*texts: str) -> set[str]:
    return set(WORD.findall(" ".join(texts)))


def test_a_chinese_story_shows_no_english_ui_words(
    chinese: tuple[Any, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from narrative_cli.agents.table import known_agents
    from narrative_cli.load.language import card_text

    play, dispatcher, consoles, script, screen = chinese
    assert play.story.lang == "zh"
    screen.show_opening(play)
    lines = ["我问阿澜，渡船明天还开吗？", "/help", "/state", "/vars", "/summary", "/lore",
             "/tools", "/note", "/dice", "/swipe", "/cost", "/mode", "/trace",
             "/roll 1d20+2 dc 10", "/nosuch", "/summary maybe", "/swipe x", "/undo"]  # fmt: skip
    for line in lines:
        dispatcher.handle(line)
    typed = _words(*lines)
    shown = captured(consoles.out) + captured(consoles.err)
    tools = [f"{x.name} {x.type} {x.trigger} {x.description}" for x in play.story.tools.tools]
    allowed = (COMMAND_WORDS | LORE_WORDS | KEYS | typed | {"scripted-model", "tool"}
               | _words(*script.said, card_text(play.story.card), known_agents(), *tools,
                        play.info().name, *(str(e.comment) for e in play.story.entries)))
    leaks = sorted({w for w in WORD.findall(shown) if w not in allowed})
    assert leaks == [], (leaks, shown)
    assert "调用" in shown and "命令" in shown and "错误：未知命令 /nosuch" in shown


def test_slash_command_usage_errors_read_in_the_storys_language(
    chinese: tuple[Any, ...],
) -> None:
    play, dispatcher, consoles, script, screen = chinese
    for line in ("/delete 0", "/delete 9", "/catchup now", "/impersonate me", "/mode fast"):
        dispatcher.handle(line)
    shown = captured(consoles.out) + captured(consoles.err)
    assert "/delete N 需要 N ≥ 1 条消息" in shown
    assert "/delete 9：开场白之后故事只有 0 条消息" in shown
    assert "/catchup 不带参数" in shown and "/impersonate 不带参数" in shown
    assert "未知模式 'fast'" in shown
    assert "needs" not in shown and "takes no argument" not in shown


# -- --help ---------------------------------------------------------------------------------

def _all_help_texts() -> Iterator[tuple[str, str]]:
    import inspect

    from narrative_cli.cli.app import app

    def walk(cmd: Any, path: str) -> Iterator[tuple[str, str]]:
        if cmd.help:
            first = inspect.cleandoc(cmd.help).partition("\f")[0]
            for para in first.split("\n\n"):
                if not para.startswith("\b"):
                    yield path or "narrative", para
        for param in cmd.params:
            if getattr(param, "help", None):
                yield f"{path} {param.name}", param.help
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, f"{path} {name}".strip())

    yield from walk(app, "")


def test_every_help_text_has_a_chinese_translation() -> None:
    missing = [(where, text) for where, text in _all_help_texts()
               if " ".join(text.split()) not in cli_zh.HELP]  # fmt: skip
    assert missing == []


HELP_SCREENS = [[], ["run"], ["roll"], ["lore"], ["lore", "test"], ["sessions", "export"],
                ["config", "add"], ["replay"], ["inspect"]]  # fmt: skip
HAS_LANG = (["run"], ["roll"], ["replay"])  # the commands with a --lang option


def _help(args: list[str], lang: str) -> Any:
    from narrative_cli.cli.app import app

    env = {"COLUMNS": "100", "LANG": lang, "LC_ALL": "", "LC_MESSAGES": ""}
    return CliRunner().invoke(app, [*args, "--help"], prog_name="narrative", env=env)


@pytest.mark.parametrize("args", HELP_SCREENS)
def test_help_screens_are_chinese_in_a_chinese_locale(args: list[str]) -> None:
    chinese, english = _help(args, "zh_CN.UTF-8"), _help(args, "en_US.UTF-8")
    assert chinese.exit_code == english.exit_code == 0
    assert chinese.output.startswith("用法：") and english.output.startswith("Usage: ")
    for word in ("Options", "Arguments", "Example", "Show this message", "[required]"):
        assert word not in chinese.output
    assert "选项" in chinese.output and "Options" in english.output


@pytest.mark.parametrize("args", HAS_LANG)
def test_lang_chooses_the_help_language_over_the_locale(args: list[str]) -> None:
    assert _help([*args, "--lang", "zh"], "en_US.UTF-8").output == _help(args, "zh_CN").output
    assert _help([*args, "--lang=en"], "zh_CN.UTF-8").output == _help(args, "en_US").output


def test_catalog_lookups_fall_back_to_english_and_fill_values() -> None:
    assert t("msg.undone", "zh", turn=3) == "已撤销。故事回到第 3 轮。"
    assert t("msg.undone", "fr", turn=3) == "Undone. The story is back at turn 3."
    assert catalog("zh") is catalog("zh")  # loaded once
    with pytest.raises(KeyError):
        t("no.such.key", "en")


def test_unused_keys_do_not_pile_up() -> None:
    used = set(_literal_keys())
    families = ("cmd.", "dice.", "cli.panel.", "report.lore_", "report.tool_", "cost.",
                "report.note_", "group.", "sessions.", "report.recall_", "help.key_",
                "help.keyname_", "inspect.col_", "inspect.card_", "lore.reason_", "lore.logic_",
                "loretest.col_", "lint.col_", "lint.find_",
                "trace.col_", "replay.col_",
                "replay.metric_", "replay.note_",
                "script.place_", "script.not_", "lore.note_",
                "load.kind_", "field.", "json.a.", "preset.kind.")  # fmt: skip
    unused = [k for k in en.MESSAGES if k not in used and not k.startswith(families)]
    assert unused == [], unused




# -- an imported Chinese chat ------------------------------------------------------------------

def test_an_imported_chinese_chat_shows_chinese_state_labels(tmp_path: Path) -> None:
    from narrative_cli.cli.app import app
    from narrative_cli.pipeline.story import Snapshot
    from narrative_cli.state.engine import GameState, state_summary

    chat = tmp_path / "雾港.jsonl"
    lines = [{"user_name": "林舟", "character_name": "阿澜", "chat_metadata": {}},
             {"name": "阿澜", "is_user": False, "mes": "雾这么大，渡船还肯开？"},
             {"name": "林舟", "is_user": True, "mes": "我问阿澜，渡船明天还开吗？"},
             {"name": "阿澜", "is_user": False, "mes": "开，老周从不误点。"}]  # fmt: skip
    chat.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), "utf-8")
    card = SAMPLES / "fog-harbor-zh.json"
    done = CliRunner().invoke(app, ["sessions", "import", str(chat), "--card", str(card)])
    assert done.exit_code == 0, done.output
    with SessionStore() as store:
        snapshot = Snapshot.from_dict(store.resume(1).snapshot)
    summary = state_summary(GameState.from_dict(snapshot.state), "zh")
    assert "起点" in summary and "Start" not in summary
    assert snapshot.summaries["lang"] == "zh"


def test_command_line_errors_speak_the_locale(tmp_path: Path) -> None:
    import subprocess
    import sys

    missing = str(tmp_path / "nope.png")
    env = {**__import__("os").environ, "LANG": "zh_CN.UTF-8", "LC_ALL": "",
           "PYTHONPATH": str(ROOT / "src")}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "narrative_cli", "inspect", missing],
                          capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert done.returncode == 2 and done.stderr.startswith("错误：")
    env["LANG"] = "en_US.UTF-8"
    done = subprocess.run([sys.executable, "-m", "narrative_cli", "inspect", missing],
                          capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert done.returncode == 2 and done.stderr.startswith("error: ")


def test_the_sessions_commands_speak_the_locale() -> None:
    from narrative_cli.cli.app import app

    runner = CliRunner()
    chinese = runner.invoke(app, ["sessions", "list"], env={"LANG": "zh_CN.UTF-8"})
    english = runner.invoke(app, ["sessions", "list"], env={"LANG": "en_US.UTF-8"})
    assert chinese.exit_code == english.exit_code == 0
    assert chinese.output.startswith("还没有保存的会话") and english.output.startswith("No saved")
