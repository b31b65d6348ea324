"""MagVarUpdate's schema: what ``$meta`` declares, and what an update may then do.

MVU builds a schema from the initial variables (``generate_schema``) and rebuilds it after
every update that changed something (``reconcile``), inheriting from the old schema:

- an object is *extensible* (new keys may be inserted) when its ``$meta.extensible`` or
  ``$meta.recursiveExtensible`` is true, when the old schema said so, or when an ancestor is
  recursively extensible; otherwise not, even when it is ``{}``;
- an array is extensible when it holds the marker ``"$__META_EXTENSIBLE__$"`` or an element
  ``{"$arrayMeta": true, "$meta": {"extensible": true}}`` (which also carries a ``template``);
- a key is *required* (cannot be removed) when its parent is not extensible, when it is in the
  parent's ``$meta.required``, or when the old schema said so (an old ``required: false`` wins);
- ``$meta.template`` is merged under every value inserted into that object or array;
- the root's ``$meta.strictTemplate``, ``$meta.concatTemplateArray`` and ``$meta.strictSet``
  change how templates apply and whether ``_.set`` on a ``[value, "description"]`` pair replaces
  only the value (the default) or the whole pair (strict).

``clean_up_metadata`` removes ``$meta``, the markers and the ``$arrayMeta`` elements from the
variables, as MVU does once the schema has them.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from narrative_cli.state.mvu_paths import js_merge, string_to_path

__all__ = [
    "EXTENSIBLE_MARKER",
    "ROOT_FLAGS",
    "apply_template",
    "clean_up_metadata",
    "generate_schema",
    "reconcile",
    "schema_for_path",
]

EXTENSIBLE_MARKER = "$__META_EXTENSIBLE__$"
ROOT_FLAGS = ("strictTemplate", "concatTemplateArray", "strictSet")

Schema = dict[str, Any]


def _is_array_meta(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and "$arrayMeta" in item
        and "$meta" in item
        and (item["$arrayMeta"] is True)
    )


def generate_schema(data: Any, old: Schema | None = None, parent_recursive: bool = False) -> Schema:
    """MVU's generateSchema; strips ``$meta`` and markers from ``data`` (pass a copy)."""
    if isinstance(data, list):
        return _array_schema(data, old, parent_recursive)
    if isinstance(data, dict):
        return _object_schema(data, old, parent_recursive)
    if isinstance(data, bool):
        return {"type": "boolean"}
    if isinstance(data, (int, float)):
        return {"type": "number"}
    if isinstance(data, str):
        return {"type": "string"}
    return {"type": "any"}


def _array_schema(data: list[Any], old: Schema | None, parent_recursive: bool) -> Schema:
    extensible, recursive = False, parent_recursive
    old_element: Schema | None = None
    template: Any = None
    if old and old.get("type") == "array":
        extensible = old.get("extensible") is True
        recursive = old.get("recursiveExtensible") is True or parent_recursive
        old_element = old.get("elementType")
        template = old.get("template")
    meta_index = next((i for i, item in enumerate(data) if _is_array_meta(item)), -1)
    if meta_index >= 0:
        meta = data[meta_index]["$meta"] or {}
        if isinstance(meta, dict):
            if "extensible" in meta:
                extensible = meta["extensible"]
            if "template" in meta:
                template = meta["template"]
        del data[meta_index]
    if EXTENSIBLE_MARKER in data:
        extensible = True
        data.remove(EXTENSIBLE_MARKER)
    node: Schema = {
        "type": "array",
        "extensible": bool(extensible) or parent_recursive,
        "recursiveExtensible": recursive,
        "elementType": generate_schema(data[0], old_element, recursive)
        if data
        else {"type": "any"},
    }
    if template is not None:
        node["template"] = template
    return node


