"""``narrative lore check`` (author test suites), ``lore lint`` and ``lore test --chat`` (#16)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from narrative_cli.cli.app import app

from .conftest import fixture_file

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_SUITE = ROOT / "sample_cards" / "lantern-keeper.lore-tests.yaml"
LANTERN = ROOT / "sample_cards" / "lantern-keeper.png"


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["lore", *args])


def world_entry(uid: int, keys: Any, content: str, **fields: Any) -> dict[str, Any]:
    return {"uid": uid, "key": keys, "keysecondary": fields.pop("secondary", []),
            "comment": fields.pop("comment", f"entry {uid}"), "content": content,
            "constant": False, "selective": True, "selectiveLogic": 0, "order": 100 - uid,
            "position": 1, "disable": False, **fields}


def write_world(tmp_path: Path, entries: list[dict[str, Any]], name: str = "world.json") -> Path:
    path = tmp_path / name
    world = {"entries": {str(e["uid"]): e for e in entries}}
    path.write_text(json.dumps(world, ensure_ascii=False), encoding="utf-8")
    return path


def write_card(tmp_path: Path, description: str = "") -> Path:
    path = tmp_path / "card.json"
    data = {"name": "Mara", "description": description, "first_mes": "hi"}
    path.write_text(json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data},
                               ensure_ascii=False), encoding="utf-8")
    return path


def write_chat(tmp_path: Path, messages: list[tuple[bool, str]]) -> Path:
    path = tmp_path / "chat.jsonl"
    lines = [{"user_name": "User", "character_name": "Mara", "chat_metadata": {}}]
    lines += [{"name": "User" if user else "Mara", "is_user": user, "mes": text,
               "send_date": "2026-01-01"} for user, text in messages]
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n")
    return path


# --- lore check ------------------------------------------------------------------------------


def test_the_shipped_example_suite_passes() -> None:
    result = run("check", str(SAMPLE_SUITE))
    assert result.exit_code == 0, result.output
    assert "9 of 9 cases passed" in result.output


def suite(tmp_path: Path, cases: list[dict[str, Any]], **extra: Any) -> Path:
    write_card(tmp_path)
    write_world(tmp_path, [
        world_entry(0, ["king"], "The king rules.", comment="King"),
        world_entry(1, ["castle"], "The castle stands.", comment="Castle", sticky=5),
        world_entry(2, ["king"], "Royal guard.", comment="Guard", secondary=["guard"]),
    ])
    path = tmp_path / "suite.yaml"
    import yaml

    body = {"card": "card.json", "worlds": ["world.json"], "cases": cases, **extra}
    path.write_text(yaml.safe_dump(body, allow_unicode=True), encoding="utf-8")
    return path


def test_a_failing_case_exits_1_and_says_what_differs(tmp_path: Path) -> None:
    path = suite(tmp_path, [
        {"name": "guard", "text": "the king", "fires": ["Guard"], "not_fires": ["King"]},
        {"name": "where", "text": "the king", "fires": ["King"], "position": {"King": "at_depth"}},
    ])
    result = run("check", str(path))
    assert result.exit_code == 1
    assert "FAIL guard" in result.output
    assert "expected 'Guard' to fire; it did not (key \"king\", but secondary keys fail" in (
        result.output)
    assert "expected 'King' not to fire; it fired (key \"king\")" in result.output
    assert "expected 'King' at at_depth; it goes to after_char" in result.output
    assert "0 of 2 cases passed" in result.output


def test_a_chat_file_carries_sticky_entries_across_its_turns(tmp_path: Path) -> None:
    chat = write_chat(tmp_path, [(False, "Welcome."), (True, "Show me the castle."),
                                 (False, "Here it is."), (True, "Nice."), (False, "Yes.")])
    path = suite(tmp_path, [
        {"name": "sticky", "chat": chat.name, "text": "And now?", "fires": ["Castle"]},
        {"name": "no chat", "text": "And now?", "not_fires": ["Castle"]},
        {"name": "messages", "messages": [{"user": "the castle"}, {"char": "ok"},
                                          {"user": "hm"}, {"char": "so"}],
         "text": "and?", "fires": ["Castle"]},
    ])
    result = run("check", str(path))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("cases", "extra", "message"), [
    ([{"name": "x", "fires": ["King"]}], {}, "case 1 (x): give 'text', 'chat' or 'messages'"),
    ([{"name": "x", "text": "a"}], {}, "case 1 (x): say what should happen"),
    ([{"name": "x", "text": "a", "fires": ["Queen"]}], {},
     "no entry is titled or numbered 'Queen'"),
    ([{"name": "x", "text": "a", "fires": ["King"], "position": {"King": "top"}}], {},
     "position of 'King': 'top' is not one of"),
    ([{"name": "x", "text": "a", "fires": "King"}], {}, "'fires' must be a list"),
    ([{"name": "x", "text": "a", "fires": ["King"], "when": 1}], {}, "unknown field 'when'"),
    ([{"name": "x", "text": "a", "fires": ["King"]}], {"extra": 1}, "unknown field 'extra'"),
    ([{"name": "x", "text": "a", "fires": ["King"]}], {"settings": {"depth": "deep"}},
     "settings: lore setting depth"),
])
def test_a_malformed_suite_exits_2_naming_the_problem(
    tmp_path: Path, cases: list[dict[str, Any]], extra: dict[str, Any], message: str
) -> None:
    result = run("check", str(suite(tmp_path, cases, **extra)))
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("card: card.json\ncases:\n  - {user: where?}\n  - [\n")
    result = run("check", str(path))
    assert result.exit_code == 2 and "not valid YAML at line" in result.output


# --- lore lint -------------------------------------------------------------------------------


def test_lint_of_the_sample_card_lists_costs_and_exits_0() -> None:
    result = run("lint", str(LANTERN), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = {row["comment"]: row for row in report["entries"]}
    assert rows["Story rules"]["prefix"] == "stable" and rows["The lamp"]["prefix"] == "changes"
    assert rows["The lamp"]["tokens"] > 0
    assert "[TOOL:roll_dice]" not in rows  # formatting entries are not prompt lore
    assert all(f["level"] == "warning" for f in report["findings"])


def test_lint_finds_entries_that_can_never_fire_and_exits_1(tmp_path: Path) -> None:
    card = write_card(tmp_path, "她说HP100了，HP2满格。")
    world = write_world(tmp_path, [
        world_entry(0, [], "no keys"),
        world_entry(1, ["   "], "blank key"),
        world_entry(2, "king", "a string key"),
        world_entry(3, ["/[/"], "not JS"),
        world_entry(4, ["king"], "contradiction", secondary=["king"], selectiveLogic=2),
        world_entry(5, ["king"], "string logic", secondary=["x"], selectiveLogic="0"),
        world_entry(6, ["hp"], "glued key"),
        world_entry(7, ["queen"], "contradiction"),
        world_entry(8, ["x"], "big " * 400, constant=True),
        world_entry(9, ["x"], "big " * 400, constant=True),
        world_entry(10, ["/(a+)+$/"], "slow"),
    ])
    home = tmp_path / "home"
    home.mkdir()
    result = CliRunner().invoke(
        app, ["lore", "lint", str(card), "--lorebook", str(world)],
        env={"NARRATIVE_HOME": str(home)},
    )
    assert result.exit_code == 1
    out = result.output
    # the card is Chinese, so the report is (#18 item 7); --json keeps the English messages
    assert "错误：条目 0（entry 0）：永远不会触发：没有关键词" in out
    assert "错误：条目 1（entry 1）：永远不会触发：没有可用的关键词" in out
    assert "警告：条目 2（entry 2）：'key' 不是列表（'king'）" in out
    assert "警告：条目 3（entry 3）：/[/ is not a JavaScript regex" in out  # the matcher's note
    assert "错误：条目 4（entry 4）：永远不会触发：“非任一”排除了所有主关键词" in out
    assert "错误：条目 5（entry 5）：永远不会触发：selectiveLogic -1" in out
    assert "警告：条目 6（entry 6）：关键词 'hp' 在卡片文本中出现 2 次" in out
    assert "警告：条目 7（entry 7）：与条目 4（entry 4）内容相同" in out
    assert "警告：条目 9（entry 9）：与条目 8（entry 8）内容相同" in out
    assert "警告：条目 10（entry 10）：正则 /(a+)+$/ 嵌套了重复" in out
    assert "5 个错误，7 个警告，11 个条目" in out  # entry 2 (no list) is also an error; 8 and 9
    assert "警告：常驻 ↓Char 条目 8, 9（共" in out  # 800 tokens after the story window
    as_json = CliRunner().invoke(
        app, ["lore", "lint", str(card), "--lorebook", str(world), "--json"],
        env={"NARRATIVE_HOME": str(home)},
    )
    messages = [f["message"] for f in json.loads(as_json.output)["findings"]]
    assert "never fires: it has no keys and it is not constant" in messages
    assert "same content as entry 4 (entry 4)" in messages


def test_lint_reports_constants_past_the_budget(tmp_path: Path) -> None:
    card = write_card(tmp_path)
    world = write_world(tmp_path, [
        world_entry(i, [], f"{i} " + "word " * 2500, constant=True) for i in range(4)
    ])
    result = run("lint", str(card), "--lorebook", str(world))
    assert result.exit_code == 0
    assert "entry 2 (entry 2): constant, but the constants before it and it reach" in (
        result.output)
    assert "entry 1 (entry 1): constant" not in result.output


def test_lint_says_which_constants_no_prompt_cache_keeps(tmp_path: Path) -> None:
    """Constant ↓Char text goes in <worldinfo3>, after the story window: it is re-read every
    turn, so it is "tail", not "stable", and past 300 tokens the author is told to move it."""
    rules = "The keeper writes the weather into the logbook every hour of the night. " * 30
    card = write_card(tmp_path)
    world = write_world(tmp_path, [
        world_entry(1, [], rules, constant=True, position=1, comment="After"),
        world_entry(2, [], rules, constant=True, position=0, comment="Before"),
        world_entry(3, [], "A short after-char note.", constant=True, position=1,
                    comment="Short"),
    ])
    result = run("lint", str(card), "--lorebook", str(world), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rows = {row["comment"]: row for row in report["entries"]}
    assert rows["After"]["prefix"] == "tail" and rows["Short"]["prefix"] == "tail"
    assert rows["Before"]["prefix"] == "stable"
    [finding] = [f for f in report["findings"] if "<worldinfo3>" in f["message"]]
    tokens = rows["After"]["tokens"] + rows["Short"]["tokens"]
    assert finding["message"].startswith(f"constant ↓Char entries 1, 3 ({tokens} tokens)")
    assert "↑Char (before_char)" in finding["message"] and finding["level"] == "warning"
    short = write_world(tmp_path, [world_entry(3, [], "A short note.", constant=True,
                                               position=1)], name="short.json")
    quiet = run("lint", str(card), "--lorebook", str(short), "--json")
    assert "<worldinfo3>" not in quiet.output, "a few tokens there are not worth a warning"


def test_lint_tells_a_real_card_its_after_char_rules_are_re_read_every_turn() -> None:
    card = fixture_file("zh/nun-ninja-v2.json")  # MVU rules, 1,860 tokens, constant ↓Char
    result = CliRunner().invoke(app, ["lore", "lint", str(card)], env={"LANG": "zh_CN.UTF-8"})
    assert result.exit_code == 0, result.output
    assert "警告：常驻 ↓Char 条目 1, 3, 4, 5（共 1860 词元）放在 <worldinfo3>" in result.output


def test_lint_on_real_fixtures_does_not_fail() -> None:
    card = fixture_file("zh/nun-ninja-anime.png")
    world = fixture_file("zh/nun-ninja-world.json")
    result = run("lint", str(card), "--lorebook", str(world), "--json")
    assert result.exit_code == 0, result.output
    findings = json.loads(result.stdout)["findings"]
    assert any("same content as entry 6 of card" in f["message"] for f in findings)
    seraphina = run("lint", str(fixture_file("st/seraphina-1.18.png")), "--lorebook",
                    str(fixture_file("st/eldoria-1.18.json")))
    assert seraphina.exit_code in (0, 1) and "budget" in seraphina.output


# --- lore test --chat ------------------------------------------------------------------------


def test_lore_test_scans_a_chat_turn_by_turn(tmp_path: Path) -> None:
    card = write_card(tmp_path)
    # sticky 5 from message 2: active while the chat has fewer than 7 messages
    world = write_world(tmp_path, [world_entry(1, ["castle"], "The castle.", sticky=5,
                                               comment="Castle")])
    chat = write_chat(tmp_path, [(False, "Welcome."), (True, "Show me the castle."),
                                 (False, "Here it is."), (True, "Nice."), (False, "Yes.")])
    sticky = run("test", str(card), "And now?", "--chat", str(chat), "--lorebook", str(world),
                 "--json")
    assert sticky.exit_code == 0, sticky.output
    assert json.loads(sticky.stdout)["activated"][0]["reason"] == "sticky"
    alone = run("test", str(card), "And now?", "--lorebook", str(world), "--json")
    assert json.loads(alone.stdout)["activated"] == []
    later = write_chat(tmp_path, [(False, "Welcome."), (True, "Show me the castle."),
                                  (False, "Here."), (True, "a"), (False, "b"), (True, "c"),
                                  (False, "d"), (True, "e")])
    expired = run("test", str(card), "--chat", str(later), "--lorebook", str(world), "--json")
    assert expired.exit_code == 0 and json.loads(expired.stdout)["activated"] == []


def test_lore_test_needs_text_or_a_chat(tmp_path: Path) -> None:
    result = run("test", str(write_card(tmp_path)))
    assert result.exit_code == 2 and "give the TEXT to scan, or a chat with --chat" in (
        result.output)
