"""Where log lines go: one place sets logging up, when something first logs.

The CLI's root options (``-v``, ``-vv``) choose the level (``configure``); the standard
``logging`` package, with the handler that writes to stderr through the key scrub
(``credentials.ScrubFilter``), is set up only when a logger is first asked for (``logger``) or
a story starts (``ensure``: its backends and libraries may log at any time). A command that
never logs, such as ``inspect`` or ``lore test``, then loads neither ``logging`` nor the scrub's
patterns: about a tenth of their start-up (docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

__all__ = ["configure", "ensure", "logger"]

FORMAT = "%(levelname)s %(name)s: %(message)s"
_WARNING = 30  # logging.WARNING, without importing logging
_pending: list[int] = []  # the level chosen by the CLI, until logging is set up


def configure(verbose: int) -> None:
    """Log at WARNING, INFO (``-v``) or DEBUG (``-vv`` and more), to stderr, scrubbed. Applied
    at once when ``logging`` is already loaded, else when something first logs."""
    _pending[:] = [_WARNING - 10 * min(verbose, 2)]
    if "logging" in sys.modules:
        ensure()


def ensure() -> None:
    """Set logging up now with the level the CLI chose (nothing when it chose none: a library
    caller keeps its own logging set-up)."""
    if not _pending:
        return
    import logging

    from narrative_cli.credentials import ScrubFilter

    level = _pending.pop()
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ScrubFilter())  # no key reaches a log line (credentials.py)
    logging.basicConfig(level=level, format=FORMAT, handlers=[handler])  # as before: a caller's
    # own handlers (pytest's, an embedding program's) are kept


def logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, with the CLI's set-up applied first."""
    import logging

    ensure()
    return logging.getLogger(name)
