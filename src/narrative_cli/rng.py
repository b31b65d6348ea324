"""The session's one seeded random generator, and its state as JSON for turn snapshots.

Dice, lore probability rolls and inclusion-group rolls all draw from it, so saving its state
with each turn makes regenerate, undo and replay reproduce them exactly.
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
    rng = random.Random()
    version, internal, gauss = state
    rng.setstate((version, tuple(internal), gauss))
    return rng
