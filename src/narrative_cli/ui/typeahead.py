"""Keys typed while a turn runs: kept as the next draft, never echoed over the status line.

Without this, a terminal in its normal (cooked) mode echoes what the player types during a
turn straight over the live status line, and the line (Enter included) waits in the input
queue until the next prompt reads it, which sends it as a turn nobody confirmed.

``TypeAhead(fd).hold()`` wraps a running turn: echo and line editing are off (Ctrl-C still
interrupts: signals stay on), and when the turn ends whatever was typed is read from the
queue. ``take()`` returns it as text for the next prompt's input: Enter became a line break,
Backspace removed the character before it, Ctrl-U cleared the line, escape sequences (arrow
keys) and other control keys are dropped. Nothing is sent until the player presses Enter at
the prompt.
"""

from __future__ import annotations

import os
import re
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_ESCAPES = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|O.|.)?", re.DOTALL)


class TypeAhead:
    """The typed-ahead keys of one terminal (``fd``: its input; None or not a TTY: off)."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd if fd is not None and os.isatty(fd) else None
        self._typed = bytearray()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Keys typed inside the block are not echoed and not sent; ``take`` returns them."""
        if self.fd is None or sys.platform == "win32":
            yield
            return
        import termios

        fd = self.fd
        saved = termios.tcgetattr(fd)
        quiet = termios.tcgetattr(fd)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)  # lflags: no echo, no line editing
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
        try:
            yield
        finally:
            self._drain(fd)
            termios.tcsetattr(fd, termios.TCSANOW, saved)

    def _drain(self, fd: int) -> None:
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            self._typed += chunk

    def take(self) -> str:
        """What was typed since the last ``take``, as a draft for the next input."""
        raw, self._typed = bytes(self._typed), bytearray()
        return draft_text(raw.decode("utf-8", errors="replace"))


def draft_text(typed: str) -> str:
    """Keys as typed → the text they would have left in an input line (see the module doc)."""
    out: list[str] = []
    for char in _ESCAPES.sub("", typed):
        if char in "\r\n":
            out.append("\n")
        elif char in "\x7f\x08":
            if out:
                out.pop()
        elif char == "\x15":  # Ctrl-U
            while out and out[-1] != "\n":
                out.pop()
        elif char == "\t" or char >= " ":
            out.append(char)
    return "".join(out).strip("\n")
