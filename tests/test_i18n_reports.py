"""Both languages on the sub-command report screens (#18 item 7): ``narrative inspect`` and
``narrative lore test`` on a Chinese card print no English UI words; on an English card they
print what they printed before (the other test files compare the English text).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tests.conftest import SAMPLES

WORD = re.compile(r"[A-Za-z][A-Za-z_-]*(?:'[A-Za-z]+)?")
ZH_CARD = SAMPLES / "qingshi-trpg-zh.json"
ENV = {"COLUMNS": "120", "LANG": "en_US.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}

# Names the report shows as they are: spec and route identifiers, file formats, products.
IDENTIFIERS = {"chara_card_v2", "chara_card_v3", "json", "png", "chara", "ccv3", "uid",
               "worldinfo1", "worldinfo2", "worldinfo3", "keyword", "outlet", "tool", "ui",
               "initvar", "mvu_update", "disabled", "unrouted", "InitVar", "MVU", "MagVarUpdate",
               "zh", "EJS", "ST-Prompt-Template", "getvar", "setvar",
               "C", "S", "worldinfo"}  # fmt: skip


def _run(*args: str) -> Any:
    from narrative_cli.cli.app import app

    return CliRunner().invoke(app, list(args), prog_name="narrative", env=ENV)


def _leaks(shown: str, *allowed_texts: str) -> list[str]:
    allowed = IDENTIFIERS | set(WORD.findall(" ".join(allowed_texts)))
    return sorted({w for w in WORD.findall(shown) if w not in allowed})


def _card_words(path: Any) -> str:
    """Every word the card's own file holds (names, comments, keys, tools: shown as written)."""
    return f"{path.read_text(encoding='utf-8')} {path}"


def test_inspect_on_a_chinese_card_speaks_chinese() -> None:
    done = _run("inspect", str(ZH_CARD))
    assert done.exit_code == 0, done.output
    assert "词元估算" in done.output and "Token estimates" not in done.output
    assert _leaks(done.output, _card_words(ZH_CARD)) == [], done.output


def test_inspect_on_an_english_card_stays_english_in_a_chinese_locale() -> None:
    from narrative_cli.cli.app import app

    card = str(SAMPLES / "lantern-keeper.png")
    english = _run("inspect", card)
    chinese_locale = CliRunner().invoke(app, ["inspect", card], prog_name="narrative",
                                        env={**ENV, "LANG": "zh_CN.UTF-8"})  # fmt: skip
    assert english.exit_code == chinese_locale.exit_code == 0
    assert "Token estimates" in english.output
    assert chinese_locale.output == english.output  # the card's language wins over the locale


# -- the lore engine's reasons ---------------------------------------------------------------

REASONS = [
    'key "fog"', 'key "/f[o]g/i" + secondary "harbor"',
    'key "fog" + not all secondary keys (NOT ALL)', 'key "fog" + no secondary key (NOT ANY)',
    'key "fog" + all secondary keys (AND ALL)', 'key "fog", but selectiveLogic 7 is unknown',
    'key "fog", but secondary keys fail AND ALL (matched: harbor, 港口)',
    'key "fog", but secondary keys fail AND ANY (none matched)',
    'key "fog" (recursion step 2)', "constant (scan widened to 12 messages)", "sticky",
    "disabled", "cooldown", "only for quiet, swipe generations",
    "delay: needs 4 messages in the chat", "delayUntilRecursion: only in recursion steps",
    "delayUntilRecursion: level 2, now at level 1",
    "excludeRecursion: recursion cannot activate it", "character filter",
    "character filter (tags)", "group 'weather' already has an entry from an earlier step",
    "group 'weather': sticky entry 3 holds it", "group 'weather': on cooldown",
    "group 'weather': delayed", "group 'weather': matched 1 keys, another member 2",
    "group 'weather': entry 4 has priority (groupOverride)",
    "group 'weather': entry 4 won the weighted roll",
    "budget: the 800-token budget is used up", "budget: would reach 900 of 800 tokens",
    "probability: rolled 73.2, needed ≤ 50",
]  # fmt: skip


