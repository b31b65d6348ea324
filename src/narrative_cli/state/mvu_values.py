"""How MagVarUpdate turns text into values: command values, ``[InitVar]`` content, display text.

- ``parse_command_value`` is MVU's ``parseCommandValue``: ``true``/``false``/``null``/
  ``undefined``, then JSON, then a JavaScript object or array literal, then a mathjs number
  (rounded to 12 significant digits), then YAML, and last the text with its quotes trimmed.
- ``parse_text`` is MVU's ``parseString`` (``[InitVar]`` entries, ``<initvar>`` blocks,
  ``<JSONPatch>`` arrays): YAML first unless the text starts with ``{`` or ``[``, then JSON5.
- ``js_stringify`` is ``JSON.stringify`` (numbers as JavaScript prints them), used for the
  ``old->new (reason)`` text of ``display_data`` / ``delta_data``.
- ``js_to_number``, ``js_string``, ``js_equal``, ``js_date``: JavaScript's ``Number()``,
  ``String()``, lodash's ``isEqual`` and ``new Date()`` (ISO dates) on JSON values.
- ``substitute_macros`` replaces ``{{user}}``, ``{{char}}``, ``<user>``, ``<bot>``, ``<char>``
  (any case), which MVU applies to ``[InitVar]`` content and to every message it reads.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from narrative_cli.state.json_yaml import YamlError, load_json_like
from narrative_cli.state.mvu_jsvalue import (
    UNDEFINED,
    JsSyntaxError,
    MathError,
    evaluate_math,
    parse_js_literal,
)
from narrative_cli.state.mvu_paths import trim_quotes

__all__ = [
    "UNDEFINED",
    "TextParseError",
    "has_nonfinite",
    "iso_string",
    "js_date",
    "js_equal",
    "js_number",
    "js_string",
    "js_stringify",
    "js_to_number",
    "parse_command_value",
    "parse_text",
    "substitute_macros",
]


class TextParseError(ValueError):
    """The text is neither YAML nor JSON5 (MVU: 不是有效的 YAML/JSON/JSON5 格式); ``detail``:
    the parser's own words."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constants)


def parse_command_value(text: str) -> Any:
    """A command argument's value, as MVU's ``parseCommandValue`` reads it."""
    trimmed = text.strip()
    words = {"true": True, "false": False, "null": None, "undefined": UNDEFINED}
    if trimmed in words:
        return words[trimmed]
    try:
        return _json(trimmed)
    except ValueError:
        pass
    if (trimmed.startswith("{") and trimmed.endswith("}")) or (
        trimmed.startswith("[") and trimmed.endswith("]")
    ):
        try:
            literal = parse_js_literal(trimmed)
        except (JsSyntaxError, ValueError, IndexError):
            literal = None
        if isinstance(literal, (dict, list)):
            return literal
    if not trimmed:
        return ""
    try:
        number = evaluate_math(trimmed)
    except MathError:
        pass
    else:
        return _precise(number)
    try:
        return _yaml(trimmed)
    except YamlError:
        return trim_quotes(text)


