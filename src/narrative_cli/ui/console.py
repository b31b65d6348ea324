"""The stdout and stderr consoles: colour, width and what a plain terminal can do.

Colour is off with ``--no-color``, with ``NO_COLOR`` set to anything non-empty
(no-color.org), on ``TERM=dumb`` and whenever the stream is not a terminal. The width comes
from the terminal (Rich reads ``COLUMNS`` and the window size), 80 when nothing says; panels
and tables fit that width, while plain text sent to a pipe and error lines are never broken
into extra lines (scripts read them whole). Live redrawing (the status line) needs a real
terminal that is not ``dumb``; elsewhere turns are printed line by line.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape
from rich.segment import Segment
from rich.text import Text
from rich.theme import Theme

from narrative_cli.ui.safe import has_control, safe_text

THEME = Theme(
    {
        "story": "",
        "story.action": "italic",  # *she lifts the lamp* (ui.story_markup)
        "story.speech": "bright_cyan",
        "story.bold": "bold",
        "story.code": "green",
        "story.fence": "dim",
        "story.bullet": "bold",
        "user": "bold cyan",
        "dim": "dim",
        "warn": "yellow",
        "error": "bold red",
        "ok": "green",
        "title": "bold",
        "rejected": "dim strike",
        "status": "cyan",
    }
)


# Rich replaces ``:name:`` (``:name-emoji:``, ``:name-text:``): two colons with no space between.
_EMOJI_CODE = re.compile(r":\S*?:")


class SafeConsole(Console):
    """A Rich console that never lets outside text put a control sequence on the terminal.

    Every segment of printed text goes through ``ui.safe.safe_text``; only control segments
    (the live region's cursor moves) and the styles Rich adds itself carry escape codes.
    Every view prints through one of these (``console()`` for the ad hoc ones).
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not has_control(segment.text):
                yield segment
            else:
                yield Segment(safe_text(segment.text), segment.style, segment.control)

    def render_str(self, text: str, *, emoji: bool | None = None, **options: Any) -> Text:
        """As Rich does, but a text with no ``:code:`` in it is rendered with emoji off: the
        same output, without loading Rich's emoji table (a large module that every table title
        and cell would otherwise load at start-up)."""
        return super().render_str(text, emoji=emoji if _EMOJI_CODE.search(text) else False,
                                  **options)


def safe_markup(text: str) -> str:
    """Outside text for a place Rich reads as markup (titles, table cells): cleaned, escaped."""
    return escape(safe_text(text))


def console(**kwargs: object) -> Console:
    """A ``SafeConsole`` with the given Rich options (views that print on their own)."""
    return SafeConsole(**kwargs)  # type: ignore[arg-type]


@dataclass
class Consoles:
    """Where output goes: ``out`` for the story and panels, ``err`` for errors and warnings."""

    out: Console
    err: Console
    color: bool
    live: bool  # the terminal can redraw a status line in place


def color_wanted(no_color: bool = False) -> bool:
    """False when the flag, ``NO_COLOR`` or a dumb terminal asks for plain output."""
    if no_color or os.environ.get("NO_COLOR", "") != "":
        return False
    return os.environ.get("TERM", "") != "dumb"


def is_terminal(stream: IO[str]) -> bool:
    """True when ``stream`` is an interactive terminal."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def make_consoles(
    no_color: bool = False,
    *,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
    width: int | None = None,
) -> Consoles:
    """Consoles for the real streams (or the ones given), honouring colour and width."""
    out_stream = stdout or sys.stdout
    err_stream = stderr or sys.stderr
    tty = is_terminal(out_stream)
    color = color_wanted(no_color) and tty
    out = _console(out_stream, color, tty, width, soft_wrap=not tty)
    err_tty = is_terminal(err_stream)
    err = _console(err_stream, color and err_tty, err_tty, width, soft_wrap=True)
    live = tty and os.environ.get("TERM", "") != "dumb"
    return Consoles(out=out, err=err, color=color, live=live)


def _console(
    stream: IO[str], color: bool, tty: bool, width: int | None, *, soft_wrap: bool
) -> Console:
    """A console; ``soft_wrap`` leaves long text lines unbroken (errors, text in a pipe)."""
    return SafeConsole(
        file=stream,
        theme=THEME,
        color_system="auto" if color else None,
        no_color=not color,
        force_terminal=tty,
        highlight=False,
        emoji=False,
        width=width or _width(tty),
        soft_wrap=soft_wrap,
    )


def _width(tty: bool) -> int | None:
    """None lets Rich measure a terminal; plain streams use COLUMNS or 80."""
    if tty:
        return None
    try:
        return max(20, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return 80


def recording_consoles(width: int = 80) -> Consoles:
    """Plain, fixed-width consoles that record what they print (tests, captured output)."""
    import io

    def make() -> Console:
        return SafeConsole(
            file=io.StringIO(),
            theme=THEME,
            color_system=None,
            no_color=True,
            force_terminal=False,
            highlight=False,
            emoji=False,
            width=width,
            record=True,
        )

    return Consoles(out=make(), err=make(), color=False, live=False)


def captured(console: Console) -> str:
    """Everything a recording console's stream got so far (printed and streamed text)."""
    getvalue = getattr(console.file, "getvalue", None)
    if callable(getvalue):
        return str(getvalue())
    return console.export_text(clear=False, styles=False)