def test_lore_reasons_stay_as_written_in_english_and_are_chinese_in_chinese() -> None:
    from narrative_cli.lore.reasons import reason_words

    for reason in REASONS:
        assert reason_words(reason, "en") == reason
        chinese = reason_words(reason, "zh")
        assert chinese != reason, reason
        leaks = [w for w in WORD.findall(chinese)
                 if w not in {"fog", "f", "o", "g", "i", "harbor", "selectiveLogic", "quiet",
                              "swipe", "weather"}]  # fmt: skip
        assert leaks == [], (reason, chinese)
    assert reason_words('key "雾" + secondary "港"', "zh") == "关键词「雾」 + 次要关键词「港」"
    assert reason_words("something new", "zh") == "something new"  # unknown: shown as written


def test_lore_test_on_a_chinese_card_speaks_chinese() -> None:
    done = _run("lore", "test", str(ZH_CARD), "我去沈家旧宅找账房老陈")
    assert done.exit_code == 0, done.output
    assert "已激活" in done.output and "关键词「" in done.output and "常驻" in done.output
    assert _leaks(done.output, _card_words(ZH_CARD)) == [], done.output
    as_json = _run("lore", "test", str(ZH_CARD), "我去沈家旧宅找账房老陈", "--json")
    assert '"reason": "key \\"' in as_json.output  # the JSON keeps the engine's words


def test_lore_lint_on_a_chinese_card_speaks_chinese(tmp_path: Path) -> None:
    from tests.test_lore_author_tools import world_entry, write_world

    world = write_world(tmp_path, [world_entry(0, [], "无关键词"), world_entry(1, ["雾"], "雾港"),
                                   world_entry(2, ["港"], "雾港")])  # fmt: skip
    done = _run("lore", "lint", str(ZH_CARD), "--lorebook", str(world))
    assert done.exit_code == 1, done.output
    assert "错误：条目 0（entry 0）：永远不会触发" in done.output
    assert "与条目 1（entry 1）内容相同" in done.output and "个错误" in done.output
    assert _leaks(done.output, _card_words(ZH_CARD), "entry", "unrouted", "stable",
                  "changes", "tail", str(world)) == [], done.output  # fmt: skip


def test_lore_check_speaks_the_locale(tmp_path: Path) -> None:
    from narrative_cli.cli.app import app
    from tests.test_lore_author_tools import suite

    path = suite(tmp_path, [
        {"name": "guard", "text": "the king", "fires": ["Guard"], "not_fires": ["King"]},
        {"name": "where", "text": "the king", "fires": ["King"], "position": {"King": "at_depth"}},
    ])  # fmt: skip
    done = CliRunner().invoke(app, ["lore", "check", str(path)],
                              env={**ENV, "LANG": "zh_CN.UTF-8"})  # fmt: skip
    assert done.exit_code == 1
    assert "失败 guard" in done.output and "2 个用例中通过 0 个" in done.output
    assert "预期 'Guard' 触发；它没有触发（关键词「king」，但次要关键词不满足" in done.output
    names = "guard where Guard King at_depth after_char king"
    assert _leaks(done.output, names) == [], done.output


# -- trace show ---------------------------------------------------------------------------------

from tests import servers  # noqa: E402
from tests.test_trace_show import show, trace_dir  # noqa: E402,F401

scripted_server = servers.scripted_server


