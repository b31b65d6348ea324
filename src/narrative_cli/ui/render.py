"""Renderables of a played story: header, greetings, story text, panels, state diff, footer.

Every function returns a Rich renderable built from plain data, so tests print them to a
fixed-width recording console and read the text. Text from outside (story, card, tools,
state) goes through ``ui.safe.safe_text`` and into ``Text`` or ``safe_markup``, never into
markup: a card field ``[bold red]`` prints as written. Labels are in the story's language
(``zh`` or ``en``).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from narrative_cli.i18n import t
from narrative_cli.pipeline.accounting import AgentUsage
from narrative_cli.ui.console import safe_markup
from narrative_cli.ui.rows import WIDE as WIDE  # re-exported: the views' tables live there
from narrative_cli.ui.rows import Packed as Packed
from narrative_cli.ui.rows import RowsView as RowsView
from narrative_cli.ui.rows import grid_table as grid_table
from narrative_cli.ui.rows import rows_table as rows_table
from narrative_cli.ui.safe import safe_text

if TYPE_CHECKING:
    from narrative_cli.state.engine import EventRecord
    from narrative_cli.state.mvu import PatchRecord


def card_header(
    name: str,
    facts: Sequence[tuple[str, str]],
    problems: Sequence[str] = (),
) -> Panel:
    """The panel shown when a story opens: the character's name and a few facts."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    for label, value in facts:
        table.add_row(safe_markup(label), safe_markup(value))
    body: list[RenderableType] = [table]
    body.extend(Text(f"! {safe_text(problem)}", style="warn") for problem in problems)
    title = Text(safe_text(name), style="title")
    return Panel(Group(*body), title=title, title_align="left", expand=False)


def header_facts(
    lang: str, *, session: str, turn: int, model: str, lore: int, tools: Sequence[str]
) -> list[tuple[str, str]]:
    """The header's rows: session, turn, model, lore and tools."""
    return [
        (t("label.session", lang), session),
        (t("label.turn", lang), str(turn)),
        (t("label.model", lang), model),
        (t("label.lore", lang), str(lore)),
        (t("label.tools", lang), ", ".join(tools) or "-"),
        (t("label.language", lang), lang),
    ]


def greeting_menu(greetings: Sequence[str], lang: str, width: int = 70) -> GreetingMenu:
    """The card's greetings, numbered, each as a one-line preview of at most ``width`` cells
    (fewer on a narrow terminal: the menu never runs past the edge)."""
    return GreetingMenu(greetings, lang, width)


class GreetingMenu:
    """The greeting menu, its previews cut to the width it is drawn at (CJK counted as two
    cells)."""

    def __init__(self, greetings: Sequence[str], lang: str, width: int) -> None:
        self.greetings = list(greetings)
        self.lang = lang
        self.width = width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.cells import set_cell_size

        digits = len(str(max(len(self.greetings) - 1, 0)))
        room = max(min(self.width, options.max_width - digits - 7), 8)  # borders and padding
        table = Table(title=t("label.greetings", self.lang), title_justify="left",
                      show_header=False)  # fmt: skip
        table.add_column(justify="right", style="bold", no_wrap=True, min_width=digits)
        table.add_column(no_wrap=True)
        for index, text in enumerate(self.greetings):
            flat = " ".join(safe_text(text).split())
            if cell_len(flat) > room:
                flat = set_cell_size(flat, room - 1).rstrip() + "…"
            table.add_row(str(index), Text(flat))
        yield table


def preview(text: str, limit: int = 70) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def story_text(text: str, styled: bool = False) -> Text:
    """The story as shown (already through the display regex scripts); ``styled`` (colour on)
    draws actions, speech, bold, code and lists (``ui.story_markup``), else the text as is."""
    if not styled:
        return Text(safe_text(text), style="story")
    from narrative_cli.ui.story_markup import StoryStyler

    return StoryStyler().lines(safe_text(text))


