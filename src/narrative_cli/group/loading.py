"""Building a group from what the player names on the command line.

``narrative run a.png b.png`` makes an ad-hoc group of those cards, in that order, with
SillyTavern's defaults for a new group. SillyTavern group files (``groups/*.json``) are read
by ``group/st_groups.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from narrative_cli.domain import Card
from narrative_cli.group.model import Group, GroupMember
from narrative_cli.load.cards import load_card

DEFAULT_TALKATIVENESS = 0.5  # SillyTavern's talkativeness_default


def talkativeness(card: Card) -> float:
    """The card's ``extensions.talkativeness`` in 0..1 (SillyTavern's default if absent or bad)."""
    raw = card.extensions.get("talkativeness")
    try:
        value = float(raw) if raw is not None and raw != "" else DEFAULT_TALKATIVENESS
    except (TypeError, ValueError):
        return DEFAULT_TALKATIVENESS
    return min(1.0, max(0.0, value)) if math.isfinite(value) else DEFAULT_TALKATIVENESS


def member_for(card: Card, key: str) -> GroupMember:
    return GroupMember(key=key, card=card, talkativeness=talkativeness(card))


def group_from_cards(paths: Sequence[str | Path]) -> Group:
    """An ad-hoc group of the cards at ``paths``, in order, named after its members."""
    members = tuple(member_for(load_card(p), Path(p).name) for p in paths)
    return Group(name=", ".join(m.name for m in members), members=members)