def test_trace_show_speaks_the_locale(
    trace_dir: Path, capsys: Any, monkeypatch: Any  # noqa: F811 (the fixture)
) -> None:
    from narrative_cli.play.trace_report import read_trace, trace_reports

    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    code, out, err = show(capsys, str(trace_dir))
    assert code == 0 and err == ""
    assert "第 2 轮 · planning（第 1 次尝试）" in out and "◀ 前缀到此为止" in out
    assert out.count("共享前缀：该智能体的第一次调用") == 5
    reports = trace_reports(read_trace(trace_dir))
    names = " ".join(f"{r.agent} {r.mode} {r.model} {b.role} {b.name}"
                     for r in reports for b in r.blocks)  # prompt blocks are identifiers
    assert _leaks(out, names, str(trace_dir)) == [], out


# -- preflight failures --------------------------------------------------------------------------

def test_preflight_failures_speak_the_chosen_language(tmp_path: Path) -> None:
    """A missing key and a server that does not answer, before any greeting, in Chinese with
    --lang zh and in English as before with --lang en."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "LANG": "en_US.UTF-8", "LC_ALL": "", "NARRATIVE_HOME": str(tmp_path),
           "PYTHONPATH": str(ROOT / "src"), "NARRATIVE_TEST_NO_KEY": ""}  # fmt: skip
    base = [sys.executable, "-m", "narrative_cli", "run", str(SAMPLES / "fog-harbor-zh.json"),
            "--provider", "openai", "--api-key-env", "NARRATIVE_TEST_NO_KEY",
            "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]  # fmt: skip

    def run(lang: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, "--lang", lang], capture_output=True, text=True, env=env,
                              timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip

    chinese, english = run("zh"), run("en")
    assert chinese.returncode == english.returncode == 2
    assert "错误：配置 'adhoc'：环境变量 NARRATIVE_TEST_NO_KEY 未设置" in chinese.stderr
    assert "提示：export NARRATIVE_TEST_NO_KEY=<你的密钥>" in chinese.stderr
    assert ("error: profile 'adhoc': the environment variable NARRATIVE_TEST_NO_KEY is not set"
            in english.stderr)  # fmt: skip
    env["NARRATIVE_TEST_NO_KEY"] = "sk-test"
    chinese = run("zh")
    assert "错误：配置 'adhoc'：" in chinese.stderr and "没有响应" in chinese.stderr
    assert _leaks(chinese.stderr, "adhoc http v1 models ConnectError base-url base_url config yaml"
                  ) == [], chinese.stderr  # fmt: skip


# -- warnings of the opening -------------------------------------------------------------------

def test_the_linked_world_hint_speaks_the_storys_language(tmp_path: Path) -> None:
    from narrative_cli.pipeline.opening import load_parts
    from tests.pipeline_support import write_card

    card = write_card(tmp_path, [], extensions={"world": "雾港世界"})
    chinese = [p for p in load_parts(card, [], None, None, None, "zh", None).problems
               if "雾港世界" in p]  # fmt: skip
    english = [p for p in load_parts(card, [], None, None, None, "en", None).problems
               if "雾港世界" in p]  # fmt: skip
    assert chinese == ["世界书：卡片关联了世界书 '雾港世界'（data.extensions.world），但没有提供；"
                       "其条目缺失。用 --lorebook 雾港世界.json 传入"]
    assert english[0].startswith("lore: the card links the world '雾港世界'")


def test_compaction_and_recall_warnings_have_both_languages() -> None:
    from narrative_cli.i18n import t

    for key in ("compaction.failed", "compaction.empty"):
        chinese = t(key, "zh", first=3, last=8, error="HTTP 500")
        assert "第 3-8 轮" in chinese and _leaks(chinese, "HTTP") == []
    assert t("recall.skipped", "zh", error="x") == "本轮跳过了文本检索：x"
    english = t("compaction.empty", "en", first=3, last=8)
    assert english == ("compaction of turns 3-8 gave no usable summary; the summary entries stay"
                       " as they are and the next cut tries again")


def test_preflight_failures_follow_the_cards_language_before_the_locale(tmp_path: Path) -> None:
    """No --lang: a Chinese card's preflight failure is in Chinese under an English locale,
    an English card's in English under a Chinese locale (--lang, then the card, then the
    locale, as everywhere else); a command-line mistake before any card still follows the
    locale."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {**os.environ, "LC_ALL": "", "LC_MESSAGES": "", "NARRATIVE_HOME": str(tmp_path),
           "PYTHONPATH": str(ROOT / "src"), "NARRATIVE_TEST_NO_KEY": ""}  # fmt: skip

    def run(card: str, locale: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "narrative_cli", "run", str(SAMPLES / card),
                   "--provider", "openai", "--api-key-env", "NARRATIVE_TEST_NO_KEY",
                   "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=120,
                              env={**env, "LANG": locale}, stdin=subprocess.DEVNULL)  # fmt: skip

    chinese = run("fog-harbor-zh.json", "en_US.UTF-8")
    english = run("lantern-keeper.png", "zh_CN.UTF-8")
    assert chinese.returncode == english.returncode == 2
    assert "错误：配置 'adhoc'：环境变量 NARRATIVE_TEST_NO_KEY 未设置" in chinese.stderr
    assert "提示：export NARRATIVE_TEST_NO_KEY=<你的密钥>" in chinese.stderr
    assert english.stderr.startswith(
        "error: profile 'adhoc': the environment variable NARRATIVE_TEST_NO_KEY is not set")
    missing = run("no-such-card.json", "zh_CN.UTF-8")  # no card read: the locale speaks
    assert missing.returncode == 2 and missing.stderr.startswith("错误："), missing.stderr


