"""The garbage collector during a replay: its passes skip the objects made before the run.

A replay's objects are mostly freed by reference counting; the collector's passes mostly walk
objects that survive them. With Python's default settings a 500-turn replay spent 0.38 s of
its 10 s of CPU in the collector (#17, session seven), largely in passes over what existed
before the run (the modules, the command line's objects). So, for the run and its report, what
exists when it starts is frozen (``gc.freeze``: passes skip it; unfrozen when the run ends,
unless something was frozen before it, so a process that replays many logs keeps nothing past
a run). The collector's thresholds stay Python's: collecting the youngest generation every
5,000 allocations instead of 700 saved a little more CPU but held 6 MB more at 2,000 turns
(reference cycles wait longer), against the issue's memory target. No result depends on when
the collector runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def replay_pace() -> Iterator[None]:
    """The collector skips what exists now while the block runs."""
    frozen = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not frozen:  # (freezing cannot be undone in part: the command line's start-up
            gc.unfreeze()  # freezes its modules, and the process ends after the replay)
