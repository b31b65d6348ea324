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

Streamed text is the model's: it goes through ``ui.safe.StreamCleaner`` (escape sequences may
be split across chunks) before it reaches the screen. The work per chunk is proportional to
the chunk, never to the reply so far: received text is kept as a list of pieces (joined once,
when read), a newline is looked for in the new piece only, and the live region shows at most
the last ``PREVIEW_CHARS`` characters, so a 5 MB reply streams as fast per MB as a small one
(``benchmarks/streaming.py``).
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
from narrative_cli.i18n import t
from narrative_cli.pipeline.events import (
    CallFinished,
    CallRetrying,
    PipelineEvent,
    SpeakerStarted,
    StageFinished,
    StageStarted,
    TextDelta,
    ToolResultEvent,
    TurnWarning,
)
from narrative_cli.state.mvu_commands import BlockFilter
from narrative_cli.ui.console import Consoles
from narrative_cli.ui.render import speaker_header, tool_panel
from narrative_cli.ui.safe import StreamCleaner, safe_text
from narrative_cli.ui.story_markup import StoryStyler

WRITERS = streaming_agents()
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PREVIEW_LINES = 6
PREVIEW_CHARS = 2000  # the most the live region shows of a line still being written

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
        self.note = ""  # a retry in progress: "retry 2/3 · HTTP 500"
        self.speaker = ""  # a group scene: the member the writer writes for now

    def enter(self, stage: str) -> None:
        self.stages.append(stage)

    def leave(self, stage: str) -> None:
        if stage in self.stages:
            last = len(self.stages) - 1 - self.stages[::-1].index(stage)
            self.stages = self.stages[:last] + self.stages[last + 1 :]  # one swap: readers
            # in the refresh thread never see a half-changed list

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def text(self) -> Text:
        """The line as it reads now."""
        elapsed = self.elapsed
        frame = _FRAMES[int(elapsed * 10) % len(_FRAMES)]
        stages = self.stages
        stage = stage_label(stages[-1], self.lang) if stages else "…"
        note = f" · {self.note}" if self.note else ""
        seconds = t("footer.seconds", self.lang, seconds=f"{elapsed:.1f}")
        who = f" · {safe_text(self.speaker)}" if self.speaker and stage_is_writing(stages) else ""
        return Text(f"{frame} {stage}{who} · {seconds}{note}", style="status")

    def __rich__(self) -> Text:
        return self.text()


def stage_is_writing(stages: list[str]) -> bool:
    """Is the running stage the writers' (where a group scene names its speaker)?"""
    return bool(stages) and stages[-1] == stage_spec("writing").name


