"""A running turn on screen: the live status line, tool panels as they come, the streamed story.

``TurnView`` is the pipeline listener of one turn, used as a context manager::

    with TurnView(consoles, lang="en", hold=False) as view:
        result = play.play(text, view)

On a terminal that can redraw, a status line (``⠹ Writing · 4.2 s``) sits under the text and
is erased when the turn ends. The story streams as the writer produces it: finished lines are
printed for good, the line being written stays in the live region. With ``hold=True`` (the
card has display regex scripts, which need the whole reply) the text is only previewed live
and printed once, rewritten, when the turn ends. Without a redrawing terminal (line mode, a
pipe, ``TERM=dumb``) text is written as it arrives and there is no status line.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Group, RenderableType
from rich.live import Live
from rich.text import Text

from narrative_cli.agents.table import stage as stage_spec
from narrative_cli.agents.table import streaming_agents
from narrative_cli.pipeline.events import (
    PipelineEvent,
    StageFinished,
    StageStarted,
    TextDelta,
    ToolResultEvent,
    TurnWarning,
)
from narrative_cli.state.mvu_commands import BlockFilter
from narrative_cli.ui.console import Consoles
from narrative_cli.ui.render import tool_panel

WRITERS = streaming_agents()
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PREVIEW_LINES = 6

Clock = Callable[[], float]


def stage_label(stage: str, lang: str) -> str:
    """The stage's name in the story's language (规划 / Planning, …; ``agents.table``)."""
    try:
        return stage_spec(stage).label(lang)
    except KeyError:
        return stage


class StatusLine:
    """``⠹ 写作 · 4.2 s``: the current stage and the time since the turn started."""

    def __init__(self, lang: str, clock: Clock = time.monotonic) -> None:
        self.lang = lang
        self.clock = clock
        self.started = clock()
        self.stages: list[str] = []

    def enter(self, stage: str) -> None:
        self.stages.append(stage)

    def leave(self, stage: str) -> None:
        if stage in self.stages:
            self.stages.reverse()
            self.stages.remove(stage)
            self.stages.reverse()

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def text(self) -> Text:
        """The line as it reads now."""
        elapsed = self.elapsed
        frame = _FRAMES[int(elapsed * 10) % len(_FRAMES)]
        stage = stage_label(self.stages[-1], self.lang) if self.stages else "…"
        return Text(f"{frame} {stage} · {elapsed:.1f} s", style="status")

    def __rich__(self) -> Text:
        return self.text()


class _LiveBody:
    """What the live region shows: the line being written (or a preview), then the status."""

    def __init__(self, view: TurnView) -> None:
        self.view = view

    def __rich__(self) -> RenderableType:
        with self.view.lock:
            pending = self.view.preview()
        parts: list[RenderableType] = [Text(pending)] if pending else []
        parts.append(self.view.status.text())
        return Group(*parts)


class TurnView:
    """The listener of one turn; shows it as it runs (see the module doc)."""

    def __init__(
        self,
        consoles: Consoles,
        lang: str,
        *,
        hold: bool = False,
        clock: Clock = time.monotonic,
    ) -> None:
        self.consoles = consoles
        self.lang = lang
        self.hold = hold
        self.status = StatusLine(lang, clock)
        self.lock = threading.RLock()
        self.streamed = ""  # the story text received, without its MVU update block
        self._blocks = BlockFilter()
        self._pending = ""  # received but not yet printed for good
        self.shown_warnings: list[str] = []
        self._live: Live | None = None
        self._at_line_start = True

    # -- context -----------------------------------------------------------------------------

    def __enter__(self) -> TurnView:
        if self.consoles.live:
            self._live = Live(
                _LiveBody(self),
                console=self.consoles.out,
                refresh_per_second=10,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()
        rest = self._blocks.flush()
        if rest:
            self._text(rest)
        if not self.hold:
            self._finish_stream()

    @property
    def elapsed(self) -> float:
        return self.status.elapsed

    @property
    def printed_story(self) -> bool:
        """True when the story text is already on screen (nothing to print again)."""
        return not self.hold and bool(self.streamed)

    # -- the listener ------------------------------------------------------------------------

    def __call__(self, event: PipelineEvent) -> None:
        with self.lock:
            if isinstance(event, StageStarted):
                self.status.enter(event.stage)
            elif isinstance(event, StageFinished):
                self.status.leave(event.stage)
            elif isinstance(event, TextDelta):
                if event.agent in WRITERS:
                    self._text(event.text)
            elif isinstance(event, ToolResultEvent):
                self._tool(event)
            elif isinstance(event, TurnWarning):
                self.shown_warnings.append(event.message)
                self._print(Text(f"! {event.message}", style="warn"))

    def _text(self, piece: str) -> None:
        piece = self._blocks.feed(piece)
        if not piece:
            return
        self.streamed += piece
        if self.hold:
            return
        if self._live is None:
            self._write(piece)
            return
        self._pending += piece
        if "\n" in self._pending:
            done, self._pending = self._pending.rsplit("\n", 1)
            self._live.console.print(Text(done))

    def _tool(self, event: ToolResultEvent) -> None:
        if event.trigger != "planning" and event.ok:
            return  # post-pipeline outputs are shown in their panel after the turn
        if event.hidden:
            from narrative_cli.ui.dice_view import hidden_panel

            self._print(hidden_panel(self.lang))
            return
        if event.data is not None:
            from narrative_cli.ui.dice_view import dice_panel

            self._print(dice_panel(event.data, self.lang))
            return
        data = {"tool": event.tool, "kind": "", "ok": event.ok, "text": event.text}
        self._print(tool_panel(data, self.lang))

    def show_tool(self, result: dict[str, object]) -> None:
        """Print a tool result panel (dice with their data) above the live region."""
        with self.lock:
            self._print(tool_panel(result, self.lang))

    # -- output ------------------------------------------------------------------------------

    def preview(self) -> str:
        """The text the live region shows above the status line."""
        if not self.hold:
            return self._pending
        lines = self.streamed.splitlines()[-PREVIEW_LINES:]
        return "\n".join(lines)

    def _print(self, renderable: RenderableType) -> None:
        console = self._live.console if self._live is not None else self.consoles.out
        if self._live is None and not self._at_line_start:
            console.file.write("\n")
            self._at_line_start = True
        console.print(renderable)

    def _write(self, piece: str) -> None:
        handle = self.consoles.out.file
        handle.write(piece)
        handle.flush()
        self._at_line_start = piece.endswith("\n")

    def _finish_stream(self) -> None:
        if self._pending:
            self.consoles.out.print(Text(self._pending))
            self._pending = ""
        elif not self._at_line_start:
            self.consoles.out.file.write("\n")
            self.consoles.out.file.flush()
            self._at_line_start = True
