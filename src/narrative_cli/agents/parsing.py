"""Getting the planner's, the analyst's and mvu_extract's JSON out of what a model wrote.

Steps (llm-protocols §6): drop ``<think>`` blocks (an unclosed one too), take a fenced block,
decode from the first brace with ``raw_decode`` (which ignores trailing prose), else read it
leniently (``agents.repair``), then check it against the schema (``agents.validation``).
The result keeps every error: the pipeline makes one corrective retry quoting them
(:func:`corrective_message`), and after that shows a warning and goes on with what parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.agents.repair import repair_json
from narrative_cli.agents.schemas import ANALYSIS_SCHEMA, MVU_PATCH_SCHEMA, PLAN_SCHEMA
from narrative_cli.agents.templates import fill
from narrative_cli.agents.validation import check, type_name

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
}
_ERROR_SEPARATOR = {"zh": "；", "en": "; "}


@dataclass
class ParseResult:
    """What parsed (``None`` if nothing usable), the errors left, and what was repaired."""

    value: dict[str, Any] | None
    errors: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    truncated: bool = False

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
    return result


def parse_plan(text: str | None, lang: str = "en", finish_reason: str | None = None) -> ParseResult:
    """The planner's reply (PLAN_SCHEMA)."""
    return parse_reply(text, PLAN_SCHEMA, lang=lang, finish_reason=finish_reason)


def parse_analysis(
    text: str | None, lang: str = "en", finish_reason: str | None = None
) -> ParseResult:
    """The merged analysis reply (ANALYSIS_SCHEMA)."""
    return parse_reply(text, ANALYSIS_SCHEMA, lang=lang, finish_reason=finish_reason)


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


def _decode(body: str, result: ParseResult, lang: str) -> Any:
    start = body.find("{")
    if start < 0:
        result.errors.append(_say("no_json", lang))
        return None
    if body[:start].strip():
        result.repairs.append("ignored text before the JSON")
    try:
        value, end = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError:
        repaired = repair_json(body, start)
        value = repaired.value
        result.repairs += repaired.notes
        result.truncated = result.truncated or repaired.truncated
    else:
        if body[end:].strip():
            result.repairs.append("ignored text after the JSON")
    if not isinstance(value, dict):
        result.errors.append(_say("not_object", lang, got=type_name(value)))
        return None
    return value