def _object_schema(data: dict[str, Any], old: Schema | None, parent_recursive: bool) -> Schema:
    old_extensible, old_recursive = False, parent_recursive
    old_properties: dict[str, Any] | None = None
    if old and old.get("type") == "object":
        old_extensible = old.get("extensible") is True
        old_recursive = old.get("recursiveExtensible") is True or parent_recursive
        old_properties = old.get("properties")
    raw_meta = data.get("$meta")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    node: Schema = {
        "type": "object",
        "properties": {},
        "extensible": old_extensible
        or meta.get("extensible") is True
        or meta.get("recursiveExtensible") is True
        or parent_recursive,
        "recursiveExtensible": old_recursive or meta.get("recursiveExtensible") is True,
    }
    if "template" in meta and meta["template"] is not None:
        node["template"] = meta["template"]
    elif old and old.get("type") == "object" and old.get("template"):
        node["template"] = old["template"]
    data.pop("$meta", None)
    required_keys = meta.get("required") if isinstance(meta.get("required"), list) else None
    for key in list(data):
        old_child = (old_properties or {}).get(key)
        child_recursive = node["extensible"] is not False and node["recursiveExtensible"]
        child = generate_schema(data[key], old_child, bool(child_recursive))
        required = not node["extensible"]
        if required_keys is not None and key in required_keys:
            required = True
        if isinstance(old_child, dict) and old_child.get("required") is False:
            required = False
        elif isinstance(old_child, dict) and old_child.get("required") is True:
            required = True
        node["properties"][key] = {**child, "required": required}
    return node


def clean_up_metadata(data: Any) -> None:
    """Remove ``$meta``, extensible markers and ``$arrayMeta`` elements, in place."""
    if isinstance(data, list):
        for index in range(len(data) - 1, -1, -1):
            item = data[index]
            if item == EXTENSIBLE_MARKER or _is_array_meta(item):
                del data[index]
            else:
                clean_up_metadata(item)
    elif isinstance(data, dict):
        data.pop("$meta", None)
        for value in data.values():
            clean_up_metadata(value)


def schema_for_path(schema: Schema | None, path: str) -> Schema | None:
    """MVU's getSchemaForPath: digits step into ``elementType``, names into ``properties``."""
    if not path or not schema:
        return schema or None
    node: Schema | None = schema
    for segment in string_to_path(path):
        if node is None:
            return None
        if re.fullmatch(r"\d+", segment):
            if node.get("type") != "array":
                return None
            node = node.get("elementType")
        elif node.get("type") == "object" and node.get("properties", {}).get(segment):
            node = node["properties"][segment]
        else:
            return None
    return node


def root_flags(stat_data: Any) -> dict[str, Any]:
    """The root ``$meta`` switches (strictTemplate, concatTemplateArray, strictSet) set in data."""
    meta = stat_data.get("$meta") if isinstance(stat_data, dict) else None
    if not isinstance(meta, dict):
        return {}
    return {flag: meta[flag] for flag in ROOT_FLAGS if flag in meta}


def reconcile(stat_data: Any, schema: Schema | None) -> Schema | None:
    """MVU's reconcileAndApplySchema: a schema matching the data, inheriting the old one."""
    fresh = generate_schema(copy.deepcopy(stat_data), schema)
    if fresh.get("type") != "object":
        return schema
    for flag in ROOT_FLAGS:
        if schema is not None and schema.get(flag) is not None:
            fresh[flag] = schema[flag]
    fresh.update(root_flags(stat_data))
    return fresh


def apply_template(value: Any, template: Any, strict: bool = False, concat: bool = True) -> Any:
    """MVU's applyTemplate: the template merged under ``value`` (the value's keys win)."""
    if not template:
        return value
    value_object, value_array = isinstance(value, dict), isinstance(value, list)
    template_array = isinstance(template, list)
    if value_object and not template_array:
        merged: Any = js_merge({}, copy.deepcopy(template))
        return js_merge(merged, value)
    if value_array and template_array:
        if concat:
            return [*value, *copy.deepcopy(template)]
        return js_merge(js_merge([], copy.deepcopy(template)), value)
    if (value_object or value_array) and template_array != value_array:
        return value
    if not value_object and not value_array and isinstance(template, dict):
        return value
    if not value_object and not value_array and template_array:
        if strict:
            return value
        if concat:
            return [value, *copy.deepcopy(template)]
        return js_merge(js_merge([], copy.deepcopy(template)), [value])
    return value