# -- inspect's per-script notes, tool problems and MVU problems ---------------------------------

def _scripted_zh_card(tmp_path: Path) -> Path:
    """A Chinese card with regex scripts in every placement, a TavernHelper script, a broken
    tool entry, an [InitVar] entry read as text and a greeting <initvar> block that fails."""
    import json

    def script(name: str, find: str, placement: list[int], **more: Any) -> dict[str, Any]:
        return {"scriptName": name, "findRegex": find, "replaceString": "", "placement": placement,
                "disabled": False, "markdownOnly": False, "promptOnly": False, **more}

    entries = [
        {"id": 0, "keys": [], "comment": "[InitVar]初始变量", "content": "好感度:\n  值: 10",
         "constant": True, "enabled": True, "position": "before_char"},
        {"id": 1, "keys": [], "comment": "[TOOL:坏工具]", "enabled": True, "constant": True,
         "content": '{"type": "shell", "function": {"name": "坏工具"}}',
         "position": "before_char"},
        {"id": 2, "keys": ["雾"], "comment": "雾港", "content": "雾港的钟声。", "enabled": True,
         "position": "before_char"},
    ]  # fmt: skip
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "阿澜", "description": "雾港的摆渡人，说话很慢，总在看海。",
        "first_mes": "雾很大。<initvar>好感度: [1, 2</initvar>", "extensions": {
            "regex_scripts": [script("隐藏变量", "/<变量>[\\s\\S]*?<\\/变量>/g", [2]),
                              script("斜杠", "/x/g", [3]), script("推理", "/y/g", [1, 6]),
                              script("停用", "/z/g", [2], disabled=True),
                              script("坏标志", "/z/q", [2])],
            "TavernHelper_scripts": [{"type": "script", "value": {
                "name": "界面按钮", "content": "console.log(1)", "enabled": True,
                "buttons": [{"name": "掷骰"}]}}]},
        "character_book": {"name": "雾港", "entries": entries}}}  # fmt: skip
    path = tmp_path / "阿澜.json"
    path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    return path


