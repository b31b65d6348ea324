"""The garbage collector's pace during a replay: fewer passes over objects that live for the run.

A replay's objects are mostly freed by reference counting; the collector's passes mostly walk
objects that survive them (the modules, the recorded trace's index, the story's state). With
Python's default thresholds (700, 10, 10) a 500-turn replay spent 0.38 s of its 10 s of CPU in
the collector (#17, session seven). So, for the run and its report, what exists when it starts
(the modules) is frozen (``gc.freeze``: passes skip it; unfrozen when the run ends, unless
something was frozen before it, so a process that replays many logs keeps nothing past a run)
and the youngest generation is collected every 5,000 allocations instead of 700. Reference
cycles are still collected, only less often; no result depends on when.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (5_000, 20, 10)


@contextmanager
def replay_pace() -> Iterator[None]:
    """Collect less often while the block runs; the collector as it was afterwards."""
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if not frozen:  # (freezing cannot be undone in part: the command line's start-up
            gc.unfreeze()  # freezes its modules, and the process ends after the replay)