class _LiveBody:
    """What the live region shows: the line being written (or a preview), then the status.

    Rendered by Live's refresh thread while it holds the console's lock, so it must not take
    the view's lock (the listener holds that one while it prints: a deadlock); it reads the
    view's lists, which the listener only appends to or swaps whole.
    """

    def __init__(self, view: TurnView) -> None:
        self.view = view

    def __rich__(self) -> RenderableType:
        pending = self.view.preview_text()
        parts: list[RenderableType] = [pending] if pending else []
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
        self._blocks = BlockFilter()  # keeps the MVU update block off the screen
        self._pieces: list[str] = []  # the story text received, without its MVU update block
        self._joined = 0  # how many pieces ``streamed`` has joined so far
        self._streamed = ""
        self._pending: list[str] = []  # cleaned, received, not yet printed for good
        self._cleaner = StreamCleaner()
        self._styler = StoryStyler() if consoles.color else None  # role-play markup
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
        rest = self._blocks.flush()
        if rest:
            self._text(rest)  # while the live region still runs: after the pending line
        live, self._live = self._live, None
        if live is not None:
            live.stop()
        if not self.hold:
            self._finish_stream()

    @property
    def elapsed(self) -> float:
        return self.status.elapsed

    @property
    def streamed(self) -> str:
        """All story text received (as the model sent it; the screen shows it cleaned)."""
        if self._joined < len(self._pieces):
            self._streamed = "".join(self._pieces)
            self._pieces = [self._streamed]
            self._joined = 1
        return self._streamed

    @property
    def printed_story(self) -> bool:
        """True when the story text is already on screen (nothing to print again)."""
        return not self.hold and any(self._pieces)

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
            elif isinstance(event, SpeakerStarted):
                self._speaker(event)
            elif isinstance(event, ToolResultEvent):
                self._tool(event)
            elif isinstance(event, CallRetrying):
                self._retrying(event)
            elif isinstance(event, CallFinished):
                self.status.note = ""
            elif isinstance(event, TurnWarning):
                self.shown_warnings.append(event.message)
                self._print(Text(f"! {safe_text(event.message)}", style="warn"))

    def _text(self, raw: str) -> None:
        raw = self._blocks.feed(raw)
        if not raw:
            return
        self._pieces.append(raw)
        if self.hold:
            return
        piece = self._cleaner.feed(raw)
        if self._live is None:
            self._write(piece)
            return
        if "\n" not in piece:
            self._pending.append(piece)
            return
        head, tail = piece.rsplit("\n", 1)
        done = "".join([*self._pending, head])
        self._pending = [tail] if tail else []
        self._live.console.print(self._draw(done))

    def _speaker(self, event: SpeakerStarted) -> None:
        """A group scene's next speaker: end the last one's text, then its coloured name."""
        self.status.speaker = event.name
        if self.hold:
            return
        rest = "".join(self._pending) + self._cleaner.flush()
        self._pending = []
        if rest and self._live is None:
            self._write(rest)
        elif rest and self._live is not None:
            self._live.console.print(self._draw(rest))
        if event.index:
            self._print(Text(""))
        self._print(speaker_header(event.name, event.key, color=self.consoles.color))

    def _retrying(self, event: CallRetrying) -> None:
        """Show a retry: on stderr in line mode, above the live region and in the status."""
        line = retry_line(event, self.lang)
        self.status.note = t("status.retry", self.lang, attempt=event.attempt + 1,
                             attempts=event.attempts)  # fmt: skip
        if self._live is not None:
            self._print(Text(f"! {line}", style="warn"))
            return
        if not self._at_line_start:
            self.consoles.out.file.write("\n")
            self.consoles.out.file.flush()
            self._at_line_start = True
        self.consoles.err.print(Text(f"! {line}", style="warn"))

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
        """The text the live region shows above the status line (its last characters only)."""
        if not self.hold:
            return _tail(self._pending, PREVIEW_CHARS)
        lines = safe_text(_tail(self._pieces, PREVIEW_CHARS)).splitlines()[-PREVIEW_LINES:]
        return "\n".join(lines)

    def preview_text(self) -> Text:
        """The preview, styled like the lines above it (an unclosed marker shows as typed)."""
        pending = self.preview()
        if self._styler is None or self.hold:
            return Text(pending)
        return self._styler.preview(pending)

    def _draw(self, lines: str) -> Text:
        """Finished story lines as printed for good: styled with colour, as written without."""
        return self._styler.lines(lines) if self._styler is not None else Text(lines)

    def _print(self, renderable: RenderableType) -> None:
        console = self._live.console if self._live is not None else self.consoles.out
        if self._live is None and not self._at_line_start:
            console.file.write("\n")
            self._at_line_start = True
        console.print(renderable)

    def _write(self, piece: str) -> None:
        if not piece:
            return
        handle = self.consoles.out.file
        handle.write(piece)
        handle.flush()
        self._at_line_start = piece.endswith("\n")

    def _finish_stream(self) -> None:
        rest = "".join(self._pending) + self._cleaner.flush()
        self._pending = []
        if rest and self._live is None and self.consoles.live is False:
            self._write(rest)
            rest = ""
        if rest:
            self.consoles.out.print(self._draw(rest))
        elif not self._at_line_start:
            self.consoles.out.file.write("\n")
            self.consoles.out.file.flush()
            self._at_line_start = True


def retry_line(event: CallRetrying, lang: str) -> str:
    """``writing: attempt 1/3 failed (reason); retrying in 0.5 s`` in the story's language."""
    reason = safe_text(event.reason)
    agent = stage_label(event.agent, lang)
    return t("status.retry_line", lang, agent=agent, attempt=event.attempt,
             attempts=event.attempts, reason=reason, wait=f"{event.wait_s:.1f}")


def _tail(pieces: list[str], limit: int) -> str:
    """The last ``limit`` characters of the joined ``pieces``, reading only as many as needed."""
    taken: list[str] = []
    size = 0
    for piece in reversed(pieces):
        taken.append(piece)
        size += len(piece)
        if size >= limit:
            break
    return "".join(reversed(taken))[-limit:]
