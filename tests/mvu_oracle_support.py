"""Running an mvu-oracle case through our MVU engine, and comparing with the oracle's steps.

The case format is the oracle's (``../shared/tools/mvu-oracle/README.md``): ``stat_data`` /
``initvar`` / ``lorebook`` / ``card_file`` entries, a ``greeting`` (or its swipes) and
``messages``. Each step is the ``stat_data`` MVU stored on that message (``None`` when it
stored nothing: an assistant message shorter than 5 characters).
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from narrative_cli.domain import LoreEntry
from narrative_cli.load import load_card
from narrative_cli.state.mvu_init import initialise
from narrative_cli.state.mvu_update import MvuData, update_variables


def case_entries(case: dict[str, Any], base: Path) -> tuple[list[LoreEntry], list[str]]:
    """The case's lore entries (in the oracle's order) and its greeting swipes."""
    raw: list[dict[str, str]] = []
    greetings = case.get("greeting")
    lore = list(case.get("lorebook") or [])
    if case.get("card_file"):
        card = load_card(base / case["card_file"])
        book = [
            {"comment": e.comment, "content": e.content}
            for e in (card.character_book.entries if card.character_book else [])
        ]
        lore = book + lore
        if greetings is None:
            greetings = list(card.greetings)
    if "stat_data" in case:
        raw.append(
            {
                "comment": "[InitVar] stat_data",
                "content": json.dumps(case["stat_data"], ensure_ascii=False),
            }
        )
    for index, item in enumerate(case.get("initvar") or []):
        raw.append(
            {"comment": f"[InitVar] #{index}", "content": item}
            if isinstance(item, str)
            else dict(item)
        )
    raw.extend(lore)
    entries = [
        LoreEntry(
            uid=i,
            comment=str(e.get("comment", "")),
            content=str(e.get("content", "")),
            disabled=True,
        )
        for i, e in enumerate(raw)
    ]
    swipes = greetings if isinstance(greetings, list) else [greetings or ""]
    return entries, swipes


FIELDS = ("stat_data", "display_data", "delta_data")


def run_case(case: dict[str, Any], base: Path) -> list[dict[str, Any] | None]:
    """Our ``stat_data`` after the greeting and after each message (``None`` = not stored)."""
    return [None if step is None else step["stat_data"] for step in run_case_full(case, base)]


def run_case_full(case: dict[str, Any], base: Path) -> list[dict[str, Any] | None]:
    """Our ``stat_data``, ``display_data`` and ``delta_data`` after each message."""
    entries, swipes = case_entries(case, base)
    user, char = case.get("user", "User"), case.get("char", "Char")
    greeting = swipes[case.get("greeting_swipe", 0)]
    init = initialise(entries, greeting, user=user, char=char)
    data: MvuData = init.data
    steps: list[dict[str, Any] | None] = [_fields(data)]
    for raw in case.get("messages") or []:
        message = {"role": "assistant", "text": raw} if isinstance(raw, str) else raw
        if message["role"] == "assistant" and len(message["text"]) < 5:
            steps.append(None)
            continue
        data = update_variables(message["text"], data, user=user, char=char).data
        steps.append(_fields(data))
    return steps


def _fields(data: MvuData) -> dict[str, Any]:
    return {"stat_data": data.stat_data, "display_data": data.display_data,
            "delta_data": data.delta_data}  # fmt: skip


def compare_display(ours: list[Any], theirs: dict[str, Any]) -> list[str]:
    """The steps where our display_data or delta_data differ from the oracle's."""
    problems: list[str] = []
    for index, step in enumerate(theirs.get("steps") or []):
        mine = ours[index] if index < len(ours) else None
        for name in ("display_data", "delta_data"):
            expected = None if step.get("skipped") else step[name]
            got = None if mine is None else _normal(mine[name])
            if got != expected:  # 5 == 5.0, as JSON numbers are
                mine_text = json.dumps(got, ensure_ascii=False)[:200]
                problems.append(f"message {index} {name}: ours {mine_text} != mvu {expected}")
    return problems


