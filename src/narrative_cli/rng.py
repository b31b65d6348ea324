"""The session's one seeded random generator, and its state as JSON for turn snapshots.

Dice, lore probability rolls and inclusion-group rolls all draw from it, so saving its state
with each turn makes undo and replay reproduce them exactly. A turn's first try continues the
stream of the snapshot before it; every later try of the same turn (a regenerate, a new
swipe, a retry after Ctrl-C) draws from its own stream, derived from the session seed, the
turn and the try's number (``stream_rng``), so it rolls fresh dice; the number is recorded
with the swipe (``rng_stream`` in the turn record) and replay uses it again (architecture §8).
"""

from __future__ import annotations

import random
from typing import Any


def new_rng(seed: int | None) -> random.Random:
    return random.Random(seed if seed is not None else 0)


def rng_state(rng: random.Random) -> list[Any]:
    """The generator's state as a JSON-serializable list."""
    version, internal, gauss = rng.getstate()
    return [version, list(internal), gauss]


def rng_from_state(state: list[Any]) -> random.Random:
    rng = random.Random(0)  # not seeded from the OS: ``setstate`` sets every part anew
    version, internal, gauss = state
    rng.setstate((version, tuple(internal), gauss))
    return rng


def stream_rng(seed: int, turn: int, stream: int) -> random.Random:
    """The generator of try ``stream`` (1, 2, …) of ``turn``: independent of the others."""
    import hashlib  # here: a command that rolls no later try (``lore test``) never needs it

    digest = hashlib.sha256(f"narrative-cli:{seed}:{turn}:{stream}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
