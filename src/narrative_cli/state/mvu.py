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
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from narrative_cli.safetext import finite_copy
from narrative_cli.state.events import is_number, show
from narrative_cli.state.initvar import InitvarParse, parse_initvar, read_initvar

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

SUMMARY_DEPTH = 4
NO_DATA = {"zh": "（无 MVU 数据）", "en": "(no MVU data)"}
EMPTY_TREE = {"zh": "（空状态）", "en": "(empty state)"}

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
class PatchRecord:
    """One proposed op and what became of it (``reason`` when rejected, ``note`` if adjusted)."""

    patch: Any
    accepted: bool
    reason: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = {"patch": finite_copy(self.patch), "accepted": self.accepted, "reason": self.reason}
        return {key: value for key, value in {**data, "note": self.note}.items() if value != ""}

    @classmethod
    def from_dict(cls, data: object) -> PatchRecord:
        """A record saved by ``to_dict`` (in a stored turn record)."""
        record = data if isinstance(data, Mapping) else {}
        return cls(
            patch=copy.deepcopy(record.get("patch")),
            accepted=bool(record.get("accepted", False)),
            reason=str(record.get("reason") or ""),
            note=str(record.get("note") or ""),
        )


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
                raise self.reject("missing", path=_pointer(parts[: depth + 1]))
        return node

    def unwrap(self, node: Any) -> Any:
        if self.described and _is_pair(node) and isinstance(node[0], (list, dict)):
            return node[0]
        return node

    def parent(self, parts: list[str]) -> Any:
        parent = self.unwrap(self.node(parts[:-1]))
        if not isinstance(parent, (dict, list)):
            raise self.reject("not_container", path=_pointer(parts[:-1]))
        return parent

    def index(self, parent: list[Any], parts: list[str], *, end: int) -> int:
        token = parts[-1]
        if token == "-" and end > len(parent):
            return len(parent)
        if not _INDEX.match(token) or int(token) >= end:
            raise self.reject(
                "bad_index", token=show(token), path=_pointer(parts[:-1]), size=len(parent)
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
        pair = self.described and _is_pair(current)
        if pair and not (_is_pair(value) and not isinstance(current[0], list)):
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
            return self.say("created", path=_pointer(parts))
        self.put(parent, parts[-1], value)
        return ""

    def delta(self, patch: Mapping[str, Any]) -> str:
        parts, amount = self.pointer(patch, "path"), self.value(patch)
        if not is_number(amount):
            raise self.reject("delta_value", got=show(amount))
        parent, current = self.parent(parts), self.node(parts)
        base = current[0] if self.described and _is_pair(current) else current
        if not is_number(base):
            raise self.reject("delta_target", path=_pointer(parts), got=show(base))
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
        return self.say("overwrote", path=_pointer(parts)) if existed else ""

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
            raise self.reject("missing", path=_pointer(parts))
        return parent.pop(parts[-1])

    def move(self, patch: Mapping[str, Any]) -> str:
        source, target = self.pointer(patch, "from"), self.pointer(patch, "path")
        if source == target:
            self.node(source)
            return ""
        if target[: len(source)] == source:
            raise self.reject("move_into", path=_pointer(source))
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


# ---------------------------------------------------------------------------------- text forms


def has_descriptions(tree: Any) -> bool:
    """Whether ``tree`` uses MagVarUpdate ``[value, "description"]`` pairs (see the module doc)."""
    if isinstance(tree, dict):
        return any(has_descriptions(value) for value in tree.values())
    if not isinstance(tree, list):
        return False
    if _is_pair(tree) and (not isinstance(tree[0], str) or tree[0] == ""):
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
    lines: list[str] = []
    _summary_lines(variables, 0, lines, has_descriptions(variables), key)
    return "\n".join(lines) if lines else EMPTY_TREE[key]


def _summary_lines(
    node: Mapping[str, Any], depth: int, lines: list[str], described: bool, lang: str
) -> None:
    pad = "  " * depth
    for key, raw in node.items():
        if str(key).startswith("_") or key == "$meta":
            continue
        value, note = (raw[0], raw[1]) if described and _is_pair(raw) else (raw, "")
        note = ("（{}）" if lang == "zh" else " ({})").format(note) if note else ""
        if isinstance(value, dict) and value and depth < SUMMARY_DEPTH - 1:
            lines.append(f"{pad}{key}:{note}")
            _summary_lines(value, depth + 1, lines, described, lang)
        else:
            lines.append(f"{pad}{key}: {_inline(value, described)}{note}")


def _inline(value: Any, described: bool) -> str:
    if isinstance(value, list):
        items = (item[0] if described and _is_pair(item) else item for item in value)
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
    if described and _is_pair(node):
        node = node[0]
    if isinstance(node, dict):
        return {key: _values(value, described) for key, value in node.items()}
    if isinstance(node, list):
        return [_values(item, described) for item in node]
    return node


def _diff(old: Any, new: Any, path: list[str], lines: list[str]) -> None:
    where = _pointer(path)
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(key for key in new if key not in old)]:
            if key not in new:
                lines.append(f"- {_pointer([*path, key])}: {_brief(old[key])}")
            elif key not in old:
                lines.append(f"+ {_pointer([*path, key])}: {_brief(new[key])}")
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


# ---------------------------------------------------------------------------------- helpers


def _is_pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)


def _pointer(parts: list[str]) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts) or "/"
