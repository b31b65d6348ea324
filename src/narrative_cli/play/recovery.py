"""What a turn leaves behind when it does not end cleanly, and the ways back (``PlaySession``).

Three things can be pending after a turn:

- ``failure``: the action that did not finish (Ctrl-C, a backend error, an analysis that
  failed); ``retry`` tries it again, with fresh dice for a new try.
- ``unsaved``: a finished, shown turn the store refused (disk full, locked); ``retry`` stores
  it once the cause is gone, ``undo`` drops it.
- ``interrupted``: the prose already shown when Ctrl-C came (#18). ``keep_unfinished`` stores
  it as the turn's reply with its analysis pending (``/retry`` analyses it, ``/continue``
  extends it), ``retry`` writes the reply again, ``drop_unfinished`` forgets it.

Kept apart from ``play.controller`` so the controller stays about playing turns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from narrative_cli.errors import NarrativeError, StoreError, TurnNotSaved
from narrative_cli.pipeline.events import Listener
from narrative_cli.pipeline.story import Snapshot, TurnResult

if TYPE_CHECKING:
    from narrative_cli.store.sessions import SessionStore

STORE_KINDS = {"play": "play", "analysis": "analysis"}  # every other kind replaces the turn


@dataclass(frozen=True)
class Failure:
    """A turn that did not finish: what was tried (``play``/``regenerate``/``continue``) and why."""

    kind: str
    user_input: str
    error: str


@dataclass(frozen=True)
class Unsaved:
    """A shown turn not in the store: refused by the store (kept for ``retry``), or cut short
    by Ctrl-C (kept for ``keep_unfinished``)."""

    kind: str  # play | regenerate | edit | continue | analysis
    result: TurnResult
    before: Snapshot  # the snapshot the turn started from


class TurnRecovery:
    """The pending-turn half of ``PlaySession`` (see the module doc)."""

    store: SessionStore
    session_id: int
    failure: Failure | None
    unsaved: Unsaved | None
    interrupted: Unsaved | None

    previous: Snapshot | None

    if TYPE_CHECKING:  # provided by PlaySession

        def play(
            self,
            user_input: str,
            listener: Listener | None = None,
            *,
            rng_stream: int | None = None,
        ) -> TurnResult: ...
        def regenerate(self, listener: Listener | None = None) -> TurnResult: ...
        def continue_(self, listener: Listener | None = None) -> TurnResult: ...
        def edit(self, user_input: str, listener: Listener | None = None) -> TurnResult: ...
        def _attempt_analysis(self, listener: Listener | None) -> TurnResult: ...
        def _finished(self, kind: str, result: TurnResult, before: Snapshot) -> TurnResult: ...
        def _after_store(self, kind: str, result: TurnResult) -> None: ...

    def retry(self, listener: Listener | None = None) -> TurnResult:
        """Try the failed action again (same input); NarrativeError when nothing failed.

        An unsaved turn is stored (no model call); a turn whose analysis is pending gets only
        its analysis run again; an unfinished reply (Ctrl-C) is written again from the start.
        """
        failure = self.failure
        if self.unsaved is not None:
            return self.save_unsaved()
        if failure is None:
            raise NarrativeError("nothing to retry: the last turn did not fail")
        self.interrupted = None
        if failure.kind == "analysis":
            return self._attempt_analysis(listener)
        if failure.kind == "regenerate":
            return self.regenerate(listener)
        if failure.kind == "continue":
            return self.continue_(listener)
        if failure.kind == "edit":
            return self.edit(failure.user_input, listener)
        if failure.kind == "edit_reply":  # the edited text is not kept: ask for it again
            raise NarrativeError(
                "the reply edit did not finish; give /edit --reply again",
                hint="the reply is as it was before the edit",
            )
        return self.play(failure.user_input, listener)

    def save_unsaved(self) -> TurnResult:
        """Store the turn the store refused earlier; TurnNotSaved again if it still cannot."""
        unsaved = self.unsaved
        if unsaved is None:
            raise NarrativeError("nothing to save: every shown turn is stored")
        self._store_or_keep(unsaved.kind, unsaved.result, unsaved.before)
        self.unsaved = None
        self.failure = None
        return self._finished(unsaved.kind, unsaved.result, unsaved.before)

    def hold_unfinished(self, kind: str, partial: object, before: Snapshot, so_far: str) -> None:
        """Remember the turn Ctrl-C cut short (``TurnCancelled.partial``) for the player to
        keep; ``so_far`` is the reply a ``continue`` was extending (its new text follows)."""
        if not isinstance(partial, TurnResult):
            self.interrupted = None
            return
        if so_far.strip():
            partial = replace(partial, narrative=f"{so_far.rstrip()}\n\n{partial.narrative}")
        self.interrupted = Unsaved(kind, partial, before)

    def keep_unfinished(self) -> TurnResult:
        """Store the reply Ctrl-C cut short as the turn's reply, its analysis pending."""
        held = self.interrupted
        if held is None:
            raise NarrativeError("no unfinished reply to keep")
        self.interrupted = None
        self._store_or_keep(held.kind, held.result, held.before)
        return self._finished(held.kind, held.result, held.before)

    def drop_unfinished(self) -> None:
        """Forget the reply Ctrl-C cut short (``/retry`` still writes the turn again)."""
        self.interrupted = None

    def _store_or_keep(self, kind: str, result: TurnResult, before: Snapshot) -> None:
        """Store a finished turn; when the store refuses, keep it in memory and say why."""
        try:
            self._write(kind, result)
        except StoreError as error:
            self.unsaved = Unsaved(kind, result, before)
            self.failure = Failure("save", result.user_input, error.message)
            self.previous = before
            cause = getattr(error, "cause", None) or error.message
            raise TurnNotSaved(
                f"turn {result.number} is shown but NOT saved: {cause}",
                result=result,
                hint="it is kept in memory: fix the cause, then /retry stores it (/undo drops it)",
            ) from error
        self._after_store(kind, result)

    def _write(self, kind: str, result: TurnResult) -> None:
        """The one store transaction of a finished turn (nothing else may fail in between)."""
        record, snapshot = result.to_record(), result.snapshot.to_dict()
        stored = STORE_KINDS.get(kind, "replace")
        if stored == "play":
            self.store.commit_turn(self.session_id, record, snapshot)
        elif stored == "analysis":
            self.store.amend_last_turn(self.session_id, result.number, record, snapshot)
        else:
            self.store.replace_turn(self.session_id, result.number, record, snapshot)
