"""MVU variables as text: the ``<state_summary>`` lines and what changed between two trees.

Apart from ``state.mvu`` (the patch engine, and the game state it reads) so that showing the
variables (``inspect``, ``/state``) loads only this. ``state.mvu`` re-exports the names; its
docstring says how ``[value, "description"]`` pairs are read.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

__all__ = ["has_descriptions", "is_pair", "mvu_diff", "mvu_summary", "pointer"]

SUMMARY_DEPTH = 4
NO_DATA = {"zh": "（无 MVU 数据）", "en": "(no MVU data)"}
EMPTY_TREE = {"zh": "（空状态）", "en": "(empty state)"}


def has_descriptions(tree: Any) -> bool:
    """Whether ``tree`` uses MagVarUpdate ``[value, "description"]`` pairs (see the module doc)."""
    if isinstance(tree, dict):
        return any(has_descriptions(value) for value in tree.values())
    if not isinstance(tree, list):
        return False
    if is_pair(tree) and (not isinstance(tree[0], str) or tree[0] == ""):
        return True
    return any(has_descriptions(item) for item in tree)


def mvu_summary(variables: Mapping[str, Any] | None, lang: str = "zh") -> str:
    """The variables as indented ``key: value`` lines for ``<state_summary>``.

    Keys starting with ``_`` and ``$meta`` are left out; objects deeper than four levels are
    shown inline as JSON. No variables give ``（无 MVU 数据）``, an empty tree ``（空状态）``:
    with either, the pipeline shows the StateManager summary instead.
    """
    key = "zh" if lang == "zh" else "en"
    if variables is None:
        return NO_DATA[key]
    seen = (key, repr(variables))  # every agent's prompt of a turn shows the same variables
    known = _SUMMARIES.get(seen)
    if known is not None:
        return known
    lines: list[str] = []
    _summary_lines(variables, 0, lines, has_descriptions(variables), key)
    text = "\n".join(lines) if lines else EMPTY_TREE[key]
    if len(_SUMMARIES) >= SUMMARIES_KEPT:
        _SUMMARIES.clear()
    _SUMMARIES[seen] = text
    return text


# The summaries of the last few variable trees, by their ``repr`` (which tells 1 from 1.0,
# from True and from "1", and a list from a tuple, as the summary does): a turn's prompts show
# the same variables up to six times (issue #17, session five).
_SUMMARIES: dict[tuple[str, str], str] = {}
SUMMARIES_KEPT = 16


def _summary_lines(
    node: Mapping[str, Any], depth: int, lines: list[str], described: bool, lang: str
) -> None:
    pad = "  " * depth
    for key, raw in node.items():
        if str(key).startswith("_") or key == "$meta":
            continue
        value, note = (raw[0], raw[1]) if described and is_pair(raw) else (raw, "")
        note = ("（{}）" if lang == "zh" else " ({})").format(note) if note else ""
        if isinstance(value, dict) and value and depth < SUMMARY_DEPTH - 1:
            lines.append(f"{pad}{key}:{note}")
            _summary_lines(value, depth + 1, lines, described, lang)
        else:
            lines.append(f"{pad}{key}: {_inline(value, described)}{note}")


def _inline(value: Any, described: bool) -> str:
    if isinstance(value, list):
        items = (item[0] if described and is_pair(item) else item for item in value)
        return "[" + ", ".join(_inline(item, described) for item in items) + "]"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def mvu_diff(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """What changed between two variable trees, one line per change (descriptions ignored)."""
    old, new = dict(before or {}), dict(after or {})
    lines: list[str] = []
    _diff(_values(old, has_descriptions(old)), _values(new, has_descriptions(new)), [], lines)
    return lines


def _values(node: Any, described: bool) -> Any:
    """``node`` with every pair replaced by its value."""
    if described and is_pair(node):
        node = node[0]
    if isinstance(node, dict):
        return {key: _values(value, described) for key, value in node.items()}
    if isinstance(node, list):
        return [_values(item, described) for item in node]
    return node


def _diff(old: Any, new: Any, path: list[str], lines: list[str]) -> None:
    where = pointer(path)
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(key for key in new if key not in old)]:
            if key not in new:
                lines.append(f"- {pointer([*path, key])}: {_brief(old[key])}")
            elif key not in old:
                lines.append(f"+ {pointer([*path, key])}: {_brief(new[key])}")
            else:
                _diff(old[key], new[key], [*path, key], lines)
        return
    if isinstance(old, list) and isinstance(new, list):
        gone = Counter(map(_brief, old)) - Counter(map(_brief, new))
        came = Counter(map(_brief, new)) - Counter(map(_brief, old))
        if gone or came:
            lines.extend(f"- {where}: {item}" for item in gone.elements())
            lines.extend(f"+ {where}: {item}" for item in came.elements())
            return
    lines.append(f"{where}: {_brief(old)} → {_brief(new)}")


def _brief(value: Any) -> str:
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )
    text = text if text else '""'
    return text if len(text) <= 80 else text[:79] + "…"


def is_pair(value: Any) -> bool:
    """A ``[value, "description"]`` pair (when the tree ``has_descriptions``)."""
    return isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)


def pointer(parts: list[str]) -> str:
    """``parts`` as a JSON Pointer (``~1`` for ``/``, ``~0`` for ``~``); ``/`` for the root."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts) or "/"
