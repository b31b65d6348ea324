"""Chapter memory at the window's cut points (issue #17 item 1).

After a turn's analysis, when the *next* turn is a cut point of the writers' n+m window, the
summary block is measured against ``pipeline.summary_budget`` (tokens) and, while it is over,
the ``compaction`` agent folds the oldest entries into a chapter, chapters into an arc, arcs
into one arc (``state.chapters.plan_fold``: at most :data:`MAX_FOLDS` calls per cut). The folds
are part of this turn's snapshot and are shown from the next turn on, and to each agent only
from its own window's next cut (``context.parts.story_summary``), so no agent's prompt prefix
changes between two cuts of its window.

Only entries before every window's first turn are folded (no agent sees those turns in full).
A fold that fails (a backend error, a reply that stays unusable) changes nothing: the entries
stay as they were, a visible warning says so, and the next cut tries again. The calls go
through the turn's ``CallRunner``, so they are traced and recorded, and a recorded replay
makes the same folds. Facts the state engine owns never come from summaries, so a fold can
lose no quest, relationship, item, flag or variable.
"""

from __future__ import annotations

from dataclasses import replace

from narrative_cli.agents.table import WINDOWS
from narrative_cli.context.recall import clip_to_tokens
from narrative_cli.context.router import build_prompt
from narrative_cli.context.window import window_first
from narrative_cli.errors import BackendError
from narrative_cli.i18n import t
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.state.chapters import Chapter, Fold, plan_fold

MAX_FOLDS = 3  # entries → chapter → arc → one arc, at most, per cut
SLACK = 1.5  # a reply longer than its limit by more than this is clipped


def next_turn_cuts(state: TurnState) -> bool:
    """Is the turn after this one a cut point of the writers' window?"""
    length = len(state.history) + 1  # the history the next turn sees (this turn included)
    n, m = state.window_settings("writing")
    return window_first(length, n, m) != window_first(length - 1, n, m)


def fold_boundary(state: TurnState) -> int:
    """The first turn any window shows in full next turn: only turns before it are folded."""
    turns = [turn.number for turn in state.history] + [state.number]
    firsts = []
    for window in WINDOWS:
        first = window_first(len(turns), *state.window_settings(window))
        firsts.append(turns[first] if first < len(turns) else state.number + 1)
    return min(firsts)


def compact_at_cut(state: TurnState) -> None:
    """Fold the summary block down to its budget when the next turn is a cut (see above)."""
    budget = state.story.settings.pipeline.summary_budget
    if budget <= 0 or not next_turn_cuts(state):
        return
    before = fold_boundary(state)
    for _ in range(MAX_FOLDS):
        store = state.summaries
        fold = plan_fold(store.labelled_entries, store.chapters, before, budget, state.lang)
        if fold is None:
            return
        chapter = _ask(state, fold)
        if chapter is None:
            return
        state.summaries = store.with_chapter(chapter)


def _ask(state: TurnState, fold: Fold) -> Chapter | None:
    """One call of the compaction agent; None (and a warning) when it gives nothing usable."""
    assert state.base_inputs is not None, "lore stage first"
    what = {"first": fold.first, "last": fold.last}
    with state.stage("post"):
        prompt = build_prompt("compaction", replace(state.base_inputs, fold=fold))
        try:
            outcome = state.calls.complete_json(
                "compaction", prompt.messages, cache_breakpoints=prompt.cache_breakpoints
            )
        except BackendError as error:
            state.warn("post", t("compaction.failed", state.lang, error=error, **what))
            return None
    text = str((outcome.value or {}).get("summary", "")).strip()
    if not text:
        state.warn("post", t("compaction.empty", state.lang, **what))
        return None
    text = " ".join(text.split())  # one line: the summary block is one line per item
    text = clip_to_tokens(text, int(fold.limit_tokens * SLACK))
    return Chapter(fold.first, fold.last, fold.level, text, shown_from=state.number + 1)
