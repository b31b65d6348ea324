"""MagVarUpdate's variable paths: lodash's path rules over JSON trees, and MVU's ``pathFix``.

MVU addresses variables with lodash paths (``角色.络络.好感度``, ``列表[0]``, ``a["b c"].d``) and
reads and writes them with ``_.get`` / ``_.has`` / ``_.set`` / ``_.unset`` / ``_.merge``. These
functions give the same answers on Python trees (``dict`` for a JS object, ``list`` for an
array), so a card's update commands land where SillyTavern would put them:

- ``to_path`` is lodash's ``stringToPath`` (``a[0].b`` → ``['a', '0', 'b']``; quoted brackets
  keep dots and spaces; a whole string that is an existing key is that key, as lodash's
  ``isKey`` says);
- ``js_set`` creates missing steps as ``{}``, or ``[]`` when the next step is an index, and
  replaces a scalar in the way, as lodash does;
- ``fix_path`` is MVU's ``pathFix`` (brackets with spaces or quoted digits become quoted keys,
  quoted dot-segments lose their quotes) after ``trim_quotes`` (MVU's
  ``trimQuotesAndBackslashes``).
"""

from __future__ import annotations

import copy
import re
from typing import Any

__all__ = [
    "fix_path",
    "is_index",
    "js_get",
    "js_has",
    "js_merge",
    "js_set",
    "js_unset",
    "merge_replacing_arrays",
    "to_path",
    "trim_quotes",
]

_PROP = re.compile(
    r"""[^.\[\]]+|\[(?:(-?\d+(?:\.\d+)?)|(["'])((?:(?!\2)[^\\]|\\.)*?)\2)\]|(?=(?:\.|\[\])(?:\.|\[\]|$))"""
)
_ESCAPE = re.compile(r"\\(\\)?")
_PLAIN = re.compile(r"^\w*$", re.ASCII)
_DEEP = re.compile(r"""\.|\[(?:[^\[\]]*|(["'])(?:(?!\1)[^\\]|\\.)*?\1)\]""")
_INDEX = re.compile(r"^(?:0|[1-9]\d*)$")
_TRIM = re.compile(r"^[\\\"'` ]*(.*?)[\\\"'` ]*$")
_MISSING = object()


def trim_quotes(text: str) -> str:
    """MVU's trimQuotesAndBackslashes: quotes, backticks, backslashes and spaces off both ends."""
    if "\n" in text or "\r" in text:
        return text  # JS ``.`` stops at a line break, so the regex does not match
    match = _TRIM.fullmatch(text)
    return match.group(1) if match else text


def to_path(path: str, root: Any = None) -> list[str]:
    """lodash ``castPath``: the keys of ``path`` (a key of ``root`` stays whole)."""
    if _PLAIN.match(path) or not _DEEP.search(path):
        return [path]
    if isinstance(root, dict) and path in root:
        return [path]
    return string_to_path(path)


def string_to_path(path: str) -> list[str]:
    """lodash ``stringToPath`` (``_.toPath``)."""
    result: list[str] = [""] if path.startswith(".") else []
    for match in _PROP.finditer(path):
        number, quote, inner = match.group(1), match.group(2), match.group(3)
        if quote:
            result.append(_ESCAPE.sub(lambda m: m.group(1) or "", inner))
        else:
            result.append(number if number is not None else match.group(0))
    return result


def is_index(key: str, length: int | None = None) -> bool:
    """lodash ``isIndex`` for a string key."""
    if not _INDEX.match(key):
        return False
    return length is None or int(key) < length


def _step(node: Any, key: str) -> Any:
    """``node[key]`` as JavaScript reads it; ``_MISSING`` when there is nothing."""
    if isinstance(node, dict):
        return node.get(key, _MISSING)
    if isinstance(node, (list, str)):
        if key == "length":
            return len(node)
        if is_index(key, len(node)):
            return node[int(key)]
    return _MISSING


def js_get(tree: Any, path: str | list[str], default: Any = None) -> Any:
    """``_.get(tree, path, default)``."""
    keys = to_path(path, tree) if isinstance(path, str) else path
    node = tree
    for key in keys:
        node = _step(node, key)
        if node is _MISSING:
            return default
    return node


def js_has(tree: Any, path: str | list[str]) -> bool:
    """``_.has(tree, path)``: every step is an own property."""
    keys = to_path(path, tree) if isinstance(path, str) else path
    if not keys:
        return False
    node = tree
    for key in keys:
        if isinstance(node, dict):
            if key not in node:
                return False
        elif isinstance(node, (list, str)):
            if not (key == "length" or is_index(key, len(node))):
                return False
        else:
            return False
        node = _step(node, key)
    return True


