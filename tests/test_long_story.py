"""Long stories (issue 17): what each turn rebuilds from the story so far stays correct."""

from __future__ import annotations

from narrative_cli.context.inputs import HistoryTurn
from narrative_cli.pipeline.story import PlayedTurn, open_story
from narrative_cli.pipeline.turn import prompt_history

from .conftest import SAMPLES


def _afresh(turns: list[PlayedTurn]) -> list[HistoryTurn]:
    return [HistoryTurn(t.number, t.user_input or "", t.narrative) for t in turns]


def test_the_prompt_history_follows_every_change_of_the_story() -> None:
    """Next turns, undo, regenerate and a restored history all give the history as it is."""
    story = open_story(SAMPLES / "lantern-keeper.png", seed=1)
    assert prompt_history(story) == _afresh(story.history)
    for number in range(1, 6):
        story.history.append(PlayedTurn(number, f"input {number}", f"story {number}"))
        assert prompt_history(story) == _afresh(story.history)
    del story.history[-2:]  # undo two turns
    assert prompt_history(story) == _afresh(story.history)
    story.history[-1] = PlayedTurn(3, "input 3", "story 3, regenerated")
    assert prompt_history(story)[-1].narrative == "story 3, regenerated"
    story.history = [PlayedTurn(0, None, "greeting"), PlayedTurn(1, "x", "restored")]
    assert prompt_history(story) == _afresh(story.history)
    built = prompt_history(story)
    built.append(HistoryTurn(9, "changed by a caller", ""))
    assert prompt_history(story) == _afresh(story.history)
