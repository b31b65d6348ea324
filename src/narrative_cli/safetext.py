"""Text and JSON from a model made safe to print, store and write.

A model (or a provider's JSON) can send an escaped lone surrogate, ``"\\ud800"``: Python
decodes it into a ``str`` that cannot be encoded as UTF-8, so printing it, storing it or
writing it to a trace raised ``UnicodeEncodeError`` and ended the REPL. Every reply text and
every parsed reply value passes through :func:`clean_surrogates` / :func:`clean_json`, which
turn a lone surrogate into U+FFFD (a proper pair becomes the character it encodes).

:func:`json_depth` measures nesting without recursion, so a reply or a file nested a few
thousand levels deep is refused by a check instead of ending the process with
``RecursionError`` in whatever walks it next.
"""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

MAX_JSON_DEPTH = 100  # far more than any card, chat or reply needs; far below the stack

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (pairs joined)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def clean_json(value: Any) -> Any:
    """A copy of a parsed JSON value whose strings (keys included) carry no lone surrogate.

    Iterative, so it is safe on any depth; values without a surrogate are returned as they are.
    """
    if isinstance(value, str):
        return clean_surrogates(value)
    if not isinstance(value, (dict, list)) or not _has_surrogate(value):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        node, parent, key = stack.pop()
        if isinstance(node, dict):
            copy: Any = {}
            for name, item in node.items():
                stack.append((item, copy, clean_surrogates(str(name))))
        elif isinstance(node, list):
            copy = [None] * len(node)
            for index, item in enumerate(node):
                stack.append((item, copy, index))
        else:
            copy = clean_surrogates(node) if isinstance(node, str) else node
        parent[key] = copy
    return root[0]


def loads(text: str, *, strict: bool = True) -> Any:
    """``json.loads`` that reports a nesting bomb as a ``JSONDecodeError`` (which callers
    already handle) instead of a ``RecursionError`` now or in the next walk of the value.

    For JSON text held inside other files: a card's tool or ``[initvar]`` entry, say.
    """
    try:
        value = json.loads(text, strict=strict)
    except RecursionError:
        value = None
        depth = MAX_JSON_DEPTH + 1
    else:
        depth = json_depth(value)
    if depth > MAX_JSON_DEPTH:
        raise json.JSONDecodeError(f"nests more than {MAX_JSON_DEPTH} levels deep", text, 0)
    return value


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deeply ``value`` nests (a scalar is 0); stops counting once past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def non_finite(value: Any) -> bool:
    """True when ``value`` holds NaN or ±Infinity anywhere (JSON has no such numbers)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if not isinstance(value, (dict, list)):
        return False
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return True
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


_SHARED = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data, several times faster than ``copy.deepcopy``: plain
    dicts and lists are copied, strings, numbers, booleans and None shared (they cannot
    change), anything else (a subclass, a date from YAML) deep-copied as ``copy`` does."""
    kind = type(value)
    if kind is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if kind is list:
        return [json_copy(item) for item in value]
    if kind in _SHARED:
        return value
    return copy.deepcopy(value)


def finite_copy(value: Any) -> Any:
    """``value`` with NaN and ±Infinity written as the strings ``"NaN"``, ``"Infinity"``,
    ``"-Infinity"``: how a rejected proposal is kept in a record that must stay valid JSON."""
    if not non_finite(value):
        return value
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: finite_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [finite_copy(item) for item in value]
    return value


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return True
        elif isinstance(node, dict):
            stack.extend(str(k) for k in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False
