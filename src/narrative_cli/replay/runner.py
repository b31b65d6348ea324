"""``narrative replay``: play the user turns of chat logs through the pipeline, as sessions.

::

    logs = read_logs(["a.jsonl", "b.jsonl"])
    run = replay_logs(logs, ReplayOptions(PlayOptions(card="card.png"), jobs=2), on_progress)
    run.outcomes[0].status       # done | skipped | failed | cancelled

Each log is played by a ``PlaySession`` started from the card with the log's greeting as
turn 0; every user message is one turn, committed to the session store as it finishes
(atomic, without waiting for the disk; the store is flushed when the log ends). The
model is the configured profile, or with ``responses`` the recorded trace (no model at all;
a prompt that drifted from the recording fails the log with ``ReplayMismatch``).

- ``jobs``: logs played at once, in threads, each with its own store connection; every model
  call of every log first takes a token from one shared ``TokenBucket`` (``rpm`` calls a
  minute; no limit when unset).
- resumable: a log whose stored replay (same key, see ``replay.keys``) has every turn is
  skipped; one that stopped part-way continues at its last committed turn.
- ``trace``: one log traces into the directory itself, several into one sub-directory each
  (named after the log's label), which ``--responses`` reads back.
- seeds: ``--seed`` wins, then the seed our own export recorded, then one derived from the
  log's content; time macros see each message's send date. A replay is thus repeatable.

A log that fails (drift, a backend that gave up, …) is reported and the others go on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from narrative_cli.agents.templates import label
from narrative_cli.config import Settings, load_settings
from narrative_cli.errors import BadInput, NarrativeError
from narrative_cli.pipeline.story import PlayedTurn, Story, TurnRecord
from narrative_cli.pipeline.trace import TraceWriter
from narrative_cli.play import opening
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.options import PlayOptions
from narrative_cli.replay.keys import REPLAY_KEY, find_replay, replay_entry, replay_key
from narrative_cli.replay.keys import settings_hash as compute_settings_hash
from narrative_cli.replay.limiter import TokenBucket
from narrative_cli.replay.logs import ReplayLog
from narrative_cli.replay.recorded import RecordedBackend, Recording, write_context_limits
from narrative_cli.replay.records import StoredRecords
from narrative_cli.replay.sources import backends_for, context_limits
from narrative_cli.store.sessions import SessionStore

DONE, SKIPPED, FAILED, CANCELLED = "done", "skipped", "failed", "cancelled"
FIXED_CLOCK = datetime(2000, 1, 1, 12, 0)  # logs that carry no dates at all


@dataclass
class ReplayOptions:
    """The card and play flags, plus the replay's own: responses, jobs, rate, store."""

    play: PlayOptions
    responses: str | None = None
    jobs: int = 1
    rpm: float | None = None
    store_path: Path | None = None
    bucket: TokenBucket | None = None  # a ready bucket instead of ``rpm`` (tests, embedders)


@dataclass(frozen=True)
class Progress:
    """What a log is doing: ``start``, ``turn`` (``done`` turns of ``total``), then ``done``,
    ``skipped``, ``failed`` or ``cancelled``."""

    label: str
    kind: str
    done: int
    total: int
    message: str = ""


ProgressFn = Callable[[Progress], None]


@dataclass
class LogOutcome:
    """How one log's replay ended, with its stored turn records and final snapshot."""

    log: ReplayLog
    status: str
    session_id: int | None = None
    records: Sequence[TurnRecord] = field(default_factory=list)  # read from the store
    final: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    error_kind: str | None = None  # ReplayMismatch (drift), BackendError, …
    hint: str | None = None
    played: int = 0  # turns played by this run (skipped and resumed turns not counted)
    seed: int | None = None
    seconds: float = 0.0


@dataclass
class ReplayRun:
    """Every log's outcome, in the order the logs were given."""

    outcomes: list[LogOutcome]
    card: str
    card_hash: str
    settings_hash: str
    responses: str | None
    seconds: float = 0.0

    @property
    def failed(self) -> list[LogOutcome]:
        return [o for o in self.outcomes if o.status in (FAILED, CANCELLED)]


@dataclass
class _Shared:
    """What every log's worker reads (and the one thing they share: the bucket)."""

    options: ReplayOptions
    settings: Settings
    card_hash: str
    settings_hash: str  # of the story settings (no trace or response source): for reports
    run_hash: str  # settings_hash plus where responses come from and traces go: for keys
    recording: Recording | None
    bucket: TokenBucket | None
    single: bool
    progress: ProgressFn
    cancel: threading.Event = field(default_factory=threading.Event)


