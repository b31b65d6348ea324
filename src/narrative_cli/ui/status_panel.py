"""The MVU status bar, drawn natively: a Rich panel built from the variable tree.

Real MVU cards mark where their status bar goes with ``<StatusPlaceHolderImpl/>``; in
SillyTavern a display regex swaps it for an HTML page whose JavaScript reads the variables.
A terminal runs neither, and the page's static text is stale (its defaults, or "loading
variables…"). So the screen puts this panel there instead: one section per top-level group,
each a two-column grid of names and values (Rich measures CJK characters as two columns),
nested objects indented under their name, values changed by the last turn marked ``●`` and
shown with their old value. Keys starting with ``_`` and ``$meta`` are bookkeeping, not shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from narrative_cli.i18n import t
from narrative_cli.state.mvu import has_descriptions
from narrative_cli.ui.safe import safe_text

MAX_VALUE = 120  # characters of one value before it is cut


def status_panel(
    tree: Mapping[str, Any], before: Mapping[str, Any] | None, lang: str
) -> RenderableType:
    """The panel of ``tree``; values that differ from ``before`` are marked (None: no marks)."""
    tree = _unpaired(tree, has_descriptions(tree))
    if before is not None:
        before = _unpaired(before, has_descriptions(before))
    sections: list[RenderableType] = []
    plain: list[tuple[str, Any]] = []
    for key, value in _shown(tree):
        if isinstance(_value(value), Mapping):
            old = _child(before, key)
            sections.append(_section(key, _value(value), old, before is not None))
        else:
            plain.append((key, value))
    if plain:
        sections.insert(0, _grid(plain, before, before is not None, 0))
    title = t("label.status", lang)
    return Panel(Group(*sections), title=title, title_align="left", border_style="cyan")


def _section(name: str, node: Mapping[str, Any], before: Any, marks: bool) -> RenderableType:
    grid = _grid(list(_shown(node)), before if isinstance(before, Mapping) else None, marks)
    return Group(Text(name, style="bold"), grid)


def _grid(
    items: list[tuple[str, Any]], before: Mapping[str, Any] | None, marks: bool, depth: int = 1
) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    for key, raw in items:
        _rows(table, key, raw, _child(before, key), marks, depth)
    return table


def _rows(table: Table, key: str, raw: Any, old: Any, marks: bool, depth: int) -> None:
    value = _value(raw)
    pad = "  " * depth
    if isinstance(value, Mapping) and value:
        table.add_row(pad + key, "")
        for sub, item in _shown(value):
            sub_old = _child(old if isinstance(_value(old), Mapping) else None, sub)
            _rows(table, sub, item, sub_old, marks, depth + 1)
        return
    text = Text(_plain(value))
    if marks and _plain(_value(old)) != _plain(value):
        text = Text("● ", style="yellow")
        text.append(_plain(value), style="bold yellow")
        if old is not None:
            text.append(f"  ({_plain(_value(old))})", style="dim")
    table.add_row(pad + key, text)


def _shown(node: Mapping[str, Any]) -> list[tuple[str, Any]]:
    shown = [(str(k), v) for k, v in node.items() if not str(k).startswith(("_", "$meta"))]
    return [(safe_text(k), v) for k, v in shown]


def _child(node: Any, key: str) -> Any:
    node = _value(node)
    return node.get(key) if isinstance(node, Mapping) else None


def _value(raw: Any) -> Any:
    return raw


def _unpaired(node: Any, described: bool) -> Any:
    """``node`` with every MVU ``[value, "description"]`` pair replaced by its value."""
    if described and isinstance(node, list) and len(node) == 2 and isinstance(node[1], str):
        node = node[0]
    if isinstance(node, Mapping):
        return {key: _unpaired(value, described) for key, value in node.items()}
    if isinstance(node, list):
        return [_unpaired(item, described) for item in node]
    return node


def _plain(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        text = value or '""'
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, list):
        text = ", ".join(_plain(_value(item)) for item in value) or "[]"
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = safe_text(text)  # values come from the model: no control sequences reach the terminal
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"
