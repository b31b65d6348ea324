"""PlaySession: a Story tied to a SessionStore, one committed turn at a time.

This is the one place that runs turns and saves them; the REPL, line mode and batch replay
all drive it::

    store = SessionStore()                                   # or SessionStore(tmp / "s.db")
    play = PlaySession.open(store, PlayOptions(card="card.png", greeting=1))   # new session
    play = PlaySession.resume(store, "12")                  # or continue session 12
    result = play.play("I light the lamp.", listener)        # run the pipeline, commit
    play.regenerate(listener)    # redo the last turn from snapshot N-1; old output kept as a swipe
    play.swipe(0)                # show swipe 0 of the last turn; the story state follows it
    play.undo()                  # drop the last turn, back to the snapshot before it
    play.branch("what-if")       # copy turns 0..N into a new session and play on there
    play.retry(listener)         # after a failed turn: the same action again
    play.continue_(listener)     # extend the last reply (a new swipe of the same turn)
    play.export("chat.jsonl")    # SillyTavern chat (.jsonl) or a full JSON dump (.json)
    play.set_trace("trace/")     # --trace DIR on (None: off)
    play.set_mode("serial")      # auto | merged | serial | parallel
    play.close()

Embedders that load the story themselves (replay) use ``PlaySession.start(store, story,
backends, name=...)`` with any ``BackendSet``.

Guarantees: a turn is committed in one store transaction only when the pipeline finished.
A backend failure, Ctrl-C (``TurnCancelled``) or an exception leaves the session and the
in-memory story exactly at the last committed turn; the failed action is remembered for
``retry``. A finished turn the store cannot take (disk full, read-only, locked) is kept in
memory (``unsaved``) and ``TurnNotSaved`` says why; ``retry`` stores it once the cause is
gone, ``undo`` drops it. A turn whose analysis failed is stored marked pending, and ``retry``
runs only its analysis. A session is open in one process at a time (``store.locks``).
Only the last turn can be regenerated, swiped or continued (the store refuses
older ones, because later snapshots were built on them).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from narrative_cli.domain import Card
from narrative_cli.domain_chat import AuthorsNote
from narrative_cli.errors import (
    NarrativeError,
    SnapshotMissing,
    StoreError,
    TurnCancelled,
    TurnNotSaved,
    spoken_in,
    worded,
)
from narrative_cli.group.scene_state import with_stored_muting
from narrative_cli.pipeline.accounting import SessionAccount
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.events import Listener
from narrative_cli.pipeline.story import PlayedTurn, Snapshot, Story, TurnRecord, TurnResult
from narrative_cli.pipeline.trace import TraceWriter
from narrative_cli.play.options import PlayOptions
from narrative_cli.play.preflight import preflight
from narrative_cli.play.recovery import Failure, TurnRecovery, Unsaved
from narrative_cli.play.session_controls import SessionControls
from narrative_cli.store.models import LoreRef, StoredTurn
from narrative_cli.store.sessions import SessionStore

Action = Callable[[Listener | None], TurnResult]


@dataclass(frozen=True)
class SwipeInfo:
    """One alternative output of the last turn."""

    index: int
    selected: bool
    narrative: str


class PlaySession(TurnRecovery, SessionControls):
    """A story being played turn by turn, every finished turn committed to the store."""

    def __init__(
        self,
        store: SessionStore,
        story: Story,
        session_id: int,
        backends: BackendSet,
        *,
        trace: TraceWriter | None = None,
        account: SessionAccount | None = None,
        last: TurnResult | None = None,
    ) -> None:
        self.store = store
        self.story = story
        self.session_id = session_id
        self.backends = backends
        self.trace = trace
        self.account = account or SessionAccount()
        self.last = last
        self.previous: Snapshot | None = None  # the snapshot the last turn started from
        self.failure: Failure | None = None
        self.unsaved: Unsaved | None = None
        self.interrupted: Unsaved | None = None  # the reply Ctrl-C cut short (keep/drop)
        self.warnings: list[str] = list(story.problems)
        if backends.settings is not None:  # the lore budget's assumed context, said once
            from narrative_cli.pipeline.lore_budget import fallback_note

            note = fallback_note(story, backends)
            self.warnings += [note] if note else []
        # tries started of each turn, by number (each gets fresh dice): 8 bytes a turn, for a
        # story of thousands (a dict held an entry and a number object each; #17)
        self.tries = array("q")
        self.next_speaker: str | None = None  # a group scene's /next NAME (a member key)
        self.options: PlayOptions | None = None  # the flags it was opened with (/model, /profile)
        self.last_turn_at: datetime | None = None  # when the last model call ended (#17)
        try:
            self._lock = store.lock_session(session_id)  # SessionBusy: open elsewhere
        except StoreError:
            backends.close()
            raise
        story.text_index = store.text_index(session_id)  # recall of anything said (#17)

    def idle_notice(self) -> str:
        """The line to show before the next turn when the pause since the last one outlived
        the provider's prompt cache (that turn pays for cache writes again), or ""."""
        from narrative_cli.play.cache_clock import idle_notice

        return idle_notice(self.last_turn_at, self.story.clock(), self.account.total(),
                           self.story.lang)  # fmt: skip

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        store: SessionStore,
        story: Story,
        backends: BackendSet,
        *,
        name: str | None = None,
        settings: dict[str, Any] | None = None,
        lore: list[LoreRef] | None = None,
        card_hash: str = "",
        trace_dir: str | Path | None = None,
    ) -> PlaySession:
        """A new session at turn 0 (the story's greeting) for an already loaded story."""
        from narrative_cli.play import opening

        session_id = store.create_session(
            name or opening.default_name(story),
            card_path=opening.card_path_of(story),
            card_hash=card_hash,
            snapshot=story.snapshot.to_dict(),
            lore=lore or [],
            settings=settings or {},
            seed=story.seed,
            greeting_index=story.greeting_index,
            greeting=story.greeting_record(),
            character_name=story.card.name,
            user_name=story.persona.name or "User",
        )
        play = cls(store, story, session_id, backends)
        play.set_trace(trace_dir)
        return play

    @classmethod
    def open(
        cls,
        store: SessionStore,
        options: PlayOptions,
        backends: BackendSet | None = None,
        *,
        card: Card | None = None,
    ) -> PlaySession:
        """A new session from a card and the flags of ``narrative run`` (or ``--session NAME``
        resumed when exactly one session has that name and the same card).

        ``card``: ``options.card`` already loaded (the greeting menu read it), not read again.
        """
        from narrative_cli.play import opening

        if options.resume:
            return cls.resume(store, options.resume, options, backends)
        if options.continue_last:
            last = opening.last_session(store, options)
            return cls.resume(store, str(last.id), options, backends)
        options = opening.with_config_preset(options)
        options, notes = opening.with_st_data(options)  # NAME → card, worlds, preset
        existing = opening.named_session(store, options)
        if existing is not None:
            return cls.resume(store, str(existing.id), options, backends)
        story, settings = opening.load_story(options, options.greeting or 0, card=card)
        story.problems += [note for note in notes if note not in story.problems]
        if backends is None:
            with spoken_in(story.lang):  # the card's language, not the locale's (--lang first)
                preflight(settings)  # nothing is stored before the backends can answer
        play = cls.start(
            store,
            story,
            backends or BackendSet.from_settings(settings),
            name=options.session,
            settings=options.session_settings(),
            lore=opening.lore_refs(options.lorebooks),
            card_hash=opening.file_hash(options.card or story.card.path),
            trace_dir=options.trace,
        )
        play.options = options
        return play

    @classmethod
    def resume(
        cls,
        store: SessionStore,
        ref: str,
        options: PlayOptions | None = None,
        backends: BackendSet | None = None,
    ) -> PlaySession:
        """Continue a stored session (by id, or by name when unique) from its last turn."""
        from narrative_cli.play import opening

        info = store.find(ref)
        merged = (options or PlayOptions()).merged_with_session(info.settings, info.card_path)
        if merged.user_name is None and merged.persona is None and info.user_name:
            merged.user_name = info.user_name  # an imported chat goes on under its own user's name
        story, settings = opening.load_story(merged, info.greeting_index, seed=info.seed)
        story.authors_note = AuthorsNote.from_metadata(info.chat_metadata, story.authors_note)
        if story.group is not None:  # /mute and /unmute are kept with the session
            story.group = with_stored_muting(story.group, info.chat_metadata)
        if backends is None:
            with spoken_in(story.lang):
                preflight(settings)
        play = cls(store, story, info.id, backends or BackendSet.from_settings(settings))
        play.options = merged
        play.warnings.extend(opening.changed_files(info, merged))
        play._reload()
        play.set_trace(merged.trace)
        return play

    # -- turns -------------------------------------------------------------------------------

    def play(
        self, user_input: str, listener: Listener | None = None, *, rng_stream: int | None = None
    ) -> TurnResult:
        """Run one turn for ``user_input`` and commit it; the story moves on.

        The first try of a turn continues the snapshot's random numbers; a later try (after
        Ctrl-C, a failure or an undo) draws fresh ones. Replay passes the recorded
        ``rng_stream`` to roll exactly what was rolled."""
        stream = self._next_stream(self.story.snapshot.turn + 1, rng_stream)
        return self._attempt(
            "play", user_input, lambda lst: self._play(user_input, lst, stream), listener
        )

    def regenerate(self, listener: Listener | None = None) -> TurnResult:
        """Redo the last turn from the snapshot before it; the old output stays as a swipe.

        The new swipe rolls fresh dice: its own random stream, recorded with it. In a group
        scene only the last speaker's reply is written again (the plan, the tool results and
        the earlier replies are kept; the analysis runs again on the new text)."""
        number = self._last_number("regenerate")
        user_input = self._played(number).user_input or ""
        swipes = len(self.swipes())
        stream = self._next_stream(number, None, at_least=swipes)
        keep = self._group_turn(number)
        return self._attempt(
            "regenerate",
            user_input,
            lambda lst: self._redo(number, user_input, lst, rng_stream=stream, keep=keep),
            listener,
        )

    def _group_turn(self, number: int) -> TurnRecord | None:
        """Turn ``number``'s record when the last speaker alone can be written again: a group
        turn with a plan (with MVU variables the whole turn is redone, since the earlier
        replies' variable updates are not kept apart)."""
        if self.story.group is None or self.story.uses_mvu:
            return None
        record = TurnRecord.read(self.store.record(self.session_id, number))
        return record if record.speakers and record.plan is not None else None

    def edit(self, user_input: str, listener: Listener | None = None) -> TurnResult:
        """Replace the last turn's input with ``user_input`` and run the turn again from the
        snapshot before it. The new run is a new swipe: the old input and reply stay as the
        swipe before it (``/swipe`` brings them back), so an edit loses nothing."""
        number = self._last_number("edit")
        swipes = len(self.swipes())
        stream = self._next_stream(number, None, at_least=swipes)
        return self._attempt(
            "edit",
            user_input,
            lambda lst: self._redo(number, user_input, lst, rng_stream=stream),
            listener,
        )

    def last_input(self) -> str:
        """The player's line of the last turn ("" at the greeting)."""
        return (self._played(self.turn).user_input or "") if self.turn else ""

    def _next_stream(self, number: int, given: int | None, *, at_least: int = 0) -> int:
        """The random stream of the next try of turn ``number`` (given: replay's choice)."""
        tries = self.tries
        started = tries[number] if number < len(tries) else 0
        stream = given if given is not None else max(started, at_least)
        if number >= len(tries):
            tries.frombytes(bytes(tries.itemsize * (number + 1 - len(tries))))
        tries[number] = max(started, stream + 1)
        return stream

    def continue_(self, listener: Listener | None = None) -> TurnResult:
        """Extend the last reply: the same turn rerun with its text as the start of the new one.

        The turn number does not change; the extended reply is a new swipe of the last turn
        and the state is recomputed from the snapshot before it.
        """
        from narrative_cli.play.continuation import continue_nudge, continued_backends

        number = self._last_number("continue")
        stored = TurnRecord.read(self.store.record(self.session_id, number))
        user_input, so_far = stored.user_input, stored.narrative
        block = stored.mvu_block
        stream = stored.rng_stream  # the same dice as the text it extends

        def action(lst: Listener | None) -> TurnResult:
            nudge = continue_nudge(self.story, so_far)
            extended = continued_backends(self.backends, so_far, self.story.lang, block, nudge)
            return self._redo(number, user_input, lst, backends=extended, rng_stream=stream)

        return self._attempt("continue", user_input, action, listener)

    def edit_reply(self, text: str, listener: Listener | None = None) -> TurnResult:
        """Replace the last reply with the player's ``text`` and analyse it again.

        The turn is rerun from the snapshot before it with the writer answering ``text``
        and the planner its stored plan (the same tools and dice); the analysis, post tools
        and MVU extraction run on the edited text, so the state follows it. The old reply
        stays as the swipe before (``/swipe`` brings it back)."""
        from narrative_cli.errors import BadInput
        from narrative_cli.play.continuation import edited_backends

        number = self._last_number("edit the reply of")
        if not text.strip():
            raise worded(BadInput, "usage.edit_reply")
        stored = TurnRecord.read(self.store.record(self.session_id, number))
        plan = dict(stored.plan.source) if stored.plan is not None else None
        backends = edited_backends(self.backends, text.strip(), stored.mvu_block, plan)

        def action(lst: Listener | None) -> TurnResult:
            return self._redo(
                number, stored.user_input, lst, backends=backends, rng_stream=stored.rng_stream
            )

        return self._attempt("edit_reply", stored.user_input, action, listener)

    def last_reply(self) -> str:
        """The writer's text of the last turn ("" at the greeting)."""
        return (self._played(self.turn).narrative or "") if self.turn else ""

    def _attempt(
        self, kind: str, user_input: str, action: Action, listener: Listener | None
    ) -> TurnResult:
        if self.unsaved is not None:  # the shown turn first: nothing may be built past it
            try:
                self.save_unsaved()
            except TurnNotSaved as error:
                raise StoreError(
                    f"{error.message}; nothing new was played", hint=error.hint
                ) from error
        before = self.story.snapshot
        self.interrupted = None
        try:
            result = action(listener)
        except KeyboardInterrupt:
            self.failure = Failure(kind, user_input, "cancelled")
            raise TurnCancelled("turn cancelled; nothing was saved") from None
        except TurnCancelled as cancelled:
            self.failure = Failure(kind, user_input, "cancelled")
            so_far = self.last.narrative if kind == "continue" and self.last else ""
            start = before if kind == "play" else self._previous_snapshot(self.turn)
            if start is not None:
                self.hold_unfinished(kind, cancelled.partial, start, so_far)
            raise
        except NarrativeError as error:
            if not isinstance(error, StoreError):
                self.failure = Failure(kind, user_input, str(error))
            raise
        return self._finished(kind, result, before)

    def _finished(self, kind: str, result: TurnResult, before: Snapshot) -> TurnResult:
        self.failure = None
        self.last_turn_at = self.story.clock()
        if result.analysis_pending:
            self.failure = Failure("analysis", result.user_input, result.analysis_pending)
        self.previous = before if kind == "play" else self._previous_snapshot(result.number)
        self.last = result
        return result

    def _play(self, user_input: str, listener: Listener | None, stream: int) -> TurnResult:
        from narrative_cli.pipeline.orchestrator import run_turn

        result = run_turn(
            self.story, user_input, self.backends, listener, self.trace, rng_stream=stream,
            next_speaker=self.next_speaker,
        )  # fmt: skip
        self.next_speaker = None  # /next names the member of one turn
        self._store_or_keep("play", result, self.story.snapshot)
        return result

    def _redo(
        self,
        number: int,
        user_input: str,
        listener: Listener | None,
        backends: BackendSet | None = None,
        *,
        rng_stream: int = 0,
        keep: TurnRecord | None = None,
    ) -> TurnResult:
        from narrative_cli.pipeline.orchestrator import run_turn

        base = self._story_before(number)
        result = run_turn(
            base, user_input, backends or self.backends, listener, self.trace,
            rng_stream=rng_stream, keep=keep,
        )  # fmt: skip
        self._store_or_keep("regenerate", result, base.snapshot)
        return result

    def _analysis(self, listener: Listener | None) -> TurnResult:
        """Run only the analysis of the last turn (stored with its analysis pending)."""
        from narrative_cli.pipeline.analysis_retry import retry_analysis

        number = self._last_number("retry the analysis of")
        record = TurnRecord.read(self.store.record(self.session_id, number))
        if not record.analysis_pending:
            raise NarrativeError(f"turn {number} has its analysis; nothing to retry")
        base = self._story_before(number)
        after = self._snapshot(number)
        result = retry_analysis(base, record, after, self.backends, listener, self.trace)
        self._store_or_keep("analysis", result, base.snapshot)
        return result

    def _after_store(self, kind: str, result: TurnResult) -> None:
        """The story follows a stored turn: a new one advances it, a replaced one reloads."""
        if kind == "play":
            self.story.advance(result)
            self.account.add_turn(result.usage)
            self.account.turns = result.number
        else:
            self._reload()

    def _attempt_analysis(self, listener: Listener | None) -> TurnResult:
        """``retry`` of a turn stored with its analysis pending."""
        user_input = self.failure.user_input if self.failure else ""
        return self._attempt("analysis", user_input, self._analysis, listener)

    def _story_before(self, number: int) -> Story:
        """A copy of the story as it was before turn ``number`` (nothing of ours changes)."""
        base = replace(self.story, history=list(self.story.history))
        played = [turn for turn in self._stored_turns() if turn.number < number]
        base.restore(played, self._snapshot(number - 1))
        return base

    # -- moving around -----------------------------------------------------------------------

    def swipes(self) -> list[SwipeInfo]:
        """The outputs of the last turn (turn 0: the greeting), the selected one marked."""
        turns = list(self.store.iter_turns(self.session_id))
        if not turns:
            return []
        last = turns[-1]
        return [
            SwipeInfo(i, i == last.swipe_id, PlayedTurn.from_record(s.record).narrative)
            for i, s in enumerate(last.swipes)
        ]

    def swipe(self, index: int) -> StoredTurn:
        """Select swipe ``index`` of the last turn; the story state follows the chosen swipe."""
        number = self.story.snapshot.turn
        state = self.store.select_swipe(self.session_id, number, index)
        self._reload()
        return state

    def undo(self) -> int:
        """Drop the last turn (a shown but unsaved turn first); returns the turn now last."""
        if self.unsaved is not None:
            self.unsaved = None
            self.failure = None
            self._reload()
            return self.turn
        state = self.store.drop_last_turn(self.session_id)
        self.failure = None
        self._reload()
        return state.number

    def branch(self, name: str | None = None) -> int:
        """Copy turns 0..N into a new session and continue there; returns the new id."""
        info = self.info()
        new_name = name or f"{info.name} (branch at turn {self.story.snapshot.turn})"
        new_id = self.store.branch(self.session_id, self.story.snapshot.turn, new_name)
        lock = self.store.lock_session(new_id)
        self._lock.release()
        self._lock = lock
        self.session_id = new_id
        self.story.text_index = self.store.text_index(new_id)
        if self.trace is not None:
            self.trace.session = str(new_id)
        return new_id

    def reload(self) -> None:
        """Read the session back from the store (after the catch-up rewrote its snapshots)."""
        self._reload()

    def _reload(self) -> None:
        """Rebuild the story's history, snapshot, totals and last result from the store."""
        from narrative_cli.play import opening

        state = self.store.resume(self.session_id)
        self.story.restore(self._stored_turns(), Snapshot.from_dict(state.snapshot))
        self.account = opening.stored_account(self.store, self.session_id)
        self.last = TurnResult.from_record(state.record, state.snapshot) if state.number else None
        self.previous = self._previous_snapshot(state.number)
        last = self.last
        if last is not None and last.analysis_pending:  # resumed, swiped or undone onto a
            # turn whose analysis is still missing
            self.failure = Failure("analysis", last.user_input, last.analysis_pending)
        elif self.failure is not None and self.failure.kind == "analysis":
            self.failure = None

    def _previous_snapshot(self, number: int) -> Snapshot | None:
        """The snapshot turn ``number`` started from; None for turn 0, and for a re-imported
        export, whose earlier turns carry no snapshot (their state was not exported)."""
        if number == 0:
            return None
        try:
            return self._snapshot(number - 1)
        except SnapshotMissing:
            return None

    # -- editing the story ----------------------------------------------------------------

    def delete_messages(self, count: int) -> int:
        """Drop the last ``count`` messages (SillyTavern's ``/del N``); the turn now at.

        A turn is two messages, the player's line and the reply, and is stored whole, so
        ``count`` must be even; the greeting stays."""
        from narrative_cli.errors import BadInput, worded

        if count < 1:
            raise worded(BadInput, "usage.delete_count")
        if count > 2 * self.turn:
            raise worded(BadInput, "usage.delete_too_many", count=count, have=2 * self.turn)
        if count % 2:
            raise worded(BadInput, "usage.delete_split", ("usage.delete_split_hint",
                         {"next": count + 1}), count=count)  # fmt: skip
        for _ in range(count // 2):
            self.store.drop_last_turn(self.session_id)
        self.failure = None
        self._reload()
        return self.turn

    @property
    def turn(self) -> int:
        """The number of the last committed turn (0: only the greeting)."""
        return self.story.snapshot.turn

    def close(self) -> None:
        """Close the backends this session opened and let go of the session."""
        self._lock.release()
        self.backends.close()

    # -- helpers -----------------------------------------------------------------------------

    def _last_number(self, what: str) -> int:
        number = self.story.snapshot.turn
        if number < 1:
            raise NarrativeError(f"nothing to {what}: the story is at its greeting")
        return number

    def _played(self, number: int) -> PlayedTurn:
        return PlayedTurn.from_record(self.store.record(self.session_id, number))

    def _stored_turns(self) -> list[PlayedTurn]:
        """Every stored turn of the session (the selected swipe of each)."""
        return [PlayedTurn.from_record(view.record) for view in self.store.turns(self.session_id)]

    def _snapshot(self, number: int) -> Snapshot:
        return Snapshot.from_dict(self.store.snapshot(self.session_id, number))
