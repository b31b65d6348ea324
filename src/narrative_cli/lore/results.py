"""What an activation returns (``Activation``, ``Rejection``, ``ActivationResult``) and the
``ScanContext`` it is given: plain data in their own module, so that the engine and the block
assembly (``assemble``) both use them without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from narrative_cli.domain import LoreEntry
from narrative_cli.lore.timed import TimedEffects


@dataclass
class ScanContext:
    """Who is talking and what else may be scanned (all optional)."""

    user_name: str = "User"
    char_name: str = ""
    character: str = ""  # the card's file name, for characterFilter names (default: char_name)
    character_tags: tuple[str, ...] | None = None  # None: unknown, tag filters do not apply
    generation: str = "normal"  # normal, continue, impersonate, swipe, regenerate, quiet
    sources: dict[str, str] = field(default_factory=dict)  # persona_description → text, …
    substitute: Callable[[str], str] | None = None  # full macro engine; default {{user}}/{{char}}
    # Entry sources that are character lore (SillyTavern's character_strategy orders them).
    character_sources: frozenset[str] = frozenset({"card"})


@dataclass
class Activation:
    """An activated entry, where it goes and why it fired."""

    entry: LoreEntry
    route: str
    reason: str
    step: int = 1
    index: int = 0  # position in the caller's entry list


@dataclass
class Rejection:
    """An entry that would have fired but did not, and why."""

    entry: LoreEntry
    reason: str


@dataclass
class ActivationResult:
    """Activated entries in SillyTavern's prompt order, rejections in priority order."""

    activated: list[Activation]
    rejected: list[Rejection]
    timed: TimedEffects
    problems: list[str] = field(default_factory=list)
    timeouts: list[str] = field(default_factory=list)  # regex keys that ran out of time now
    budget: int = 0
    tokens: int = 0
    steps: int = 0
