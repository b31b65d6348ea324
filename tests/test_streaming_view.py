"""Issue #13 item 19: streaming a reply costs work per chunk, not per reply so far.

Wall-clock figures live in ``benchmarks/streaming.py``; these tests pin the shape: the live
region never renders more than a bounded tail of the text being written, a chunk prints at
most one finished block, and nothing is lost or duplicated on the way.
"""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from narrative_cli.pipeline.events import TextDelta
from narrative_cli.ui.console import THEME, Consoles, SafeConsole, recording_consoles
from narrative_cli.ui.status import PREVIEW_CHARS, TurnView


class CountingConsole(SafeConsole):
    """A forced-terminal console that counts what the view asks it to print."""

    def __init__(self) -> None:
        super().__init__(file=io.StringIO(), theme=THEME, force_terminal=True, width=80,
                         color_system=None)
        self.prints = 0

    def print(self, *objects: Any, **options: Any) -> None:
        if objects and not type(objects[0]).__name__ == "Control":
            self.prints += 1
        super().print(*objects, **options)


def live_view(console: Console) -> TurnView:
    view = TurnView(Consoles(out=console, err=console, color=False, live=True), "en")
    view.__enter__()
    assert view._live is not None
    view._live.auto_refresh = False  # the test decides when the region redraws
    return view


def test_a_long_line_being_written_shows_only_a_bounded_tail() -> None:
    console = CountingConsole()
    view = live_view(console)
    for _ in range(20_000):  # 1 MB without a newline
        view(TextDelta("writing", "y" * 50))
    assert len(view.preview()) == PREVIEW_CHARS
    assert console.prints == 0  # nothing finished yet: nothing printed for good
    view(TextDelta("writing", "end\nnext"))
    assert console.prints == 1
    assert view.preview() == "next"
    view.__exit__(None, None, None)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert out.count("y") >= 1_000_000 and "end" in out and "next" in out


def test_each_chunk_prints_at_most_one_block_whatever_its_newlines() -> None:
    console = CountingConsole()
    view = live_view(console)
    for index in range(500):
        view(TextDelta("writing", f"line {index}\nmore {index}\n"))
    assert console.prints == 500
    view.__exit__(None, None, None)


def test_line_mode_writes_every_character_once_for_a_large_reply() -> None:
    consoles = recording_consoles()
    text = "".join(f"灯塔 line {index} " * 7 + "\n" for index in range(20_000))
    with TurnView(consoles, "en") as view:
        for index in range(0, len(text), 9):
            view(TextDelta("writing", text[index : index + 9]))
    assert consoles.out.file.getvalue() == text  # type: ignore[attr-defined]
    assert view.streamed == text
