"""Getting the planner's, the analyst's and mvu_extract's JSON out of what a model wrote.

Steps (llm-protocols §6): drop ``<think>`` blocks (an unclosed one too), take a fenced block,
decode from the first brace with ``raw_decode`` (which ignores trailing prose), else read it
leniently (``agents.repair``), then check it against the schema (``agents.validation``).
The result keeps every error: the pipeline makes one corrective retry quoting them
(:func:`corrective_message`), and after that shows a warning and goes on with what parsed.

A reply can never crash the turn: JSON nested deeper than ``MAX_JSON_DEPTH`` (a recursion
bomb) is a parse error like any other, and escaped lone surrogates (``"\\ud800"``) become
U+FFFD before anything prints, stores or traces them (``safetext``). What validation dropped
(``dropped``) and cut to the schema's length limits (``cuts``) travels with the result so
the pipeline shows it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.agents.repair import repair_json
from narrative_cli.agents.schemas import (
    ANALYSIS_SCHEMA,
    CATCH_UP_SCHEMA,
    COMPACTION_SCHEMA,
    MVU_PATCH_SCHEMA,
    PLAN_SCHEMA,
    SCENE_ANALYSIS_SCHEMA,
    SCENE_PLAN_SCHEMA,
)
from narrative_cli.agents.templates import fill
from narrative_cli.agents.validation import Dropped, check, type_name
from narrative_cli.safetext import MAX_JSON_DEPTH, clean_json, json_depth

_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON)?[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_MESSAGES = {
    "empty": ("回复为空", "the reply was empty"),
    "only_thinking": (
        "回复只有未结束的思考（<think> 没有闭合），没有 JSON",
        "the reply was only unfinished reasoning (<think> was never closed), with no JSON",
    ),
    "no_json": ("回复中没有 JSON 对象", "the reply contains no JSON object"),
    "not_object": ("回复的 JSON 是{got}，不是对象", "the reply's JSON is {got}, not an object"),
    "too_deep": (
        "回复的 JSON 嵌套超过 {limit} 层，无法使用",
        "the reply's JSON nests more than {limit} levels deep; write it flat",
    ),
}
_ERROR_SEPARATOR = {"zh": "；", "en": "; "}


@dataclass
class ParseResult:
    """What parsed (``None`` if nothing usable), the errors left, and what was repaired."""

    value: dict[str, Any] | None
    errors: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    truncated: bool = False
    dropped: list[Dropped] = field(default_factory=list)  # items validation left out, and why
    cuts: list[str] = field(default_factory=list)  # texts and lists cut to the schema's limits

    @property
    def ok(self) -> bool:
        """True when the reply parsed and matched the schema without errors."""
        return self.value is not None and not self.errors


def parse_reply(
    text: str | None,
    schema: Mapping[str, Any],
    *,
    lang: str = "en",
    finish_reason: str | None = None,
) -> ParseResult:
    """Recover a JSON object matching ``schema`` from a model reply."""
    result = ParseResult(None)
    body = _strip_thinking(text or "", result, lang)
    if body is None:
        return result
    raw = _decode(_unfence(body, result), result, lang)
    if raw is None:
        return result
    if finish_reason == "length" and not result.truncated:
        result.repairs.append("the reply hit the token limit")
    checked = check(raw, schema, lang)
    result.value = checked.value
    result.errors += checked.errors
    result.repairs += checked.fixes
    result.dropped += checked.dropped
    result.cuts += checked.cuts
    return result


def parse_plan(text: str | None, lang: str = "en", finish_reason: str | None = None) -> ParseResult:
    """The planner's reply (PLAN_SCHEMA)."""
    return parse_reply(text, PLAN_SCHEMA, lang=lang, finish_reason=finish_reason)


def parse_scene_plan(
    text: str | None, lang: str = "en", finish_reason: str | None = None
) -> ParseResult:
    """The planner's reply in a group scene (SCENE_PLAN_SCHEMA: a plan with speakers)."""
    return parse_reply(text, SCENE_PLAN_SCHEMA, lang=lang, finish_reason=finish_reason)


def parse_scene_analysis(
    text: str | None, lang: str = "en", finish_reason: str | None = None
) -> ParseResult:
    """The analysis of a group turn (SCENE_ANALYSIS_SCHEMA: events may name a member)."""
    return parse_reply(text, SCENE_ANALYSIS_SCHEMA, lang=lang, finish_reason=finish_reason)


SCENE_PARSERS = {"scene_plan": parse_scene_plan, "scene_analysis": parse_scene_analysis}


