"""The console script's entry point: ``narrative`` (and ``python -m narrative_cli``) start here.

Start-up allocates tens of thousands of objects that live as long as the process (Click's and
Rich's modules, our commands) and frees almost no reference cycles, so the garbage collector's
passes over them while the modules load are wasted: about a tenth of ``inspect``'s start-up
(docs/benchmarks.md). It is turned off before anything else is imported, and the root command
turns it back on once the command line is parsed (``app.root``), after freezing what exists then
(``gc.freeze``: later passes skip it), so a long story runs with the collector as usual.
Importing ``cli.app`` directly (tests, ``CliRunner``) leaves the collector alone.
"""

from __future__ import annotations

import gc

gc.disable()

from narrative_cli.cli.app import main  # noqa: E402  (after the collector is off)

__all__ = ["main"]
