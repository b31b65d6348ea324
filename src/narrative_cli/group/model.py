"""What a group is, in SillyTavern's terms, independent of where it was read from.

A group is its members (each a loaded card), who is muted, how the next speaker is chosen and
how the writer sees the cards. ``group/st_groups.py`` reads and writes SillyTavern's
``groups/*.json``; ``group/speakers.py`` chooses who speaks; the scene pipeline reads only this.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from narrative_cli.domain import Card

# SillyTavern's numbers, as stored in groups/*.json (group-chats.js).
Strategy = Literal["natural", "list", "manual", "pooled"]
STRATEGY_CODES: dict[int, Strategy] = {0: "natural", 1: "list", 2: "manual", 3: "pooled"}
GenerationMode = Literal["swap", "join", "join_disabled"]
GENERATION_CODES: dict[int, GenerationMode] = {0: "swap", 1: "join", 2: "join_disabled"}


@dataclass(frozen=True)
class GroupMember:
    """One member: its card, the key SillyTavern stores it under, and how talkative it is."""

    key: str  # SillyTavern's avatar file name ("alice.png"), or the card's file name here
    card: Card
    talkativeness: float = 0.5  # the card's extensions.talkativeness, 0..1

    @property
    def name(self) -> str:
        return self.card.name


@dataclass(frozen=True)
class Group:
    """A scene's cast and its rules. Immutable: muting returns a new group."""

    name: str
    members: tuple[GroupMember, ...]
    muted: frozenset[str] = frozenset()  # member keys
    strategy: Strategy = "natural"
    generation_mode: GenerationMode = "swap"
    allow_self_responses: bool = False
    scenario_override: str = ""
    join_prefix: str = ""
    join_suffix: str = ""
    group_id: str = ""
    extra: dict[str, object] = field(default_factory=dict)  # unknown fields, kept for export
    muted_order: tuple[str, ...] = ()  # disabled_members as the file listed them (for writing back)

    def member(self, name_or_key: str) -> GroupMember | None:
        """The member called ``name_or_key`` (name first, case-insensitive, then key)."""
        wanted = name_or_key.strip().casefold()
        for m in self.members:
            if m.name.casefold() == wanted:
                return m
        return next((m for m in self.members if m.key.casefold() == wanted), None)

    def active(self) -> tuple[GroupMember, ...]:
        """Members who may speak, in list order."""
        return tuple(m for m in self.members if m.key not in self.muted)

    def with_muted(self, key: str, muted: bool) -> Group:
        keys = self.muted | {key} if muted else self.muted - {key}
        return replace(self, muted=frozenset(keys))
