"""Memos of the turn's compute path (#17, session eight), each against its result made anew.

A replayed turn builds the same blocks as the turn before wherever their inputs did not
change; what is remembered must be exactly what building it again gives, whatever changed.
"""

from __future__ import annotations

import random

from narrative_cli.context import parts
from narrative_cli.context.inputs import HistoryTurn, PromptInputs, SummaryEntry, WindowSettings
from narrative_cli.domain import Card
from narrative_cli.state.chapters import ARC, CHAPTER, Chapter


def _fresh(inputs: PromptInputs, window: list[HistoryTurn] | None, settings: WindowSettings |
           None) -> str:  # fmt: skip
    parts._FOLDED.clear()
    return parts.story_summary(inputs, window, settings).text


def test_the_folded_summary_remembered_is_the_one_made_anew() -> None:
    """A story grows turn by turn (a line each, a fold now and then, its window moving, a
    line rewritten or a fold replaced by an equal or a different one): the block built with
    the memo of the turns before is the block built from nothing, for windows and without."""
    rng = random.Random(11)
    for _ in range(12):
        entries: list[SummaryEntry] = []
        folds: list[Chapter] = []
        settings = WindowSettings(rng.randint(1, 4), rng.randint(0, 4))
        parts._FOLDED.clear()
        for turn in range(1, 120):
            entries = [*entries, SummaryEntry(turn, f"[Turn {turn}] line {turn} ")]
            if turn % 9 == 0:
                start = folds[-1].last + 1 if folds else 1
                folds = [*folds, Chapter(start, turn - 2, CHAPTER, f"chapter {turn}", turn + 1)]
            if turn % 40 == 0:
                folds = [*folds, Chapter(1, turn - 5, ARC, f"arc {turn}", turn + 2)]
            change = rng.random()
            if change < 0.05 and entries:  # an older line rewritten (a new object)
                at = rng.randrange(len(entries))
                old = entries[at]
                entries = [*entries[:at], SummaryEntry(old.turn, old.text + "!"), *entries[at + 1:]]
            elif change < 0.1 and folds:  # a fold replaced by an equal one: another object
                at = rng.randrange(len(folds))
                f = folds[at]
                copy = Chapter(f.first, f.last, f.level, f.text, f.shown_from)
                folds = [*folds[:at], copy, *folds[at + 1:]]
            elif change < 0.13 and folds:  # a fold's text told again
                at = rng.randrange(len(folds))
                f = folds[at]
                told = Chapter(f.first, f.last, f.level, f.text + " again", f.shown_from)
                folds = [*folds[:at], told, *folds[at + 1:]]
            lang = rng.choice(["en", "en", "zh"])
            history = [HistoryTurn(n, f"u{n}", f"n{n}") for n in range(1, turn)]
            inputs = PromptInputs(Card(name="c"), lang=lang, turn=turn, history=history,
                                  summaries=entries, chapters=folds)  # fmt: skip
            window = parts.window(inputs, settings)
            for shown, given in ((window, settings), (None, None), (window, None)):
                remembered = parts.story_summary(inputs, shown, given).text
                saved = list(parts._FOLDED)
                assert remembered == _fresh(inputs, shown, given), (turn, lang)
                parts._FOLDED[:] = saved  # go on with the memo as the turns left it


def test_a_window_between_its_cuts_finds_its_text_again() -> None:
    """Between the window's cuts the next turn's block is the remembered one (the entries
    after the window's first turn are not in it): it is not made again."""
    folds = [Chapter(1, 20, CHAPTER, "the first night", 22)]
    settings = WindowSettings(4, 4)
    parts._FOLDED.clear()
    made = []
    original = parts._fold_lines

    def counting(*args: object) -> str:
        made.append(args)
        return original(*args)  # type: ignore[arg-type]

    parts._fold_lines = counting  # type: ignore[assignment]
    try:
        for turn in range(30, 34):  # the window (n 4, m 4) does not cut in these turns
            entries = [SummaryEntry(n, f"line {n}") for n in range(1, turn)]
            history = [HistoryTurn(n, "", f"n{n}") for n in range(1, turn)]
            inputs = PromptInputs(Card(name="c"), turn=turn, history=history,
                                  summaries=entries, chapters=folds)  # fmt: skip
            window = parts.window(inputs, settings)
            parts.story_summary(inputs, window, settings)
    finally:
        parts._fold_lines = original  # type: ignore[assignment]
    assert len(made) == 1


def test_an_update_through_a_view_is_the_update_of_a_copy() -> None:
    """``update_variables`` works on its own copy, so the turn hands it a view of its variables
    (``MvuData.viewing``): the result is the one a full copy (``from_parts``) gives, and the
    turn's own trees are left as they were, whether the commands apply or are rejected."""
    import json

    from narrative_cli.state.mvu_data import MvuData
    from narrative_cli.state.mvu_update import update_variables

    stat = {"keeper": {"oil": [3, "litres"], "log": ["night 1"], "mood": "calm"}, "day": 1}
    meta = {"schema": {"type": "object", "properties": {}, "extensible": True},
            "display_data": {"day": 1}, "delta_data": {}}  # fmt: skip
    texts = [
        "_.set('keeper.oil', 3, 2);//burned\n_.add('day', 1);",
        "_.insert('keeper.log', 'night 2');\n_.set('keeper.missing', 1, 2);",
        "_.set('day', 1, 'not a number');\n_.delete('keeper.mood');",
    ]
    for text in texts:
        before = json.dumps([stat, meta])
        viewed = update_variables(text, MvuData.viewing(stat, meta), lang="en")
        copied = update_variables(text, MvuData.from_parts(stat, meta), lang="en")
        assert json.dumps([stat, meta]) == before  # the turn's own trees: unchanged
        assert viewed.data == copied.data
        assert (viewed.applied, viewed.rejected) == (copied.applied, copied.rejected)
        stat, meta = viewed.data.stat_data, viewed.data.to_dict()
    assert MvuData.viewing(stat, meta).copy() == MvuData.from_parts(stat, meta)
