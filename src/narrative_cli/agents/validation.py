"""A small JSON-schema checker for the subset our reply schemas use.

Supported: ``type`` (object, array, string, integer, number, boolean), ``properties``,
``required``, ``items``, ``enum``, ``minimum`` and ``default``. Obvious slips are fixed and
noted (``"3"`` for an integer, a number where text belongs, one string where a list of strings
belongs, an enum value in the wrong case). Everything else is an error that names the field;
the field falls back to its default, and an invalid list item is dropped, so a reply that is
partly wrong still gives what it got right.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
}
_INTEGER = re.compile(r"\s*[-+]?\d+\s*")
_FLOAT = re.compile(r"\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*")


@dataclass
class Checked:
    """The cleaned value, the errors that remain and the slips that were fixed."""

    value: Any
    errors: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)


def check(value: Any, schema: Mapping[str, Any], lang: str = "en") -> Checked:
    """``value`` checked against ``schema``; errors are worded in ``lang`` (zh or en)."""
    result = Checked(None)
    cleaned = _Checker(lang, result).node(value, schema, "")
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

    def error(self, key: str, **values: Any) -> None:
        zh, en = _MESSAGES[key]
        self.result.errors.append((zh if self.zh else en).format(**values))

    def fix(self, path: str, what: str) -> None:
        self.result.fixes.append(f"{path or 'reply'}: {what}")

    def wrong_type(self, path: str, want: str, value: Any) -> object:
        names = _TYPE_NAMES.get(want, (want, want))
        want = names[0 if self.zh else 1]
        self.error("type", path=path or "JSON", want=want, got=_shown(value))
        return _INVALID

    def node(self, value: Any, schema: Mapping[str, Any], path: str) -> Any:
        kind = schema.get("type")
        if kind == "object":
            checked = self.object(value, schema, path)
        elif kind == "array":
            checked = self.array(value, schema, path)
        elif kind in ("string", "integer", "number", "boolean"):
            checked = self.scalar(value, kind, path)
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
        required = set(schema.get("required", ()))
        complete = True
        for key, sub in schema.get("properties", {}).items():
            where = f"{path}.{key}" if path else key
            present = key in value and value[key] is not None
            result = self.node(value[key], sub, where) if present else _INVALID
            if result is not _INVALID:
                cleaned[key] = result
                continue
            if key in required:
                complete = False
                if not present:
                    self.error("missing", path=where)
            if "default" in sub:
                cleaned[key] = copy.deepcopy(sub["default"])
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
        kept = []
        for index, item in enumerate(value):
            result = self.node(item, items, f"{path}[{index}]")
            if result is not _INVALID:
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