def replay_logs(
    logs: list[ReplayLog], options: ReplayOptions, progress: ProgressFn | None = None
) -> ReplayRun:
    """Replay ``logs``; every outcome is returned, failures included (never raised)."""
    started = time.perf_counter()
    shared = _prepare(logs, options, progress or (lambda event: None))
    if options.jobs <= 1 or len(logs) == 1:
        outcomes = [_replay_one(log, shared) for log in logs]
    else:
        outcomes = _in_threads(logs, shared, options.jobs)
    return ReplayRun(
        outcomes=outcomes,
        card=options.play.card,
        card_hash=shared.card_hash,
        settings_hash=shared.settings_hash,
        responses=options.responses,
        seconds=time.perf_counter() - started,
    )


def _prepare(logs: list[ReplayLog], options: ReplayOptions, progress: ProgressFn) -> _Shared:
    if not options.play.card:
        raise BadInput("no card given: narrative replay LOG... --card CARD")
    if options.jobs < 1:
        raise BadInput(f"--jobs must be 1 or more, not {options.jobs}")
    if options.rpm is not None and options.rpm <= 0:
        raise BadInput(f"--rpm must be above 0, not {options.rpm:g}")
    settings = load_settings(options.play.overrides())
    SessionStore(options.store_path).close()  # create and migrate it once, before the workers
    recording = Recording.load(options.responses) if options.responses else None
    if options.play.trace:
        noted = recording.context_limits if recording is not None else None
        write_context_limits(options.play.trace, noted or context_limits(settings))
    return _Shared(
        options=options,
        settings=settings,
        card_hash=opening.file_hash(options.play.card),
        settings_hash=compute_settings_hash(options.play, settings),
        run_hash=compute_settings_hash(
            options.play, settings, responses=options.responses, trace=options.play.trace
        ),
        recording=recording,
        bucket=options.bucket or (TokenBucket.per_minute(options.rpm) if options.rpm else None),
        single=len(logs) == 1,
        progress=progress,
    )


