"""Line mode: ``narrative run`` with stdin not a terminal (a pipe, a file, a script).

Each input line is one user turn; a line starting with ``/`` is a slash command, run by the
same dispatcher as the REPL. Blank lines are skipped. Every line is echoed (``> text``) so a
transcript reads like a session.

The exit code tells a script how it went: 0 when every line worked; 1 when a turn failed
and was not repaired by a later successful ``/retry``; 2 when no turn failed but a command
was unknown or had a bad argument; 130 when a turn was cancelled with Ctrl-C (the rest of
the input is not read). When Ctrl-C stopped a reply part-way, the next line answers whether
to keep it (``k`` or an empty line), write it again (``r``) or drop it (``d``, then 130).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text

from narrative_cli.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from narrative_cli.play.commands import ALIASES, Dispatcher, Outcome, parse_command
from narrative_cli.safetext import clean_surrogates
from narrative_cli.ui.console import Consoles


class LineTally:
    """Counts what happened over the lines, for the exit code."""

    def __init__(self) -> None:
        self.failures = 0
        self.usage_errors = 0
        self.cancelled = False

    def add(self, line: str, outcome: Outcome) -> None:
        """Count one handled line."""
        if outcome.cancelled:
            self.cancelled = True
        elif outcome.usage_error:
            self.usage_errors += 1
        elif outcome.failed:
            self.failures += 1
        elif _is_retry(line) and self.failures:
            self.failures -= 1

    @property
    def exit_code(self) -> int:
        if self.cancelled:
            return EXIT_INTERRUPTED
        if self.failures:
            return EXIT_FAILURE
        return EXIT_USAGE if self.usage_errors else EXIT_OK


def _is_retry(line: str) -> bool:
    text = line.strip()
    if not text.startswith("/") or text.startswith("//"):
        return False
    try:
        name, _ = parse_command(text)
    except ValueError:
        return False
    return ALIASES.get(name, name) == "retry"


def run_lines(dispatcher: Dispatcher, lines: Iterable[str], consoles: Consoles) -> int:
    """Handle every line until the input ends or ``/quit``; returns the exit code."""
    tally = LineTally()
    source = iter(lines)

    def ask(question: str) -> str | None:
        """The next input line answers the question (None when the input has ended)."""
        consoles.out.print(Text(question, style="dim"))
        raw = next(source, None)
        if raw is None:
            return None
        answer = clean_surrogates(raw.rstrip("\r\n"))
        consoles.out.print(Text(f"> {answer}", style="user"))
        return answer

    dispatcher.ask = ask
    for raw in source:
        line = clean_surrogates(raw.rstrip("\r\n"))  # bytes that are not UTF-8 become U+FFFD
        if not line.strip():
            continue
        consoles.out.print(Text(f"> {line}", style="user"))
        outcome = dispatcher.handle(line)
        tally.add(line, outcome)
        if outcome.quit or outcome.cancelled:
            break
    return tally.exit_code
