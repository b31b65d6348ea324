"""Entries prepared once for many scans: SillyTavern's order, compiled keys, a key prefilter.

Building this is the expensive part of activation (macro substitution, regex compilation, the
probe index), so ``index_for`` keeps the last few indexes. Entries are treated as read-only
while indexed: pass new entry objects (or a new list) after editing one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from narrative_cli.domain import LoreEntry
from narrative_cli.lore.matcher import Key, ProbeIndex, compile_key, substitute_names
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.routing import MVU_UPDATE, TOOL
from narrative_cli.lore.settings import (
    STRATEGY_CHARACTER_FIRST,
    STRATEGY_GLOBAL_FIRST,
    LoreSettings,
)
from narrative_cli.lore.timed import entry_key

Substitute = Callable[[str], str]
CHARACTER_SOURCES = frozenset({"card"})  # LoreEntry.source of a card's embedded book


@dataclass
class Prepared:
    """One entry with everything a scan needs precomputed."""

    entry: LoreEntry
    index: int  # position in the caller's list
    rank: int  # position in SillyTavern's sorted order (priority)
    key: str  # timed-effects key
    primary: list[Key]
    secondary: list[Key | None]  # None: empty after macros (never matches)
    raw_primary: list[Key | None]  # unsubstituted, untrimmed: group scoring uses these
    raw_secondary: list[Key | None]
    groups: list[str]
    delay_level: int
    sources: tuple[str, ...]
    always: bool = False  # a primary key the prefilter cannot see: always evaluate
    decorators: tuple[str, ...] = ()  # the decorators SillyTavern acts on (st_decorators)
    route: str = ""  # lore.routing's route name (routed once, lore.routed)

    @property
    def has_secondary(self) -> bool:
        return bool(self.entry.selective) and bool(self.entry.secondary_keys)


@dataclass
class LoreIndex:
    """Prepared entries in SillyTavern's scan order, with probe indexes for the prefilter."""

    entries: list[Prepared]
    probes: ProbeIndex  # every key's probes; lower-case ones are looked up in lowered text
    by_probe: dict[tuple[bool, str], list[int]]  # (lower?, probe) → ranks with a primary key
    # containing it
    always: list[int]  # ranks that must be evaluated every pass (constant, decorators, …)
    problems: list[str] = field(default_factory=list)
    max_scan_depth: int = 0  # the largest per-entry scanDepth
    by_key: dict[str, LoreEntry] = field(default_factory=dict)  # timed key → entry
    rank_of: dict[str, int] = field(default_factory=dict)  # timed key → rank
    delayable: list[Prepared] = field(default_factory=list)  # entries with a delay
    levels: list[int] = field(default_factory=list)  # distinct delayUntilRecursion levels
    spanning: list[int] = field(default_factory=list)  # regex keys that may cross messages
    slow: set[str] = field(default_factory=set)  # regex keys that timed out: skipped from now on
    # Tool and [mvu_update] entries never enter a prompt, but their keys switch them on.
    formatting_keys: dict[tuple[str, ...], list[Key]] = field(default_factory=dict)
    mvu_updates: list[LoreEntry] = field(default_factory=list)  # enabled, in list order


def sort_entries(
    entries: Sequence[LoreEntry],
    strategy: int = STRATEGY_CHARACTER_FIRST,
    character_sources: frozenset[str] = CHARACTER_SOURCES,
) -> list[int]:
    """Indexes of ``entries`` in SillyTavern's priority order (``getSortedEntries``).

    ``order`` descending, stably; with both character lore (entries from ``character_sources``)
    and global lore, ``character_strategy`` decides: evenly (0) sorts them together, character
    first (1) puts all character lore before all global lore, global first (2) the reverse.
    Entries without ``order`` keep their place within their part (SillyTavern's sort is
    undefined there)."""
    character = [i for i, entry in enumerate(entries) if entry.source in character_sources]
    world = [i for i, entry in enumerate(entries) if entry.source not in character_sources]
    if strategy == STRATEGY_CHARACTER_FIRST:
        return _by_order(entries, character) + _by_order(entries, world)
    if strategy == STRATEGY_GLOBAL_FIRST:
        return _by_order(entries, world) + _by_order(entries, character)
    return _by_order(entries, world + character)


def _by_order(entries: Sequence[LoreEntry], indexes: list[int]) -> list[int]:
    ordered = [i for i in indexes if entries[i].order is not None]
    ordered.sort(key=lambda i: -float(entries[i].order or 0))
    slots = iter(ordered)
    return [i if entries[i].order is None else next(slots) for i in indexes]


