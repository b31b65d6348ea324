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
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from narrative_cli.i18n import t
from narrative_cli.pipeline.accounting import AgentUsage
from narrative_cli.ui.console import safe_markup
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


class Packed:
    """Short parts joined by `` · `` and broken into lines between parts to fit the width
    they are drawn at (the footer, the toolbar-like lines): at 60 columns a part moves to the
    next line whole instead of being wrapped or cut in the middle."""

    def __init__(self, parts: Sequence[str], style: str = "", sep: str = " · ") -> None:
        self.parts = [safe_text(part) for part in parts]
        self.style = style
        self.sep = sep

    def lines(self, width: int) -> list[str]:
        """The parts packed into lines of at most ``width`` cells (0: one line)."""
        from rich.cells import cell_len

        lines: list[str] = []
        for part in self.parts:
            if lines and (not width or cell_len(lines[-1] + self.sep + part) <= width):
                lines[-1] += self.sep + part
            else:
                lines.append(part)
        return lines

    @property
    def plain(self) -> str:
        return self.sep.join(self.parts)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text("\n".join(self.lines(options.max_width)), style=self.style)


def warning_lines(warnings: Sequence[str]) -> Text:
    """Warnings of a turn that went on anyway, one per line."""
    return Text("\n".join(f"! {safe_text(w)}" for w in warnings), style="warn")


def text_panel(title: str, body: str) -> Panel:
    """A titled panel of plain text (state, variables, summaries)."""
    shown = Text(safe_text(body) or "-")
    return Panel(shown, title=safe_markup(title), title_align="left", expand=False)


def rows_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]],
               table: Table | None = None) -> RowsView:
    """A simple table of text rows (lore, tools, swipes, cost, help) that holds at narrow
    widths (``RowsView``); ``table``: the same rows as an already styled table, drawn when it
    fits."""
    return RowsView(title, headers, rows, table)


def grid_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """The rows as a bordered table."""
    table = Table(title=safe_markup(title), title_justify="left")
    for header in headers:
        table.add_column(safe_markup(header), overflow="fold")
    for row in rows:
        table.add_row(*(safe_markup(cell) for cell in row))
    return table


WIDE = 100  # from this many columns a table is always drawn as a table


class RowsView:
    """Rows drawn as a table when it fits (or the terminal is wide), else stacked: each row's
    first cell on its own line, the other cells under it, indented, as ``header value`` parts
    broken between parts (a two-column row shows its second cell alone). At 60 columns a
    seven-column ``/cost`` or the long ``/help`` lines stay readable instead of being folded
    into one-word columns."""

    def __init__(
        self, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]],
        table: Table | None = None,
    ) -> None:
        self.title = title
        self.headers = list(headers)
        self.rows = [list(row) for row in rows]
        self.table = table  # the table as drawn when it fits (styled), else ``grid_table``

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.measure import Measurement

        table = self.table or grid_table(self.title, self.headers, self.rows)
        width = options.max_width
        natural = Measurement.get(console, options.update_width(10_000), table).maximum
        if width >= WIDE or natural <= width:
            yield table
            return
        yield Text(safe_text(self.title), style="table.title")
        for row in self.rows:
            yield from self._stacked(row, width)

    def _stacked(self, row: Sequence[str], width: int) -> Iterator[RenderableType]:
        head, rest = (row[0], row[1:]) if row else ("", [])
        yield Text(safe_text(head), style="bold")
        if len(self.headers) == 2:
            parts = [cell for cell in rest if cell]
        else:
            parts = [f"{label} {cell}" for label, cell in zip(self.headers[1:], rest, strict=False)
                     if cell]  # fmt: skip
        if parts:
            yield Padding(Packed(parts), (0, 0, 0, 2))


