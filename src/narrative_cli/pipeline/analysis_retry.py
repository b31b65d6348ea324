"""``/retry`` after a turn stored with its analysis pending: run only the analysis.

The turn's story text, tools and MVU updates are already stored; only its state events and
summary entries are missing. This rebuilds the analysis prompt from the story as it was
before the turn (the same summaries, state and input the first try saw), makes the call
(with its corrective retry), applies the events to the stored snapshot's game state, adds the
summary entries, and returns the amended result for the store to rewrite in place.

::

    result = retry_analysis(story_before, record, snapshot_after, backends, listener, trace)

A backend error is raised as is (the turn stays pending); a reply that is still unusable
raises ``NarrativeError`` with the reason.
"""

from __future__ import annotations

from dataclasses import fields

from narrative_cli.context.expand import apply_macros
from narrative_cli.errors import NarrativeError
from narrative_cli.group.scene_state import SceneState
from narrative_cli.pipeline.accounting import AgentUsage
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.calls import CallRunner
from narrative_cli.pipeline.events import Listener, ignore
from narrative_cli.pipeline.post import analysis_failure, apply_analysis, run_analysis
from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.pipeline.scene import with_analysis_note
from narrative_cli.pipeline.story import Snapshot, Story, TurnResult, ensure_mvu
from narrative_cli.pipeline.trace import TraceWriter
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.state.engine import GameState
from narrative_cli.state.summaries import SummaryStore


def retry_analysis(
    story: Story,
    record: TurnRecord,
    after: Snapshot,
    backends: BackendSet,
    listener: Listener | None = None,
    trace: TraceWriter | None = None,
) -> TurnResult:
    """The pending turn ``record`` with its analysis run again on ``story`` (the story as it
    was before the turn) and applied to ``after`` (the snapshot stored with the turn)."""
    user_input = record.user_input
    before, _ = ensure_mvu(story, story.snapshot)
    calls = CallRunner(
        backends,
        turn=after.turn,
        mode=record.mode or "serial",
        lang=story.lang,
        listener=listener or ignore,
        trace=trace,
    )
    state = TurnState.start(story, user_input, before, calls)
    state.narrative = record.narrative
    state.plan = record.plan
    state.base_inputs = apply_macros(state.make_base_inputs(""))
    if state.scene is not None and story.group is not None:  # a group turn (issue 19)
        state.speakers = list(record.speakers)
        with_analysis_note(state)
    outcome = run_analysis(state)
    failure = analysis_failure(outcome)
    if failure is not None:
        if not isinstance(outcome, NarrativeError):
            raise NarrativeError(f"turn {after.turn}: {failure}; the analysis is still pending")
        raise outcome
    state.game = GameState.from_dict(after.state) if after.state else state.game
    state.summaries = SummaryStore.from_dict(after.summaries or {}, story.lang)
    state.mvu = None if after.mvu is None else dict(after.mvu)
    if story.group is not None:  # the members' ledgers as stored with the turn
        state.scene = SceneState.from_dict(after.group, story.group)
    apply_analysis(state, outcome)
    return _amended(record, after, state)


def _amended(record: TurnRecord, after: Snapshot, state: TurnState) -> TurnResult:
    values = {f.name: getattr(record, f.name) for f in fields(TurnRecord)}
    result = TurnResult(**values, snapshot=Snapshot.from_dict(after.to_dict()))
    result.snapshot.state = state.game.to_dict()
    result.snapshot.summaries = state.summaries.to_dict()
    if state.scene is not None:
        result.snapshot.group = {**after.group, **state.scene.to_dict(),
                                 "muted": after.group.get("muted", [])}
    result.events_applied = list(state.events_applied)
    result.events_rejected = list(state.events_rejected)
    result.summary_entries = state.summaries.lines(turn=after.turn)
    result.state_text = state.state_text()
    result.warnings = [*result.warnings, *state.warnings, "analysis done on /retry"]
    result.analysis_pending = None
    for agent, usage in state.calls.account.agents.items():  # the retry's calls count too
        result.usage.agents.setdefault(agent, AgentUsage()).add(usage)
    return result
