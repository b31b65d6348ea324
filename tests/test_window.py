"""The n+m stable history window: sizes, cut points, prefix stability, and the sliding window."""

from __future__ import annotations

import pytest

from narrative_cli.context.inputs import HistoryTurn
from narrative_cli.context.window import (
    simulate_sizes,
    sliding_window,
    stable_window,
    trim_oldest,
    window_first,
    window_size,
    window_sizes,
)


@pytest.mark.parametrize(
    ("n", "m", "expected"),
    [
        # grow 1..n+m, then at n+m+1 drop the oldest m+1 and grow again from n
        (4, 4, [1, 2, 3, 4, 5, 6, 7, 8, 4, 5, 6, 7, 8, 4, 5, 6, 7, 8, 4, 5]),
        (3, 4, [1, 2, 3, 4, 5, 6, 7, 3, 4, 5, 6, 7, 3, 4, 5, 6, 7, 3, 4, 5]),
        (4, 5, [1, 2, 3, 4, 5, 6, 7, 8, 9, 4, 5, 6, 7, 8, 9, 4, 5, 6, 7, 8]),
        (3, 6, [1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 4, 5, 6, 7, 8, 9, 3, 4, 5, 6]),
        (2, 1, [1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2]),
    ],
)
def test_window_sizes_follow_the_design_formula(n: int, m: int, expected: list[int]) -> None:
    assert window_sizes(20, n, m) == expected


@pytest.mark.parametrize("n", [1, 3, 4])
def test_a_margin_of_zero_means_no_growth(n: int) -> None:
    sizes = window_sizes(15, n, 0)
    assert sizes[:n] == list(range(1, n + 1))
    assert set(sizes[n:]) == {n}
    assert sizes == [len(sliding_window(list(range(k)), n)) for k in range(1, 16)]


def test_n_zero_empties_the_window_every_m_plus_one_turns() -> None:
    assert window_sizes(9, 0, 2) == [1, 2, 0, 1, 2, 0, 1, 2, 0]


@pytest.mark.parametrize("n", range(6))
@pytest.mark.parametrize("m", range(7))
def test_closed_form_matches_the_literal_growth_rule(n: int, m: int) -> None:
    assert window_sizes(60, n, m) == simulate_sizes(60, n, m)


@pytest.mark.parametrize(
    ("n", "m", "resets"),
    # 1-based first position of the window after L finished turns (original-behaviour §1.2)
    [(4, 4, {9: 6, 14: 11, 19: 16}), (3, 4, {8: 6, 13: 11, 18: 16}), (3, 6, {10: 8, 17: 15})],
)
def test_the_first_turn_changes_only_at_the_documented_resets(
    n: int, m: int, resets: dict[int, int]
) -> None:
    firsts = {length: window_first(length, n, m) + 1 for length in range(1, 20)}
    changes = {
        length: firsts[length] for length in range(2, 20) if firsts[length] != firsts[length - 1]
    }
    assert changes == resets


def _history(count: int) -> list[HistoryTurn]:
    """A greeting (turn 0) and ``count - 1`` played turns."""
    turns = [HistoryTurn(0, "", "greeting")]
    turns += [HistoryTurn(k, f"input {k}", f"story {k}") for k in range(1, count)]
    return turns


def test_the_greeting_is_turn_zero_and_counts_toward_the_window() -> None:
    window = stable_window(_history(3), 3, 4)
    assert [t.number for t in window] == [0, 1, 2]
    cut = stable_window(_history(8), 3, 4)  # 8 finished turns > n+m: cut back to 3
    assert [t.number for t in cut] == [5, 6, 7]


def test_between_cuts_the_window_only_appends() -> None:
    n, m = 3, 4
    previous = stable_window(_history(1), n, m)
    appends = cuts = 0
    for length in range(2, 30):
        window = stable_window(_history(length), n, m)
        if window[: len(previous)] == previous and len(window) == len(previous) + 1:
            appends += 1
        else:
            cuts += 1
            assert len(window) == n
        previous = window
    assert cuts == len([k for k in range(2, 30) if window_size(k, n, m) == n and k > n])


def test_regenerate_and_undo_give_the_same_window_back() -> None:
    played = _history(17)
    before = {k: stable_window(played[:k], 4, 4) for k in range(1, 18)}
    undone = played[:11]  # undo back to turn 10, then replay the same turns
    assert stable_window(undone, 4, 4) == before[11]
    replayed = [*undone, *played[11:]]
    assert stable_window(replayed, 4, 4) == before[17]
    assert [t.number for t in stable_window(replayed, 4, 4)] == list(range(10, 17))


def test_sliding_window_drops_the_oldest_every_turn() -> None:
    history = _history(10)
    assert [t.number for t in sliding_window(history, 4)] == [6, 7, 8, 9]
    assert sliding_window(history[:2], 4) == history[:2]
    assert sliding_window(history, 0) == []


def test_trim_oldest_keeps_at_least_one_turn() -> None:
    window = _history(5)
    assert [t.number for t in trim_oldest(window, 2)] == [2, 3, 4]
    assert [t.number for t in trim_oldest(window, 99)] == [4]
    assert trim_oldest([], 3) == []


def test_negative_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="n=-1"):
        window_size(5, -1, 2)
    with pytest.raises(ValueError):
        sliding_window([], -2)