SPEAKER_COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "bright_red")


def speaker_colour(key: str) -> str:
    """A group member's colour: fixed by its key, so it is the same in every session."""
    return SPEAKER_COLOURS[zlib.crc32(key.encode("utf-8")) % len(SPEAKER_COLOURS)]


def speaker_header(name: str, key: str, *, color: bool = True) -> Text:
    """``Name:`` over a group member's reply, bold in the member's colour."""
    style = f"bold {speaker_colour(key)}" if color else ""
    return Text(f"{safe_text(name)}:", style=style)


def roster_panel(rows: Sequence[tuple[str, str, str]], facts: Sequence[tuple[str, str]],
                 lang: str, *, color: bool = True) -> Panel:
    """``/group``: the members (name in colour, key, muted or speaking) and the group's rules."""
    table = Table.grid(padding=(0, 2))
    for _ in range(3):
        table.add_column()
    for name, key, status in rows:
        style = f"bold {speaker_colour(key)}" if color else ""
        table.add_row(Text(safe_text(name), style=style), Text(safe_text(key), style="dim"),
                      Text(safe_text(status), style="dim" if status else ""))
    facts_table = Table.grid(padding=(0, 2))
    facts_table.add_column(style="dim", no_wrap=True)
    facts_table.add_column()
    for label, value in facts:
        facts_table.add_row(safe_markup(label), safe_markup(value))
    title = Text(t("label.group", lang), style="title")
    return Panel(Group(table, facts_table), title=title, title_align="left", expand=False)


def user_line(name: str, text: str) -> Text:
    """The user's input, echoed when a turn is shown again (resume, swipe)."""
    return Text.assemble((f"{safe_text(name)}: ", "user"), (safe_text(text), ""))


def tool_panel(result: Mapping[str, Any], lang: str) -> Panel:
    """A planning tool's result: dice with their verdict in colour, other tools as text."""
    name = str(result.get("tool", "?"))
    ok = bool(result.get("ok"))
    data = result.get("data")
    if result.get("public") is not None:  # a hidden roll: the notice, never the result
        notice = Text(safe_text(str(result["public"])), style="dim italic")
        title = safe_markup(t("label.dice", lang))
        return Panel(notice, title=title, title_align="left", expand=False)
    if result.get("kind") == "dice" and isinstance(data, Mapping):
        title = f"{t('label.dice', lang)} {data.get('expr', '')}".strip()
        style = _dice_style(data)
    else:
        title = f"{t('label.tool', lang)} {name}"
        style = "" if ok else "warn"
    text = safe_text(str(result.get("text", ""))) or ("" if ok else t("label.failed", lang))
    body = Text(text, style=style)
    return Panel(body, title=safe_markup(title), title_align="left", expand=False)


def _dice_style(data: Mapping[str, Any]) -> str:
    critical, success = data.get("critical"), data.get("success")
    if critical is not None:
        return "bold yellow" if critical == "success" else "bold magenta"
    if success is None:
        return ""
    return "bold green" if success else "bold red"


def outputs_panel(outputs: Mapping[str, str], lang: str) -> Panel | None:
    """Post-pipeline tool outputs (a keeper's log, a status block), or None when there are none."""
    parts: list[RenderableType] = []
    for tool, text in outputs.items():
        if text.strip():
            parts.append(Text(safe_text(tool), style="dim"))
            parts.append(Text(safe_text(text.strip())))
    if not parts:
        return None
    return Panel(Group(*parts), title=t("label.outputs", lang), title_align="left", expand=False)