def build_index(
    entries: Sequence[LoreEntry],
    settings: LoreSettings,
    substitute: Substitute | None = None,
    character_sources: frozenset[str] = CHARACTER_SOURCES,
) -> LoreIndex:
    """Prepare ``entries`` (formatting entries such as [TOOL:…] and [mvu_update] are left out)."""
    prepared: list[Prepared] = []
    problems: list[str] = []
    routes = routes_for(entries)
    for index in sort_entries(entries, settings.character_strategy, character_sources):
        entry = entries[index]
        if routes.is_formatting(entry):
            continue
        item = _prepare(entry, index, len(prepared), settings, substitute, problems)
        item.route = routes.route_of(entry).name
        prepared.append(item)
    by_probe: dict[tuple[bool, str], list[int]] = {}
    probes: list[str] = []
    always: list[int] = []
    spanning: list[int] = []
    for item in prepared:
        for key in item.primary + [key for key in item.secondary if key is not None]:
            probes.extend(key.probes)
            probes.extend(key.choices)
        for key in item.primary:
            if key.probes:  # the longest: every match contains it
                by_probe.setdefault((key.probe_lower, key.probes[0]), []).append(item.rank)
            if key.regex is not None and key.regex.may_span:
                spanning.append(item.rank)
        if item.always or item.entry.constant or item.entry.decorators:
            always.append(item.rank)
    depths = [item.entry.scan_depth or 0 for item in prepared]
    formatting = routes.enabled(TOOL, MVU_UPDATE)
    return LoreIndex(
        prepared,
        ProbeIndex(probes),
        by_probe,
        always,
        problems,
        max(depths, default=0),
        by_key={item.key: item.entry for item in prepared},
        rank_of={item.key: item.rank for item in prepared},
        delayable=[item for item in prepared if item.entry.delay],
        levels=sorted({item.delay_level for item in prepared if item.delay_level > 0}),
        spanning=sorted(set(spanning)),
        formatting_keys={tuple(e.keys): formatting_keys(e.keys, settings) for e in formatting},
        mvu_updates=routes.enabled(MVU_UPDATE),
    )


def formatting_keys(keys: Sequence[str], settings: LoreSettings) -> list[Key]:
    """A tool's or an [mvu_update] entry's keys, compiled with the book-wide match settings."""
    case, words = settings.case_sensitive, settings.match_whole_words
    compiled = (compile_key(raw, case_sensitive=case, whole_words=words) for raw in keys)
    return [key for key in compiled if key is not None]


def _prepare(
    entry: LoreEntry,
    index: int,
    rank: int,
    settings: LoreSettings,
    substitute: Substitute | None,
    problems: list[str],
) -> Prepared:
    case = entry.case_sensitive if entry.case_sensitive is not None else settings.case_sensitive
    words = entry.match_whole_words
    words = settings.match_whole_words if words is None else words

    def compile_all(keys: list[str], macros: bool) -> list[Key | None]:
        return [
            compile_key(
                raw,
                case_sensitive=case,
                whole_words=words,
                substitute=substitute if macros else None,
                trim=macros,
            )
            for raw in keys
        ]

    primary = [key for key in compile_all(entry.keys, True) if key is not None]
    secondary = compile_all(entry.secondary_keys, True)
    for key in primary + [key for key in secondary if key is not None]:
        if key.problem or key.note:
            problems.append(
                f"entry {entry.uid} ({entry.comment or 'no title'}): {key.problem or key.note}"
            )
    level = int(entry.delay_until_recursion or 0)
    return Prepared(
        entry=entry,
        index=index,
        rank=rank,
        key=entry_key(entry),
        primary=primary,
        secondary=secondary,
        raw_primary=compile_all(entry.keys, False),
        raw_secondary=compile_all(entry.secondary_keys, False),
        groups=[label for label in split_groups(entry.group) if label],
        delay_level=level,
        sources=tuple(entry.match_sources),
        always=any(not key.probes and not key.problem for key in primary),
        decorators=st_decorators(entry.decorators),
    )


KNOWN_DECORATORS = ("@@activate", "@@dont_activate")


def st_decorators(lines: Sequence[str]) -> tuple[str, ...]:
    """The decorators SillyTavern 1.18 acts on, from an entry's leading ``@@`` lines.

    A line counts when it starts with a known decorator, and it must then equal it exactly to
    act (``"@@activate "`` and ``"@@activate\r"`` are read but do nothing). ``@@@x`` is skipped,
    unless it follows an unknown decorator: then it stands for ``@@x``."""
    found: list[str] = []
    fallback = False
    for line in lines:
        if line.startswith("@@@") and not fallback:
            continue
        data = line[1:] if line.startswith("@@@") else line
        if data.startswith(KNOWN_DECORATORS):
            found.append(data)
            fallback = False
        else:
            fallback = True
    return tuple(found)


def split_groups(group: str) -> list[str]:
    """SillyTavern splits ``group`` on a comma followed by optional whitespace."""
    return [label for label in re.split(r",\s*", group or "") if label]


_CACHE: dict[tuple[object, ...], tuple[object, LoreIndex]] = {}
_CACHE_LIMIT = 4


def index_for(
    entries: Sequence[LoreEntry],
    settings: LoreSettings,
    names: tuple[str, str] = ("User", ""),
    substitute: Substitute | None = None,
    character_sources: frozenset[str] = CHARACTER_SOURCES,
) -> LoreIndex:
    """A cached index for these entry objects, settings and macro names (user, char).

    ``substitute`` replaces the built-in ``{{user}}``/``{{char}}`` substitution of keys.
    """
    cache_key = (
        tuple(map(id, entries)),
        settings.case_sensitive,
        settings.match_whole_words,
        settings.character_strategy,
        character_sources,
        names,
        id(substitute),
    )
    hit = _CACHE.get(cache_key)
    if hit is not None:
        return hit[1]
    held = (list(entries), substitute)  # holding them keeps the ids in the cache key unique
    if substitute is None:
        substitute = partial(substitute_names, user=names[0], char=names[1])
    index = build_index(entries, settings, substitute, character_sources)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[cache_key] = (held, index)
    return index
