"""What the slash-command dispatcher needs from a screen, and what a handled line did.

Shared by ``play.commands`` (the dispatcher) and ``play.editing_commands`` (its editing
commands) without either importing the other; ``play.commands`` re-exports the names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from narrative_cli.errors import BackendError
from narrative_cli.i18n import t
from narrative_cli.pipeline.events import PipelineEvent
from narrative_cli.pipeline.story import TurnResult
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.group_play import Roster
from narrative_cli.tools.dice import DiceRoll


class TurnListener(Protocol):
    """The live view of a running turn (a pipeline listener that remembers what it showed)."""

    shown_warnings: list[str]

    @property
    def printed_story(self) -> bool: ...
    @property
    def elapsed(self) -> float: ...
    def __call__(self, event: PipelineEvent) -> None: ...


class Screen(Protocol):
    """Where the dispatcher shows things."""

    def turn(self, prefix: str = "") -> AbstractContextManager[TurnListener]: ...
    def show_turn(
        self, play: PlaySession, result: TurnResult, view: TurnListener, *, summary: bool
    ) -> None: ...
    def show_last(self, play: PlaySession) -> None: ...
    def info(self, text: str) -> None: ...
    def error(self, text: str, hint: str | None = None) -> None: ...
    def panel(self, title: str, body: str) -> None: ...
    def table(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None: ...
    def roll(self, rolled: DiceRoll) -> None: ...
    def dice_ledger(self, rows: Sequence[dict[str, Any]], *, reveal: bool) -> None: ...
    def progress(self, title: str, total: int) -> AbstractContextManager[Callable[[int], None]]:
        ...
    def roster(self, roster: Roster) -> None: ...


@dataclass(frozen=True)
class Outcome:
    """What a handled line did."""

    quit: bool = False
    failed: bool = False  # a turn or command that did not work
    usage_error: bool = False  # an unknown command or a bad argument
    cancelled: bool = False  # Ctrl-C during a turn


def backend_hint(error: BackendError, lang: str = "en") -> str:
    """The provider's own hint, plus ``/retry`` only when a retry can help.

    A refused key, an empty quota, a content filter or a malformed request (401/403/402/400/
    404/422) fails the same way when resent, so ``/retry`` is not offered for them; timeouts,
    dropped connections, rate limits and server errors are transient.
    """
    retry = t("msg.retry_hint", lang)
    hint = error.hint_text(lang)
    if not error.retryable:
        return hint or t("msg.no_retry_hint", lang)
    return f"{hint}; {retry}" if hint else retry
