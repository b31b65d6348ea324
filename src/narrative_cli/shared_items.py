"""``SharedItems``: a JSON list whose items are never changed in place (issue #17 item 4).

A long story's snapshot holds lists that only grow at the end (every summary line of the
story, one more each turn). The list is new each turn, but its items are the very objects of
the last turn's list: a writer that keeps what it made of those objects (the store keeps
their JSON) may take it again for the same objects instead of encoding the whole list again,
which would make every turn's snapshot write grow with the story.

A list is marked so only by the code that owns its items and never changes them after
handing them out (``state.summaries.SummaryStore.to_dict``). Anything else stays a plain
list and is encoded in full; a copy (``list(x)``, a JSON round trip) is a plain list too.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["KnownJson", "SharedItems", "compact_json"]


class SharedItems(list[Any]):
    """A list whose items are shared with earlier lists and never changed in place.

    ``source``: the tuple it was made from (its very items, in order); ``base``: a tuple
    whose items are its first ones, the very objects (the ``source`` of the last list, when
    the owner made this one from it by appending). A writer that kept what it made of a list
    whose ``source`` is this one's ``base`` may take it for this list's first items without
    looking at each (#17, session nine: comparing 2,000 summary lines one by one, every
    turn, was most of what was left of the snapshot write's growth with the story)."""

    __slots__ = ("base", "source")

    def __init__(self, items: Any = (), *, base: tuple[Any, ...] | None = None) -> None:
        super().__init__(items)
        self.source: tuple[Any, ...] | None = items if type(items) is tuple else None
        fits = self.source is not None and base is not None and len(base) <= len(self.source)
        self.base = base if fits else None


class KnownJson(dict[str, Any]):
    """A JSON object that may know its own compact JSON (``compact_json`` of itself), made
    once by the code that owns it: a writer takes ``known_json()`` instead of encoding the
    object again, or encodes it when that gives None (the object was changed since)."""

    __slots__ = ()

    # False while ``known_json()`` gives the same bytes as when last asked (a subclass that
    # notes its changes says so); a writer may then keep what it got for this very object
    touched: bool = True

    def known_json(self) -> bytes | None:
        return None


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def compact_json(value: Any) -> bytes:
    """The store's JSON of ``value``: UTF-8, no spaces, no NaN (``store.blobs.dumps``)."""
    return _COMPACT.encode(value).encode("utf-8")