def js_set(tree: Any, path: str | list[str], value: Any) -> None:
    """``_.set(tree, path, value)`` in place (lodash ``baseSet``)."""
    keys = to_path(path, tree) if isinstance(path, str) else path
    if not isinstance(tree, (dict, list)) or not keys:
        return
    node: Any = tree
    for position, key in enumerate(keys):
        if position == len(keys) - 1:
            _assign(node, key, value)
            return
        current = _step(node, key)
        if not isinstance(current, (dict, list)):
            current = [] if is_index(keys[position + 1]) else {}
            if not _assign(node, key, current):
                return
        node = current


def _assign(node: Any, key: str, value: Any) -> bool:
    if isinstance(node, dict):
        node[key] = value
        return True
    if isinstance(node, list) and is_index(key):
        index = int(key)
        node.extend([None] * (index + 1 - len(node)))  # a JS hole is saved as null
        node[index] = value
        return True
    return False  # a named property on an array is lost when SillyTavern saves


def js_unset(tree: Any, path: str | list[str]) -> bool:
    """``_.unset(tree, path)``: a dict loses the key; an array keeps a hole (null)."""
    keys = to_path(path, tree) if isinstance(path, str) else path
    if not keys:
        return True
    parent = js_get(tree, keys[:-1], _MISSING) if len(keys) > 1 else tree
    key = keys[-1]
    if isinstance(parent, dict):
        parent.pop(key, None)
    elif isinstance(parent, list) and is_index(key, len(parent)):
        parent[int(key)] = None
    return True


def js_merge(target: Any, source: Any) -> Any:
    """``_.merge(target, source)`` in place: objects and arrays merged key by key."""
    return _merge(target, source, replace_arrays=False)


def merge_replacing_arrays(target: Any, source: Any) -> Any:
    """MVU's ``correctlyMerge``: ``_.merge`` where an array in ``source`` replaces the target's."""
    return _merge(target, source, replace_arrays=True)


def _merge(target: Any, source: Any, *, replace_arrays: bool) -> Any:
    if isinstance(target, dict) and isinstance(source, dict):
        items: list[tuple[Any, Any]] = list(source.items())
    elif isinstance(target, list) and isinstance(source, (list, dict)):
        items = list(enumerate(source)) if isinstance(source, list) else list(source.items())
    else:
        return target
    for key, value in items:
        _merge_key(target, key, value, replace_arrays)
    return target


def _merge_key(target: Any, key: Any, value: Any, replace_arrays: bool) -> None:
    current = _container_get(target, key)
    if isinstance(value, list) and replace_arrays:
        merged: Any = copy.deepcopy(value)
    elif isinstance(value, list):
        base: Any = current if isinstance(current, list) else []
        merged = _merge(base, value, replace_arrays=False)
    elif isinstance(value, dict):
        base = current if isinstance(current, dict) else {}
        merged = _merge(base, value, replace_arrays=replace_arrays)
    else:
        merged = value
    _container_set(target, key, merged)


def _container_get(target: Any, key: Any) -> Any:
    if isinstance(target, dict):
        return target.get(str(key))
    if isinstance(key, int) and 0 <= key < len(target):
        return target[key]
    return None


def _container_set(target: Any, key: Any, value: Any) -> None:
    if isinstance(target, dict):
        target[str(key)] = value
    elif isinstance(key, int):
        target.extend([None] * (key + 1 - len(target)))
        target[key] = value
    elif isinstance(key, str) and is_index(key):
        _container_set(target, int(key), value)


def fix_path(path: str) -> str:
    """MVU's ``pathFix``: bracket and quoted-segment forms normalised for lodash."""
    if not path:
        return path
    fixed = re.sub(r"\[([^\]]*)\]", _fix_bracket, path)
    return re.sub(r"""(^|\.)(["'])([^"']*)\2(?=\.|\[|$)""", _fix_segment, fixed)


def _fix_bracket(match: re.Match[str]) -> str:
    inner = match.group(1).strip()
    if not inner:
        return "[]"
    quoted = len(inner) >= 2 and inner[0] in "\"'" and inner[0] == inner[-1]
    if quoted:
        inner = inner[1:-1]
    if re.fullmatch(r"\d+", inner):
        return f"[{inner}]" if not quoted else '["' + inner.replace('"', '\\"') + '"]'
    if re.search(r"\s", inner):
        return '["' + inner.replace('"', '\\"') + '"]'
    return f"[{inner}]"


def _fix_segment(match: re.Match[str]) -> str:
    prefix, name = match.group(1), match.group(3)
    if not re.search(r"\s", name) and not re.search(r"[.\[\]]", name):
        return prefix + name
    escaped = name.replace('"', '\\"')
    return f'["{escaped}"]' if prefix == "." else f'{prefix}["{escaped}"]'
