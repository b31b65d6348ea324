"""Catch-up of an imported chat, driven for a PlaySession: offer, estimate, run, resume.

A session imported from a SillyTavern chat has its old turns' text but no summary, state or
variables (``store.chat_import``). ``offer`` runs when such a session is opened (first resume
after ``sessions import``): with ``--catch-up`` it runs the catch-up, with ``--no-catch-up``
it records that the player declined, and otherwise it shows what the catch-up would cost and
asks (on a terminal) or says how to run it (``/catchup``, in line mode). ``run`` reads the
turns not yet caught up in batches (``pipeline.catch_up``); after each batch the store keeps
the turns' new snapshots and how far it got (``store.catch_up.save_batch``), so Ctrl-C or a
failed call stops it with every finished batch kept and the next ``/catchup`` goes on from
there. At the end the story continues from the last turn's caught-up snapshot.

Only turns imported from SillyTavern are read (records without our ``mode``), and only while
the last turn is one of them: a turn played here after the import was built on the state
without the catch-up, so catching up under it would leave it inconsistent (undo back to the
import, or branch from it, then ``/catchup``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Protocol

from narrative_cli.agents.table import agent as agent_spec
from narrative_cli.errors import BackendError, BadInput, SnapshotMissing, TurnCancelled
from narrative_cli.i18n import t
from narrative_cli.pipeline.catch_up import (
    Batch,
    Estimate,
    PastTurn,
    Progress,
    Room,
    estimate,
    plan_ahead,
    plan_next,
    room_for,
    run_batch,
)
from narrative_cli.pipeline.events import CallFinished, PipelineEvent
from narrative_cli.pipeline.story import Snapshot, ensure_mvu, initial_snapshot
from narrative_cli.play.controller import PlaySession
from narrative_cli.store import catch_up as stored


class CatchUpScreen(Protocol):
    """What the catch-up shows: messages and a progress bar (``ui.screen.RichScreen``)."""

    def info(self, text: str) -> None: ...
    def error(self, text: str, hint: str | None = None) -> None: ...
    def progress(self, title: str, total: int) -> AbstractContextManager[Callable[[int], None]]:
        """A progress bar of ``total`` steps; the callable sets how many are done."""
        ...


@dataclass(frozen=True)
class Pending:
    """The turns a catch-up would read, in batches planned ahead, and what it would cost."""

    turns: list[PastTurn]
    batches: list[Batch]  # as planned from the start (``run`` plans each again as it goes)
    start: Snapshot  # the state the first batch starts from
    estimate: Estimate
    last_turn: int
    room: Room

    @property
    def first(self) -> int:
        return self.turns[0].number


@dataclass(frozen=True)
class Outcome:
    """What a run did: turns caught up, through which turn, calls, tokens, and why it stopped."""

    turns: int
    through: int
    calls: int
    tokens: int
    finished: bool
    stopped: str = ""  # why it stopped early (Ctrl-C, a backend error)
    warnings: tuple[str, ...] = ()


def _imported(record: dict[str, Any]) -> bool:
    """A turn taken from a SillyTavern chat, never analysed here (we write ``mode``)."""
    return "imported" in record and "mode" not in record


def pending(play: PlaySession, until: int | None = None) -> Pending | None:
    """What is left to catch up on (None: nothing; a session not imported, or done);
    ``until``: only the turns up to it (a replay repeats a catch-up that stopped there)."""
    last = play.store.resume(play.session_id)  # one record: most sessions stop here
    if last.number == 0 or not _imported(last.record):
        return None
    progress = stored.state(play.store, play.session_id)
    through = progress.through if progress is not None else 0
    records = [view.record for view in play.store.turns(play.session_id)]
    turns = [
        PastTurn(
            int(r["number"]),
            str(r.get("user_input") or ""),
            str(r.get("narrative") or ""),
            str(r.get("mvu_block") or ""),
        )
        for r in records
        if int(r.get("number", 0)) > through and _imported(r)
    ]
    last_turn = turns[-1].number if turns else 0
    turns = [turn for turn in turns if until is None or turn.number <= until]
    if not turns:
        return None
    start = _start_snapshot(play, turns[0].number - 1)
    reached = Progress.from_snapshot(start, play.story.lang)
    room = room_for(play.backends)
    batches = plan_ahead(play.story, reached, turns, room)
    fold_reply = play.backends.reply_limit("compaction") or agent_spec("compaction").max_tokens
    cost = estimate(play.story, reached, batches, room, fold_reply)
    return Pending(turns, batches, start, cost, last_turn, room)


def _start_snapshot(play: PlaySession, number: int) -> Snapshot:
    """The snapshot the catch-up starts from: the caught-up one of turn ``number``, or (at the
    greeting, or where an import kept none) the one a new story of this card starts with,
    MVU variables set up from the greeting."""
    store = play.store
    progress = stored.state(store, play.session_id)
    if number > 0 and progress is not None and progress.through >= number:
        try:
            return Snapshot.from_dict(store.snapshot(play.session_id, number))
        except SnapshotMissing:
            pass
    try:
        saved = Snapshot.from_dict(store.snapshot(play.session_id, number))
        rng = saved.rng
    except SnapshotMissing:
        rng = []
    fresh = initial_snapshot(play.story.seed, play.story.lang, play.story.entries)
    fresh = replace(fresh, turn=number, rng=rng or fresh.rng)
    started, _ = ensure_mvu(play.story, fresh)
    return started


def estimate_text(found: Pending, lang: str) -> str:
    """One line: turns, calls and tokens (the replies' limit counted in full)."""
    cost = found.estimate
    return t(
        "catchup.estimate",
        lang,
        turns=cost.turns,
        first=found.first,
        last=found.turns[-1].number,
        calls=cost.calls,
        prompt=cost.prompt_tokens,
        reply=cost.reply_tokens,
    )


def offer(
    play: PlaySession,
    screen: CatchUpScreen,
    choice: bool | None,
    ask: Callable[[str], bool] | None,
) -> Outcome | None:
    """At opening: run, decline or offer the catch-up (``choice`` is --catch-up/--no-catch-up;
    ``ask`` a yes/no question on a terminal, None in line mode). None: nothing was run."""
    try:
        found = pending(play)
    except BadInput as error:  # no room in the model's context: said, the session opens
        screen.error(error.message, hint=error.hint)
        return None
    if found is None:
        return None
    progress = stored.state(play.store, play.session_id)
    if choice is None and progress is not None and progress.status == "declined":
        return None
    lang = play.story.lang
    screen.info(estimate_text(found, lang))
    if choice is None and ask is not None:
        choice = ask(t("catchup.ask", lang))
    if choice is None:
        screen.info(t("catchup.how", lang))
        return None
    if not choice:
        stored.set_status(
            play.store,
            play.session_id,
            "declined",
            through=progress.through if progress else 0,
            last_turn=found.last_turn,
        )
        screen.info(t("catchup.skipped", lang))
        return None
    return run(play, screen, found)


def run(
    play: PlaySession,
    screen: CatchUpScreen,
    found: Pending | None = None,
    *,
    before_batch: Callable[[int], None] | None = None,
) -> Outcome:
    """Catch up on every turn left, a batch at a time (BadInput: nothing to catch up on, or
    no room in the model's context). Each batch is planned on the state reached so far;
    ``before_batch`` hears each batch's last turn first (a recorded replay's turn)."""
    found = found or pending(play)
    if found is None:
        raise BadInput(_nothing_left(play))
    story, lang = play.story, play.story.lang
    progress = Progress.from_snapshot(found.start, lang)
    counter = _Counter()
    warnings: list[str] = []
    done, stopped = 0, ""
    left = list(found.turns)
    with screen.progress(t("catchup.title", lang), len(left)) as advance:
        while left:
            batch = plan_next(story, progress, left, found.room)
            if before_batch is not None:
                before_batch(batch.turns[-1].number)
            try:
                result = run_batch(
                    story, progress, batch.turns, play.backends, listener=counter,
                    trace=play.trace,
                )
            except TurnCancelled:
                stopped = "cancelled (Ctrl-C)"
                break
            except BackendError as error:
                stopped = error.message
                break
            stored.save_batch(
                play.store,
                play.session_id,
                {n: snap.to_dict() for n, snap in result.snapshots.items()},
                last_turn=found.last_turn,
            )
            warnings.extend([*batch.warnings, *result.warnings])
            done += len(batch.turns)
            left = left[len(batch.turns):]
            advance(done)
    play.reload()
    outcome = Outcome(
        done, progress.turn, counter.calls, counter.tokens, not stopped, stopped, tuple(warnings)
    )
    _report(screen, outcome, found, lang)
    return outcome


def _report(screen: CatchUpScreen, outcome: Outcome, found: Pending, lang: str) -> None:
    for warning in outcome.warnings:
        screen.error(warning)
    if outcome.stopped:
        screen.error(
            t(
                "catchup.stopped",
                lang,
                through=outcome.through,
                why=outcome.stopped,
                turns=outcome.turns,
            ),
            hint=t("catchup.stopped_hint", lang),
        )
        return
    screen.info(
        t(
            "catchup.done",
            lang,
            first=found.first,
            through=outcome.through,
            calls=outcome.calls,
            tokens=outcome.tokens,
        )
    )


def _nothing_left(play: PlaySession) -> str:
    lang = play.story.lang
    records = [view.record for view in play.store.turns(play.session_id)]
    if any(_imported(r) for r in records if r.get("number", 0)):
        progress = stored.state(play.store, play.session_id)
        if progress is not None and progress.finished:
            return t("catchup.already", lang)
        return t("catchup.played_on", lang)
    return t("catchup.not_imported", lang)


class _Counter:
    """A listener that counts the catch-up's calls and tokens."""

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    def __call__(self, event: PipelineEvent) -> None:
        if isinstance(event, CallFinished):
            self.calls += 1
            self.tokens += event.prompt_tokens + event.completion_tokens
