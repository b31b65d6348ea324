"""Typed reads of JSON objects with one-line messages that name the field and what is wrong.

SillyTavern tests most values with JavaScript truthiness, so flags accept booleans, numbers
and ``"true"``/``"false"``; ``null`` means "use the default". Anything else of the wrong type
(an object where text belongs, a word where a number belongs) is bad input.
"""

from __future__ import annotations

import json
from typing import Any

from narrative_cli.errors import BadInput, Phrase, worded


def json_type(value: object) -> str:
    """The JSON name of a value's type: object, list, string, number, boolean or null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def a_json_type(value: object) -> Phrase | str:
    """``an object``, ``a list`` … in the reader's language (the JSON type otherwise)."""
    kind = json_type(value)
    return Phrase(f"json.a.{kind}") if kind in ("object", "list", "string", "number",
                                                 "boolean", "null") else kind


def with_article(noun: str) -> str:
    """``an object``, ``a list``."""
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def js_truthy(value: object) -> bool:
    """JavaScript's ``if (value)``: ``""``, ``0``, NaN and null are false, ``"false"`` is true."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, (int, float)):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def js_equals_true(value: object) -> bool:
    """JavaScript's ``value == true`` (SillyTavern's test of ``disable``): ``1``, ``"1"``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value == 1
    if isinstance(value, str):
        try:
            return float(value.strip() or "0") == 1
        except ValueError:
            return False
    return False


class Fields:
    """Reads the fields of one JSON object; errors say ``<where>: '<key>' must be …``."""

    def __init__(self, obj: dict[str, Any], where: str, error: type[BadInput]) -> None:
        self.obj = obj
        self.where = where
        self.error = error

    def fail(self, key: str, expected: str) -> BadInput:
        """``'<key>' must be …``: ``expected`` is the catalog key of what it must be."""
        value = self.obj.get(key)
        return worded(self.error, "field.must_be", where=self.where, field=repr(key),
                      expected=Phrase(expected), got=json_type(value))

    def text(self, key: str, default: str = "") -> str:
        value = self.obj.get(key)
        if type(value) is str:  # the common case first: loaders read thousands of entries
            return value
        if value is None:
            return default
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise self.fail(key, "field.text")

    def opt_flag(self, key: str) -> bool | None:
        value = self.obj.get(key)
        if type(value) is bool:
            return value
        if value is None:
            return None
        if isinstance(value, (bool, int, float)):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise self.fail(key, "field.bool")

    def js_flag(self, key: str) -> bool | None:
        """A flag SillyTavern tests by JavaScript truthiness (None: absent or null)."""
        value = self.obj.get(key)
        return None if value is None else js_truthy(value)

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.opt_flag(key)
        return default if value is None else value

    def opt_number(self, key: str) -> float | None:
        value = self.obj.get(key)
        if type(value) is int or type(value) is float:
            return value
        if value is None:
            return None
        if isinstance(value, bool):
            raise self.fail(key, "field.number")
        if isinstance(value, (int, float)):
            return value
        if isinstance(value, str):
            try:
                return float(value) if value.strip() else None
            except ValueError:
                pass
        raise self.fail(key, "field.number")

    def opt_int(self, key: str) -> int | None:
        value = self.obj.get(key)
        if type(value) is int:
            return value
        number = self.opt_number(key)
        if number is None:
            return None
        if number != number or number in (float("inf"), float("-inf")):
            raise self.fail(key, "field.whole")
        return int(number)

    def integer(self, key: str, default: int = 0) -> int:
        value = self.opt_int(key)
        return default if value is None else value

    def number(self, key: str, default: float = 0) -> float:
        value = self.opt_number(key)
        return default if value is None else value

    def strings(self, key: str) -> list[str]:
        value = self.obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, "field.strings")
        out: list[str] = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, (int, float)) and not isinstance(item, bool):
                out.append(str(item))
            else:
                raise worded(self.error, "field.list_holds", where=self.where, field=repr(key),
                             item=a_json_type(item))
        return out

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, "field.object")
        return value

    def objects(self, key: str) -> list[dict[str, Any]]:
        value = self.obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(key, "field.objects")
        return value


def int_like(key: str) -> bool:
    """True for canonical non-negative integer strings ("0", "12"), as JavaScript orders them."""
    digits = key.isascii() and key.isdigit()  # "¹" and "٣" are digits to Python, not to JavaScript
    return digits and (key == "0" or not key.startswith("0")) and int(key) < 2**32 - 1


def js_key_order(keys: list[str]) -> list[str]:
    """Object keys in JavaScript order: integer-like keys ascending, then the rest as given."""
    numeric = sorted((k for k in keys if int_like(k)), key=int)
    return numeric + [k for k in keys if not int_like(k)]


def entry_label(key: str) -> str:
    """An entry's key as a message shows it: quoted when it is not plain one-line text (a key
    with a newline would break the one-line error; found by the fuzz suite, issue #13)."""
    plain = key.isprintable() and key.strip() == key and key != ""
    return key if plain else json.dumps(key, ensure_ascii=False)
