"""Catching up on an imported chat: its old turns read in batches by the ``catch_up`` agent.

A SillyTavern chat imported into a session has its turns' text but none of what a played turn
leaves behind: no summary entries, no state events, no MVU variables. ``catch_up`` reads the
old turns a batch at a time (``plan_batches``: up to ``BATCH_TURNS`` turns and about
``BATCH_TOKENS`` tokens of text each) and answers, per turn, what the analysis would have
answered. ``run_batch`` applies that exactly as a played turn's analysis is applied (code owns
the state): each turn's own MVU update block first (the commands the message carried in
SillyTavern, as ``mvu_step.apply_reply`` applies a writer's), then the proposed events through
``state.engine.apply_events``, the summary entries into the ``SummaryStore``, and the agent's
``mvu_update`` commands through ``update_variables`` only for a turn whose message carried
none (as ``mvu_extract`` is skipped when the writer gave a block). The result is one snapshot
per turn, as if each had been played here.

Nothing here touches the store or the screen: ``play.catch_up`` drives the batches, stores
each batch's snapshots and progress, and shows the progress bar.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from narrative_cli.agents.catch_up import CatchUpReply
from narrative_cli.agents.table import agent as agent_spec
from narrative_cli.context import parts
from narrative_cli.context.blocks import Prompt
from narrative_cli.context.inputs import HistoryTurn, Lang, PromptInputs, SummaryEntry
from narrative_cli.context.router import build_prompt
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.calls import CallRunner
from narrative_cli.pipeline.events import Listener, PipelineEvent
from narrative_cli.pipeline.records import Snapshot
from narrative_cli.pipeline.story import Story
from narrative_cli.pipeline.trace import TraceWriter
from narrative_cli.regex.prompt import prompt_text
from narrative_cli.state.engine import EventRecord, GameState, apply_events, state_summary
from narrative_cli.state.mvu import PatchRecord, mvu_summary
from narrative_cli.state.mvu_commands import has_update
from narrative_cli.state.mvu_update import MvuData, update_variables
from narrative_cli.state.summaries import SummaryStore
from narrative_cli.tokens import estimate_tokens

AGENT = "catch_up"
BATCH_TURNS = 8  # turns per call at most (the reply lists one item per turn)
BATCH_TOKENS = 6000  # about this many tokens of old text per call


@dataclass(frozen=True)
class PastTurn:
    """One imported turn: what the user wrote, the reply's story text and its MVU block."""

    number: int
    user_input: str
    narrative: str
    mvu_block: str = ""


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


def plan_batches(
    turns: Sequence[PastTurn], *, max_turns: int = BATCH_TURNS, max_tokens: int = BATCH_TOKENS
) -> list[list[PastTurn]]:
    """The turns in order, cut into batches of at most ``max_turns`` turns and (unless one
    turn alone is longer) about ``max_tokens`` tokens of text."""
    batches: list[list[PastTurn]] = []
    current: list[PastTurn] = []
    size = 0
    for turn in turns:
        cost = estimate_tokens(turn.user_input) + estimate_tokens(turn.narrative)
        if current and (len(current) >= max_turns or size + cost > max_tokens):
            batches.append(current)
            current, size = [], 0
        current.append(turn)
        size += cost
    if current:
        batches.append(current)
    return batches


def batch_prompt(story: Story, progress: Progress, batch: Sequence[PastTurn]) -> Prompt:
    """The catch_up prompt of one batch, on the state caught up so far."""
    lang: Lang = "zh" if story.lang == "zh" else "en"
    summaries = [SummaryEntry(turn, text) for turn, text in progress.summaries.labelled_entries]
    inputs = PromptInputs(
        card=story.card,
        persona=story.persona,
        lang=lang,
        turn=batch[-1].number,
        summaries=summaries,
        state_summary=_state_text(progress, lang),
        clock=story.clock(),
        rng=random.Random(story.seed),  # macros in the card text draw the same every time
        pick_seed=str(story.seed),
    )
    return build_prompt(AGENT, inputs, past_turns_text(batch, lang))


def past_turns_text(batch: Sequence[PastTurn], lang: str) -> str:
    """The batch as ``<recent_turns>`` shows turns: ``[Turn N] User: …`` / ``[Turn N] AI: …``."""
    turns = [
        HistoryTurn(t.number, prompt_text(t.user_input), prompt_text(t.narrative)) for t in batch
    ]
    return parts.recent_turns(turns, lang).text


def estimate(story: Story, progress: Progress, batches: Sequence[Sequence[PastTurn]]) -> Estimate:
    """Calls and tokens of the whole catch-up: each batch's prompt as it would be built now
    (later ones also carry the summary lines the earlier batches add, about one per turn),
    and the reply limit of each call."""
    spec = agent_spec(AGENT)
    prompt_tokens = 0
    done = 0
    for batch in batches:
        prompt_tokens += batch_prompt(story, progress, batch).tokens + done * 40
        done += len(batch)
    return Estimate(done, len(batches), prompt_tokens, len(batches) * spec.max_tokens)


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
    for turn in batch:
        _apply_turn(story, progress, turn, reply, result)
        result.snapshots[turn.number] = progress.snapshot(turn.number)
    return result


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
    "BatchResult",
    "Estimate",
    "PastTurn",
    "Progress",
    "batch_prompt",
    "estimate",
    "plan_batches",
    "run_batch",
]
