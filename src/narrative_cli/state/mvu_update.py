"""Applying a message's update commands to the variables, as MagVarUpdate's updateVariables does.

``update_variables(text, data)`` reads the commands (``state.mvu_commands``) and applies them in
order to a copy of ``data`` (an ``MvuData``: ``stat_data``, ``schema``, ``display_data``,
``delta_data``), with MVU's rules:

- ``_.set(path, [old,] new)``: the path must exist; on a ``[value, "description"]`` pair only
  the value changes (a number stays a number); a text set on a number becomes a number;
- ``_.insert``/``_.assign(path, value)`` appends to an array or merges into an object, and
  ``(path, key|index, value)`` inserts; both need an extensible target (``$meta``), apply its
  template, and read any ``$meta`` in the new value;
- ``_.remove``/``_.unset``/``_.delete(path[, value|index|key])``: no required key, only
  elements of extensible arrays (``path[0]`` removes an element without that check, as in MVU);
- ``_.add(path, delta)`` adds to a number or (milliseconds) to an ISO date.

``display_data`` is the old ``stat_data`` with each changed path replaced by MVU's
``old->new (reason)`` text, ``delta_data`` only those paths; the schema is rebuilt when
anything changed. Where this differs from MVU: a value that would be NaN or Infinity (``_.set``
of a text on a number, ``1/0``) is rejected instead of stored, and a call MVU silently skips
(unbalanced quotes, no ``;``, a JSONPatch ``move``) is rejected with its reason. Every
rejected command carries its reason in the session's language.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from narrative_cli.safetext import MAX_JSON_DEPTH, json_copy, json_depth
from narrative_cli.state.mvu_commands import MvuCommand, extract_commands
from narrative_cli.state.mvu_data import MvuData, UpdateResult
from narrative_cli.state.mvu_paths import (
    fix_path,
    is_index,
    js_get,
    js_has,
    js_merge,
    js_set,
    js_unset,
    string_to_path,
    to_path,
    trim_quotes,
)
from narrative_cli.state.mvu_record import PatchRecord
from narrative_cli.state.mvu_schema import (
    apply_template,
    clean_up_metadata,
    generate_schema,
    reconcile,
    schema_for_path,
)
from narrative_cli.state.mvu_values import (
    UNDEFINED,
    has_nonfinite,
    iso_string,
    js_date,
    js_equal,
    js_number,
    js_string,
    js_stringify,
    js_to_number,
    parse_command_value,
    substitute_macros,
)

__all__ = ["MvuData", "UpdateResult", "update_variables"]

_REASONS: dict[str, tuple[str, str]] = {
    "missing": ("路径 {path} 不存在", "{path} does not exist"),
    "not_number": ("{path} 是数字，{value} 不是数字", "{path} holds a number; {value} is not one"),
    "nonfinite": ("{path} 的新值不是有限数字（{value}）", "{path}: {value} is not a finite number"),
    "too_deep": ("值的嵌套超过 {limit} 层", "the value nests more than {limit} levels deep"),
    "whole": (
        "整棵变量树只能换成对象",
        "the whole variable tree can only be replaced by an object",
    ),
    "primitive": (
        "{path} 是{kind}，不能向其中插入",
        "{path} holds a {kind}, nothing can go into it",
    ),
    "closed_merge": (
        "{path} 不可扩展（$meta），不能合并",
        "{path} is not extensible ($meta): no merge",
    ),
    "closed_key": (
        "{path} 不可扩展（$meta），不能新增键 {key}",
        "{path} is not extensible ($meta): no new key {key}",
    ),
    "closed_array": ("{path} 数组不可扩展（$meta）", "the array {path} is not extensible ($meta)"),
    "no_parent": ("{path} 的上级不存在", "{path} has no parent to go into"),
    "merge_kind": ("不能把非对象合并进对象 {path}", "only an object can be merged into {path}"),
    "bad_insert": ("_.insert 的参数不对（{path}）", "wrong arguments for _.insert on {path}"),
    "required": ("{key} 是 {path} 的必需键，不能删除", "{key} is required in {path}"),
    "closed_remove": ("{path} 数组不可扩展，不能删除元素", "{path} is not extensible: no removal"),
    "no_target": ("无法确定要删除的目标（{path}）", "nothing to remove named in {path}"),
    "not_collection": ("{path} 不是数组或对象", "{path} is not an array or an object"),
    "remove_failed": ("{path} 中没有要删除的项", "nothing to remove in {path}"),
    "add_delta": ("增量 {value} 不是数字", "the amount {value} is not a number"),
    "add_kind": ("{path} 不是数字或日期，不能 _.add", "{path} is not a number or a date"),
    "move": ("MVU 不执行 move 操作（已忽略）", "MVU has no move command (ignored)"),
    "malformed": ("无法解析：{why}", "cannot read it: {why}"),
}
_MALFORMED_ZH = {
    "unbalanced quotes or parentheses": "引号或括号不配对",
    "no ';' after the call": "调用后缺少分号",
}


class _Rejected(Exception):
    pass


_ABSENT = object()  # a first key the tree did not have before the command


def update_variables(
    text: str, data: MvuData, *, lang: str = "zh", user: str = "User", char: str = "Char"
) -> UpdateResult:
    """Apply every command in ``text`` to a copy of ``data`` (see the module doc).

    Only what the run changes is copied: ``data`` itself is never changed, so its tree is the
    ``before`` to compare with, and the copy's display and delta trees are replaced by the
    run's (copying them too, and the tree once more for ``before``, was three of a turn's
    eight copies of the variables; #17, session nine)."""
    work = MvuData(
        json_copy(data.stat_data),
        json_copy(data.schema),
        initialized_lorebooks=json_copy(data.initialized_lorebooks),
    )
    before = data.stat_data
    extracted = extract_commands(substitute_macros(text, user, char))
    run = _Run(work, lang)
    for command in extracted.commands:
        run.apply(command)
    for bad in extracted.malformed:
        why = _MALFORMED_ZH.get(bad.reason, bad.reason) if lang == "zh" else bad.reason
        run.rejected.append(PatchRecord(bad.text, False, reason=run.say("malformed", why=why)))
    work.display_data = run.display
    work.delta_data = run.delta
    modified = not js_equal(work.stat_data, before)
    if modified:
        work.schema = reconcile(work.stat_data, work.schema)
    return UpdateResult(work, run.applied, run.rejected, modified, extracted.commands)


