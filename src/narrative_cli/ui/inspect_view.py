"""``narrative inspect`` on screen: the report of ``play.inspect`` as Rich panels and tables.

Rich is imported only when the report is rendered, so ``--json`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from narrative_cli.play.inspect import preview

if TYPE_CHECKING:
    from rich.console import Console

ROUTE_STYLES = {"worldinfo1": "bold cyan", "worldinfo2": "cyan", "worldinfo3": "blue",
                "keyword": "green", "outlet": "magenta", "tool": "yellow", "ui": "yellow",
                "initvar": "yellow", "mvu_update": "yellow", "disabled": "dim",
                "unrouted": "red"}


def _plain(*cells: object) -> list[Any]:
    """Cells as Rich ``Text`` so comments like ``[TOOL:x]`` are never read as markup."""
    from rich.text import Text

    from narrative_cli.ui.safe import safe_text

    return [cell if isinstance(cell, Text) else Text(safe_text(str(cell))) for cell in cells]


def _keys_text(row: dict[str, Any]) -> str:
    keys = ", ".join(row["keys"])
    if row["secondary_keys"] and row["selective"]:
        keys += f" + [{', '.join(row['secondary_keys'])}]"
    return preview(keys, 40)


def _flags(row: dict[str, Any]) -> str:
    return ("C" if row["constant"] else "") + ("S" if row["selective"] else "")


def _order(value: object) -> str:
    if value is None:
        return "-"
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _card_view(report: dict[str, Any]) -> Any:
    from rich.panel import Panel
    from rich.table import Table

    card = report["card"]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column()
    grid.add_row(*_plain("spec", f"{card['spec']} ({card['spec_version']})"))
    grid.add_row(*_plain("source", card["source"]))
    grid.add_row(*_plain("language", card["language"]))
    grid.add_row(*_plain("greetings", card["greeting_count"]))
    for key in ("creator", "character_version", "world"):
        if card[key]:
            grid.add_row(*_plain(key.replace("_", " "), card[key]))
    if card["tags"]:
        grid.add_row(*_plain("tags", ", ".join(card["tags"])))
    return Panel(grid, title=_plain(card["name"])[0], expand=False)


def _tokens_view(report: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title="Token estimates", title_justify="left")
    table.add_column("field")
    table.add_column("tokens", justify="right")
    for name, count in report["tokens"].items():
        if count and name != "total":
            table.add_row(*_plain(name, count))
    table.add_row(*_plain("total", report["tokens"]["total"]), style="bold")
    for greeting in report["greetings"]:
        table.add_row(*_plain(f"greeting {greeting['index']}", greeting["tokens"]), style="dim")
    return table


def _lore_view(report: dict[str, Any]) -> Any:
    from rich.table import Table
    from rich.text import Text

    lore = report["lore"]
    books = ", ".join(f"{b['name']} ({b['entries']}{'' if b['used'] else ', not used'})"
                      for b in lore["books"])
    table = Table(title=_plain(f"Lorebook: {books}")[0], title_justify="left")
    several = len(lore["books"]) > 1
    columns = ("book", "uid", "comment", "keys", "pos", "C/S", "order", "route")
    for column in columns[0 if several else 1 :]:
        table.add_column(column, overflow="fold")
    for row in lore["entries"]:
        position = "-" if row["position"] is None else str(row["position"])
        label = row["route"] + (" (disabled)" if row["disabled"] and row["route"] != "disabled"
                                else "")
        route = Text(label, style=ROUTE_STYLES.get(row["route"], ""))
        cells = _plain(preview(row["book"], 16), row["uid"], preview(row["comment"], 30),
                       _keys_text(row), position, _flags(row), _order(row["order"]), route)
        table.add_row(*cells[0 if several else 1 :])
    return table


def _tools_view(report: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title="Tools", title_justify="left")
    for column in ("uid", "name", "type", "trigger", "note"):
        table.add_column(column, overflow="fold")
    for tool in report["tools"]:
        note = tool["problem"] or (f"output_tag {tool['output_tag']}" if "output_tag" in tool
                                   else "")
        table.add_row(*_plain(tool["uid"], tool["name"] or "?", tool["type"] or "?",
                              tool["trigger"] or "?", note),
                      style="red" if tool["problem"] else "")
    return table


def _mvu_lines(report: dict[str, Any]) -> list[str]:
    mvu = report["mvu"]
    lines = []
    if mvu.get("detected"):
        from narrative_cli.state.mvu import mvu_summary  # MVU loads only for an MVU card

        hidden = sum(1 for row in mvu["initvar"] if row["disabled"])
        lines.append(f"MVU detected: {len(mvu['initvar'])} [InitVar] entries ({hidden} disabled; "
                     "MagVarUpdate reads them enabled or not, and they never reach a prompt)")
        lines += [f"MVU problem: {problem}" for problem in mvu["problems"]]
        lines += [f"MVU note: {note}" for note in mvu["notes"]]
        lines.append("MVU variables after greeting 0:")
        lines += ["  " + line for line in mvu_summary(mvu["variables"], "en").splitlines()]
    for row in mvu["initvar"]:
        names = ", ".join(row["variables"][:6]) or "no variables"
        state = " (disabled)" if row["disabled"] else ""
        lines.append(f"[initvar] uid {row['uid']} {row['comment']}{state}: {row['format']}, "
                     f"{names}")
    for row in report["mvu"]["mvu_update"]:
        lines.append(f"[mvu_update] uid {row['uid']} {row['comment']}: {row['tokens']} tokens")
    return lines


def _regex_view(report: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title="Regex scripts", title_justify="left")
    for column in ("name", "find", "placement", "runs here"):
        table.add_column(column, overflow="fold")
    for script in report["regex_scripts"]:
        table.add_row(*_plain(script["name"], preview(script["find_regex"], 40),
                              ",".join(map(str, script["placement"])), script["runs"]))
    return table


def _helper_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for row in report.get("tavern_helper_scripts") or []:
        state = "" if row["enabled"] else " (disabled)"
        buttons = f"; buttons: {', '.join(row['buttons'])}" if row["buttons"] else ""
        lines.append(f"TavernHelper script {row['name']!r}{state}: {row['runs']}{buttons}")
    return lines


def _macro_lines(report: dict[str, Any]) -> list[str]:
    macros = report.get("macros") or {}
    lines = []
    for row in macros.get("templates", []):
        calls = ", ".join(row["calls"]) or "no helper calls"
        if row["error"]:
            state = f"will not run: {row['error']}; its text is left out"
        elif row["unavailable"]:
            state = (f"will fail at {', '.join(row['unavailable'])} (not available in a "
                     "terminal); its text is left out")
        else:
            state = "runs in the sandbox each turn"
        lines.append(f"EJS template in {row['where']}: {calls}; {state}")
    for where in macros.get("special_entries", []):
        lines.append(f"{where}: an ST-Prompt-Template special entry, handled as ordinary lore")
    for row in macros.get("unknown", []):
        lines.append(f"unknown macro {{{{{row['name']}}}}} in {row['where']}: "
                     "not run here, sent as written")
    return lines


def render_inspect(report: dict[str, Any], console: Console | None = None) -> None:
    """Print the inspect report as panels and tables."""
    from narrative_cli.ui.console import console as safe_console

    out = console or safe_console()
    out.print(_card_view(report))
    out.print(_tokens_view(report))
    if report["lore"]["entries"]:
        out.print(_lore_view(report))
        routes = ", ".join(f"{k} {v}" for k, v in sorted(report["lore"]["routes"].items()))
        out.print(f"routes: {routes}", highlight=False, markup=False)
    else:
        out.print("No lorebook entries.", style="dim")
    if report["tools"]:
        out.print(_tools_view(report))
    for line in _mvu_lines(report):
        out.print(line, highlight=False, markup=False)
    if report["regex_scripts"]:
        out.print(_regex_view(report))
    for line in _helper_lines(report):
        out.print(line, highlight=False, markup=False)
    for line in _macro_lines(report):
        out.print(line, highlight=False, markup=False)
    if report["preset"]:
        preset = report["preset"]
        out.print(f"preset {preset['name']}: {preset['enabled']} of {preset['prompts']} "
                  "prompts enabled", highlight=False, markup=False)