def _precise(number: float) -> float | int:
    """``parseFloat(x.toPrecision(12))``, kept as an int when whole."""
    if not math.isfinite(number):
        return number
    rounded = float(f"{number:.12g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded


def parse_text(text: str) -> Any:
    """MVU's ``parseString``: YAML unless the text starts with ``{``/``[``, else JSON5 first."""
    json_first = text.lstrip()[:1] in ("{", "[")
    if not json_first:
        try:
            return _yaml(text)
        except YamlError:
            pass
    try:
        return _json(text)
    except ValueError:
        pass
    try:
        return parse_js_literal(text.strip())
    except (JsSyntaxError, ValueError, IndexError) as json5_error:
        problem = str(json5_error)
    if json_first:
        try:
            return _yaml(text)
        except YamlError:
            pass
    raise TextParseError(f"not valid YAML, JSON or JSON5 ({problem})", str(problem))


def _yaml(text: str) -> Any:
    """YAML with JSON's scalars; a tag that makes a non-JSON value (``!!set``, ``!!binary``)
    counts as a YAML error, as the value could not be stored."""
    loaded = _string_keys(load_json_like(text))
    if not _json_like(loaded):
        raise YamlError("not a JSON value")
    return loaded


def _json_like(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_json_like(item) for item in value.values())
    if isinstance(value, list):
        return all(_json_like(item) for item in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _string_keys(value: Any) -> Any:
    """YAML may give number or boolean keys; JavaScript objects only have string keys."""
    if isinstance(value, dict):
        return {_key(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(item) for item in value]
    return value


def _key(key: Any) -> str:
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, (int, float)):
        return js_number(key)
    return str(key)


def has_nonfinite(value: Any) -> bool:
    """Whether ``value`` holds NaN or ±Infinity anywhere (JSON cannot hold them)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(has_nonfinite(item) for item in value.values())
    if isinstance(value, list):
        return any(has_nonfinite(item) for item in value)
    return False


def js_number(value: float | int) -> str:
    """A number as JavaScript prints it (``5`` not ``5.0``, ``1e-7`` not ``1e-07``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return "null"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    return re.sub(r"e([-+])0*(\d)", r"e\1\2", text)


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` (compact; ``undefined`` gives ``undefined``)."""
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(js_stringify(None if v is UNDEFINED else v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}:{js_stringify(v)}"
                 for k, v in value.items() if v is not UNDEFINED)  # fmt: skip
        return "{" + ",".join(items) + "}"
    return json.dumps(str(value), ensure_ascii=False)


_MACROS = re.compile(r"\{\{(user|char)\}\}|<(user|bot|char)>", re.IGNORECASE)


def substitute_macros(text: str, user: str, char: str) -> str:
    """The names MVU's ``substitudeMacros`` fills in: ``{{user}}``/``<user>`` and the character."""

    def name(match: re.Match[str]) -> str:
        which = (match.group(1) or match.group(2)).lower()
        return user if which == "user" else char

    return _MACROS.sub(name, text)


_JS_NUMBER = re.compile(
    r"[-+]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+"
)


def js_to_number(value: Any) -> float | int:
    """JavaScript's ``Number(value)`` (NaN for text that is not a number)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if value is None:
        return 0
    if isinstance(value, list):
        if not value:
            return 0
        return (
            js_to_number(value[0])
            if len(value) == 1 and not isinstance(value[0], dict)
            else math.nan
        )
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0
        if not _JS_NUMBER.fullmatch(text):
            return math.nan
        if text[:2].lower() in ("0x", "0b", "0o"):
            return int(text, 0)
        number = float(text.replace("Infinity", "inf"))
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    return math.nan


def js_equal(left: Any, right: Any) -> bool:
    """lodash ``_.isEqual`` on JSON values (``true`` is not ``1``)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(js_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        same = len(left) == len(right)
        return same and all(js_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, (dict, list)) or isinstance(right, (dict, list)):
        return False
    return bool(left == right)


def js_string(value: Any) -> str:
    """JavaScript's ``String(value)``."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, bool) or _plain_number(value):
        return js_number(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    return "[object Object]"


_DATE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?)?"
    r"(Z|[+-]\d{2}:?\d{2})?"
)


def js_date(text: str) -> datetime | None:
    """An ISO date as ``new Date(text)`` reads it (times without a zone taken as UTC here)."""
    match = _DATE.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, millis, zone = match.groups()
    try:
        day_start = datetime(int(year), int(month), int(day), tzinfo=timezone.utc)
        micro = int((millis or "0").ljust(3, "0")) * 1000
        moment = day_start.replace(
            hour=int(hour or 0), minute=int(minute or 0), second=int(second or 0), microsecond=micro
        )
    except ValueError:
        return None
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        moment -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return moment


def iso_string(moment: datetime) -> str:
    """``Date.prototype.toISOString``."""
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _plain_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
