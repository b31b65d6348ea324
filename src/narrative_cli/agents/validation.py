"""A small JSON-schema checker for the subset our reply schemas use.

Supported: ``type`` (object, array, string, integer, number, boolean), ``properties``,
``required``, ``items``, ``enum``, ``minimum``, ``maxLength``, ``maxItems`` and ``default``.
Obvious slips are fixed and noted (``"3"`` for an integer, a number where text belongs, one
string where a list of strings belongs, an enum value in the wrong case). Everything else is an
error that names the field; the field falls back to its default, and an invalid list item is
dropped, so a reply that is partly wrong still gives what it got right.

Nothing is dropped silently: every list item or field that is dropped is kept in
``Checked.dropped`` with its reasons, so the pipeline can show it as a rejected event or MVU
update. NaN and ±Infinity (``1e999`` too) are never accepted: JSON cannot store them, and a
turn holding one could not be saved. Text longer than ``maxLength`` and lists longer than
``maxItems`` are cut, and the cut is listed in ``Checked.cuts`` for a visible warning: a 1 MB
summary entry must not be kept and resent with every later request.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.safetext import json_copy, non_finite

_INVALID = object()
_TYPE_NAMES = {
    "object": ("对象", "an object"),
    "array": ("数组", "an array"),
    "string": ("字符串", "a string"),
    "integer": ("整数", "an integer"),
    "number": ("数字", "a number"),
    "boolean": ("布尔值", "true or false"),
    "null": ("null", "null"),
}
_MESSAGES = {
    "missing": ("缺少字段 {path}", "missing field {path}"),
    "type": ("{path} 应为{want}，收到 {got}", "{path} should be {want}, got {got}"),
    "enum": (
        "{path} 必须是 {options} 之一，收到 {got}",
        "{path} must be one of {options}, got {got}",
    ),
    "minimum": (
        "{path} 不能小于 {minimum}，收到 {got}",
        "{path} must be at least {minimum}, got {got}",
    ),
    "non_finite": (
        "{path} 含有 NaN 或 Infinity，不是可保存的数字",
        "{path} holds NaN or Infinity, which is not a number JSON can store",
    ),
    "cut_text": (
        "{path} 有 {size} 个字符，已截断为 {limit} 个",
        "{path} was {size} characters long; cut to {limit}",
    ),
    "cut_list": (
        "{path} 有 {size} 项，只保留前 {limit} 项",
        "{path} had {size} items; kept the first {limit}",
    ),
}
CUT_MARK = "…"
_INTEGER = re.compile(r"\s*[-+]?\d+\s*")
_FLOAT = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")


@dataclass(frozen=True)
class Dropped:
    """A list item or field left out of the cleaned value, with why (never silent)."""

    path: str
    value: Any
    reasons: tuple[str, ...]

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


@dataclass
class Checked:
    """The cleaned value, the errors that remain, the slips that were fixed, what was dropped
    and what was cut to the schema's length limits."""

    value: Any
    errors: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    cuts: list[str] = field(default_factory=list)


def check(value: Any, schema: Mapping[str, Any], lang: str = "en") -> Checked:
    """``value`` checked against ``schema``; errors are worded in ``lang`` (zh or en)."""
    result = Checked(None)
    checker = _Checker(lang, result)
    checker.nan = non_finite(value)  # one walk; the per-field checks run only when it found one
    cleaned = checker.node(value, schema, "")
    result.value = None if cleaned is _INVALID else cleaned
    return result


