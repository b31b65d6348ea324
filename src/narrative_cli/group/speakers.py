"""Who speaks next in a group scene: SillyTavern's activation strategies.

Placeholder signature agreed between the group helpers: list order only. The strategies
(natural with mentions and talkativeness, list, pooled, manual) replace the body.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from narrative_cli.group.model import Group, GroupMember


@dataclass(frozen=True)
class SpeakerTurn:
    """What the choice may look at: the player's text and who spoke before."""

    user_text: str = ""
    last_speaker: str | None = None  # member key
    history_speakers: tuple[str, ...] = ()  # member keys, oldest first
    forced: str | None = None  # member key from /next


def choose_speakers(group: Group, turn: SpeakerTurn, rng: random.Random) -> list[GroupMember]:
    """The members who answer this turn, in order."""
    del rng
    if turn.forced is not None:
        forced = group.member(turn.forced)
        return [forced] if forced is not None else []
    return list(group.active())
