"""Chat variables for ``{{getvar}}``, ``{{setvar}}`` and friends (compat §6.2), on a plain dict.

Each function takes the variables dict and the macro's arguments and returns the macro's text.
Values are stored as given (text) or as numbers after arithmetic, as SillyTavern does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

Variables = dict[str, Any]


def render(value: Any) -> str:
    """A variable's value as macro text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def getvar(variables: Variables, args: list[str]) -> str:
    """``{{getvar::name}}``: the value, or "" when unset."""
    return render(variables.get(args[0], ""))


def setvar(variables: Variables, args: list[str]) -> str:
    """``{{setvar::name::value}}``."""
    variables[args[0]] = "::".join(args[1:])
    return ""


def addvar(variables: Variables, args: list[str]) -> str:
    """``{{addvar::name::value}}``: append to a list, add numbers, else join text."""
    add(variables, args[0], "::".join(args[1:]))
    return ""


def step(delta: str) -> Callable[[Variables, list[str]], str]:
    """``{{incvar::name}}`` / ``{{decvar::name}}``: the new value."""
    return lambda variables, args: render(add(variables, args[0], delta))


def hasvar(variables: Variables, args: list[str]) -> str:
    return render(args[0] in variables)


def deletevar(variables: Variables, args: list[str]) -> str:
    variables.pop(args[0], None)
    return ""


def add(variables: Variables, name: str, value: str) -> Any:
    """Add ``value`` to variable ``name`` and return the result."""
    current = variables.get(name, "")
    if isinstance(current, str) and current.strip().startswith("["):
        try:
            current = json.loads(current)
        except ValueError:
            pass
    if isinstance(current, list):
        result: Any = [*current, value]
    else:
        a, b = _number(current if current != "" else 0), _number(value)
        if a is not None and b is not None:
            total = a + b
            result = int(total) if total.is_integer() else total
        else:
            result = render(current) + value
    variables[name] = result
    return result


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


_PATH_PART = re.compile(r"[^.[\]]+|\[(?:(-?\d+)|([\"'])(.*?)\2)\]")


def lookup(tree: Mapping[str, Any], path: str) -> Any:
    """The value at a lodash-style ``path`` (``a.b[0]``, ``a["b"]``), or None when absent."""
    node: Any = tree
    if "&" in path:  # html.unescape changes nothing else; html.entities is a big table to load
        import html

        path = html.unescape(path)
    for match in _PATH_PART.finditer(path):
        key = match.group(1) or match.group(3) or match.group(0)
        if isinstance(node, Mapping):
            node = node.get(key)
        elif isinstance(node, list) and key.lstrip("-").isdigit() and -len(node) <= int(key) < len(
            node
        ):
            node = node[int(key)] if int(key) >= 0 else None
        else:
            return None
    return node


def public(value: Any) -> Any:
    """``value`` without keys starting with ``$`` (MVU's ``$meta``), at every depth, as
    TavernHelper's variable macros show it."""
    if isinstance(value, Mapping):
        return {k: public(v) for k, v in value.items() if not str(k).startswith("$")}
    if isinstance(value, list):
        return [public(item) for item in value]
    return value


def as_json(value: Any) -> str:
    """TavernHelper's text of a variable: text as is, anything else as JSON (absent: null)."""
    if isinstance(value, str):
        return value
    return json.dumps(public(value), ensure_ascii=False)


@cache
def _indented_dumper() -> type[Any]:
    """A YAML dumper indenting lists under their key, as the ``yaml`` package TavernHelper
    uses writes them. Built on first use: YAML is only imported by a card that asks for it
    (``inspect`` and ``lore test`` load this module)."""
    import yaml

    class IndentedDumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)

    return IndentedDumper


def as_yaml(value: Any, indent: int = 0) -> str:
    """TavernHelper's ``format_…_variable`` text: text as is, anything else as YAML whose
    continuation lines are indented by ``indent`` (the width of the text before the macro)."""
    if isinstance(value, str):
        return value
    import yaml

    text = yaml.dump(public(value), Dumper=_indented_dumper(), allow_unicode=True,
                     sort_keys=False, default_flow_style=False)
    text = str(text).removesuffix("\n...\n").rstrip("\n")
    return text.replace("\n", "\n" + " " * indent) if indent else text
