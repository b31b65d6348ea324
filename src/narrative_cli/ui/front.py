"""The terminal front end of ``narrative run``: Rich consoles, the REPL or line mode.

``TerminalFront`` implements ``play.launch.Front``. The REPL runs when stdin and stdout are
terminals; otherwise every input line is a turn or a slash command (``ui.lineio``). On a
terminal, a card with alternate greetings asks which one to start with unless
``--greeting N`` chose it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from narrative_cli.play.commands import Dispatcher
from narrative_cli.play.controller import PlaySession
from narrative_cli.ui.console import Consoles, is_terminal, make_consoles
from narrative_cli.ui.screen import RichScreen
from narrative_cli.ui.typeahead import TypeAhead


def _fileno(source: IO[str]) -> int | None:
    try:
        return source.fileno()
    except (AttributeError, OSError, ValueError):
        return None


class TerminalFront:
    """Rich output on ``consoles``, input lines from ``source`` (a TTY gets the REPL)."""

    def __init__(self, consoles: Consoles, source: IO[str]) -> None:
        self.consoles = consoles
        self.source = source
        self.typeahead = TypeAhead(_fileno(source) if self.interactive else None)

    @classmethod
    def create(cls, *, no_color: bool = False, stdin: IO[str] | None = None) -> TerminalFront:
        """The front on this process's stdin/stdout/stderr."""
        return cls(make_consoles(no_color), stdin or sys.stdin)

    @property
    def interactive(self) -> bool:
        return is_terminal(self.source) and is_terminal(self.consoles.out.file)

    def choose_greeting(self, greetings: Sequence[str], lang: str) -> int:
        from narrative_cli.ui.render import greeting_menu
        from narrative_cli.ui.repl import ask_greeting

        self.consoles.out.print(greeting_menu(list(greetings), lang))
        return ask_greeting(len(greetings), lang)

    def confirm(self, question: str) -> bool:
        """Ask ``question``; yes unless the answer starts with n (or 否/不)."""
        answer = self.consoles.out.input(f"{question} [Y/n] ")
        return not answer.strip().lower().startswith(("n", "否", "不"))

    def screen(self, play: PlaySession) -> RichScreen:
        screen = RichScreen.for_play(play, self.consoles)
        screen.typeahead = self.typeahead
        return screen

    def read_lines(self, dispatcher: Dispatcher) -> int:
        if self.interactive:
            from narrative_cli.ui.repl import run_repl

            return run_repl(dispatcher, self.typeahead)
        from narrative_cli.ui.lineio import run_lines

        return run_lines(dispatcher, self.source, self.consoles)
