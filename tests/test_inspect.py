"""``narrative inspect``: the JSON report and the Rich view, on our sample cards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from narrative_cli.cli.app import app
from narrative_cli.tokens import estimate_tokens

from .conftest import SAMPLES

LANTERN = str(SAMPLES / "lantern-keeper.png")


def inspect_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["inspect", *args, "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_json_report_of_the_lantern_keeper() -> None:
    report = inspect_json(LANTERN)
    card = report["card"]
    assert (card["name"], card["spec"], card["source"], card["language"]) == (
        "Edda", "chara_card_v2", "png:chara", "en")
    assert card["greeting_count"] == 2 and len(report["greetings"]) == 2
    assert report["tokens"]["personality"] > 0
    assert report["tokens"]["total"] == sum(v for k, v in report["tokens"].items()
                                            if k != "total")
    entries = report["lore"]["entries"]
    assert len(entries) == 14
    first = entries[0]
    assert set(first) >= {"uid", "comment", "keys", "position", "constant", "selective", "order",
                          "route", "route_reason"}
    assert (first["uid"], first["comment"], first["route"], first["position"]) == (
        0, "Story rules", "worldinfo1", 4)
    assert "position 4" in first["route_reason"]
    assert report["lore"]["routes"]["tool"] == 3
    assert [b["used"] for b in report["lore"]["books"]] == [True]


def test_tools_mvu_and_regex_sections() -> None:
    report = inspect_json(LANTERN)
    tools = {t["name"]: t for t in report["tools"]}
    assert set(tools) == {"roll_dice", "tide_clock", "keeper_log"}
    assert (tools["roll_dice"]["type"], tools["roll_dice"]["trigger"]) == ("code", "planning")
    assert tools["keeper_log"]["output_tag"] == "keeper_log"
    assert tools["keeper_log"]["tag_lookback"] == 3
    assert all(t["problem"] is None for t in report["tools"])
    initvar = report["mvu"]["initvar"]
    assert initvar[0]["format"] == "json"
    assert initvar[0]["variables"] == ["keeper", "island", "apprentice"]
    assert report["mvu"]["mvu_update"][0]["comment"] == "[mvu_update] update rules"
    assert report["regex_scripts"] == [{
        "name": "Hide keeper log from prompts",
        "find_regex": "/<keeper_log>[\\s\\S]*?<\\/keeper_log>/g", "placement": [2],
        "disabled": False, "markdown_only": False, "prompt_only": True, "problem": None,
        "runs": "prompt (AI output)"}]
    assert report["tavern_helper_scripts"] == []


def test_extra_lorebook_and_preset(tmp_path: Path) -> None:
    preset = tmp_path / "Mini.json"
    preset.write_text(json.dumps({"temperature": 0.7, "prompts": [
        {"identifier": "main", "content": "Write {{char}}."}]}), encoding="utf-8")
    report = inspect_json(LANTERN, "--lorebook", str(SAMPLES / "sample-world.json"),
                          "--preset", str(preset))
    books = report["lore"]["books"]
    assert [(b["name"], b["entries"], b["used"]) for b in books] == [
        ("Greyholm Light", 14, True), ("sample-world", 6, True)]
    world_rows = [e for e in report["lore"]["entries"] if e["book"] == "sample-world"]
    assert [e["route"] for e in world_rows] == ["keyword", "worldinfo3", "keyword", "keyword",
                                                "unrouted", "outlet"]
    assert report["preset"]["name"] == "Mini" and report["preset"]["enabled"] == 1
    assert report["preset"]["samplers"] == {"temperature": 0.7}


def test_tool_problems_are_reported(tmp_path: Path) -> None:
    def tool_entry(uid: int, comment: str, content: str) -> dict[str, Any]:
        return {"id": uid, "keys": [], "comment": comment, "content": content, "constant": True,
                "enabled": True, "extensions": {}}

    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Toolbox", "first_mes": "Hi", "character_book": {"entries": [
            tool_entry(0, "[TOOL:broken]", "{not json"),
            tool_entry(1, "[TOOL:calc]",
                       json.dumps({"type": "code", "function": {"name": "calc"}})),
            tool_entry(2, "[TOOL:odd]", json.dumps({"type": "llm", "trigger": "sometimes",
                                                    "function": {"name": "odd"}})),
        ]}}}
    path = tmp_path / "toolbox.json"
    path.write_text(json.dumps(card), encoding="utf-8")
    problems = [t["problem"] for t in inspect_json(str(path))["tools"]]
    assert problems[0].startswith("content is not valid JSON")
    assert problems[1] == "a custom code tool needs its JavaScript in 'code'"
    assert problems[2] == "trigger must be planning or post_pipeline, not 'sometimes'"


def test_chinese_card_report() -> None:
    report = inspect_json(str(SAMPLES / "fog-harbor-zh.json"))
    assert report["card"]["language"] == "zh" and report["card"]["spec"] == "chara_card_v3"
    rules = next(e for e in report["lore"]["entries"] if e["comment"] == "叙事规则")
    assert rules["route"] == "worldinfo1" and rules["depth"] == 2
    assert report["mvu"]["initvar"][0]["format"] == "text"
    assert report["mvu"]["initvar"][0]["variables"] == ["港口", "阿澜", "玩家"]
    fog = next(e for e in report["lore"]["entries"] if e["comment"] == "雾钟")
    assert fog["keys"] == ["雾钟", "钟楼"] and fog["selective_logic"] == 2
    assert report["greetings"][0]["tokens"] == estimate_tokens(
        json.loads((SAMPLES / "fog-harbor-zh.json").read_text("utf-8"))["data"]["first_mes"])


def test_rich_view_shows_names_routes_and_bracketed_comments() -> None:
    result = CliRunner().invoke(app, ["inspect", LANTERN, "--lorebook",
                                      str(SAMPLES / "sample-world.json")])
    assert result.exit_code == 0, result.output
    text = result.stdout
    for expected in ("Edda", "png:chara", "worldinfo1", "worldinfo2", "keyword", "mvu_update",
                     "roll_dice", "tide_clock", "keeper_log", "[initvar] keeper variables",
                     "sample-world (6)", "Hide keeper log from prompts"):
        assert expected in text, expected
    assert "[TOOL:roll" in text  # a comment in brackets is text, not Rich markup