def _normal(value: Any) -> Any:
    """JSON as the oracle writes it (non-finite numbers as ``{"$nonfinite": ...}``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return {
            "$nonfinite": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        }
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def compare(ours: list[Any], theirs: dict[str, Any]) -> list[str]:
    """The steps where our stat_data differs from the oracle's, one line each."""
    if "error" in theirs:
        return [f"oracle error: {theirs['error'][:200]}"]
    problems: list[str] = []
    for index, step in enumerate(theirs["steps"]):
        expected = None if step.get("skipped") else step["stat_data"]
        got = _normal(ours[index]) if index < len(ours) else "missing"
        if (
            json.dumps(got, sort_keys=True) != json.dumps(expected, sort_keys=True)
            and got != expected
        ):
            problems.append(
                f"message {index}: ours {json.dumps(got, ensure_ascii=False)[:300]} "
                f"!= mvu {json.dumps(expected, ensure_ascii=False)[:300]}"
            )
    return problems


def masked(ours: Any, theirs: Any) -> Any:
    """``ours`` with each leaf where MVU stored NaN/Infinity taken from ``theirs`` (so that a
    comparison ignores exactly the values we reject on purpose)."""
    if isinstance(theirs, dict) and "$nonfinite" in theirs:
        return theirs
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return {k: masked(v, theirs.get(k)) for k, v in ours.items()}
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [masked(a, b) for a, b in zip(ours, theirs, strict=True)]
    return ours


def compare_masked(ours: list[Any], theirs: dict[str, Any]) -> list[str]:
    """``compare`` ignoring the leaves where MVU stored NaN/Infinity."""
    steps = theirs.get("steps") or []
    mine = [
        masked(_normal(step), other.get("stat_data")) if step is not None else None
        for step, other in zip(ours, steps, strict=False)
    ]
    return compare(mine, theirs)


def nonfinite_in(theirs: dict[str, Any]) -> bool:
    """Whether the oracle stored a NaN/Infinity (which we reject on purpose)."""
    return '"$nonfinite"' in json.dumps(theirs)


_BASE = {
    "角色": {
        "络络": {
            "好感度": [10, "0-100"],
            "状态": ["平静", "情绪"],
            "HP": 50,
            "$meta": {"required": ["HP"]},
        }
    },
    "背包": {"$meta": {"extensible": True}, "苹果": 2, "绳子": 1},
    "固定": {"a": 1, "b": "x"},
    "列表": ["a", "b", "c"],
    "可扩列表": ["x", "$__META_EXTENSIBLE__$"],
    "任务": {"$meta": {"extensible": True, "template": {"状态": "进行中", "进度": 0}}},
    "世界": {"时间": "09:00", "日期": "2024-01-01T12:00:00.000Z", "天数": [1, "第几天"]},
}
_PATHS = ["角色.络络.HP", "角色.络络.好感度", "角色.络络.状态", "背包.苹果", "背包.香蕉", "固定.a",
          "固定.b", "列表[1]", "列表.0", "可扩列表", "世界.时间", "世界.天数",
          "世界.日期", "不存在.x",
          "'角色'.'络络'.HP", "角色[\"络络\"].HP", "任务", "背包"]  # fmt: skip
_VALUES = ["5", "'文本'", "\"双引号\"", "10 + 5", "-3", "2 * (3 + 1)", "true", "null", "[1, 2]",
           "{a: 1}", "{\"状态\": \"完成\"}", "'12'", "abc", "0.1 + 0.2", "Math.max(3, 9)", "1e3",
           "`反引号`", "'05:30'", "100/3"]  # fmt: skip