class _Run:
    def __init__(self, data: MvuData, lang: str) -> None:
        self.data = data
        self.lang = lang
        self.display: dict[str, Any] = json_copy(data.stat_data)
        self.delta: dict[str, Any] = {}
        self.applied: list[PatchRecord] = []
        self.rejected: list[PatchRecord] = []
        schema = data.schema or {}
        self.strict_template = bool(schema.get("strictTemplate", False))
        self.concat = bool(schema.get("concatTemplateArray", True))
        self.strict_set = bool(schema.get("strictSet", False))

    def say(self, code: str, **values: Any) -> str:
        zh, en = _REASONS[code]
        return (zh if self.lang == "zh" else en).format(**values)

    def reject(self, code: str, **values: Any) -> _Rejected:
        return _Rejected(self.say(code, **values))

    def apply(self, command: MvuCommand) -> None:
        kind = {"remove": "delete", "unset": "delete", "assign": "insert"}.get(
            command.type, command.type
        )
        args = list(command.args)
        path = fix_path(trim_quotes(args[0])) if args else ""
        reason = f"({command.reason})" if command.reason else ""
        undo = self._undo(kind, path)
        try:
            handler = {"set": self.set, "insert": self.insert, "delete": self.delete,
                       "add": self.add}.get(kind)  # fmt: skip
            if handler is None:
                raise self.reject("move")
            shown = handler(path, args, reason)
            if json_depth(self.data.stat_data) > MAX_JSON_DEPTH:  # a nesting bomb of a value
                raise self.reject("too_deep", limit=MAX_JSON_DEPTH)
        except RecursionError:
            undo()
            reason_text = self.say("too_deep", limit=MAX_JSON_DEPTH)
            self.rejected.append(PatchRecord(command.text[:200], False, reason=reason_text))
            return
        except _Rejected as problem:
            undo()
            self.rejected.append(PatchRecord(command.text, False, reason=str(problem)))
            return
        if shown:
            js_set(self.display, path, shown)
            js_set(self.delta, path, shown)
        self.applied.append(PatchRecord(command.text, True))

    def _undo(self, kind: str, path: str) -> Callable[[], None]:
        """What puts the variables back as they are now, should the command be rejected.

        ``set`` (below the root) and ``add`` change only the value at ``path``, under its
        first key, and never the schema: that key's value alone is copied (the whole tree and
        the schema were copied for every command, a third of applying one; #17, session
        nine). Any other command copies both whole."""
        stat = self.data.stat_data
        keys = to_path(path, stat) if path and kind in ("set", "add") else []
        if not keys or type(stat) is not dict:
            snapshot = json_copy(stat), json_copy(self.data.schema)

            def restore() -> None:
                self.data.stat_data, self.data.schema = snapshot

            return restore
        top = keys[0]
        held = json_copy(stat[top]) if top in stat else _ABSENT

        def put_back() -> None:
            if held is _ABSENT:
                stat.pop(top, None)
            else:
                stat[top] = held

        return put_back

    # -- the commands ------------------------------------------------------------------------

    def set(self, path: str, args: list[str], reason: str) -> str:
        stat = self.data.stat_data
        if path != "" and not js_has(stat, path):
            raise self.reject("missing", path=path)
        old: Any = copy.deepcopy(stat) if path == "" else js_get(stat, path)
        new = parse_command_value(args[-1])
        new = None if new is UNDEFINED else new
        pair = False
        if not self.strict_set and _is_pair(old) and not isinstance(old[0], list):
            old_value = copy.deepcopy(old[0])
            stored = js_to_number(new) if _is_number(old[0]) and new is not None else new
            self._number(path, new, stored, args[-1])
            old[0] = stored
            old, pair = old_value, True
        elif _is_number(old) and isinstance(new, str):
            stored = js_to_number(new)
            self._number(path, new, stored, args[-1])
            js_set(stat, path, stored)
        elif path:
            self._finite(path, new, args[-1])
            js_set(stat, path, new)
        else:
            if not isinstance(new, dict):
                raise self.reject("whole")
            self._finite(path, new, args[-1])
            self.data.stat_data = stat = new
        final: Any = stat if path == "" else js_get(stat, path)
        if pair:
            final = final[0]
        if not self.strict_set and _is_pair(old) and isinstance(final, list):
            old, final = old[0], final[0]
        return f"{trim_quotes(js_stringify(old))}->{trim_quotes(js_stringify(final))} {reason}"

    def _number(self, path: str, given: Any, stored: Any, raw: str) -> None:
        """A text set on a number must read as a number (MVU would store NaN)."""
        if isinstance(given, str) and has_nonfinite(stored):
            raise self.reject("not_number", path=path, value=raw.strip())
        self._finite(path, stored, raw)

    def _finite(self, path: str, value: Any, raw: str) -> None:
        if has_nonfinite(value):
            raise self.reject("nonfinite", path=path or "/", value=raw.strip())

    def insert(self, path: str, args: list[str], reason: str) -> str:
        stat = self.data.stat_data
        existing = stat if path == "" else js_get(stat, path, UNDEFINED)
        target = schema_for_path(self.data.schema, path)
        if existing is not None and not isinstance(existing, (dict, list)):
            kind = "undefined" if existing is UNDEFINED else _js_type(existing)
            raise self.reject("primitive", path=path, kind=kind)
        self._check_extensible(path, args, target)
        if len(args) == 2:
            shown = self._merge_in(path, args, reason, target)
        else:
            shown = self._insert_at(path, args, reason, target)
        new_value = stat if path == "" else js_get(self.data.stat_data, path)
        fresh = generate_schema(copy.deepcopy(new_value), target)
        if target is not None:
            js_merge(target, fresh)
        clean_up_metadata(new_value)
        return shown

    def _check_extensible(self, path: str, args: list[str], target: dict[str, Any] | None) -> None:
        if target is not None:
            if target.get("type") == "object" and target.get("extensible") is False:
                if len(args) == 2:
                    raise self.reject("closed_merge", path=path or "/")
                key = js_string(parse_command_value(args[1]))
                if key not in target.get("properties", {}):
                    raise self.reject("closed_key", path=path or "/", key=key)
            elif target.get("type") == "array" and target.get("extensible") is not True:
                raise self.reject("closed_array", path=path)
        elif path != "" and not js_get(self.data.stat_data, ".".join(string_to_path(path)[:-1])):
            raise self.reject("no_parent", path=path)

    def _template(self, target: dict[str, Any] | None, value: Any, arrays_only: bool) -> Any:
        if target is None or (arrays_only and target.get("type") != "array"):
            return value
        if target.get("type") not in ("array", "object"):
            return value
        return apply_template(value, target.get("template"), self.strict_template, self.concat)

    def _merge_in(self, path: str, args: list[str], reason: str, target: Any) -> str:
        value = parse_command_value(args[1])
        stat = self.data.stat_data
        collection = stat if path == "" else js_get(stat, path)
        if not isinstance(collection, (dict, list)):
            collection = [] if isinstance(value, list) else {}
            js_set(stat, path, collection)
        self._finite(path, value, args[1])
        if isinstance(collection, list):
            value = self._template(target, value, arrays_only=True)
            collection.append(value)
            return f"ASSIGNED {js_stringify(value)} into array '{path}' {reason}"
        if not isinstance(value, dict):
            raise self.reject("merge_kind", path=path or "/")
        js_merge(collection, value)
        return f"MERGED object {js_stringify(value)} into object '{path}' {reason}"

    def _insert_at(self, path: str, args: list[str], reason: str, target: Any) -> str:
        value = parse_command_value(args[2])
        key = parse_command_value(args[1])
        self._finite(path, value, args[2])
        stat = self.data.stat_data
        collection = stat if path == "" else js_get(stat, path)
        value = self._template(target, value, arrays_only=False)
        if isinstance(collection, list) and (_is_number(key) or key == "-"):
            index = len(collection) if key == "-" else int(key)
            index = max(len(collection) + index, 0) if index < 0 else min(index, len(collection))
            label = "tail" if key in ("-", -1) else js_number(key)
            collection.insert(index, value)
            return f"ASSIGNED {js_stringify(value)} into '{path}' at index {label} {reason}"
        name = js_string(key)
        if isinstance(collection, (dict, list)):
            if isinstance(collection, dict):
                collection[name] = value
            elif is_index(name):
                js_set(collection, [name], value)
            return (f"ASSIGNED key '{name}' with value {js_stringify(value)} "
                    f"into object '{path}' {reason}")  # fmt: skip
        js_set(stat, path, {name: value})
        return f"CREATED object at '{path}' and ASSIGNED key '{name}' {reason}"

    def delete(self, path: str, args: list[str], reason: str) -> str:
        stat = self.data.stat_data
        parts = string_to_path(path)
        last = parts[-1] if parts else ""
        if len(args) == 1 and re.fullmatch(r"\d+", last):
            container = js_get(stat, ".".join(parts[:-1]))
            if isinstance(container, list) and int(last) < len(container):
                del container[int(last)]
                return ""  # MVU records no display text for this form
        if not js_has(stat, path):
            raise self.reject("missing", path=path)
        container_path, key = path, self._removal_key(args, parts)
        if len(args) == 1:
            container_path = ".".join(parts[:-1])
        if key is UNDEFINED:
            raise self.reject("no_target", path=path)
        if container_path != "" and not js_has(stat, container_path):
            raise self.reject("missing", path=container_path)
        self._check_removable(container_path, key)
        target = parse_command_value(args[1]) if len(args) > 1 else UNDEFINED
        if target is UNDEFINED:
            js_unset(stat, path)
            return f"REMOVED path '{path}' {reason}"
        return self._remove_from(path, target, reason)

    def _removal_key(self, args: list[str], parts: list[str]) -> Any:
        if len(args) > 1:
            key = parse_command_value(args[1])
            return trim_quotes(key) if isinstance(key, str) else key
        if parts and parts[-1]:
            return int(parts[-1]) if re.fullmatch(r"\d+", parts[-1]) else parts[-1]
        return UNDEFINED

    def _check_removable(self, container_path: str, key: Any) -> None:
        schema = schema_for_path(self.data.schema, container_path)
        if schema is None:
            return
        if schema.get("type") == "array" and schema.get("extensible") is not True:
            raise self.reject("closed_remove", path=container_path)
        if schema.get("type") == "object":
            name = js_string(key)
            prop = schema.get("properties", {}).get(name)
            if isinstance(prop, dict) and prop.get("required") is True:
                raise self.reject("required", key=name, path=container_path or "/")

    def _remove_from(self, path: str, target: Any, reason: str) -> str:
        collection = js_get(self.data.stat_data, path)
        if not isinstance(collection, (dict, list)):
            raise self.reject("not_collection", path=path)
        if isinstance(collection, list):
            if _is_number(target):
                index = int(target) if float(target).is_integer() else -1
            else:
                index = next((i for i, v in enumerate(collection) if js_equal(v, target)), -1)
            if 0 <= index < len(collection):
                del collection[index]
                return f"REMOVED item from '{path}' {reason}"
        elif _is_number(target):
            keys = list(collection)
            if 0 <= target < len(keys) and float(target).is_integer():
                name = keys[int(target)]
                del collection[name]
                return f"REMOVED {int(target) + 1}th entry ('{name}') from object '{path}' {reason}"
        else:
            name = js_string(target)
            if name in collection:
                del collection[name]
                return f"REMOVED key '{name}' from object '{path}' {reason}"
        raise self.reject("remove_failed", path=path)

    def add(self, path: str, args: list[str], reason: str) -> str:
        stat = self.data.stat_data
        if not js_has(stat, path):
            raise self.reject("missing", path=path)
        initial = copy.deepcopy(js_get(stat, path))
        current = js_get(stat, path)
        pair = (
            _is_pair(current)
            and not isinstance(current[0], (dict, list))
            and current[0] is not None
        )
        value = current[0] if pair else current
        delta = parse_command_value(args[1])
        date = js_date(value) if isinstance(value, str) else None
        if date is not None or _is_number(value):
            if not _is_number(delta):
                raise self.reject("add_delta", value=args[1].strip())
            if date is not None:
                result: Any = iso_string(date + timedelta(milliseconds=delta))
            else:
                total = value + delta
                self._finite(path, total, args[1])
                result = float(f"{total:.12g}")
                result = int(result) if result.is_integer() and abs(result) < 2**53 else result
        else:
            raise self.reject("add_kind", path=path)
        if pair:
            current[0] = result
        else:
            js_set(stat, path, result)
        final = js_get(stat, path)
        old_shown = initial[0] if pair else initial
        new_shown = final[0] if pair else final
        return f"{js_stringify(old_shown)}->{js_stringify(new_shown)} {reason}"


def _is_pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[1], str)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _js_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return "number" if _is_number(value) else "string"
