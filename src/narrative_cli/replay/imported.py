"""Replaying a session that began as an imported SillyTavern chat (issue #17, item 3).

A dump of such a session (``narrative sessions export ID FILE.json``) starts with turns taken
from SillyTavern, never played here, and says how far its catch-up read (``catch_up``). The
replay does what the session did: it stores the imported turns as they were (each with the
fresh snapshot an import gives), runs the catch-up over the same turns with the replay's
backends (with ``--responses``, the recorded catch_up and compaction calls, each batch under
its last turn as the trace files it), and only then plays the turns after them. The same
card, settings, seed and replies reach the same summaries, chapters, state and variables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from narrative_cli.errors import BackendError, TurnCancelled
from narrative_cli.play import catch_up
from narrative_cli.play.controller import PlaySession
from narrative_cli.replay.logs import ReplayLog
from narrative_cli.replay.recorded import RecordedBackend
from narrative_cli.store import catch_up as stored
from narrative_cli.store.chat_import import fresh_snapshots
from narrative_cli.store.sessions import SessionStore


def store_imported(play: PlaySession, log: ReplayLog) -> None:
    """Add the log's imported turns after the greeting, as an import stores them."""
    snapshot_for = fresh_snapshots(play.story.seed, play.story.lang)
    for record in log.imported:
        number = int(record["number"])
        play.store.commit_turn(play.session_id, dict(record), snapshot_for(number))
    play.reload()


def catch_up_pending(store: SessionStore, session_id: int, log: ReplayLog) -> bool:
    """Is part of the session's catch-up still to be replayed (a stored replay whose
    catch-up did not get as far as the log's)?"""
    if not log.catch_up_through:
        return False
    progress = stored.state(store, session_id)
    return progress is None or progress.through < log.catch_up_through


def replay_catch_up(play: PlaySession, log: ReplayLog, recorded: RecordedBackend | None) -> int:
    """Catch up on the imported turns as far as the session did; the turns read. A batch
    that fails fails the log (BackendError, ReplayMismatch); Ctrl-C stops the replay."""
    if not catch_up_pending(play.store, play.session_id, log):
        return 0
    found = catch_up.pending(play, until=log.catch_up_through)
    if found is None:
        return 0
    begin: Callable[[int], None] | None = recorded.begin_turn if recorded is not None else None
    outcome = catch_up.run(play, _Quiet(), found, before_batch=begin)
    if outcome.stopped.startswith("cancelled"):
        raise TurnCancelled()
    if outcome.stopped:
        raise BackendError(f"catch-up stopped after turn {outcome.through}: {outcome.stopped}")
    return outcome.turns


class _Quiet:
    """The replay shows no catch-up screen: its progress is the log's turns."""

    def info(self, text: str) -> None:
        """Nothing shown."""

    def error(self, text: str, hint: str | None = None) -> None:
        """Nothing shown: a stopped catch-up fails the log instead."""

    @contextmanager
    def progress(self, title: str, total: int) -> Iterator[Callable[[int], None]]:
        yield lambda done: None
