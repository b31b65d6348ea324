"""``[initvar]``: the initial MVU variable tree, from JSON, YAML or indented text.

``parse_initvar`` reads JSON, YAML (JSON-like scalars only: ``yes``, ``8:30`` and dates stay
text) or the original's indented ``key: value`` text (tabs and full-width ``：`` allowed,
``- item`` lines make a list). The result must be an object of top-level categories.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.errors import LorebookError
from narrative_cli.safetext import loads
from narrative_cli.state.json_yaml import YamlError, load_json_like

__all__ = ["InitvarParse", "parse_initvar", "read_initvar"]


@dataclass(frozen=True)
class InitvarParse:
    """The parsed tree, the format it was read as, and the text lines that were skipped."""

    variables: dict[str, Any]
    format: str  # json | yaml | text | empty
    skipped: list[tuple[int, str]] = field(default_factory=list)


_FENCE = re.compile(r"^\s*```[\w-]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?\d+\.\d+$")


def parse_initvar(text: str) -> dict[str, Any]:
    """The initial variable tree of an ``[initvar]`` entry (``{}`` when the entry is blank)."""
    return read_initvar(text).variables


def read_initvar(text: str) -> InitvarParse:
    """Parse ``[initvar]`` content as JSON, then YAML, then indented ``key: value`` text."""
    body = text.lstrip("\ufeff").strip()
    fenced = _FENCE.match(body)
    body = fenced.group(1).strip() if fenced else body
    if not body:
        return InitvarParse({}, "empty")
    try:
        return InitvarParse(_as_tree(loads(body), "JSON"), "json")
    except json.JSONDecodeError as problem:
        json_error = problem
    if body[0] in "{[" or not _full_width_keys(body):
        try:
            loaded = load_json_like(body)
        except (YamlError, RecursionError):
            loaded = None
        if isinstance(loaded, dict):
            return InitvarParse(_as_tree(loaded, "YAML"), "yaml")
    if body[0] in "{[":
        raise LorebookError(
            f"[initvar] is not valid JSON: {json_error.msg} "
            f"(line {json_error.lineno}, column {json_error.colno})"
        )
    variables, skipped = _parse_text(body)
    if not variables and not skipped:
        return InitvarParse({}, "empty")
    if not variables:
        line, content = skipped[0]
        raise LorebookError(f"[initvar] has no 'key: value' lines (line {line}: {content[:40]!r})")
    return InitvarParse(variables, "text", skipped)


def _full_width_keys(body: str) -> bool:
    """Whether some line's first colon is the full-width ``：`` (YAML would not see a key)."""
    for line in body.splitlines():
        wide, ascii_ = line.find("："), line.find(":")
        if wide >= 0 and (ascii_ < 0 or wide < ascii_):
            return True
    return False


def _as_tree(value: Any, kind: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LorebookError(
            f"[initvar] {kind} must be an object of categories, got {type(value).__name__}"
        )
    return {str(key): _json_value(item, str(key)) for key, item in value.items()}


def _json_value(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        return {str(key): _json_value(item, f"{where}/{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_json_value(item, where) for item in value]
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise LorebookError(f"[initvar] value at {where} is not a JSON value: {value!r}")


def _parse_text(body: str) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """The original's parseTextToVariables, plus ``：`` and ``- item`` lists."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, Any, Any, str]] = [(-1, root, None, "")]  # indent, node, owner, key
    skipped: list[tuple[int, str]] = []
    for number, raw in enumerate(body.split("\n"), 1):
        line = raw.rstrip()
        content = line.strip()
        if not content or content.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        _, node, owner, key = stack[-1]
        if content.startswith("- ") or content == "-":
            if isinstance(node, dict) and not node and owner is not None:
                node = owner[key] = []
                stack[-1] = (stack[-1][0], node, owner, key)
            if isinstance(node, list):
                node.append(_scalar(content[1:].strip()))
            else:
                skipped.append((number, content))
            continue
        cut = min((i for i in (content.find(":"), content.find("：")) if i >= 0), default=-1)
        name, value = content[:cut].strip(), content[cut + 1 :].strip()
        if cut < 0 or not name or not isinstance(node, dict):
            skipped.append((number, content))
        elif value:
            node[name] = _scalar(value)
        else:
            node[name] = {}
            stack.append((indent, node[name], node, name))
    return root, skipped


def _scalar(text: str) -> Any:
    if not text:
        return ""
    if text in ("true", "True", "false", "False"):
        return text.lower() == "true"
    if text == "null":
        return None
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text[0] in "[{":
        try:
            return loads(text)
        except json.JSONDecodeError:
            return text
    return text
