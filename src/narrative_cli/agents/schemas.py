"""JSON schemas of the planner's, the analyst's and mvu_extract's replies.

They serve twice: sent as ``response_format: json_schema`` so a grammar-constrained model (the
local llama.cpp one included) can only produce this shape, and used by ``agents.parsing`` to
validate whatever came back. Strings carry ``maxLength`` and arrays ``maxItems`` so a small
model's constrained output ends before ``max_tokens`` cuts it off (local-model.md).
``default`` fills an optional field that a reply leaves out.
"""

from __future__ import annotations

from functools import cache
from typing import Any

MVU_OPS: tuple[str, ...] = ("replace", "delta", "insert", "add", "remove", "move")


def _text(max_length: int, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length, **extra}


def _list(items: dict[str, Any], max_items: int, **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, "maxItems": max_items, "default": [], **extra}


PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "narrative_direction": _text(1200),
        "scene_setting": _text(300, default=""),
        "key_points": _list(_text(200), 6),
        "tone": _text(40, default=""),
        "pacing": _text(20, default=""),
        "continuity_notes": _list(_text(200), 6),
        "tool_calls": _list(
            {
                "type": "object",
                "properties": {"tool": _text(64), "params": {"type": "object", "default": {}}},
                "required": ["tool"],
            },
            5,
        ),
        "text_recall": _list({"type": "integer", "minimum": 0}, 5),
        # issue #17: search terms for the text index; no default, so a plan without them is
        # stored as it came (records stay byte-identical to those written before)
        "recall_terms": {"type": "array", "items": _text(40), "maxItems": 5},
    },
    "required": ["narrative_direction"],
}

ANALYSIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "events": _list(
            {
                "type": "object",
                "properties": {
                    "type": _text(32),  # no enum: the state engine records unknown types
                    "params": {"type": "object"},  # absent: the state engine reads the siblings
                },
                "required": ["type"],
            },
            12,
        ),
        "summary_entries": _list(_text(400), 3),
    },
    "required": ["events", "summary_entries"],
}

MVU_PATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "patches": _list(
            {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": list(MVU_OPS)},
                    "path": _text(200),
                    "value": {},
                    "from": _text(200),
                },
                "required": ["op", "path"],
            },
            20,
        )
    },
    "required": ["patches"],
}

COMPACTION_SCHEMA: dict[str, Any] = {  # issue #17: a chapter or arc summary
    "type": "object",
    "properties": {"summary": _text(2000, default="")},  # empty: the fold failed, said so
    "required": [],
}

# catch_up (issue #17): the analysis of a batch of imported turns, one item per turn.
CATCH_UP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "turns": _list(
            {
                "type": "object",
                "properties": {
                    "turn": {"type": "integer", "minimum": 1},
                    "events": ANALYSIS_SCHEMA["properties"]["events"],
                    "summary_entries": _list(_text(400), 3),
                    "mvu_update": _text(2000, default=""),
                },
                "required": ["turn", "summary_entries"],
            },
            20,
        )
    },
    "required": ["turns"],
}

# Group scenes (issue 19): the plan may name the speakers, in order, with what each wants;
# events name the member they belong to. Single-card turns keep the schemas above.
SCENE_PLAN_SCHEMA: dict[str, Any] = {
    **PLAN_SCHEMA,
    "properties": {
        **PLAN_SCHEMA["properties"],
        "speakers": _list(
            {
                "type": "object",
                "properties": {"name": _text(80), "intent": _text(300, default="")},
                "required": ["name"],
            },
            4,
        ),
    },
}
_EVENT = ANALYSIS_SCHEMA["properties"]["events"]["items"]
SCENE_ANALYSIS_SCHEMA: dict[str, Any] = {
    **ANALYSIS_SCHEMA,
    "properties": {
        **ANALYSIS_SCHEMA["properties"],
        "events": _list(
            {**_EVENT, "properties": {**_EVENT["properties"], "character": _text(80)}}, 12
        ),
    },
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "plan": PLAN_SCHEMA,
    "compaction": COMPACTION_SCHEMA,
    "scene_plan": SCENE_PLAN_SCHEMA,
    "scene_analysis": SCENE_ANALYSIS_SCHEMA,
    "analysis": ANALYSIS_SCHEMA,
    "mvu_patch": MVU_PATCH_SCHEMA,
    "catch_up": CATCH_UP_SCHEMA,
}


def response_format(name: str) -> dict[str, Any]:
    """The ``json_schema`` field of a ChatRequest for schema ``name`` (plan, analysis, mvu_patch).

    ``default`` is our parser's business and some providers refuse it, so it is left out.
    The schema without them is made once per name (the schemas are constants, and a request
    only reads and encodes it): made anew for every call, it was 0.5% of a replayed turn.
    """
    return {"name": name, "schema": _sent_schema(name)}


@cache
def _sent_schema(name: str) -> Any:
    """Schema ``name`` without its defaults, made once (shared: nothing changes it)."""
    return _without_defaults(SCHEMAS[name])


def _without_defaults(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_defaults(v) for k, v in node.items() if k != "default"}
    if isinstance(node, list):
        return [_without_defaults(v) for v in node]
    return node
