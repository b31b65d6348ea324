"""``narrative lore test``: JSON contract, Rich view, lorebook selection and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from narrative_cli.cli.app import app


def book_entry(uid: int, keys: list[str], content: str, **extensions: Any) -> dict[str, Any]:
    extensions.setdefault("position", 0)
    return {
        "id": uid,
        "keys": keys,
        "content": content,
        "comment": f"条目{uid}",
        "enabled": True,
        "insertion_order": 100 + uid,
        "constant": extensions.pop("constant", False),
        "extensions": extensions,
    }


def write_card(tmp_path: Path, entries: list[dict[str, Any]] | None) -> Path:
    data: dict[str, Any] = {"name": "夜百合", "description": "女忍", "first_mes": "你好"}
    if entries is not None:
        data["character_book"] = {"name": "月影阁", "entries": entries}
    path = tmp_path / "card.json"
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}
    path.write_text(json.dumps(card, ensure_ascii=False), encoding="utf-8")
    return path


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["lore", "test", *args])


def test_json_lists_activated_and_rejected_with_exact_keys(tmp_path: Path) -> None:
    card = write_card(
        tmp_path,
        [
            book_entry(0, ["月影阁"], "忍者的据点"),
            book_entry(1, [], "总是在", constant=True, position=1),
            book_entry(2, ["密信"], "一封信", group="信件", group_override=True),
            book_entry(3, ["密信"], "另一封信", group="信件"),
            book_entry(4, ["忍术"], "秘术", probability=0, useProbability=True),
            book_entry(5, ["教堂"], "不会出现"),
        ],
    )
    result = invoke(str(card), "去月影阁送密信，顺便练忍术", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"activated", "rejected"}
    activated = {item["uid"]: item for item in report["activated"]}
    assert all(set(item) == {"uid", "comment", "route", "reason"} for item in activated.values())
    assert all(set(item) == {"uid", "comment", "reason"} for item in report["rejected"])
    assert activated[0] == {
        "uid": 0,
        "comment": "条目0",
        "route": "keyword",
        "reason": 'key "月影阁"',
    }
    assert activated[1]["route"] == "worldinfo3" and activated[1]["reason"] == "constant"
    assert set(activated) == {0, 1, 2}
    rejected = {item["uid"]: item["reason"] for item in report["rejected"]}
    assert rejected[3] == "group '信件': entry 2 has priority (groupOverride)"
    assert rejected[4].startswith("probability: rolled")
    assert 5 not in rejected


def test_rich_view_shows_routes_reasons_and_budget(tmp_path: Path) -> None:
    card = write_card(tmp_path, [book_entry(0, ["月影阁"], "忍者的据点")])
    result = invoke(str(card), "月影阁")
    assert result.exit_code == 0, result.output
    # a Chinese card's report is in Chinese (#18 item 7)
    assert "已激活" in result.stdout and "条目0" in result.stdout
    assert "关键词「月影阁」" in result.stdout and "keyword" in result.stdout
    assert "激活 1 条，拒绝 0 条" in result.stdout


def test_world_files_are_used_when_the_card_has_no_book(tmp_path: Path) -> None:
    world = tmp_path / "world.json"
    entry = {
        "uid": 3,
        "key": ["铁匠"],
        "keysecondary": [],
        "comment": "铁匠铺",
        "content": "打铁",
        "constant": False,
        "selective": True,
        "order": 100,
        "position": 1,
        "disable": False,
    }
    world.write_text(json.dumps({"entries": {"3": entry}}, ensure_ascii=False), encoding="utf-8")
    card = write_card(tmp_path, None)
    result = invoke(str(card), "找铁匠", "--lorebook", str(world), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["activated"] == [
        {"uid": 3, "comment": "铁匠铺", "route": "keyword", "reason": 'key "铁匠"'}
    ]


def test_invalid_regex_is_a_warning_naming_the_entry(tmp_path: Path) -> None:
    card = write_card(tmp_path, [book_entry(7, ["/[b/"], "x"), book_entry(8, ["龙"], "y")])
    result = invoke(str(card), "龙", "--json")
    assert result.exit_code == 0, result.output
    assert "warning: entry 7 (条目7): /[b/ is not a JavaScript regex" in result.stderr
    assert [item["uid"] for item in json.loads(result.stdout)["activated"]] == [8]


def test_unreadable_card_is_a_one_line_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.png"
    result = invoke(str(missing), "hello")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert str(missing.name) in result.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    result = invoke(str(write_card(tmp_path, [])), "x", "--lorebook", str(broken))
    assert result.exit_code == 2 and "broken.json" in result.stderr
