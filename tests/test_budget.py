"""The token budget: prompts that would overflow the model's context are shrunk in order."""

from __future__ import annotations

import random
from dataclasses import replace

from narrative_cli.context.budget import SAFETY_TOKENS, fit_to_budget, prompt_limit
from narrative_cli.context.inputs import HistoryTurn, PromptInputs
from narrative_cli.context.router import build_analysis, build_planning, build_writing

from .test_prompts import make_inputs


def roomy(inputs: PromptInputs) -> PromptInputs:
    """Inputs with long recall, lore and history so that every cut has something to take."""
    long_story = "The sea keeps its secrets and the keeper keeps hers. " * 12
    history = [HistoryTurn(0, "", long_story)]
    history += [HistoryTurn(n, f"I try thing {n}.", long_story) for n in range(1, 7)]
    return replace(
        inputs,
        history=history,
        text_recall=history[1:3],
        worldinfo3=[f"Keyword lore {k}: " + "salt and rust. " * 20 for k in range(4)],
    )


def test_a_prompt_that_fits_is_left_alone() -> None:
    inputs = make_inputs("en")
    result = fit_to_budget(build_planning, inputs, context_tokens=32000, max_tokens=1000)
    assert result.fits and result.cuts == []
    assert result.prompt.messages == build_planning(inputs).messages


def test_cuts_follow_the_stated_order_until_the_prompt_fits() -> None:
    inputs = roomy(make_inputs("en"))
    full = build_writing(inputs).tokens
    result = fit_to_budget(build_writing, inputs, context_tokens=full - 450, max_tokens=0)
    assert result.fits
    assert result.prompt.tokens <= prompt_limit(full - 450, 0)
    blocks = [cut.block for cut in result.cuts]
    assert blocks[:2] == ["text_recall", "text_recall"]  # recall goes first, newest first
    assert [c.detail for c in result.cuts[:2]] == ["turn 2", "turn 1"]
    assert blocks[2:] == ["worldinfo3"] * (len(blocks) - 2)  # then keyword lore from the end
    assert result.cuts[2].detail.startswith("entry 4: Keyword lore 3")
    assert all(cut.tokens > 0 for cut in result.cuts)
    text = "\n".join(m.content for m in result.prompt.messages[1:])  # the note splits the chat
    assert "<text_recall>" not in text and "<user_input>" in text


def test_history_is_cut_from_the_oldest_turn_down_to_one() -> None:
    inputs = roomy(make_inputs("en"))
    inputs = replace(inputs, text_recall=[], worldinfo3=[])
    result = fit_to_budget(build_writing, inputs, context_tokens=800, max_tokens=200)
    turn_cuts = [c.detail for c in result.cuts if c.block == "recent_turns"]
    assert turn_cuts == [f"turn {n}" for n in range(6)]  # the window held turns 0..6
    recent = result.prompt.block("recent_turns")
    assert recent is not None and recent.text.startswith("[Turn 6] User: I try thing 6.")
    assert recent.text.count("[Turn") == 2  # one turn: its user and AI lines


def test_summaries_go_oldest_first_after_the_history() -> None:
    inputs = make_inputs("en", turns=14)
    full = build_analysis(inputs, "The bell rings.").tokens
    result = fit_to_budget(
        lambda i: build_analysis(i, "The bell rings."),
        inputs,
        context_tokens=full - 40 + SAFETY_TOKENS,
        max_tokens=0,
    )
    assert result.fits
    assert [c.block for c in result.cuts] == ["story_summary"] * len(result.cuts)
    assert result.cuts[0].detail.startswith("turn 0:")
    summary = result.prompt.block("story_summary")
    assert summary is not None and summary.text.endswith(
        "[Turn 13] Intent: step 13 | Story: event 13"
    )


def test_what_cannot_be_cut_is_reported_as_not_fitting() -> None:
    inputs = roomy(make_inputs("en"))
    result = fit_to_budget(build_planning, inputs, context_tokens=300, max_tokens=100)
    assert not result.fits
    blocks = {c.block for c in result.cuts}
    assert {"worldinfo3", "recent_turns", "story_summary", "worldinfo2"} <= blocks
    names = result.prompt.block_names()
    for kept in ("planning_system", "worldinfo1", "character", "user_input", "state_summary"):
        assert kept in names


def test_cuts_do_not_reroll_macros() -> None:
    inputs = replace(roomy(make_inputs("en")), worldinfo1=["Omen {{roll:1d1000000}}"])
    first = build_writing(replace(inputs, rng=random.Random(9))).block("worldinfo1")
    result = fit_to_budget(
        build_writing, replace(inputs, rng=random.Random(9)), context_tokens=1200, max_tokens=0
    )
    assert len(result.cuts) > 3
    assert result.prompt.block("worldinfo1") == first


def test_cuts_are_ready_for_the_trace() -> None:
    inputs = roomy(make_inputs("en"))
    result = fit_to_budget(build_writing, inputs, context_tokens=1200, max_tokens=0)
    rows = [cut.to_dict() for cut in result.cuts]
    assert rows and set(rows[0]) == {"block", "detail", "tokens"}
