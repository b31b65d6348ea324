"""``Slide``: what a function gave for each item of the last list, for a list that slides.

The game state's event log keeps its last 200 records: each turn it drops the oldest and adds
the newest, and three times a turn every record is turned into its JSON object (the snapshot,
each code tool's ``state``) and back (the next turn's state). Each of those is one Python call
per record, 600 a turn (#17, session seven). A ``Slide`` remembers, for the last list it was
given, what was made of each of its items, and gives it again for the very same objects (by
identity, in C) at the front of the next list: only the new items at the end are made anew.

Exact by construction: the result for an item is reused only for that very object, so the
function made with must give the same for the same object (``EventRecord._json`` always
does; a caller whose result can go stale, such as ``to_dict``'s, checks it before use).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Made = TypeVar("Made")


class Slide(Generic[Item, Made]):
    """The results of ``make`` for the last list's items, reused for the same objects."""

    def __init__(self) -> None:
        # (the items, what was made of each): replaced whole, so a reader on another thread
        # sees one consistent pair
        self._last: tuple[tuple[Item, ...], list[Made]] = ((), [])

    def known(self, items: Sequence[Item]) -> list[Made]:
        """What was made of the longest run of ``items`` from the front that the last list
        held in the same order (the very objects), or ``[]``."""
        if not items:
            return []
        held, made = self._last
        start = _place(held, items[0])
        if start is None:
            return []
        count = min(len(held) - start, len(items))
        if not all(map(operator.is_, islice(held, start, start + count), items)):
            count = _same_run(held, start, items, count)
        return made[start : start + count]

    def keep(self, items: Sequence[Item], made: list[Made]) -> None:
        """Remember ``made``, what was made of each of ``items``, for the next list."""
        self._last = (tuple(items), list(made))

    def map(self, items: Sequence[Item], make: Callable[[Item], Made]) -> list[Made]:
        """``[make(item) for item in items]``, taking what was made of the same objects last
        time (``make`` must give the same for the same object)."""
        made = self.known(items)
        if len(made) < len(items):
            made = made + [make(item) for item in items[len(made) :]]
        self.keep(items, made)
        return made


def _place(held: tuple[Any, ...], first: Any) -> int | None:
    """Where ``first`` (the very object) is in ``held``: near the front in a sliding log."""
    for place, item in enumerate(held):
        if item is first:
            return place
    return None


def _same_run(held: tuple[Any, ...], start: int, items: Sequence[Any], count: int) -> int:
    """How many of ``items`` from the front are ``held[start:]`` (the very objects)."""
    run = 0
    while run < count and held[start + run] is items[run]:
        run += 1
    return run
