"""``narrative inspect`` on screen: the report of ``play.inspect`` as Rich panels and tables.

Rich is imported only when the report is rendered, so ``--json`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from narrative_cli.i18n import choose, t
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


def rows_table(title: str, headers: list[str], rows: list[list[str]], table: Any) -> Any:
    """``ui.rows.rows_table``, imported when drawn (``--json`` needs no Rich)."""
    from narrative_cli.ui.rows import rows_table as stacking

    return stacking(title, headers, rows, table)


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


def _card_view(report: dict[str, Any], lang: str) -> Any:
    from rich.panel import Panel
    from rich.table import Table

    card = report["card"]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column()
    grid.add_row(*_plain(t("inspect.spec", lang), f"{card['spec']} ({card['spec_version']})"))
    grid.add_row(*_plain(t("inspect.source", lang), card["source"]))
    grid.add_row(*_plain(t("inspect.language", lang), card["language"]))
    grid.add_row(*_plain(t("inspect.greetings", lang), card["greeting_count"]))
    for key in ("creator", "character_version", "world"):
        if card[key]:
            grid.add_row(*_plain(t(f"inspect.card_{key}", lang), card[key]))
    if card["tags"]:
        grid.add_row(*_plain(t("inspect.tags", lang), ", ".join(card["tags"])))
    return Panel(grid, title=_plain(card["name"])[0], expand=False)


def _tokens_view(report: dict[str, Any], lang: str) -> Any:
    from rich.table import Table

    table = Table(title=t("inspect.token_estimates", lang), title_justify="left")
    table.add_column(t("inspect.col_field", lang))
    table.add_column(t("inspect.col_tokens", lang), justify="right")
    for name, count in report["tokens"].items():
        if count and name != "total":
            table.add_row(*_plain(name, count))
    table.add_row(*_plain(t("inspect.total", lang), report["tokens"]["total"]), style="bold")
    for greeting in report["greetings"]:
        label = t("inspect.greeting_n", lang, index=greeting["index"])
        table.add_row(*_plain(label, greeting["tokens"]), style="dim")
    return table


def _lore_view(report: dict[str, Any], lang: str) -> Any:
    from rich.table import Table
    from rich.text import Text

    lore = report["lore"]
    unused = t("inspect.not_used", lang)
    books = ", ".join(f"{b['name']} ({b['entries']}{'' if b['used'] else unused})"
                      for b in lore["books"])
    title = t("inspect.lorebook", lang, books=books)
    table = Table(title=_plain(title)[0], title_justify="left")
    several = len(lore["books"]) > 1
    columns = ("book", "uid", "comment", "keys", "pos", "C/S", "order", "route")
    headers = [t(f"inspect.col_{column.replace('/', '')}", lang) for column in columns]
    for header in headers[0 if several else 1 :]:
        table.add_column(header, overflow="fold")
    stacked: list[list[str]] = []
    for row in lore["entries"]:
        position = "-" if row["position"] is None else str(row["position"])
        label = row["route"] + (t("inspect.disabled", lang)
                                if row["disabled"] and row["route"] != "disabled" else "")
        route = Text(label, style=ROUTE_STYLES.get(row["route"], ""))
        values = [preview(row["book"], 16), str(row["uid"]), preview(row["comment"], 30),
                  _keys_text(row), position, _flags(row), _order(row["order"])]
        table.add_row(*_plain(*values, route)[0 if several else 1 :])
        stacked.append([f"{values[1]} {values[2]}", label, *values[3:],
                        *(values[:1] if several else [])])  # fmt: skip
    narrow = [headers[2], headers[7], *headers[3:7], *(headers[:1] if several else [])]
    return rows_table(title, narrow, stacked, table)


def _tools_view(report: dict[str, Any], lang: str) -> Any:
    from rich.table import Table

    table = Table(title=t("inspect.tools", lang), title_justify="left")
    headers = [t(f"inspect.col_{column}", lang)
               for column in ("uid", "name", "type", "trigger", "note")]  # fmt: skip
    for header in headers:
        table.add_column(header, overflow="fold")
    stacked: list[list[str]] = []
    for tool in report["tools"]:
        note = tool["problem"] or (f"output_tag {tool['output_tag']}" if "output_tag" in tool
                                   else "")
        values = [str(tool["uid"]), tool["name"] or "?", tool["type"] or "?",
                  tool["trigger"] or "?", note]
        table.add_row(*_plain(*values), style="red" if tool["problem"] else "")
        stacked.append([f"{values[0]} {values[1]}", *values[2:]])
    return rows_table(t("inspect.tools", lang), [headers[1], *headers[2:]], stacked, table)


def _mvu_lines(report: dict[str, Any], lang: str) -> list[str]:
    mvu = report["mvu"]
    lines = []
    if mvu.get("detected"):
        from narrative_cli.state.mvu_text import mvu_summary  # MVU loads only for an MVU card

        hidden = sum(1 for row in mvu["initvar"] if row["disabled"])
        lines.append(t("inspect.mvu_detected", lang, count=len(mvu["initvar"]), hidden=hidden))
        lines += [t("inspect.mvu_problem", lang, problem=problem) for problem in mvu["problems"]]
        lines += [t("inspect.mvu_note", lang, note=note) for note in mvu["notes"]]
        lines.append(t("inspect.mvu_variables", lang))
        lines += ["  " + line for line in mvu_summary(mvu["variables"], lang).splitlines()]
    for row in mvu["initvar"]:
        names = ", ".join(row["variables"][:6]) or t("inspect.no_variables", lang)
        state = t("inspect.disabled", lang) if row["disabled"] else ""
        lines.append(f"[initvar] uid {row['uid']} {row['comment']}{state}: {row['format']}, "
                     f"{names}")
    for row in report["mvu"]["mvu_update"]:
        lines.append(f"[mvu_update] uid {row['uid']} {row['comment']}: "
                     + t("inspect.n_tokens", lang, tokens=row["tokens"]))
    return lines


def _regex_view(report: dict[str, Any], lang: str) -> Any:
    from rich.table import Table

    title = t("inspect.regex_scripts", lang)
    table = Table(title=title, title_justify="left")
    headers = [t(f"inspect.col_{column}", lang)
               for column in ("name", "find", "placement", "runs_here")]  # fmt: skip
    for header in headers:
        table.add_column(header, overflow="fold")
    rows = [[script["name"], preview(script["find_regex"], 40),
             ",".join(map(str, script["placement"])), script["runs"]]
            for script in report["regex_scripts"]]  # fmt: skip
    for row in rows:
        table.add_row(*_plain(*row))
    return rows_table(title, headers, rows, table)


def _helper_lines(report: dict[str, Any], lang: str) -> list[str]:
    lines = []
    for row in report.get("tavern_helper_scripts") or []:
        state = "" if row["enabled"] else t("inspect.disabled", lang)
        buttons = (t("inspect.buttons", lang, buttons=", ".join(row["buttons"]))
                   if row["buttons"] else "")
        lines.append(t("inspect.helper_script", lang, name=repr(row["name"]), state=state,
                       runs=row["runs"], buttons=buttons))
    return lines


def _macro_lines(report: dict[str, Any], lang: str) -> list[str]:
    from narrative_cli.context.macro_scan import where_words  # only with macros to report

    macros = report.get("macros") or {}
    lines = []
    for row in macros.get("templates", []):
        calls = ", ".join(row["calls"]) or t("inspect.no_helper_calls", lang)
        if row["error"]:
            state = t("inspect.ejs_error", lang, error=row["error"])
        elif row["unavailable"]:
            state = t("inspect.ejs_unavailable", lang, calls=", ".join(row["unavailable"]))
        else:
            state = t("inspect.ejs_runs", lang)
        lines.append(t("inspect.ejs_template", lang, where=where_words(row["where"], lang),
                       calls=calls, state=state))
    for where in macros.get("special_entries", []):
        lines.append(t("inspect.special_entry", lang, where=where_words(where, lang)))
    for row in macros.get("unknown", []):
        lines.append(t("inspect.unknown_macro", lang, name=row["name"],
                       where=where_words(row["where"], lang)))
    return lines


def render_inspect(report: dict[str, Any], console: Console | None = None,
                   lang: str | None = None) -> None:
    """Print the inspect report as panels and tables, in ``lang`` (default: the card's
    language, then the locale; ``i18n.choose``)."""
    from narrative_cli.ui.console import console as safe_console

    lang = choose(lang, report["card"].get("language"))
    out = console or safe_console()
    out.print(_card_view(report, lang))
    out.print(_tokens_view(report, lang))
    if report["lore"]["entries"]:
        out.print(_lore_view(report, lang))
        routes = ", ".join(f"{k} {v}" for k, v in sorted(report["lore"]["routes"].items()))
        out.print(t("inspect.routes", lang, routes=routes), highlight=False, markup=False)
    else:
        out.print(t("inspect.no_lore", lang), style="dim")
    if report["tools"]:
        out.print(_tools_view(report, lang))
    _print_lines(out, _mvu_lines(report, lang))
    if report["regex_scripts"]:
        out.print(_regex_view(report, lang))
    lines = _helper_lines(report, lang) + _macro_lines(report, lang)
    if report["preset"]:
        preset = report["preset"]
        lines.append(t("inspect.preset", lang, name=preset["name"], enabled=preset["enabled"],
                       prompts=preset["prompts"]))
    _print_lines(out, lines)


def _print_lines(out: Console, lines: list[str]) -> None:
    """Plain lines in one print: each is wrapped on its own, as printed one by one, without
    Rich's work per print."""
    if lines:
        out.print("\n".join(lines), highlight=False, markup=False)
