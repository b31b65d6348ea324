"""Activated lore, grouped into the design's prompt blocks (世界书条目分类).

- ``worldinfo1``: constant @D entries (position 4), for the planning and writing system prompts.
- ``worldinfo2``: constant ↑Char entries (position 0; example-message positions join them).
- ``worldinfo3``: constant ↓Char entries first (position 1; Author's Note positions join them),
  then every keyword-activated entry, whatever its position.
- ``outlets``: position-7 entries by outlet name, only for ``{{outlet::name}}``.

Each block is sorted the design's way: ascending ``order`` (absent = 0), ties in the order the
entries were given. Outlets keep SillyTavern's order (descending ``order``). Entries routed
nowhere (no position in the file) activate but appear in no block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from narrative_cli.domain import LoreEntry
from narrative_cli.lore.results import Activation, ActivationResult
from narrative_cli.lore.routing import KEYWORD, OUTLET, WORLDINFO1, WORLDINFO2, WORLDINFO3


@dataclass
class RoutedLore:
    """Activated entries per prompt block, in prompt order."""

    worldinfo1: list[LoreEntry] = field(default_factory=list)
    worldinfo2: list[LoreEntry] = field(default_factory=list)
    worldinfo3: list[LoreEntry] = field(default_factory=list)
    outlets: dict[str, list[LoreEntry]] = field(default_factory=dict)

    def text(self, block: str, substitute: Callable[[str], str] | None = None) -> str:
        """A block's entry contents joined by newlines (``worldinfo1``…``3``)."""
        return _join(getattr(self, block), substitute)

    def outlet(self, name: str, substitute: Callable[[str], str] | None = None) -> str:
        """What ``{{outlet::name}}`` expands to ("" for an unknown name)."""
        return _join(self.outlets.get(name, []), substitute)


def routed_lore(result: ActivationResult) -> RoutedLore:
    """Group an activation result into the design's blocks, sorted the design's way."""
    blocks: dict[str, list[Activation]] = {
        WORLDINFO1: [],
        WORLDINFO2: [],
        WORLDINFO3: [],
        KEYWORD: [],
    }
    outlets: dict[str, list[Activation]] = {}
    for activation in result.activated:
        if activation.route in blocks:
            blocks[activation.route].append(activation)
        elif activation.route == OUTLET and activation.entry.outlet_name:
            outlets.setdefault(activation.entry.outlet_name, []).append(activation)
    return RoutedLore(
        worldinfo1=_ascending(blocks[WORLDINFO1]),
        worldinfo2=_ascending(blocks[WORLDINFO2]),
        worldinfo3=_ascending(blocks[WORLDINFO3]) + _ascending(blocks[KEYWORD]),
        outlets={name: _descending(items) for name, items in outlets.items()},
    )


def _order(activation: Activation) -> float:
    return float(activation.entry.order or 0)


def _ascending(items: Iterable[Activation]) -> list[LoreEntry]:
    return [a.entry for a in sorted(items, key=lambda a: (_order(a), a.index))]


def _descending(items: Iterable[Activation]) -> list[LoreEntry]:
    return [a.entry for a in sorted(items, key=lambda a: (-_order(a), a.index))]


def _join(entries: list[LoreEntry], substitute: Callable[[str], str] | None) -> str:
    texts = (substitute(entry.content) if substitute else entry.content for entry in entries)
    return "\n".join(text for text in texts if text)
