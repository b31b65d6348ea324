"""Every entry of a lore list classified once: the one place that asks ``routing``.

``routes_for(entries)`` returns the list's :class:`Routes`, kept for the entry objects it was
given (like ``index.index_for``), so the index, the engine, the tools, the MVU set-up, the llm
tools' world text and ``inspect`` all read the same classification instead of each running
the routing rules again. Entries are read-only while routed: pass new objects after editing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property

from narrative_cli.domain import LoreEntry
from narrative_cli.lore.routing import FORMATTING_ROUTES, MVU_UPDATE, Route, classify, is_initvar


class Routes:
    """The routes of one entry list, in the list's order."""

    def __init__(self, entries: Sequence[LoreEntry]) -> None:
        self.entries = tuple(entries)  # held: keeps the ids of the cache key unique
        self.routes = tuple(classify(entry) for entry in self.entries)
        self._by_id = {id(e): r for e, r in zip(self.entries, self.routes, strict=True)}

    def route_of(self, entry: LoreEntry) -> Route:
        """The route of one of these entries (by identity); others are classified afresh."""
        route = self._by_id.get(id(entry))
        return route if route is not None else classify(entry)

    def enabled(self, *names: str) -> list[LoreEntry]:
        """The enabled entries whose route is one of ``names``, in list order."""
        pairs = zip(self.entries, self.routes, strict=True)
        return [entry for entry, route in pairs if route.name in names and not entry.disabled]

    @cached_property
    def uses_mvu(self) -> bool:
        """An ``[InitVar]`` entry (enabled or not, as MagVarUpdate reads them) or an enabled
        ``[mvu_update]`` one: asked three times a turn, answered once per entry list (#17)."""
        updates = set(map(id, self.enabled(MVU_UPDATE)))
        return any(is_initvar(e) or id(e) in updates for e in self.entries)

    def is_formatting(self, entry: LoreEntry) -> bool:
        """A tool, UI, [initvar] or [mvu_update] entry: never part of a prompt."""
        return self.route_of(entry).name in FORMATTING_ROUTES


_CACHE: dict[tuple[int, ...], Routes] = {}
_CACHE_LIMIT = 8


def routes_for(entries: Iterable[LoreEntry]) -> Routes:
    """The routes of ``entries``, classified once per list of entry objects."""
    listed = tuple(entries)
    key = tuple(map(id, listed))
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    routes = Routes(listed)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = routes
    return routes
