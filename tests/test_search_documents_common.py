"""``search_recall._common``, how far the last turn's story documents can be kept: the count of
first items two lists share, whether they are the very objects or equal ones, checked against
a plain count on generated lists (long ones, with the difference near the start, the middle,
the end, or nowhere)."""

from __future__ import annotations

import random

from narrative_cli.pipeline.search_recall import _common


def _plain(old: list[object], new: list[object]) -> int:
    at = 0
    while at < min(len(old), len(new)) and old[at] == new[at]:
        at += 1
    return at


def test_the_shared_start_is_counted_as_a_plain_count_gives_it() -> None:
    rng = random.Random(3)
    for _ in range(600):
        size = rng.choice([0, 1, 5, 63, 64, 65, 200, 700])
        old: list[object] = [(n, f"line {n}") for n in range(size)]
        new: list[object] = [item if rng.random() < 0.5 else (item[0], item[1])  # equal copies
                             for item in old]  # type: ignore[index]  # fmt: skip
        if size and rng.random() < 0.7:
            new[rng.randrange(size)] = ("changed",)
        new += [("more", n) for n in range(rng.choice([0, 0, 1, 3]))]
        if rng.random() < 0.2:
            old, new = new, old
        assert _common(old, new) == _plain(old, new)
