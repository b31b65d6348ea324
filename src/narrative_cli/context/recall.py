"""Text recall: the planner names earlier turns, the writer gets their original text.

The original sorted the numbers but kept duplicates, fetched anything, and had no limit. Here
the numbers are deduplicated, only turns that exist are taken, at most ``max_turns`` of them,
within ``budget_tokens`` (the last one is shortened to fit when enough room is left). The
planner's order is its priority; the chosen turns come back oldest first. Every number left out
is reported with the reason, for the trace.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.context.inputs import HistoryTurn
from narrative_cli.tokens import estimate_tokens

MIN_CLIP_TOKENS = 80  # shorten a turn to fit only when at least this much room is left
_ELLIPSIS = "…"
_LABEL_TOKENS = 8  # the [第N轮] label and separators around each recalled turn


@dataclass
class RecallResult:
    """The recalled turns (oldest first) and a note for every number left out or shortened."""

    turns: list[HistoryTurn] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def recall_turns(
    numbers: Iterable[Any],
    history: Sequence[HistoryTurn],
    *,
    budget_tokens: int = 1500,
    max_turns: int = 5,
    exclude: Collection[int] = (),
) -> RecallResult:
    """The turns the planner asked for, limited as described above.

    ``exclude`` holds turns the writer already sees in full (its window), which are left out.
    """
    by_number = {turn.number: turn for turn in history}
    result = RecallResult()
    chosen: list[HistoryTurn] = []
    left = budget_tokens
    for number in _unique_numbers(numbers, result):
        reason = _refusal(number, by_number, exclude, len(chosen), max_turns)
        if reason:
            result.notes.append(f"{number}: {reason}")
            continue
        turn = by_number[number]
        cost = estimate_tokens(turn.narrative) + _LABEL_TOKENS
        if cost > left:
            if left < MIN_CLIP_TOKENS:
                result.notes.append(f"{number}: over the text recall budget")
                continue
            turn = HistoryTurn(turn.number, turn.user, clip_to_tokens(turn.narrative, left - 8))
            result.notes.append(f"{number}: shortened to fit the text recall budget")
            cost = left
        chosen.append(turn)
        left -= cost
    result.turns = sorted(chosen, key=lambda t: t.number)
    return result


def _unique_numbers(numbers: Iterable[Any], result: RecallResult) -> list[int]:
    seen: list[int] = []
    for raw in numbers:
        number = _as_turn_number(raw)
        if number is None:
            result.notes.append(f"{raw!r}: not a turn number")
        elif number not in seen:
            seen.append(number)
    return seen


def _as_turn_number(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    return raw if isinstance(raw, int) and raw >= 0 else None


def _refusal(
    number: int,
    by_number: dict[int, HistoryTurn],
    exclude: Collection[int],
    count: int,
    max_turns: int,
) -> str:
    if number not in by_number:
        return "no such turn"
    if number in exclude:
        return "already in the recent turns"
    if not by_number[number].narrative.strip():
        return "the turn has no text"
    if count >= max_turns:
        return f"more than {max_turns} turns asked for"
    return ""


def clip_to_tokens(text: str, tokens: int) -> str:
    """The longest start of ``text`` within ``tokens`` (estimated), ending in an ellipsis."""
    if estimate_tokens(text) <= tokens:
        return text
    low, high = 0, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) + 1 <= tokens:
            low = middle
        else:
            high = middle - 1
    return text[:low].rstrip() + _ELLIPSIS
