"""MVU variables: the ``[initvar]`` tree, JSON-Patch-style updates, and their text forms.

``parse_initvar`` (``state.initvar``, re-exported here) reads the ``[initvar]`` tree from JSON,
YAML or the original's indented text; the result is an object of top-level categories.

MagVarUpdate trees hold ``[value, "description"]`` pairs. A tree is read that way when it has
at least one pair whose value is not text (or is empty text), so a plain two-string list such
as ``["扫描器", "工具包"]`` in a tree without pairs stays a list. In such a tree a path that
ends at a pair changes the value and keeps the description; array operations through a pair
whose value is a list reach that list; the summary shows the description beside the value.

``apply_patches`` never changes its input. Ops: ``replace`` (on a missing key of an existing
object it creates the key, noted), ``delta`` (numbers only), ``insert`` / ``add`` (object key;
array index, shifting the rest; ``-`` appends), ``remove`` (arrays close the gap) and ``move``
(``from`` → ``path``). Paths are JSON Pointers (``~1`` is ``/``, ``~0`` is ``~``; a missing
leading ``/`` or a leading ``stat_data`` segment is tolerated). The first segment must be an
existing top-level category: no op may create one, and none may remove one. Every rejected op
is returned with its reason.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from narrative_cli.state.events import is_number, show
from narrative_cli.state.initvar import InitvarParse, parse_initvar, read_initvar
from narrative_cli.state.mvu_record import PatchRecord
from narrative_cli.state.mvu_text import has_descriptions, is_pair, mvu_diff, mvu_summary, pointer

__all__ = [
    "InitvarParse",
    "PatchRecord",
    "PatchResult",
    "apply_patches",
    "has_descriptions",
    "mvu_diff",
    "mvu_summary",
    "parse_initvar",
    "read_initvar",
]

# ---------------------------------------------------------------------------------- patches

_MESSAGES: dict[str, tuple[str, str]] = {
    "not_object": ("补丁必须是 JSON 对象，收到 {got}", "a patch must be a JSON object, got {got}"),
    "bad_op": (
        "不支持的操作 {got}（可用 replace、delta、insert、remove、move）",
        "unknown op {got} (use replace, delta, insert, remove or move)",
    ),
    "no_path": (
        "{name} 必须是 /a/b 形式的路径，收到 {got}",
        "'{name}' must be a path like /a/b, got {got}",
    ),
    "whole": ("不能替换整个变量树", "cannot change the whole variable tree"),
    "bad_escape": ("路径 {path} 中的 ~ 只能写作 ~0 或 ~1", "in {path}, ~ must be written ~0 or ~1"),
    "new_top": (
        "顶层分类 {key} 不存在，不能新建一级分类",
        "there is no top-level category {key} (new categories are not allowed)",
    ),
    "remove_top": ("不能删除顶层分类 {key}", "cannot remove the top-level category {key}"),
    "missing": ("路径 {path} 不存在", "{path} does not exist"),
    "not_container": ("{path} 不是对象或数组", "{path} is not an object or an array"),
    "bad_index": (
        "{token} 不是 {path} 的有效下标（长度 {size}）",
        "{token} is not a valid index of {path} (length {size})",
    ),
    "no_value": ("缺少 value", "missing 'value'"),
    "not_json": ("value 不是 JSON 值", "'value' is not a JSON value"),
    "delta_target": ("{path} 的值 {got} 不是数字，不能 delta", "{path} holds {got}, not a number"),
    "delta_value": ("delta 的 value 必须是数字，收到 {got}", "delta needs a number, got {got}"),
    "move_into": ("不能把 {path} 移动到它自己里面", "cannot move {path} into itself"),
    "created": ("新建了 {path}", "created {path}"),
    "overwrote": ("覆盖了已有的 {path}", "replaced the existing {path}"),
}
_OPS = ("replace", "delta", "insert", "add", "remove", "move")
_INDEX = re.compile(r"^(?:0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class PatchResult:
    """The new variables and the records of the applied and the rejected ops, in order."""

    variables: dict[str, Any]
    applied: list[PatchRecord]
    rejected: list[PatchRecord]


class _Rejected(Exception):
    pass


@dataclass
class _Patcher:
    tree: dict[str, Any]
    described: bool
    lang: str

    def say(self, code: str, **values: Any) -> str:
        zh, en = _MESSAGES[code]
        return (zh if self.lang == "zh" else en).format(**values)

    def reject(self, code: str, **values: Any) -> _Rejected:
        return _Rejected(self.say(code, **values))

    def pointer(self, patch: Mapping[str, Any], name: str) -> list[str]:
        raw = patch.get(name)
        if not isinstance(raw, str) or not raw.strip():
            raise self.reject("no_path", name=name, got=show(raw))
        raw = raw.strip()
        raw = raw if raw.startswith("/") else "/" + raw
        if raw == "/":
            raise self.reject("whole")
        if re.search(r"~(?![01])", raw):
            raise self.reject("bad_escape", path=raw)
        parts = [part.replace("~1", "/").replace("~0", "~") for part in raw[1:].split("/")]
        if "" in parts:
            raise self.reject("no_path", name=name, got=show(raw))
        if parts[0] == "stat_data" and "stat_data" not in self.tree and len(parts) > 1:
            parts = parts[1:]
        if parts[0] not in self.tree:
            raise self.reject("new_top", key=show(parts[0]))
        return parts

    def node(self, parts: list[str]) -> Any:
        """The container or value at ``parts`` (a pair holding a container yields the container)."""
        node: Any = self.tree
        for depth, token in enumerate(parts):
            node = self.unwrap(node)
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and _INDEX.match(token) and int(token) < len(node):
                node = node[int(token)]
            else:
                raise self.reject("missing", path=pointer(parts[: depth + 1]))
        return node

    def unwrap(self, node: Any) -> Any:
        if self.described and is_pair(node) and isinstance(node[0], (list, dict)):
            return node[0]
        return node

    def parent(self, parts: list[str]) -> Any:
        parent = self.unwrap(self.node(parts[:-1]))
        if not isinstance(parent, (dict, list)):
            raise self.reject("not_container", path=pointer(parts[:-1]))
        return parent

    def index(self, parent: list[Any], parts: list[str], *, end: int) -> int:
        token = parts[-1]
        if token == "-" and end > len(parent):
            return len(parent)
        if not _INDEX.match(token) or int(token) >= end:
            raise self.reject(
                "bad_index", token=show(token), path=pointer(parts[:-1]), size=len(parent)
            )
        return int(token)

    def value(self, patch: Mapping[str, Any]) -> Any:
        if "value" not in patch:
            raise self.reject("no_value")
        try:
            json.dumps(patch["value"], allow_nan=False)
        except (TypeError, ValueError):
            raise self.reject("not_json") from None
        return copy.deepcopy(patch["value"])

    def put(self, container: Any, key: str | int, value: Any) -> None:
        """Set ``container[key]``; a described pair keeps its description."""
        current = container[key]
        pair = self.described and is_pair(current)
        if pair and not (is_pair(value) and not isinstance(current[0], list)):
            current[0] = value
        else:
            container[key] = value

    # The ops. Each checks everything before it changes the tree.

    def replace(self, patch: Mapping[str, Any]) -> str:
        parts, value = self.pointer(patch, "path"), self.value(patch)
        parent = self.parent(parts)
        if isinstance(parent, list):
            self.put(parent, self.index(parent, parts, end=len(parent)), value)
            return ""
        if parts[-1] not in parent:
            parent[parts[-1]] = value
            return self.say("created", path=pointer(parts))
        self.put(parent, parts[-1], value)
        return ""

    def delta(self, patch: Mapping[str, Any]) -> str:
        parts, amount = self.pointer(patch, "path"), self.value(patch)
        if not is_number(amount):
            raise self.reject("delta_value", got=show(amount))
        parent, current = self.parent(parts), self.node(parts)
        base = current[0] if self.described and is_pair(current) else current
        if not is_number(base):
            raise self.reject("delta_target", path=pointer(parts), got=show(base))
        total = base + amount
        total = total if isinstance(total, int) else round(total, 10)
        key = self.index(parent, parts, end=len(parent)) if isinstance(parent, list) else parts[-1]
        self.put(parent, key, total)
        return ""

    def insert(self, patch: Mapping[str, Any]) -> str:
        return self.add(self.pointer(patch, "path"), self.value(patch))

    def add(self, parts: list[str], value: Any) -> str:
        parent = self.parent(parts)
        if isinstance(parent, list):
            parent.insert(self.index(parent, parts, end=len(parent) + 1), value)
            return ""
        existed = parts[-1] in parent
        if existed:
            self.put(parent, parts[-1], value)
        else:
            parent[parts[-1]] = value
        return self.say("overwrote", path=pointer(parts)) if existed else ""

    def remove(self, patch: Mapping[str, Any]) -> str:
        self.take(self.pointer(patch, "path"))
        return ""

    def take(self, parts: list[str]) -> Any:
        if len(parts) == 1:
            raise self.reject("remove_top", key=show(parts[0]))
        parent = self.parent(parts)
        if isinstance(parent, list):
            return parent.pop(self.index(parent, parts, end=len(parent)))
        if parts[-1] not in parent:
            raise self.reject("missing", path=pointer(parts))
        return parent.pop(parts[-1])

    def move(self, patch: Mapping[str, Any]) -> str:
        source, target = self.pointer(patch, "from"), self.pointer(patch, "path")
        if source == target:
            self.node(source)
            return ""
        if target[: len(source)] == source:
            raise self.reject("move_into", path=pointer(source))
        trial = _Patcher(copy.deepcopy(self.tree), self.described, self.lang)
        note = trial.add(target, trial.take(source))
        self.tree.clear()
        self.tree.update(trial.tree)
        return note


def apply_patches(
    variables: Mapping[str, Any] | None, patches: Iterable[Any], *, lang: str = "zh"
) -> PatchResult:
    """Apply ``patches`` in order to a copy of ``variables``; reasons are in ``lang``."""
    tree = copy.deepcopy(dict(variables or {}))
    patcher = _Patcher(tree, has_descriptions(tree), lang)
    applied: list[PatchRecord] = []
    rejected: list[PatchRecord] = []
    for patch in patches:
        kept = copy.deepcopy(patch)
        try:
            note = _apply_one(patcher, patch)
        except _Rejected as problem:
            rejected.append(PatchRecord(kept, False, reason=str(problem)))
        else:
            applied.append(PatchRecord(kept, True, note=note))
    return PatchResult(variables=patcher.tree, applied=applied, rejected=rejected)


def _apply_one(patcher: _Patcher, patch: Any) -> str:
    if not isinstance(patch, Mapping):
        raise patcher.reject("not_object", got=show(patch))
    op = patch.get("op")
    op = op.strip().lower() if isinstance(op, str) else op
    if op not in _OPS:
        raise patcher.reject("bad_op", got=show(op))
    handlers = {
        "replace": patcher.replace,
        "delta": patcher.delta,
        "insert": patcher.insert,
        "add": patcher.insert,
        "remove": patcher.remove,
        "move": patcher.move,
    }
    return handlers[op](patch)
