"""Reference prompts of issue #17: a turn with chapters, an arc and a recall block, and the
compaction agent's own prompt (golden files beside the others; ``pytest --update-golden``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from narrative_cli.context.inputs import HistoryTurn, PromptInputs
from narrative_cli.context.router import build_prompt
from narrative_cli.state.chapters import ARC, CHAPTER, Chapter, Fold

from .test_prompts import check_golden, make_inputs

FOLDS = {
    "zh": ("第一夜到第五夜，学徒跟着守塔人学会了修剪灯芯，老周说钥匙在灯塔第三级台阶下。",
           "雾季的第二周，补给船迟迟未到，守塔人开始每夜记录钟声。",
           "雾季前半：灯芯、钥匙与迟到的补给船。"),
    "en": ("Nights one to five: the apprentice learned to trim the wick; Old Zhou said the key "
           "lies under the third step.",
           "The second week of fog: the supply boat was late, and the keeper logged the bell.",
           "The first half of the fog season: the wick, the key and the late supply boat."),
}
PASSAGE = {"zh": "老周把铜钥匙藏在灯塔第三级台阶下面，叮嘱你别告诉任何人。",
           "en": "Old Zhou hid the brass key under the third step and told you to tell no one."}


def memory_inputs(lang: str) -> PromptInputs:
    """Turn 30 of a long story: turns 1-12 an arc over two chapters, 13-19 a chapter, the
    entries after it loose; one passage found by the text search, one turn the planner named."""
    first, second, arc = FOLDS[lang]
    inputs = make_inputs(lang, "none", turns=30)
    chapters = [
        Chapter(1, 6, CHAPTER, first, shown_from=9),
        Chapter(7, 12, CHAPTER, second, shown_from=14),
        Chapter(1, 12, ARC, arc, shown_from=19),
        Chapter(13, 19, CHAPTER, second, shown_from=24),
    ]
    recall = [HistoryTurn(4, "", PASSAGE[lang]), inputs.history[15]]
    return replace(inputs, chapters=chapters, text_recall=recall, text_search=True)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("agent", ["planning", "writing", "merged_writing", "analysis"])
def test_golden_prompts_with_chapters_and_recall(
    agent: str, lang: str, update_golden: bool
) -> None:
    prompt = build_prompt(agent, memory_inputs(lang))
    check_golden(prompt, f"{lang}-chapters-recall", update_golden)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_golden_compaction_prompt(lang: str, update_golden: bool) -> None:
    inputs = make_inputs(lang, "none", turns=30)
    lines = tuple(e.text for e in inputs.summaries[:12])
    fold = Fold(CHAPTER, 0, 11, lines, limit_tokens=120)
    check_golden(build_prompt("compaction", replace(inputs, fold=fold)), lang, update_golden)


def test_the_reference_turn_shows_the_arc_instead_of_what_it_covers() -> None:
    prompt = build_prompt("merged_writing", memory_inputs("en"))
    text = "\n".join(m.content for m in prompt.messages)
    assert "[Turns 1-12, arc]" in text and "[Turns 13-19, chapter]" in text
    assert "[Turns 1-6, chapter]" not in text  # covered by the arc
    assert "[Turn 13]" not in text.split("<recent_turns>")[0]  # folded into the chapter
    assert "Old Zhou hid the brass key" in text.split("<text_recall>")[1]
