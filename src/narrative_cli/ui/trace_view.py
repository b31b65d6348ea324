"""``narrative trace show``: each call's prompt block by block, its cache prefix, its usage."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from narrative_cli.i18n import choose, t
from narrative_cli.play.trace_report import CallReport, SharedPrefix
from narrative_cli.ui.console import console as safe_console
from narrative_cli.ui.console import safe_markup
from narrative_cli.ui.safe import safe_text

BAR_WIDTH = 20


def share_bar(share: float, width: int = BAR_WIDTH) -> str:
    """A bar of ``width`` cells filled in proportion to ``share`` (0..1)."""
    filled = round(max(0.0, min(1.0, share)) * width)
    return "█" * filled + "·" * (width - filled)


def call_title(report: CallReport, lang: str = "en") -> Text:
    """``turn 1 · planning (attempt 1) · serial · model m``."""
    parts = [t("trace.turn", lang, turn=report.turn),
             t("trace.attempt", lang, agent=report.agent, attempt=report.attempt)]
    if report.mode:
        parts.append(report.mode)
    if report.model:
        parts.append(t("trace.model", lang, model=report.model))
    return Text(safe_text(" · ".join(parts)), style="title")


def usage_line(report: CallReport, lang: str = "en") -> Text:
    """Reported usage next to our estimate, and the latency (or the error)."""
    usage = report.usage
    prompt, cached = usage.get("prompt_tokens", 0), usage.get("cached_tokens", 0)
    share = f" ({cached / prompt:.0%})" if prompt else ""
    line = t("trace.usage", lang, prompt=f"{prompt:,}", cached=f"{cached:,}", share=share,
             completion=f"{usage.get('completion_tokens', 0):,}",
             estimated=f"{report.estimated_tokens:,}", ms=f"{report.latency_ms:,.0f}")
    text = Text(line, style="dim")
    if report.error:
        text.append("\n" + t("trace.error", lang, error=safe_text(report.error)), style="error")
    return text


def prefix_line(prefix: SharedPrefix | None, lang: str = "en") -> Text:
    """Where the prefix shared with the same agent's previous call ends."""
    if prefix is None:
        return Text(t("trace.first_call", lang), style="dim")
    if prefix.message < 0:
        where = t("trace.whole_prompt", lang)
    else:
        where = t("trace.up_to", lang, message=prefix.message, block=prefix.block)
    return Text(
        t("trace.shared", lang, turn=prefix.previous_turn, tokens=f"{prefix.tokens:,}",
          share=f"{prefix.share:.0%}", where=where),
        style="status",
    )


def blocks_table(report: CallReport, lang: str = "en") -> Table:
    """One row per block; the row where the shared prefix ends is marked ``◀ prefix ends``."""
    table = Table(show_edge=False, pad_edge=False, box=None, padding=(0, 1))
    for header in ("msg", "role", "block", "tokens", "share", "", ""):
        right = header in ("msg", "tokens", "share")
        title = t(f"trace.col_{header}", lang) if header else ""
        table.add_column(title, justify="right" if right else "left", no_wrap=True)
    boundary = _boundary(report)
    for index, block in enumerate(report.blocks):
        mark = t("trace.prefix_ends", lang) if index == boundary else ""
        style = "dim" if boundary is not None and index > boundary else ""
        table.add_row(
            str(block.message),
            safe_markup(block.role),
            safe_markup(f"<{block.name}>" if block.name != "text" else "text"),
            f"{block.tokens:,}",
            f"{block.share:.0%}",
            share_bar(block.share),
            mark,
            style=style,
        )
    return table


def _boundary(report: CallReport) -> int | None:
    prefix = report.prefix
    if prefix is None or prefix.message < 0:
        return None
    for index, block in enumerate(report.blocks):
        if block.message == prefix.message and block.name == prefix.block:
            return index
    return None


def call_view(report: CallReport, lang: str = "en") -> Group:
    """Everything shown for one call."""
    return Group(call_title(report, lang), usage_line(report, lang),
                 prefix_line(report.prefix, lang), blocks_table(report, lang), Text(""))


def print_trace(
    reports: Sequence[CallReport], directory: str, console: Console | None = None,
    lang: str | None = None,
) -> None:
    """Print every call report, grouped by turn, in ``lang`` (default: the locale)."""
    lang = choose(lang)
    out = console or safe_console(highlight=False)
    if not reports:
        out.print(safe_markup(t("trace.no_calls", lang, directory=directory)))
        return
    turn = None
    for report in reports:
        if report.turn != turn:
            turn = report.turn
            out.rule(safe_markup(t("trace.turn", lang, turn=turn)))
        out.print(call_view(report, lang))