def _in_threads(logs: list[ReplayLog], shared: _Shared, jobs: int) -> list[LogOutcome]:
    results: dict[int, LogOutcome] = {}
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="replay")
    try:
        futures = {pool.submit(_replay_one, log, shared): i for i, log in enumerate(logs)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
    except BaseException:
        shared.cancel.set()  # workers stop after the turn they are in (it is committed whole)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [results[i] for i in range(len(logs))]


def _replay_one(log: ReplayLog, shared: _Shared) -> LogOutcome:
    started = time.perf_counter()
    store = SessionStore(shared.options.store_path, durable_turns=False)
    try:
        with store.batched() if _batches(shared) else nullcontext():
            outcome = _play_log(log, shared, store)
        store.flush()
    finally:
        store.close()
    outcome.seconds = time.perf_counter() - started
    outcome.seed = log_seed(log, shared.options.play)
    note = outcome.error or ""
    shared.progress(Progress(log.label, outcome.status, len(outcome.records), len(log.turns), note))
    return outcome


def _batches(shared: _Shared) -> bool:
    """Whether a log's turns may join their store transactions (``Database.batched``): only
    when nothing waits between them (recorded responses, no rate limit) and one log plays
    at a time (threads of one process would keep each other out of the database)."""
    return shared.recording is not None and shared.bucket is None and shared.options.jobs <= 1


def _catch_up_pending(store: SessionStore, session_id: int, log: ReplayLog) -> bool:
    """``imported.catch_up_pending``, its module (the catch-up agent's, about 30 ms to import)
    loaded only for a log that has a catch-up to check."""
    if not log.catch_up_through:
        return False
    from narrative_cli.replay.imported import catch_up_pending

    return catch_up_pending(store, session_id, log)


def _play_log(log: ReplayLog, shared: _Shared, store: SessionStore) -> LogOutcome:
    key = replay_key(log, shared.card_hash, shared.run_hash)
    existing = find_replay(store, key)
    total = len(log.turns)
    if existing is not None and existing.last_turn >= total and not _catch_up_pending(
        store, existing.id, log
    ):
        return _outcome(store, log, existing.id, SKIPPED)
    shared.progress(Progress(log.label, "start", existing.last_turn if existing else 0, total))
    try:
        recorded = _recorded_backend(log, shared)
        play = _open(store, log, shared, key, existing.id if existing else None, recorded)
    except NarrativeError as error:
        return LogOutcome(
            log, FAILED, error=error.message, error_kind=type(error).__name__, hint=error.hint
        )
    status, played = DONE, 0
    problem: NarrativeError | None = None
    try:
        if log.imported:  # an imported session's old turns first, on the first one's clock
            moment = turn_clock(log, 0)
            play.story.clock = lambda: moment
            from narrative_cli.replay.imported import replay_catch_up

            replay_catch_up(play, log, recorded)
        for index in range(play.turn, total):
            if shared.cancel.is_set():
                status = CANCELLED
                break
            _play_turn(play, log, index, recorded)
            played += 1
            shared.progress(Progress(log.label, "turn", index + 1, total))
    except NarrativeError as failure:  # Ctrl-C (TurnCancelled) stops the whole replay
        status, problem = FAILED, failure
    finally:
        play.close()
    outcome = _outcome(store, log, play.session_id, status, problem)
    outcome.played = played
    return outcome


def _play_turn(
    play: PlaySession, log: ReplayLog, index: int, recorded: RecordedBackend | None
) -> None:
    moment = turn_clock(log, index)
    play.story.clock = lambda: moment
    if recorded is not None:
        recorded.begin_turn(index + 1)
    turn = log.turns[index]
    play.play(turn.text, rng_stream=turn.rng_stream)


def turn_clock(log: ReplayLog, index: int) -> datetime:
    """The time the turn's message was sent (else the last known time before it)."""
    turns = log.turns
    for at in range(min(index, len(turns) - 1), -1, -1):  # no copy of the log's first turns
        sent = turns[at].sent
        if sent is not None:
            return sent
    return log.started or FIXED_CLOCK


def log_seed(log: ReplayLog, options: PlayOptions) -> int:
    """``--seed``, else the seed the log was exported with, else one from its content."""
    if options.seed is not None:
        return options.seed
    return log.seed if log.seed is not None else log.derived_seed


def log_user_name(log: ReplayLog, options: PlayOptions) -> str | None:
    """``--user-name``; else the log's user when no ``--persona`` names one."""
    if options.user_name or options.persona:
        return options.user_name
    return log.user_name


def _open(
    store: SessionStore,
    log: ReplayLog,
    shared: _Shared,
    key: str,
    existing: int | None,
    recorded: RecordedBackend | None,
) -> PlaySession:
    seed = log_seed(log, shared.options.play)
    options = replace(
        shared.options.play,
        seed=seed,
        user_name=log_user_name(log, shared.options.play),
        trace=None,
        session=None,
        resume=None,
    )
    limits = shared.recording.context_limits if shared.recording is not None else None
    backends = backends_for(shared.settings, shared.bucket, recorded, limits)
    if existing is not None:
        play = PlaySession.resume(store, str(existing), options, backends)
    else:
        story, _ = opening.load_story(options, 0)
        use_log_greeting(story, log)
        settings = {**options.session_settings(), REPLAY_KEY: replay_entry(log, key, seed)}
        play = PlaySession.start(
            store,
            story,
            backends,
            name=f"replay: {log.label}",
            settings=settings,
            lore=opening.lore_refs(options.lorebooks),
            card_hash=shared.card_hash,
        )
        if log.imported:
            from narrative_cli.replay.imported import store_imported

            store_imported(play, log)
    if shared.options.play.trace:
        play.trace = TraceWriter(
            trace_dir(shared.options.play.trace, log, shared.single), log.label
        )
    return play


def use_log_greeting(story: Story, log: ReplayLog) -> None:
    """Turn 0 is the log's greeting (the card's stays when the log starts with the user);
    a group scene's is every greeting before the first user message, under its speaker."""
    if story.group is not None and log.greetings:
        lang = story.lang
        text = "\n\n".join(label(lang, "group.scene_turn", name=name, text=mes.strip())
                           for name, mes in log.greetings if mes.strip())
        story.history = [PlayedTurn(0, None, text)] if text else []
        return
    if log.greeting is not None:
        story.history = [PlayedTurn(0, None, log.greeting)] if log.greeting.strip() else []


def trace_dir(base: str, log: ReplayLog, single: bool) -> Path:
    """Where a log's trace goes: the directory itself for one log, a sub-directory otherwise."""
    return Path(base) if single else Path(base) / log.label.replace("/", "__")


def _recorded_backend(log: ReplayLog, shared: _Shared) -> RecordedBackend | None:
    if shared.recording is None:
        return None
    return RecordedBackend(shared.recording.for_log(log.label, only_log=shared.single), log.label)


def _outcome(
    store: SessionStore,
    log: ReplayLog,
    session_id: int,
    status: str,
    error: NarrativeError | None = None,
) -> LogOutcome:
    last = store.resume(session_id)
    return LogOutcome(
        log=log,
        status=status,
        session_id=session_id,
        records=StoredRecords(store.path, session_id, last.number),
        final=last.snapshot,
        error=error.message if error is not None else None,
        error_kind=type(error).__name__ if error is not None else None,
        hint=error.hint if error is not None else None,
    )
