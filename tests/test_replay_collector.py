"""``replay.collector``: during a replay the collector skips what existed before it, still
collects what the run makes, and is left as it was found (nothing frozen), so a process that
replays many logs (tests, scripts) keeps no garbage past a run."""

from __future__ import annotations

import gc
import weakref

from narrative_cli.replay.collector import replay_pace


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_the_pace_holds_during_the_run_and_is_undone_after() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    lasting = _Node()
    lasting.other = lasting  # a cycle made before the run: frozen during it
    seen = weakref.ref(lasting)
    with replay_pace():
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() > frozen
        del lasting
        gc.collect()
        assert seen() is not None  # frozen: no pass frees it during the run
        made = _Node()
        made.other = made  # a cycle made during the run is still collected
        gone = weakref.ref(made)
        del made
        gc.collect()
        assert gone() is None
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
    gc.collect()
    assert seen() is None  # unfrozen after the run: collected as usual
