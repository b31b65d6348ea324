"""Parse recovery: what models really send back when asked for JSON, and what we make of it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from narrative_cli.agents.parsing import (
    corrective_message,
    parse_analysis,
    parse_mvu_patches,
    parse_plan,
)
from narrative_cli.agents.schemas import (
    ANALYSIS_SCHEMA,
    PLAN_SCHEMA,
    response_format,
)
from narrative_cli.agents.validation import check
from narrative_cli.state.events import EVENT_TYPES

PLAN = {
    "narrative_direction": "The keeper lights the lamp and finally speaks of the bell.",
    "scene_setting": "Lamp room, night, rain.",
    "key_points": ["the lamp", "the bell"],
    "tone": "tense",
    "pacing": "slow",
    "continuity_notes": [],
    "tool_calls": [{"tool": "roll_dice", "params": {"expr": "1d20"}}],
    "text_recall": [2],
}
PLAN_JSON = json.dumps(PLAN, ensure_ascii=False)
ANALYSIS_JSON = (
    '{"events": [{"type": "move", "params": {"location": "矿洞"}}, '
    '{"type": "add_item", "params": {"item": "火把", "quantity": 1}}], '
    '"summary_entries": ["[第3轮] 用户意图：探索矿洞 | 叙事要点：兰韦德进入矿洞"]}'
)

D = str(PLAN["narrative_direction"])
CUT_LIST = PLAN_JSON[: PLAN_JSON.index('"the bell"')]
PYTHONIC = "{'narrative_direction': 'go on', 'tool_calls': [], 'x': True, 'y': None}"
CURLY = "{“narrative_direction”: “他说“走”，于是出发”}"
INNER = '{"narrative_direction": "她低声说"别去"，然后沉默", "tone": "紧"}'
COMMENTED = '{\n  // the plan\n  "narrative_direction": "go on" /* done */\n}'

# (case, reply, expected direction or None, ok, truncated)
PLAN_TABLE: list[tuple[str, str, str | None, bool, bool]] = [
    ("clean", PLAN_JSON, D, True, False),
    ("fenced", f"Here is the plan:\n```json\n{PLAN_JSON}\n```\nGood luck!", D, True, False),
    ("fence without language", f"```\n{PLAN_JSON}\n```", D, True, False),
    ("think-prefixed", f"<think>The user wants {{drama}}.</think>\n{PLAN_JSON}", D, True, False),
    ("template-opened think", f"so I {{maybe}} do this</think>{PLAN_JSON}", D, True, False),
    ("trailing prose", PLAN_JSON + "\n\nI hope this plan {works} for you.", D, True, False),
    ("leading prose", "Sure! " + PLAN_JSON, D, True, False),
    ("truncated mid-string", PLAN_JSON[:45], "The keeper lights th", True, True),
    ("truncated mid-list", CUT_LIST, D, True, True),
    (
        "trailing commas",
        '{"narrative_direction": "go on", "key_points": ["a",],}',
        "go on",
        True,
        False,
    ),
    ("single quotes and Python literals", PYTHONIC, "go on", True, False),
    ("curly quotes as delimiters", CURLY, "他说“走”，于是出发", True, False),
    ("unescaped inner quotes", INNER, '她低声说"别去"，然后沉默', True, False),
    ("comments", COMMENTED, "go on", True, False),
    ("unquoted keys", "{narrative_direction: 'go on', pacing: slow}", "go on", True, False),
    ("empty", "", None, False, False),
    ("whitespace", "  \n ", None, False, False),
    ("plain prose", "The keeper lights the lamp. Nothing else happens.", None, False, False),
    ("unclosed think only", "<think>Let me plan {the scene} carefully and", None, False, True),
    ("a list, not an object", '["go on"]', None, False, False),
]


@pytest.mark.parametrize(
    ("case", "reply", "direction", "ok", "truncated"), PLAN_TABLE, ids=[r[0] for r in PLAN_TABLE]
)
def test_plan_recovery_table(
    case: str, reply: str, direction: str | None, ok: bool, truncated: bool
) -> None:
    result = parse_plan(reply)
    assert result.ok is ok, (result.errors, result.repairs)
    assert result.truncated is truncated
    if direction is None:
        assert result.value is None and result.errors
    else:
        assert result.value is not None
        assert result.value["narrative_direction"] == direction
        assert isinstance(result.value["key_points"], list)
        assert isinstance(result.value["tool_calls"], list)


def test_a_clean_reply_needs_no_repairs() -> None:
    result = parse_plan(PLAN_JSON)
    assert result.value == PLAN and result.repairs == [] and result.errors == []


def test_repairs_are_reported_for_the_trace() -> None:
    result = parse_plan(f"<think>hm</think>```json\n{PLAN_JSON[:-1]},}}\n```")
    assert result.ok
    assert "removed reasoning (<think>) text" in result.repairs
    assert "took the fenced code block" in result.repairs
    assert "removed trailing commas" in result.repairs


def test_wrong_types_are_coerced_when_safe_and_reported_otherwise() -> None:
    reply = json.dumps(
        {
            "narrative_direction": 42,
            "key_points": "just one point",
            "tool_calls": [{"tool": "roll_dice", "params": {}}, "roll a d20", {"params": {}}],
            "text_recall": ["3", 4.0, "soon", -1, True],
            "pacing": ["fast"],
        }
    )
    result = parse_plan(reply)
    value = result.value
    assert value is not None
    assert value["narrative_direction"] == "42"
    assert value["key_points"] == ["just one point"]
    assert value["tool_calls"] == [{"tool": "roll_dice", "params": {}}]
    assert value["text_recall"] == [3, 4]
    assert value["pacing"] == ""  # wrong type falls back to the default
    assert not result.ok
    joined = "\n".join(result.errors)
    for fragment in ("tool_calls[1]", "tool_calls[2].tool", "text_recall[2]", "text_recall[3]",
                     "text_recall[4]", "pacing"):  # fmt: skip
        assert fragment in joined
    assert any("'3' became a number" in r for r in result.repairs)


def test_missing_required_field_is_an_error_but_defaults_fill_the_rest() -> None:
    result = parse_plan('{"tone": "warm"}')
    assert result.errors == ["missing field narrative_direction"]
    assert result.value is not None and result.value["tool_calls"] == []


def test_errors_are_worded_in_the_prompt_language() -> None:
    result = parse_plan('{"tone": "warm", "key_points": 3}', lang="zh")
    assert "缺少字段 narrative_direction" in result.errors
    assert any(e.startswith("key_points 应为数组") for e in result.errors)
    assert parse_plan("", lang="zh").errors == ["回复为空"]


def test_analysis_recovers_a_truncated_reply_with_its_events() -> None:
    cut = ANALYSIS_JSON[: ANALYSIS_JSON.index("兰韦德")]
    result = parse_analysis(cut, lang="zh", finish_reason="length")
    assert result.truncated and result.ok
    assert result.value is not None
    assert [e["type"] for e in result.value["events"]] == ["move", "add_item"]
    assert result.value["summary_entries"] == ["[第3轮] 用户意图：探索矿洞 | 叙事要点："]


def test_analysis_keeps_unknown_event_types_for_the_state_engine_to_reject() -> None:
    events = '[{"type": "teleport", "params": {"to": "moon"}}, {"params": {}}]'
    reply = f'{{"events": {events}, "summary_entries": []}}'
    result = parse_analysis(reply)
    assert result.value is not None
    assert result.value["events"] == [{"type": "teleport", "params": {"to": "moon"}}]
    assert result.errors == ["missing field events[1].type"]


def test_event_parameters_written_beside_the_type_are_kept() -> None:
    result = parse_analysis(
        '{"events": [{"type": "move", "location": "the mine"}], "summary_entries": []}'
    )
    assert result.ok and result.value is not None
    assert result.value["events"] == [{"type": "move", "location": "the mine"}]


def test_analysis_missing_both_lists_is_not_silent() -> None:
    result = parse_analysis('{"note": "nothing happened"}')
    assert not result.ok
    assert set(result.errors) == {"missing field events", "missing field summary_entries"}
    assert result.value is not None and result.value["events"] == []


def test_mvu_patches_from_an_object_a_bare_list_or_a_jsonpatch_tag() -> None:
    patch = '{"op": "delta", "path": "/hero/credits", "value": -200}'
    for reply in (f'{{"patches": [{patch}]}}', f"[{patch}]", f"<JSONPatch>[{patch}]</JSONPatch>"):
        result = parse_mvu_patches(reply)
        assert result.ok, reply
        assert result.value == {
            "patches": [{"op": "delta", "path": "/hero/credits", "value": -200}]
        }
    odd = parse_mvu_patches(
        '{"patches": [{"op": "Replace", "path": "/a", "value": 1}, {"op": "copy", "path": "/b"}]}'
    )
    assert odd.value is not None and odd.value["patches"] == [
        {"op": "replace", "path": "/a", "value": 1}
    ]
    assert any("must be one of" in e for e in odd.errors)


def test_corrective_message_quotes_the_errors() -> None:
    errors = parse_plan('{"tone": "warm"}').errors
    message = corrective_message(errors, "en")
    assert "missing field narrative_direction" in message
    assert "only one JSON object" in message
    zh = corrective_message(["缺少字段 events", "回复为空"], "zh")
    assert "缺少字段 events；回复为空" in zh


def test_schemas_bound_every_string_and_list_for_constrained_decoding() -> None:
    def walk(node: Any, path: str) -> None:
        if node.get("type") == "string" and "enum" not in node:
            assert "maxLength" in node, path
        if node.get("type") == "array":
            assert "maxItems" in node, path
            walk(node["items"], path + "[]")
        for key, child in node.get("properties", {}).items():
            walk(child, f"{path}.{key}")

    for name in ("plan", "analysis", "mvu_patch"):
        wire = response_format(name)
        assert wire["name"] == name
        assert "default" not in json.dumps(wire["schema"])
        walk(wire["schema"], name)


def test_the_analysis_template_lists_every_event_type_with_its_parameters() -> None:
    from narrative_cli.agents.templates import analysis_system

    for lang in ("zh", "en"):
        text = analysis_system(lang)
        for event in EVENT_TYPES:
            assert f"- {event}" in text, (lang, event)
        for param in ("location", "item", "quantity", "npc", "value", "delta", "quest_id",
                      "stage", "outcome", "flag", "amount", "unit"):  # fmt: skip
            assert param in text, (lang, param)


def test_schema_check_accepts_the_documented_examples() -> None:
    example = {
        "events": [{"type": "move", "params": {"location": "矿洞"}}],
        "summary_entries": ["x"],
    }
    assert check(example, ANALYSIS_SCHEMA).errors == []
    assert check(PLAN, PLAN_SCHEMA).value == PLAN
