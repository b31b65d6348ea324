"""The n+m stable history window, and the sliding window it is measured against.

The design's segmented window (拼接 Prompt 的默认顺序与缓存命中策略): with ``L`` finished turns
(the greeting, turn 0, counts), the window holds all of them while ``L <= n+m``; at ``n+m+1`` it
drops its oldest ``m+1`` and is back to ``n`` turns, then grows again. Between cuts it only
appends, so the prompt prefix through the history repeats and a provider's prefix cache hits.
A margin of 0 means no growth: exactly the last ``n`` turns (a sliding window of ``n``).

The window depends only on the number of finished turns, never on wall clock or earlier
windows, so regenerate and undo (which restore an earlier history) give the same window again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def _check(n: int, m: int) -> None:
    if n < 0 or m < 0:
        raise ValueError(f"window sizes must be 0 or more, got n={n}, m={m}")


def window_first(length: int, n: int, m: int) -> int:
    """0-based index of the window's first turn among ``length`` finished turns."""
    _check(n, m)
    if length <= n + m:
        return 0
    return (m + 1) * ((length - n) // (m + 1))


def window_size(length: int, n: int, m: int) -> int:
    """How many of the last finished turns the n+m window holds."""
    return length - window_first(length, n, m)


def window_sizes(turns: int, n: int, m: int) -> list[int]:
    """The window size after each of ``turns`` finished turns (1, 2, …, turns)."""
    return [window_size(length, n, m) for length in range(1, turns + 1)]


def simulate_sizes(turns: int, n: int, m: int) -> list[int]:
    """The same sequence by the design's literal rule: grow, and past n+m drop the oldest m+1."""
    _check(n, m)
    size, sizes = 0, []
    for _ in range(turns):
        size += 1
        if size > n + m:
            size -= m + 1
        sizes.append(size)
    return sizes


def stable_window(history: Sequence[T], n: int, m: int) -> list[T]:
    """The turns of ``history`` (oldest first) that the n+m window shows."""
    return list(history[window_first(len(history), n, m) :])


def sliding_window(history: Sequence[T], k: int) -> list[T]:
    """SillyTavern-style: the last ``k`` turns, dropping the oldest every turn once full."""
    if k < 0:
        raise ValueError(f"window size must be 0 or more, got {k}")
    return list(history[max(len(history) - k, 0) :]) if k else []


def trim_oldest(window: Sequence[T], drop: int, keep_at_least: int = 1) -> list[T]:
    """``window`` without its ``drop`` oldest turns, keeping at least ``keep_at_least``."""
    limit = max(len(window) - keep_at_least, 0)
    return list(window[min(max(drop, 0), limit) :])
