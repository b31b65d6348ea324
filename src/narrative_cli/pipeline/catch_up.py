"""Catching up on an imported chat: its old turns read in batches by the ``catch_up`` agent.

A SillyTavern chat imported into a session has its turns' text but none of what a played turn
leaves behind: no summary entries, no state events, no MVU variables. ``catch_up`` reads the
old turns a batch at a time (``pipeline.catch_up_batches``: fitted to the model's context
window when the profile states one) and answers, per turn, what the analysis would have
answered. ``run_batch`` applies that exactly as a played turn's analysis is applied (code owns
the state): each turn's own MVU update block first (the commands the message carried in
SillyTavern, as ``mvu_step.apply_reply`` applies a writer's), then the proposed events through
``state.engine.apply_events``, the summary entries into the ``SummaryStore``, and the agent's
``mvu_update`` commands through ``update_variables`` only for a turn whose message carried
none (as ``mvu_extract`` is skipped when the writer gave a block); its prompt carries the
card's ``[mvu_update]`` rules as mvu_extract's does. After each turn, when the turn after it
would be a cut of the writers' window, the summary block is folded into chapters by the
``compaction`` agent exactly as after a played turn (``pipeline.compaction.fold_down``, the
same ``summary_budget``). The result is one snapshot per turn, as if each had been played here.

Every call goes through a ``CallRunner`` whose turn is the batch's last turn (mode
``catch_up``): traced like any other, and answered again by a recorded replay.

Nothing here touches the store or the screen: ``play.catch_up`` drives the batches, stores
each batch's snapshots and progress, and shows the progress bar.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from narrative_cli.agents.catch_up import CatchUpReply
from narrative_cli.agents.table import WINDOWS
from narrative_cli.context.blocks import Prompt
from narrative_cli.context.expand import apply_macros
from narrative_cli.context.inputs import Lang, PromptInputs
from narrative_cli.context.router import build_prompt
from narrative_cli.errors import BackendError
from narrative_cli.i18n import t
from narrative_cli.lore.settings import LoreSettings
from narrative_cli.lore.stage import mvu_rules_for
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.calls import CallRunner
from narrative_cli.pipeline.catch_up_batches import (
    AGENT,
    SUMMARY_TOKENS_PER_TURN,
    Batch,
    PastTurn,
    PromptOf,
    Room,
    next_batch,
    past_turns_text,
    plan_batches,
    room_for,
)
from narrative_cli.pipeline.compaction import chapter_from, cuts_after, first_shown, fold_down
from narrative_cli.pipeline.events import Listener, PipelineEvent
from narrative_cli.pipeline.records import Snapshot
from narrative_cli.pipeline.story import Story
from narrative_cli.pipeline.trace import TraceWriter
from narrative_cli.pipeline.turn import window_of
from narrative_cli.state.chapters import Chapter, Fold, visible_chapters
from narrative_cli.state.engine import EventRecord, GameState, apply_events, state_summary
from narrative_cli.state.mvu import PatchRecord, mvu_summary
from narrative_cli.state.mvu_commands import has_update
from narrative_cli.state.mvu_update import MvuData, update_variables
from narrative_cli.state.summaries import SummaryStore


@dataclass(frozen=True)
class Estimate:
    """What a catch-up will cost before it runs: calls and tokens (prompt and reply cap)."""

    turns: int
    calls: int
    prompt_tokens: int
    reply_tokens: int  # the replies' limit, not a guess: the most they can cost

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.reply_tokens


@dataclass
class Progress:
    """The state the catch-up has reached (after ``turn``), carried from batch to batch."""

    turn: int
    game: GameState
    mvu: dict[str, Any] | None
    mvu_data: dict[str, Any]
    summaries: SummaryStore
    base: Snapshot  # what the imported snapshot had besides (rng, timed lore, macro variables)

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, lang: str) -> Progress:
        game = GameState.from_dict(snapshot.state) if snapshot.state else GameState.initial(lang)
        return cls(
            turn=snapshot.turn,
            game=game,
            mvu=None if snapshot.mvu is None else dict(snapshot.mvu),
            mvu_data=dict(snapshot.mvu_data),
            summaries=SummaryStore.from_dict(snapshot.summaries or {}, lang),
            base=snapshot,
        )

    def snapshot(self, turn: int) -> Snapshot:
        """The snapshot after ``turn``: the imported one with the caught-up state in it."""
        return replace(
            self.base,
            turn=turn,
            state=self.game.to_dict(),
            mvu=None if self.mvu is None else dict(self.mvu),
            mvu_data=dict(self.mvu_data),
            summaries=self.summaries.to_dict(),
        )


@dataclass
class BatchResult:
    """One batch applied: a snapshot per turn, what was applied and what went wrong."""

    snapshots: dict[int, Snapshot]
    events_applied: list[EventRecord] = field(default_factory=list)
    events_rejected: list[EventRecord] = field(default_factory=list)
    mvu_applied: list[PatchRecord] = field(default_factory=list)
    mvu_rejected: list[PatchRecord] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def batch_prompt(
    story: Story, progress: Progress, batch: Sequence[PastTurn], *, turn: int | None = None
) -> Prompt:
    """The catch_up prompt of one batch, on the state caught up so far (an empty batch: the
    prompt's fixed part, for the batch planner)."""
    number = turn if turn is not None else batch[-1].number if batch else progress.turn + 1
    return build_prompt(AGENT, _inputs(story, progress, number, batch), past_turns_text(
        batch, story.lang))


def _inputs(
    story: Story, progress: Progress, turn: int, batch: Sequence[PastTurn] = ()
) -> PromptInputs:
    """The batch's prompt inputs, macros expanded as a played turn's are."""
    lang: Lang = "zh" if story.lang == "zh" else "en"
    summaries = list(progress.summaries.labelled_entries)
    inputs = PromptInputs(
        card=story.card,
        persona=story.persona,
        lang=lang,
        turn=turn,
        summaries=summaries,
        chapters=list(progress.summaries.chapters),
        state_summary=_state_text(progress, lang),
        mvu_rules=_mvu_rules(story, batch),
        clock=story.clock(),
        rng=random.Random(story.seed),  # macros in the card text draw the same every time
        pick_seed=str(story.seed),
    )
    return apply_macros(inputs)


def _mvu_rules(story: Story, batch: Sequence[PastTurn]) -> list[str]:
    """The card's ``[mvu_update]`` rules the batch's text switches on (an MVU card only)."""
    if not story.uses_mvu:
        return []
    text = "\n".join(part for t in batch for part in (t.user_input, t.narrative) if part)
    return mvu_rules_for(story.entries, LoreSettings.from_dict(story.settings.lore), text)


def estimate(
    story: Story, progress: Progress, batches: Sequence[Batch], room: Room, fold_reply: int
) -> Estimate:
    """Calls and tokens of the whole catch-up: each batch's prompt as it would be built now
    (later ones also carry the summary lines the earlier batches add, about one per turn),
    the compaction calls the summary block will need, and the reply limit of each call
    (``fold_reply``: the compaction agent's)."""
    prompt_tokens = 0
    done = 0
    for batch in batches:
        prompt_tokens += batch_prompt(story, progress, batch.turns).tokens
        prompt_tokens += done * SUMMARY_TOKENS_PER_TURN
        done += len(batch.turns)
    folds, fold_tokens = _fold_estimate(story, progress, [t for b in batches for t in b.turns])
    return Estimate(done, len(batches) + folds, prompt_tokens + fold_tokens,
                    len(batches) * room.reply + folds * fold_reply)


def _fold_estimate(story: Story, progress: Progress, turns: Sequence[PastTurn]) -> tuple[int, int]:
    """The compaction calls the catch-up will make, and their prompt tokens: the played
    story's fold rule run over summary lines of the usual size (each fold's reply a line of
    its length limit), with the real compaction prompt measured for each fold."""
    pipeline = story.settings.pipeline
    if pipeline.summary_budget <= 0:
        return 0, 0
    history = [played.number for played in story.history]
    windows = [window_of(pipeline, w) for w in WINDOWS]
    inputs = _inputs(story, progress, progress.turn + 1)
    line = "word " * (SUMMARY_TOKENS_PER_TURN * 4 // 5)  # about that many tokens
    store, calls, tokens = progress.summaries, 0, 0
    for turn in turns:
        store = store.add(turn.number, [f"{line}{turn.number}"])
        seen = [*history[: bisect_left(history, turn.number)], turn.number]
        if not cuts_after(len(seen), *window_of(pipeline, "writing")):
            continue

        def ask(fold: Fold, after: int = turn.number) -> Chapter:
            nonlocal calls, tokens
            calls += 1
            tokens += build_prompt("compaction", replace(inputs, fold=fold)).tokens
            text = "word " * (fold.limit_tokens * 4 // 5)
            return Chapter(fold.first, fold.last, fold.level, text, shown_from=after + 1)

        store = _visible_only(fold_down(store, first_shown(seen, windows),
                                        pipeline.summary_budget, story.lang, ask))
    return calls, tokens


def _visible_only(store: SummaryStore) -> SummaryStore:
    """The store without what the folds hide: chapters a wider one covers and entries a
    shown chapter covers (neither counts toward the budget again), so the estimate's
    simulation stays small and linear however long the chat."""
    kept = tuple(visible_chapters(store.chapters))
    spans = [(c.first, c.last) for c in kept]
    entries = tuple(e for e in store.entries if not any(a <= e.turn <= b for a, b in spans))
    if len(kept) == len(store.chapters) and len(entries) == len(store.entries):
        return store
    return SummaryStore(store.lang, entries, kept)


def plan_ahead(story: Story, progress: Progress, turns: Sequence[PastTurn], room: Room) -> list[
        Batch]:
    """Every batch planned from the starting state (for the estimate; ``run`` plans each batch
    again with ``plan_next`` from the state reached by then)."""
    budget = story.settings.pipeline.summary_budget
    return plan_batches(turns, _builder(story, progress), room, story.lang, budget=budget)


def plan_next(story: Story, progress: Progress, turns: Sequence[PastTurn], room: Room) -> Batch:
    """The next batch to run, fitted to ``room`` on the state reached so far."""
    return next_batch(turns, _builder(story, progress), room, story.lang)


def _builder(story: Story, progress: Progress) -> PromptOf:
    return lambda batch: batch_prompt(story, progress, batch)


def run_batch(
    story: Story,
    progress: Progress,
    batch: Sequence[PastTurn],
    backends: BackendSet,
    *,
    listener: Listener | None = None,
    trace: TraceWriter | None = None,
) -> BatchResult:
    """Ask catch_up about ``batch`` and apply its answer; ``progress`` moves past the batch.

    A backend error is raised (nothing of the batch is applied, so it can be run again); a
    reply that stays unusable after the corrective retry, or leaves turns out, is a warning and
    those turns keep only their own MVU blocks."""
    calls = CallRunner(
        backends,
        turn=batch[-1].number,
        mode="catch_up",
        lang=story.lang,
        listener=listener or _ignore,
        trace=trace,
    )
    prompt = batch_prompt(story, progress, batch)
    outcome = calls.complete_json(
        AGENT, prompt.messages, cache_breakpoints=prompt.cache_breakpoints
    )
    result = BatchResult({})
    span = f"turns {batch[0].number}-{batch[-1].number}"
    if outcome.value is None:
        result.warnings.append(
            f"catch_up gave nothing usable for {span} ({'; '.join(outcome.errors)}); "
            "those turns have no summary or events"
        )
    elif outcome.errors:
        result.warnings.append(
            f"catch_up reply for {span} partly invalid: " + "; ".join(outcome.errors)
        )
    reply = CatchUpReply.from_json(outcome.value or {})
    missing = [t.number for t in batch if reply.turn(t.number) is None]
    if outcome.value is not None and missing:
        result.warnings.append(
            f"catch_up left out turn(s) {missing}: no summary or events for them"
        )
    history = [played.number for played in story.history]
    for turn in batch:
        _apply_turn(story, progress, turn, reply, result)
        _compact(story, progress, calls, history[: bisect_left(history, turn.number)], result)
        result.snapshots[turn.number] = progress.snapshot(turn.number)
    return result


def _compact(
    story: Story,
    progress: Progress,
    calls: CallRunner,
    before: list[int],
    result: BatchResult,
) -> None:
    """Fold the summary block after turn ``progress.turn`` as a played turn's compaction
    would (``before``: the turns the story had before it): only when the next turn is a cut
    of the writers' window, only what no window shows in full, to the same budget."""
    pipeline = story.settings.pipeline
    number = progress.turn
    turns = [*before, number]
    if pipeline.summary_budget <= 0 or not cuts_after(
        len(turns), *window_of(pipeline, "writing")
    ):
        return
    inputs = _inputs(story, progress, number)

    def ask(fold: Fold) -> Chapter | None:
        what = {"first": fold.first, "last": fold.last}
        prompt = build_prompt("compaction", replace(inputs, fold=fold))
        try:
            outcome = calls.complete_json(
                "compaction", prompt.messages, cache_breakpoints=prompt.cache_breakpoints
            )
        except BackendError as error:
            result.warnings.append(t("compaction.failed", story.lang, error=error, **what))
            return None
        chapter = chapter_from(outcome.value, fold, number + 1)
        if chapter is None:
            result.warnings.append(t("compaction.empty", story.lang, **what))
        return chapter

    boundary = first_shown(turns, [window_of(pipeline, w) for w in WINDOWS])
    progress.summaries = fold_down(
        progress.summaries, boundary, pipeline.summary_budget, story.lang, ask
    )


def _apply_turn(
    story: Story, progress: Progress, turn: PastTurn, reply: CatchUpReply, result: BatchResult
) -> None:
    """One old turn, in the order a played turn applies things."""
    uses_mvu = story.uses_mvu
    if uses_mvu and has_update(turn.mvu_block):
        _apply_mvu(progress, turn.mvu_block, story, result)
    item = reply.turn(turn.number)
    if item is not None:
        applied = apply_events(
            progress.game, item.analysis.events, lang=story.lang, turn=turn.number
        )
        progress.game = applied.state
        result.events_applied.extend(applied.applied)
        result.events_rejected.extend(applied.rejected)
        progress.summaries = progress.summaries.add(
            turn.number, list(item.analysis.summary_entries)
        )
        if uses_mvu and not has_update(turn.mvu_block) and has_update(item.mvu_update):
            _apply_mvu(progress, item.mvu_update, story, result)
    progress.turn = turn.number


def _apply_mvu(progress: Progress, text: str, story: Story, result: BatchResult) -> None:
    user, char = story.names
    data = MvuData.from_parts(progress.mvu, progress.mvu_data)
    update = update_variables(text, data, lang=story.lang, user=user, char=char)
    progress.mvu = update.data.stat_data
    progress.mvu_data = update.data.to_dict()
    result.mvu_applied.extend(update.applied)
    result.mvu_rejected.extend(update.rejected)


def _state_text(progress: Progress, lang: str) -> str:
    """``<state_summary>`` as a played turn builds it: the variables when there are any."""
    if progress.mvu:
        return mvu_summary(progress.mvu, lang)
    return state_summary(progress.game, lang)


def _ignore(event: PipelineEvent) -> None:
    """No listener: the events go nowhere."""


__all__ = [
    "AGENT",
    "Batch",
    "BatchResult",
    "Estimate",
    "PastTurn",
    "Progress",
    "Room",
    "batch_prompt",
    "estimate",
    "plan_ahead",
    "plan_next",
    "room_for",
    "run_batch",
]