def test_inspect_notes_and_problems_speak_chinese_and_json_keeps_english(tmp_path: Path) -> None:
    import json

    card = _scripted_zh_card(tmp_path)
    done = _run("inspect", str(card))
    assert done.exit_code == 0, done.output
    shown = " ".join(done.output.split())
    assert "不运行：只作用于斜杠命令（终端里没有）" in shown
    assert "用户输入" in shown and "不作用于推理内容" in shown
    assert "不运行：已禁用" in shown and "未知的正则标志：q" in shown
    assert "浏览器 JavaScript" in shown and "type 只能是 llm 或 code，不能是 'shell'" in shown
    assert "MVU 问题：开场白里的 <initvar> 块：不是有效的 YAML、JSON 或 JSON5（" in shown
    words = ("shell findRegex InitVar initvar TOOL JavaScript iframe llm code type YAML JSON "
             "JSON5 unexpected character at AI planning text")  # the parser's detail as written
    assert _leaks(done.output, _card_words(card), words) == [], done.output
    report = json.loads(_run("inspect", str(card), "--json").output)
    runs = [row["runs"] for row in report["regex_scripts"]]
    assert runs[1] == "no: only slash commands (a terminal has none)"
    assert runs[3] == "no: disabled" and runs[4] == "no: unknown regex flags: q"
    assert report["tools"][0]["problem"] == "type must be llm or code, not 'shell'"
    assert report["tavern_helper_scripts"][0]["runs"].startswith("no: browser JavaScript")


# -- the lore index's notes to authors ---------------------------------------------------------

NOTES = [
    "lore: entry 3 (雾): /[/ is not a JavaScript regex (SyntaxError: unterminated character"
    " class): it is matched as plain text, as SillyTavern does",
    "entry 4 (no title): regex /(?<=a+)b/ is not supported here: look-behind requires fixed-width"
    " pattern",
    "entry 5 (钟声): regex /(a+)+$/ ran longer than 50 ms and is skipped from now on",
    "card book: worldbook source world skips the card's book",
    "雾港: the world file '雾港' holds the same book; it is loaded once, from the world file",
]  # fmt: skip


def test_lore_notes_stay_as_written_in_english_and_are_chinese_in_chinese() -> None:
    from narrative_cli.lore.notes import note_words

    for note in NOTES:
        assert note_words(note, "en") == note
        chinese = note_words(note, "zh")
        kept = ("SyntaxError unterminated character class look-behind requires fixed-width pattern"
                " JavaScript SillyTavern card book world")  # names and config values
        assert _leaks(chinese, note.split(":")[1] if "regex" in note else "", kept) == [], chinese
    assert note_words(NOTES[0], "zh") == (
        "世界书：条目 3（雾）：/[/ 不是有效的 JavaScript 正则（SyntaxError: unterminated character"
        " class）：按 SillyTavern 的做法当作普通文本匹配")
    assert note_words("something new", "zh") == "something new"


def test_a_broken_regex_key_is_reported_in_the_cards_language(tmp_path: Path) -> None:
    """``lore test`` and a story's opening problems on a Chinese card name the key and the
    entry exactly and say the rest in Chinese; JavaScript's own complaint is kept."""
    from tests.test_lore_author_tools import world_entry, write_world

    world = write_world(tmp_path, [world_entry(0, ["/[/", "雾"], "雾港的钟声。", comment="钟声")])
    done = _run("lore", "test", str(ZH_CARD), "--lorebook", str(world), "雾很大")
    assert done.exit_code == 0, done.output
    shown = " ".join(done.output.split())
    assert "条目 0（钟声）：/[/ 不是有效的 JavaScript 正则（" in shown, shown
    assert "按 SillyTavern 的做法当作普通文本匹配" in shown
    english = _run("lore", "test", "sample_cards/lantern-keeper.png", "--lorebook", str(world),
                   "fog")  # fmt: skip
    assert "/[/ is not a JavaScript regex (" in " ".join(english.output.split())

    from narrative_cli.pipeline.opening import load_parts

    problems = load_parts(ZH_CARD, [world], None, None, None, "zh", None).problems
    assert any(p.startswith("世界书：条目 0（钟声）：/[/ 不是有效的") for p in problems), problems
