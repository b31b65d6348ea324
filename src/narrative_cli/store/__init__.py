"""store stage: sessions, turns, swipes and snapshots in SQLite (all SQL lives here)."""

from __future__ import annotations

from narrative_cli.store.models import (
    LoreRef,
    NewSession,
    SessionInfo,
    StoredTurn,
    SwipeData,
    TurnData,
    TurnView,
)
from narrative_cli.store.sessions import SessionStore

__all__ = [
    "LoreRef",
    "NewSession",
    "SessionInfo",
    "SessionStore",
    "SwipeData",
    "TurnData",
    "StoredTurn",
    "TurnView",
]