def parse_analysis(
    text: str | None, lang: str = "en", finish_reason: str | None = None
) -> ParseResult:
    """The merged analysis reply (ANALYSIS_SCHEMA)."""
    return parse_reply(text, ANALYSIS_SCHEMA, lang=lang, finish_reason=finish_reason)


def parse_compaction(
    text: str | None, lang: str = "en", finish_reason: str | None = None
) -> ParseResult:
    """The compaction agent's chapter or arc summary (COMPACTION_SCHEMA)."""
    return parse_reply(text, COMPACTION_SCHEMA, lang=lang, finish_reason=finish_reason)


def parse_catch_up(
    text: str | None, lang: str = "en", finish_reason: str | None = None
) -> ParseResult:
    """The catch_up agent's reply on a batch of imported turns (CATCH_UP_SCHEMA)."""
    return parse_reply(text, CATCH_UP_SCHEMA, lang=lang, finish_reason=finish_reason)


def parse_mvu_patches(
    text: str | None, lang: str = "en", finish_reason: str | None = None
) -> ParseResult:
    """mvu_extract's reply (MVU_PATCH_SCHEMA); a bare list of patches is accepted too."""
    stripped = (text or "").strip()
    if stripped.startswith("[") or stripped.lower().startswith("<jsonpatch>"):
        inner = re.sub(r"</?jsonpatch>", "", stripped, flags=re.IGNORECASE)
        text = '{"patches": ' + inner + "}"
    return parse_reply(text, MVU_PATCH_SCHEMA, lang=lang, finish_reason=finish_reason)


def corrective_message(errors: list[str], lang: str = "en") -> str:
    """The user message of the one corrective retry, quoting what was wrong."""
    sep = _ERROR_SEPARATOR["zh" if lang == "zh" else "en"]
    return fill(lang, "corrective", errors=sep.join(errors) or _say("no_json", lang))


def _say(key: str, lang: str, **values: Any) -> str:
    zh, en = _MESSAGES[key]
    return (zh if lang == "zh" else en).format(**values)


def _strip_thinking(text: str, result: ParseResult, lang: str) -> str | None:
    """``text`` without reasoning blocks, or None (with the error) when nothing is left."""
    if not text.strip():
        result.errors.append(_say("empty", lang))
        return None
    if "<" not in text:  # every tag below starts with one: nothing to remove
        return text
    body = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(body))
    if closes:  # the opening tag was in the chat template, not in the reply
        body = body[closes[-1].end() :]
    opened = _THINK_OPEN.search(body)
    if opened:
        body = body[: opened.start()]
        result.truncated = True
    if body != text:
        result.repairs.append("removed reasoning (<think>) text")
    if not body.strip():
        result.errors.append(_say("only_thinking" if opened else "empty", lang))
        return None
    return body


def _unfence(body: str, result: ParseResult) -> str:
    for match in _FENCE.finditer(body):
        if "{" in match.group(1) or "[" in match.group(1):
            result.repairs.append("took the fenced code block")
            return match.group(1)
    return body


_TOO_DEEP = object()
# A lone surrogate can only come from a \uD800–\uDFFF escape or a surrogate already in the text.
_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")


def _may_nest(body: str) -> bool:
    """False when the text has too few brackets to nest past the limit (skips the walk)."""
    return body.count("{") + body.count("[") > MAX_JSON_DEPTH


# The strict reader, made once: a decoder keeps no state between calls, and making one for
# every reply took 13 µs, four times what reading a plan takes (#17, session nine).
_DECODER = json.JSONDecoder()


def _read(body: str, start: int, result: ParseResult) -> Any:
    """The JSON value at ``start``: strict first, else the lenient reader."""
    try:
        value, end = _DECODER.raw_decode(body, start)
    except json.JSONDecodeError:
        repaired = repair_json(body, start)
        result.repairs += repaired.notes
        result.truncated = result.truncated or repaired.truncated
        return repaired.value
    if body[end:].strip():
        result.repairs.append("ignored text after the JSON")
    return value


def _decode(body: str, result: ParseResult, lang: str) -> Any:
    start = body.find("{")
    if start < 0:
        result.errors.append(_say("no_json", lang))
        return None
    if body[:start].strip():
        result.repairs.append("ignored text before the JSON")
    try:
        value = _read(body, start, result)
    except RecursionError:
        value = _TOO_DEEP
    if value is _TOO_DEEP or (_may_nest(body) and json_depth(value) > MAX_JSON_DEPTH):
        result.errors.append(_say("too_deep", lang, limit=MAX_JSON_DEPTH))
        return None
    if _SURROGATE_HINT.search(body):
        value = clean_json(value)
    if not isinstance(value, dict):
        result.errors.append(_say("not_object", lang, got=type_name(value)))
        return None
    return value
