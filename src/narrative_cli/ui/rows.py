"""Tables and lines that hold at any width: ``Packed`` (parts joined by `` · ``, broken between
parts) and ``RowsView`` (a table when it fits, else one block per row). ``ui/render.py``
re-exports them; this module imports nothing of the pipeline, so the author tools'
reports (``inspect``) can use it without loading a story's stages.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from narrative_cli.ui.console import safe_markup
from narrative_cli.ui.safe import safe_text

__all__ = ["WIDE", "Packed", "RowsView", "grid_table", "rows_table"]


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
        table = self.table or grid_table(self.title, self.headers, self.rows)
        width = options.max_width
        # A wide screen draws the table whatever it measures: no measuring pass (a third of
        # drawing ``inspect``'s lore table, which Rich measures again as it draws it).
        if width >= WIDE or _natural_width(console, options, table) <= width:
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


def _natural_width(console: Console, options: ConsoleOptions, table: Table) -> int:
    """The width ``table`` takes when nothing limits it."""
    from rich.measure import Measurement

    return Measurement.get(console, options.update_width(10_000), table).maximum