def type_name(value: Any) -> str:
    """The JSON type of a Python value, as a schema would name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _shown(value: Any) -> str:
    """A value as quoted in an error: compact JSON, at most 40 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Checker:
    def __init__(self, lang: str, result: Checked) -> None:
        self.zh = lang == "zh"
        self.result = result
        self.nan = True

    def error(self, key: str, **values: Any) -> None:
        zh, en = _MESSAGES[key]
        self.result.errors.append((zh if self.zh else en).format(**values))

    def fix(self, path: str, what: str) -> None:
        self.result.fixes.append(f"{path or 'reply'}: {what}")

    def cut(self, key: str, **values: Any) -> None:
        zh, en = _MESSAGES[key]
        self.result.cuts.append((zh if self.zh else en).format(**values))

    def dropped(self, path: str, value: Any, since: int) -> None:
        """Record that ``value`` at ``path`` was left out, with the errors raised since."""
        reasons = tuple(self.result.errors[since:]) or (path,)
        self.result.dropped.append(Dropped(path, value, reasons))

    def wrong_type(self, path: str, want: str, value: Any) -> object:
        names = _TYPE_NAMES.get(want, (want, want))
        want = names[0 if self.zh else 1]
        self.error("type", path=path or "JSON", want=want, got=_shown(value))
        return _INVALID

    def node(self, value: Any, schema: Mapping[str, Any], path: str) -> Any:
        kind = schema.get("type")
        if self.nan and kind not in ("object", "array") and non_finite(value):
            self.error("non_finite", path=path or "JSON")
            return _INVALID
        if kind == "object":
            checked = self.object(value, schema, path)
        elif kind == "array":
            checked = self.array(value, schema, path)
        elif kind in ("string", "integer", "number", "boolean"):
            checked = self.scalar(value, kind, path)
            if kind == "string" and isinstance(checked, str):
                checked = self.limit(checked, schema.get("maxLength"), path)
        else:
            checked = value
        if checked is _INVALID:
            return checked
        minimum = schema.get("minimum")
        if minimum is not None and isinstance(checked, (int, float)) and checked < minimum:
            self.error("minimum", path=path, minimum=minimum, got=checked)
            return _INVALID
        return self.enum(checked, schema["enum"], path) if "enum" in schema else checked

    def object(self, value: Any, schema: Mapping[str, Any], path: str) -> Any:
        if not isinstance(value, dict):
            return self.wrong_type(path, "object", value)
        cleaned = dict(value)
        properties = schema.get("properties", {})
        odd = [k for k in value if k not in properties and non_finite(value[k])] if self.nan else []
        for key in odd:
            where = f"{path}.{key}" if path else str(key)
            since = len(self.result.errors)
            self.error("non_finite", path=where)
            if path:  # an item holding NaN is rejected whole, not kept without the number
                return _INVALID
            self.dropped(where, value[key], since)
            cleaned.pop(key)
        required = set(schema.get("required", ()))
        complete = True
        for key, sub in properties.items():
            where = f"{path}.{key}" if path else key
            present = key in value and value[key] is not None
            since = len(self.result.errors)
            result = self.node(value[key], sub, where) if present else _INVALID
            if result is not _INVALID:
                cleaned[key] = result
                continue
            if present and not path:
                self.dropped(where, value[key], since)
            if key in required:
                complete = False
                if not present:
                    self.error("missing", path=where)
            if "default" in sub:
                cleaned[key] = json_copy(sub["default"])  # a schema's JSON constant
            else:
                cleaned.pop(key, None)
        # A nested object without its required fields is dropped; the reply itself is kept.
        return cleaned if complete or not path else _INVALID

    def array(self, value: Any, schema: Mapping[str, Any], path: str) -> Any:
        items = schema.get("items", {})
        if isinstance(value, str) and items.get("type") == "string":
            self.fix(path, "a single string became a list")
            value = [value]
        if not isinstance(value, list):
            return self.wrong_type(path, "array", value)
        limit = schema.get("maxItems")
        if isinstance(limit, int) and len(value) > limit:
            self.cut("cut_list", path=path, size=len(value), limit=limit)
            value = value[:limit]
        kept = []
        for index, item in enumerate(value):
            where = f"{path}[{index}]"
            since = len(self.result.errors)
            if self.nan and non_finite(item):
                self.error("non_finite", path=where)
                result = _INVALID
            else:
                result = self.node(item, items, where)
            if result is _INVALID:
                self.dropped(where, item, since)
            else:
                kept.append(result)
        return kept

    def scalar(self, value: Any, kind: str, path: str) -> Any:
        if kind == "string":
            if isinstance(value, str):
                return value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.fix(path, f"{value!r} became text")
                return str(value)
            return self.wrong_type(path, kind, value)
        if kind == "boolean":
            return self.boolean(value, path)
        return self.number(value, kind, path)

    def limit(self, text: str, limit: Any, path: str) -> str:
        """``text`` cut to ``maxLength`` (ending in …), the cut noted for a warning."""
        if not isinstance(limit, int) or len(text) <= limit:
            return text
        self.cut("cut_text", path=path, size=len(text), limit=limit)
        return text[: max(0, limit - len(CUT_MARK))] + CUT_MARK

    def boolean(self, value: Any, path: str) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            self.fix(path, f"{value!r} became a boolean")
            return value.strip().lower() == "true"
        return self.wrong_type(path, "boolean", value)

    def number(self, value: Any, kind: str, path: str) -> Any:
        number: Any = value
        if isinstance(value, str) and (_INTEGER.fullmatch(value) or _FLOAT.fullmatch(value)):
            number = int(value) if _INTEGER.fullmatch(value) else float(value)
            self.fix(path, f"{value!r} became a number")
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            return self.wrong_type(path, kind, value)
        if isinstance(number, float) and not math.isfinite(number):
            self.error("non_finite", path=path or "JSON")
            return _INVALID
        if kind == "integer" and isinstance(number, float):
            if not number.is_integer():
                return self.wrong_type(path, kind, value)
            number = int(number)
        return number

    def enum(self, value: Any, options: list[Any], path: str) -> Any:
        if value in options:
            return value
        if isinstance(value, str):
            for option in options:
                if isinstance(option, str) and option.lower() == value.strip().lower():
                    self.fix(path, f"{value!r} became {option!r}")
                    return option
        shown = ", ".join(str(o) for o in options)
        self.error("enum", path=path, options=shown, got=repr(value))
        return _INVALID
