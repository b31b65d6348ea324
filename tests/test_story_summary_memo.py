"""``<story_summary>`` with folds is remembered per entry list, fold list, window and language:
what a prompt shows is what working it out anew shows, over a generated story whose entries
grow and whose folds appear, for each agent's window (the writer's, the planner's, none)."""

from __future__ import annotations

import random
from dataclasses import replace

from narrative_cli.context import parts
from narrative_cli.context.inputs import HistoryTurn, PromptInputs, SummaryEntry, WindowSettings
from narrative_cli.domain import Card
from narrative_cli.state.chapters import ARC, CHAPTER, Chapter


def _fresh(
    inputs: PromptInputs, turns: list[HistoryTurn] | None, window: WindowSettings | None
) -> str:
    parts._FOLDED.clear()
    return parts.story_summary(inputs, turns, window).text


def test_the_remembered_summary_is_the_one_worked_out_anew() -> None:
    rng = random.Random(11)
    entries: list[SummaryEntry] = []
    chapters: list[Chapter] = []
    history: list[HistoryTurn] = []
    windows = [WindowSettings(3, 2), WindowSettings(4, 4), None]
    seen = 0
    for turn in range(1, 160):
        added = [SummaryEntry(turn, f" line {turn}.{k} ") for k in range(rng.randint(0, 2))]
        entries = entries + added
        history = history + [HistoryTurn(turn, f"in {turn}", f"out {turn}")]
        if turn % 20 == 0:  # a chapter over the oldest unfolded stretch, now and then an arc
            start = chapters[-1].last + 1 if chapters else 1
            chapters = chapters + [Chapter(start, turn - 8, CHAPTER, f"ch {turn}", turn + 1)]
            if turn % 60 == 0:
                chapters = chapters + [Chapter(1, turn - 8, ARC, f"arc {turn}", turn + 1)]
        inputs = PromptInputs(card=Card(name="Mira"), turn=turn + 1, user_input="go",
                              history=history, summaries=entries, chapters=chapters,
                              lang=rng.choice(["en", "zh"]))  # fmt: skip
        for window in windows + windows:  # twice: the second time remembered
            shown = window or WindowSettings(3, 4)
            inputs = replace(inputs, planning_window=shown, writing_window=shown)
            turns = parts.window(inputs, window) if window else None
            remembered = parts.story_summary(inputs, turns, window).text
            assert remembered == _fresh(inputs, turns, window), (turn, window)
            seen += bool(chapters)
    assert seen > 300