def generated_cases(count: int, seed: int = 14) -> list[dict[str, Any]]:
    """Seeded random command mixes over one tree with every ``$meta`` rule in it."""
    rng = random.Random(seed)
    cases = []
    for number in range(count):
        lines = []
        for _ in range(rng.randint(1, 5)):
            path, value = rng.choice(_PATHS), rng.choice(_VALUES)
            kind = rng.choice(
                ["set", "set", "set3", "add", "insert2", "insert3", "remove", "remove2"]
            )
            if kind == "set":
                lines.append(f"_.set('{path}', {value});//r{number}")
            elif kind == "set3":
                lines.append(f"_.set('{path}', 0, {value});")
            elif kind == "add":
                lines.append(f"_.add('{path}', {rng.choice(['5', '-2', '1.5', '60000', 'x'])});")
            elif kind == "insert2":
                lines.append(f"_.insert('{path}', {value});")
            elif kind == "insert3":
                lines.append(
                    f"_.insert('{path}', '{rng.choice(['新', '香蕉', '0', 'a'])}', {value});"
                )
            elif kind == "remove":
                lines.append(f"_.remove('{path}');")
            else:
                target = rng.choice(["0", "'a'", "'苹果'", "1"])
                lines.append(f"_.remove('{path}', {target});")
        body = "正文。\n<UpdateVariable>\n" + "\n".join(lines) + "\n</UpdateVariable>"
        cases.append({"id": f"generated-{number}", "stat_data": _BASE, "messages": [body]})
    return cases


_POINTERS = ["/角色/络络/HP", "/背包/苹果", "/背包/新物品", "/列表/1", "/列表/-", "/可扩列表/-",
             "/可扩列表/0", "/任务/新任务", "/世界/天数", "/固定/a", "/不存在"]  # fmt: skip
_PATCH_VALUES: list[Any] = [3, -2, "文本", {"进度": 5}, [1, 2], None, True, 1.5]
_INITVARS = [
    "角色:\n  名字: <user>\n  好感度: [10, '0-100']\n背包:\n  $meta: {extensible: true}\n  苹果: 2",
    "{角色: {名字: '{{user}}', 等级: 1,}, 队伍: ['{{char}}', '$__META_EXTENSIBLE__$'],}",
    '```yaml\n世界:\n  时间: "08:30"\n  天气: 晴\n```',
    "<initvar>\n状态:\n  - 清醒\n  - 饥饿\n</initvar>",
    '{"角色": {"$meta": {"required": ["名字"], "extensible": true}, "名字": "A", "称号": "B"}}',
]


_GREETINGS = [
    "",
    "你好。\n<UpdateVariable>\n_.set('角色.名字', '小明');\n</UpdateVariable>",
    "开场。\n<initvar>\n地点: 码头\n</initvar>",
]
_LATER = ["_.insert('角色', '称号', '勇者');//", "_.remove('角色', '名字');"]


def generated_patch_and_init_cases(count: int, seed: int = 41) -> list[dict[str, Any]]:
    """Seeded JSONPatch blocks, YAML/JSON5 initvar entries and greeting commands."""
    rng = random.Random(seed)
    cases = []
    for number in range(count):
        ops = []
        for _ in range(rng.randint(1, 4)):
            op = rng.choice(["replace", "delta", "add", "insert", "remove"])
            item: dict[str, Any] = {"op": op, "path": rng.choice(_POINTERS)}
            if op != "remove":
                item["value"] = rng.choice(_PATCH_VALUES)
            ops.append(item)
        patch = json.dumps(ops, ensure_ascii=False)
        initvar = rng.sample(_INITVARS, rng.randint(1, 3))
        greeting = rng.choice(_GREETINGS)
        extra = "<UpdateVariable>\n" + "\n".join(_LATER) + "\n</UpdateVariable>"
        cases.append({
            "id": f"generated-patch-{number}", "stat_data": _BASE, "initvar": initvar,
            "greeting": greeting, "user": "Ada", "char": "Edda",
            "messages": [f"正文。\n<JSONPatch>\n{patch}\n</JSONPatch>", "ok", f"正文二。\n{extra}"],
        })  # fmt: skip
    return cases