def state_changes(
    changes: Sequence[str],
    rejected_events: Sequence[EventRecord],
    rejected_patches: Sequence[PatchRecord],
    lang: str,
) -> Text:
    """The compact state diff: one line per change; the rejected events folded into one dim
    line (each with its reason in ``/state``), the rejected variable updates into another
    (``/vars``). What the model proposed is never shown as raw JSON here (#18)."""
    text = Text()
    for line in changes:
        text.append(f"  {safe_text(line)}\n")
    if rejected_events:
        text.append(f"  ✗ {rejected_events_line(len(rejected_events), lang)}\n", "rejected")
    if rejected_patches:
        text.append(f"  ✗ {rejected_line(len(rejected_patches), lang)}\n", "rejected")
    if not text.plain:
        text.append(f"  {t('label.no_changes', lang)}\n", style="dim")
    text.rstrip()
    return Text.assemble((f"{t('label.changes', lang)}\n", "title"), text)


def rejected_events_line(count: int, lang: str) -> str:
    """The folded line of a turn's rejected state changes."""
    if count == 1:
        return t("label.rejected_change", lang)
    return t("label.rejected_changes", lang, count=count)


def rejected_line(count: int, lang: str) -> str:
    """The folded line of a turn's rejected variable updates."""
    if count == 1:
        return t("label.rejected_update", lang)
    return t("label.rejected_updates", lang, count=count)


def _params(event: Any) -> Any:
    if isinstance(event, Mapping) and isinstance(event.get("params"), Mapping):
        return event["params"]
    return event


def brief(value: Any, limit: int = 60) -> str:
    """A value on one short line (JSON for anything but text)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return preview(text, limit)


def summary_entries(lines: Sequence[str], lang: str) -> Text:
    """The turn's new summary entry (or entries)."""
    text = Text(f"{t('label.summary', lang)}\n", style="title")
    for line in lines:
        text.append(f"  {safe_text(line)}\n", style="dim")
    text.rstrip()
    return text


def footer(
    usage: AgentUsage,
    lang: str,
    elapsed_s: float | None = None,
    *,
    cost: str = "",
    cache_io: bool = False,
) -> Packed:
    """``calls 5 · tokens 1,234 in / 210 out · cached 40% · $0.0012 · 3.2 s`` (``~`` when
    estimated; the cost only when the turn's models have prices), broken between parts on a
    narrow terminal, never inside one. ``cache_io`` (a provider that bills cache writes, such
    as Anthropic) adds the tokens read from and written to the cache to the share: a write
    costs more than fresh input, so the share alone hides what a turn paid for."""
    mark = "~" if usage.estimated else ""
    seconds = elapsed_s if elapsed_s is not None else usage.latency_ms / 1000
    parts = [
        t("footer.calls", lang, count=usage.calls),
        t("footer.tokens", lang, mark=mark, prompt=f"{usage.prompt_tokens:,}",
          completion=f"{usage.completion_tokens:,}"),
        _cached(usage, lang, cache_io),
        *([t("footer.cost", lang, cost=cost)] if cost else []),
        t("footer.seconds", lang, seconds=f"{seconds:.1f}"),
    ]
    if usage.failed_calls:
        parts.insert(1, t("footer.failed", lang, count=usage.failed_calls))
    return Packed(parts, style="dim")


def _cached(usage: AgentUsage, lang: str, cache_io: bool) -> str:
    """``cached 40%``, or ``cached 40%: 2,000 read, 1,000 written`` with ``cache_io``."""
    share = f"{usage.cache_share:.0%}"
    if not cache_io:
        return t("footer.cached", lang, share=share)
    return t("footer.cache_io", lang, share=share, read=f"{usage.cached_tokens:,}",
             written=f"{usage.cache_write_tokens:,}")  # fmt: skip


def warning_lines(warnings: Sequence[str]) -> Text:
    """Warnings of a turn that went on anyway, one per line."""
    return Text("\n".join(f"! {safe_text(w)}" for w in warnings), style="warn")


def text_panel(title: str, body: str) -> Panel:
    """A titled panel of plain text (state, variables, summaries)."""
    shown = Text(safe_text(body) or "-")
    return Panel(shown, title=safe_markup(title), title_align="left", expand=False)
