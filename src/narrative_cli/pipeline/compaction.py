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

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from narrative_cli.agents.table import WINDOWS
from narrative_cli.context.recall import clip_to_tokens
from narrative_cli.context.router import build_prompt
from narrative_cli.context.window import window_first
from narrative_cli.errors import BackendError
from narrative_cli.i18n import t
from narrative_cli.pipeline.turn import TurnState
from narrative_cli.state.chapters import Chapter, Fold, plan_fold
from narrative_cli.state.summaries import SummaryStore

MAX_FOLDS = 3  # entries → chapter → arc → one arc, at most, per cut
SLACK = 1.5  # a reply longer than its limit by more than this is clipped


def next_turn_cuts(state: TurnState) -> bool:
    """Is the turn after this one a cut point of the writers' window?"""
    return cuts_after(len(state.history) + 1, *state.window_settings("writing"))


def cuts_after(length: int, n: int, m: int) -> bool:
    """Does the window move when the history grows from ``length - 1`` to ``length`` turns
    (``length``: the history the next turn sees, this turn included)?"""
    return window_first(length, n, m) != window_first(length - 1, n, m)


def fold_boundary(state: TurnState) -> int:
    """The first turn any window shows in full next turn: only turns before it are folded."""
    turns = [turn.number for turn in state.history] + [state.number]
    windows = [state.window_settings(window) for window in WINDOWS]
    return first_shown(turns, windows)


def first_shown(turns: Sequence[int], windows: Iterable[tuple[int, int]]) -> int:
    """The first of ``turns`` (the history the next turn sees) any of the n+m ``windows``
    shows in full; past the last turn when none shows one."""
    firsts = []
    for n, m in windows:
        first = window_first(len(turns), n, m)
        firsts.append(turns[first] if first < len(turns) else turns[-1] + 1)
    return min(firsts)


def compact_at_cut(state: TurnState) -> None:
    """Fold the summary block down to its budget when the next turn is a cut (see above)."""
    budget = state.story.settings.pipeline.summary_budget
    if budget <= 0 or not next_turn_cuts(state):
        return
    state.summaries = fold_down(
        state.summaries, fold_boundary(state), budget, state.lang, lambda fold: _ask(state, fold)
    )


def fold_down(
    store: SummaryStore,
    before: int,
    budget: int,
    lang: str,
    ask: Callable[[Fold], Chapter | None],
) -> SummaryStore:
    r"""``store`` with up to :data:`MAX_FOLDS` folds of what lies before turn ``before``, each
    one ``ask``\ ed for, while the block is over ``budget``; a fold that gives nothing stops."""
    for _ in range(MAX_FOLDS):
        fold = plan_fold(store.labelled_entries, store.chapters, before, budget, lang)
        if fold is None:
            break
        chapter = ask(fold)
        if chapter is None:
            break
        store = store.with_chapter(chapter)
    return store


def chapter_from(value: Mapping[str, Any] | None, fold: Fold, shown_from: int) -> Chapter | None:
    """The chapter of a compaction reply (None: no summary in it), one line, clipped."""
    text = str((value or {}).get("summary", "")).strip()
    if not text:
        return None
    text = " ".join(text.split())  # one line: the summary block is one line per item
    text = clip_to_tokens(text, int(fold.limit_tokens * SLACK))
    return Chapter(fold.first, fold.last, fold.level, text, shown_from=shown_from)


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
    chapter = chapter_from(outcome.value, fold, state.number + 1)
    if chapter is None:
        state.warn("post", t("compaction.empty", state.lang, **what))
    return chapter
