"""``narrative lore test`` rendered: activated entries with route and reason, then rejections."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from narrative_cli.lore.engine import ActivationResult

ROUTE_STYLES = {
    "worldinfo1": "bold cyan",
    "worldinfo2": "cyan",
    "worldinfo3": "blue",
    "keyword": "green",
    "outlet": "magenta",
    "unrouted": "red",
}


def render_lore_test(
    result: ActivationResult,
    problems: list[str],
    console: Console | None = None,
    lang: str | None = None,
) -> None:
    """Print the activated and rejected entries as tables, then the budget line, in ``lang``
    (the caller passes the card's language; None means English)."""
    from rich.table import Table
    from rich.text import Text

    from narrative_cli.i18n import t
    from narrative_cli.lore.notes import note_words
    from narrative_cli.lore.reasons import reason_words
    from narrative_cli.ui.console import console as safe_console
    from narrative_cli.ui.safe import safe_text

    out = console or safe_console(highlight=False)
    for problem in problems:
        shown = safe_text(note_words(problem, lang))
        out.print(Text(t("loretest.warning", lang, problem=shown), style="yellow"))
    if result.activated:
        table = Table(title=t("loretest.activated", lang), title_justify="left")
        for column in ("uid", "comment", "route", "reason"):
            table.add_column(t(f"loretest.col_{column}", lang), overflow="fold")
        for item in result.activated:
            route = Text(item.route, style=ROUTE_STYLES.get(item.route, ""))
            reason = Text(safe_text(reason_words(item.reason, lang)))
            table.add_row(*_cells(item.entry.uid, item.entry.comment), route, reason)
        out.print(table)
    else:
        out.print(Text(t("loretest.none_activated", lang), style="dim"))
    if result.rejected:
        table = Table(title=t("loretest.rejected", lang), title_justify="left")
        for column in ("uid", "comment", "reason"):
            table.add_column(t(f"loretest.col_{column}", lang), overflow="fold")
        for rejection in result.rejected:
            table.add_row(*_cells(rejection.entry.uid, rejection.entry.comment,
                                  reason_words(rejection.reason, lang)))
        out.print(table)
    summary = t("loretest.summary", lang, activated=len(result.activated),
                rejected=len(result.rejected), tokens=result.tokens, budget=result.budget,
                steps=result.steps)
    out.print(Text(summary, style="dim"))


def _cells(*values: object) -> list[Any]:
    """Plain Text cells, so comments like ``[UI]`` are never read as markup."""
    from rich.text import Text

    from narrative_cli.ui.safe import safe_text

    return [Text(safe_text(str(value))) for value in values]
