"""Fitting a prompt into the model's context (the design's known limit, fixed).

Before a call the prompt is estimated; if it exceeds the model's context minus the reply's
``max_tokens``, parts are removed one at a time, in this order, until it fits:

1. ``text_recall``: recalled turns, newest first;
2. ``worldinfo3``: keyword and after-char entries, from the end (lowest priority first);
3. ``recent_turns``: the oldest turns of the window, down to one turn (their summaries then
   join ``<story_summary>``);
4. ``story_summary``: summary entries, oldest first;
5. the card's example dialogue;
6. ``worldinfo2``: constant entries, from the end.

The system rules, ``<worldinfo1>``, the character, the state and the user's input are never
cut. Each cut is returned, for the trace; if the prompt still does not fit, ``fits`` is False.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from narrative_cli.agents.table import find_agent
from narrative_cli.context.blocks import Prompt
from narrative_cli.context.expand import apply_macros
from narrative_cli.context.inputs import PromptInputs
from narrative_cli.context.parts import window

Builder = Callable[[PromptInputs], Prompt]
SAFETY_TOKENS = 64  # estimates are rough: keep a little room
_PREVIEW = 24


@dataclass(frozen=True)
class Cut:
    """One removal: which block, what was removed, about how many tokens it saved."""

    block: str
    detail: str
    tokens: int

    def to_dict(self) -> dict[str, object]:
        return {"block": self.block, "detail": self.detail, "tokens": self.tokens}


@dataclass
class BudgetResult:
    """The prompt to send, the inputs it was built from, and the cuts made."""

    prompt: Prompt
    inputs: PromptInputs
    limit: int
    cuts: list[Cut] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.prompt.tokens <= self.limit


def prompt_limit(context_tokens: int, max_tokens: int | None) -> int:
    """Prompt tokens allowed: the context minus the reply's room and a small safety margin."""
    return context_tokens - (max_tokens or 0) - SAFETY_TOKENS


def fit_to_budget(
    build: Builder, inputs: PromptInputs, *, context_tokens: int, max_tokens: int | None
) -> BudgetResult:
    """Build with ``build`` and shrink ``inputs`` in the stated order until the prompt fits."""
    inputs = apply_macros(inputs)  # once: cuts must not draw macro randomness again
    result = BudgetResult(build(inputs), inputs, prompt_limit(context_tokens, max_tokens))
    for step in _STEPS:
        while not result.fits and _shrink(step, build, result):
            pass
        if result.fits:
            break
    return result


def _shrink(step: Step, build: Builder, result: BudgetResult) -> bool:
    """Make one cut of ``step``; False when it has nothing left to cut that helps."""
    cut = step(result.inputs, result.prompt.agent)
    if cut is None:
        return False
    block, detail, smaller = cut
    prompt = build(smaller)
    saved = result.prompt.tokens - prompt.tokens
    if saved <= 0:  # this agent's prompt does not have that block
        return False
    result.cuts.append(Cut(block, detail, saved))
    result.prompt, result.inputs = prompt, smaller
    return True


Shrunk = tuple[str, str, PromptInputs]
Step = Callable[[PromptInputs, str], "Shrunk | None"]


def _drop_recall(inputs: PromptInputs, agent: str) -> Shrunk | None:
    if not inputs.text_recall:
        return None
    last = inputs.text_recall[-1]
    smaller = replace(inputs, text_recall=inputs.text_recall[:-1])
    return "text_recall", f"turn {last.number}", smaller


def _drop_worldinfo(number: int) -> Step:
    def step(inputs: PromptInputs, agent: str) -> Shrunk | None:
        entries = inputs.worldinfo3 if number == 3 else inputs.worldinfo2
        if not entries:
            return None
        detail = f"entry {len(entries)}: {_preview(entries[-1])}"
        if number == 3:
            return "worldinfo3", detail, replace(inputs, worldinfo3=entries[:-1])
        return "worldinfo2", detail, replace(inputs, worldinfo2=entries[:-1])

    return step


def _drop_oldest_turn(inputs: PromptInputs, agent: str) -> Shrunk | None:
    spec = find_agent(agent)
    settings = inputs.window_settings(spec.window if spec is not None else None)
    turns = window(inputs, settings)
    if len(turns) <= 1:
        return None
    trimmed = replace(inputs, window_trim=inputs.window_trim + 1)
    return "recent_turns", f"turn {turns[0].number}", trimmed


def _drop_summary(inputs: PromptInputs, agent: str) -> Shrunk | None:
    if inputs.chapters and (
        not inputs.summaries or inputs.chapters[0].first <= inputs.summaries[0].turn
    ):  # the oldest fold goes first, with the entries it covers (they are hidden behind it)
        fold = inputs.chapters[0]
        rest = [e for e in inputs.summaries if e.turn > fold.last]
        detail = f"turns {fold.first}-{fold.last}: {_preview(fold.text)}"
        return "story_summary", detail, replace(inputs, summaries=rest,
                                                chapters=inputs.chapters[1:])
    if not inputs.summaries:
        return None
    first = inputs.summaries[0]
    detail = f"turn {first.turn}: {_preview(first.text)}"
    return "story_summary", detail, replace(inputs, summaries=inputs.summaries[1:])


def _drop_examples(inputs: PromptInputs, agent: str) -> Shrunk | None:
    if not inputs.card.mes_example.strip():
        return None
    card = replace(inputs.card, mes_example="")
    return "character", "example dialogue", replace(inputs, card=card)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…"


_STEPS: tuple[Step, ...] = (
    _drop_recall,
    _drop_worldinfo(3),
    _drop_oldest_turn,
    _drop_summary,
    _drop_examples,
    _drop_worldinfo(2),
)
