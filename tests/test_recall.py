"""Text recall: the planner's turn numbers become the writer's <text_recall> block."""

from __future__ import annotations

from dataclasses import replace

from narrative_cli.context.inputs import HistoryTurn
from narrative_cli.context.recall import clip_to_tokens, recall_turns
from narrative_cli.context.router import build_writing
from narrative_cli.tokens import estimate_tokens

from .test_prompts import make_inputs

HISTORY = [HistoryTurn(0, "", "The lamp turns above you.")] + [
    HistoryTurn(n, f"input {n}", f"Narrative of turn {n}. " * 5) for n in range(1, 9)
]


def numbers(result_turns: list[HistoryTurn]) -> list[int]:
    return [t.number for t in result_turns]


def test_duplicates_are_fetched_once_and_returned_oldest_first() -> None:
    result = recall_turns([5, 2, 5, 2.0, 0], HISTORY)
    assert numbers(result.turns) == [0, 2, 5]
    assert result.turns[1].narrative == HISTORY[2].narrative
    assert result.notes == []


def test_only_turns_that_exist_are_taken() -> None:
    result = recall_turns([3, 42, -1, 2.5, "4", True, None], HISTORY)
    assert numbers(result.turns) == [3]
    assert "42: no such turn" in result.notes
    assert sum("not a turn number" in note for note in result.notes) == 5


def test_turns_the_writer_already_sees_are_left_out() -> None:
    result = recall_turns([1, 7, 8], HISTORY, exclude={7, 8})
    assert numbers(result.turns) == [1]
    assert result.notes == ["7: already in the recent turns", "8: already in the recent turns"]


def test_at_most_max_turns_in_the_planners_order_of_priority() -> None:
    result = recall_turns([8, 1, 6, 3, 2, 5, 4], HISTORY, max_turns=3)
    assert numbers(result.turns) == [1, 6, 8]
    assert "3: more than 3 turns asked for" in result.notes


def test_the_token_budget_holds_and_the_last_turn_is_shortened_to_fit() -> None:
    long = [HistoryTurn(n, "", "word " * 400) for n in range(1, 6)]  # ~500 tokens each
    result = recall_turns([1, 2, 3, 4, 5], long, budget_tokens=1200)
    assert numbers(result.turns) == [1, 2, 3]
    assert result.turns[2].narrative.endswith("…")
    total = sum(estimate_tokens(t.narrative) + 8 for t in result.turns)
    assert total <= 1200
    assert "3: shortened to fit the text recall budget" in result.notes
    assert "4: over the text recall budget" in result.notes


def test_clip_to_tokens_keeps_the_start_within_the_budget() -> None:
    text = "潮水退去，灯塔下露出一口铜钟。" * 40
    clipped = clip_to_tokens(text, 50)
    assert text.startswith(clipped[:-1]) and clipped.endswith("…")
    assert estimate_tokens(clipped) <= 50
    assert clip_to_tokens("short", 50) == "short"


def test_recalled_turns_reach_the_writer_in_order() -> None:
    inputs = make_inputs("zh")
    result = recall_turns([3, 1, 3], inputs.history, exclude={5, 6, 7, 8, 9})
    prompt = build_writing(replace(inputs, text_recall=result.turns))
    user = prompt.messages[-1].content  # the character's note at depth 4 splits the chat
    assert "<text_recall>\n[第1轮]\n第1轮的故事。\n\n[第3轮]\n第3轮的故事。\n</text_recall>" in user
    assert user.index("</worldinfo3>") < user.index("<text_recall>") < user.index("<writing_guide>")
