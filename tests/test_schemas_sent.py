"""``agents.schemas.response_format``: the schema a request carries, made once per name, is
the schema without its ``default`` keys, the same every call, and the schemas themselves keep
their defaults (the reply parser reads them)."""

from __future__ import annotations

import copy
from typing import Any

from narrative_cli.agents.schemas import SCHEMAS, response_format


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for value in node.values() for k in _keys(value)}
    if isinstance(node, list):
        return {k for value in node for k in _keys(value)}
    return set()


def _stripped(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _stripped(v) for k, v in node.items() if k != "default"}
    if isinstance(node, list):
        return [_stripped(v) for v in node]
    return node


def test_each_schema_is_sent_without_defaults_the_same_every_time() -> None:
    kept = copy.deepcopy(SCHEMAS)
    for name, schema in SCHEMAS.items():
        first, second = response_format(name), response_format(name)
        assert first == second == {"name": name, "schema": _stripped(schema)}
        assert "default" not in _keys(first["schema"])
    assert SCHEMAS == kept
    assert any("default" in _keys(schema) for schema in SCHEMAS.values())
