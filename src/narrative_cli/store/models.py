"""The store's value types: what a session, a turn and a swipe look like to callers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class LoreRef:
    """A lorebook the session was started with: where it was and its content hash."""

    path: str
    hash: str


@dataclass(frozen=True)
class SessionInfo:
    """One session's header row, plus the number of its last turn."""

    id: int
    name: str
    card_path: str
    card_hash: str
    character_name: str
    user_name: str
    settings: Json
    seed: int | None
    greeting_index: int
    lore: tuple[LoreRef, ...]
    created_at: str
    updated_at: str
    last_turn: int
    parent_id: int | None = None
    parent_turn: int | None = None
    chat_metadata: Json = field(default_factory=dict)


@dataclass
class NewSession:
    """What a new session starts from (the card and lore it was started with, its settings)."""

    name: str
    card_path: str
    card_hash: str
    lore: tuple[LoreRef, ...] = ()
    settings: Json = field(default_factory=dict)
    seed: int | None = None
    greeting_index: int = 0
    character_name: str = ""
    user_name: str = "User"
    chat_metadata: Json = field(default_factory=dict)


@dataclass
class SwipeData:
    """One alternative output of a turn: its full record and the snapshot taken after it.

    ``snapshot`` is None only for turns imported without narrative-cli state; restoring
    such a turn raises SnapshotMissing.
    """

    record: Json
    snapshot: Json | None
    created_at: str | None = None


@dataclass
class TurnData:
    """A turn with all its swipes; ``swipe_id`` is the selected one."""

    number: int
    swipes: list[SwipeData]
    swipe_id: int = 0
    created_at: str | None = None

    @property
    def record(self) -> Json:
        return self.swipes[self.swipe_id].record


@dataclass(frozen=True)
class StoredTurn:
    """Everything needed to continue from a turn: its selected record and snapshot."""

    number: int
    swipe_id: int
    swipe_count: int
    record: Json
    snapshot: Json


@dataclass(frozen=True)
class TurnView:
    """A turn as listed: the selected swipe's record, without the snapshot."""

    number: int
    swipe_id: int
    swipe_count: int
    record: Json
    created_at: str
