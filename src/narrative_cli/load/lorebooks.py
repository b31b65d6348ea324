"""SillyTavern world files (compat §2.1–2.3) ⇄ ``Lorebook``, and the world-book source setting.

A world file is ``{"entries": {"<uid>": {...}}}``. Fields that SillyTavern treats differently
when absent stay ``None`` (``selective``, ``useProbability``, ``position``, ``order``); every
field we do not model is kept in ``extra`` and written back on export. Embedded card books
(``character_book``) are converted in ``card_books``; this module also accepts them as
stand-alone files, bare or in the V3 ``{"spec": "lorebook_v3", "data": …}`` envelope.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative_cli.domain import Card, Lorebook, LoreEntry
from narrative_cli.errors import ConfigError, LorebookError, Phrase, worded
from narrative_cli.load import files
from narrative_cli.load.card_books import card_book_to_lorebook, join_decorators, split_decorators
from narrative_cli.load.fields import (
    Fields,
    entry_label,
    int_like,
    js_equals_true,
    js_key_order,
    js_truthy,
    json_type,
)

# World field → match_sources name (also the card-book extension key minus "match_").
MATCH_FLAGS = {
    "matchPersonaDescription": "persona_description",
    "matchCharacterDescription": "character_description",
    "matchCharacterPersonality": "character_personality",
    "matchCharacterDepthPrompt": "character_depth_prompt",
    "matchScenario": "scenario",
    "matchCreatorNotes": "creator_notes",
}

WORLD_FIELDS = frozenset({
    "uid", "key", "keysecondary", "comment", "content", "constant", "vectorized", "selective",
    "selectiveLogic", "order", "position", "disable", "ignoreBudget", "excludeRecursion",
    "preventRecursion", "delayUntilRecursion", "probability", "useProbability", "depth",
    "outletName", "group", "groupOverride", "groupWeight", "scanDepth", "caseSensitive",
    "matchWholeWords", "useGroupScoring", "automationId", "role", "sticky", "cooldown", "delay",
    "triggers", "characterFilter", "displayIndex", "extensions", *MATCH_FLAGS,
})
SOURCES = ("auto", "card", "world")


def recursion_level(f: Fields, key: str) -> int:
    """``delayUntilRecursion``: false/absent → 0, true → 1, a number N → N (any other truthy
    value: 1)."""
    value = f.obj.get(key)
    if isinstance(value, bool) or value is None:
        return int(bool(value))
    if not js_truthy(value):
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    return int(float(value)) if isinstance(value, str) and int_like(value.strip()) else 1


def world_position(f: Fields) -> int | None:
    """A world file's ``position`` is a number; SillyTavern inserts any other value nowhere
    (``"after_char"`` is a card-book spelling, which SillyTavern converts only on import)."""
    value = f.obj.get("position")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return int(value) if value == int(value) else None


def _keys(f: Fields, key: str) -> list[str]:
    """A key list; anything else (``"key": "king"``) never fires in SillyTavern: no keys."""
    value = f.obj.get(key)
    if value is not None and not isinstance(value, list):
        return []
    return f.strings(key)


def _logic(f: Fields) -> int:
    """``selectiveLogic`` is compared with ``===``: a string (``"0"``) matches no logic (-1)."""
    value = f.obj.get("selectiveLogic")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        return -1
    return int(value)


def _uid(obj: dict[str, Any], key: str) -> int | str:
    uid = obj.get("uid")
    if isinstance(uid, int) and not isinstance(uid, bool):
        return uid
    if isinstance(uid, str) and uid:
        return int(uid) if int_like(uid) else uid
    return int(key) if int_like(key) else key


def world_entry(obj: dict[str, Any], key: str, where: str, source: str) -> LoreEntry:
    """One world-file entry (compat §2.2), absent fields kept as absent."""
    f = Fields(obj, f"{where}: entry {entry_label(key)}", LorebookError)
    content, decorators = split_decorators(f.text("content"))

    def truthy(name: str) -> bool:
        return js_truthy(obj.get(name))

    return LoreEntry(
        uid=_uid(obj, key), keys=_keys(f, "key"), secondary_keys=_keys(f, "keysecondary"),
        comment=f.text("comment"), content=content, constant=truthy("constant"),
        selective=f.js_flag("selective"), selective_logic=_logic(f),
        order=f.opt_number("order"), position=world_position(f),
        disabled=js_equals_true(obj.get("disable")),
        depth=f.integer("depth", 4), role=f.integer("role", 0),
        probability=f.number("probability", 100), use_probability=f.js_flag("useProbability"),
        scan_depth=f.opt_int("scanDepth"), case_sensitive=f.js_flag("caseSensitive"),
        match_whole_words=f.js_flag("matchWholeWords"),
        use_group_scoring=f.js_flag("useGroupScoring"), group=f.text("group"),
        group_override=truthy("groupOverride"), group_weight=f.number("groupWeight", 100),
        exclude_recursion=truthy("excludeRecursion"),
        prevent_recursion=truthy("preventRecursion"),
        delay_until_recursion=recursion_level(f, "delayUntilRecursion"),
        sticky=f.opt_int("sticky"), cooldown=f.opt_int("cooldown"), delay=f.opt_int("delay"),
        ignore_budget=truthy("ignoreBudget"), outlet_name=f.text("outletName"),
        triggers=f.strings("triggers"), character_filter=f.mapping("characterFilter"),
        automation_id=f.text("automationId"), display_index=f.opt_int("displayIndex"),
        vectorized=truthy("vectorized"),
        match_sources=[name for flag, name in MATCH_FLAGS.items() if truthy(flag)],
        decorators=decorators, extensions=f.mapping("extensions"),
        extra={k: v for k, v in obj.items() if k not in WORLD_FIELDS or _kept_raw(k, v)},
        source=source,
    )


def _kept_raw(key: str, value: object) -> bool:
    """A field whose value could not be read as SillyTavern's type: kept as written, so an
    export gives it back and ``lore lint`` can name it."""
    if key in ("key", "keysecondary"):
        return value is not None and not isinstance(value, list)
    if key == "position":
        return value is not None and not (isinstance(value, (int, float))
                                          and not isinstance(value, bool))
    return False


def _entry_items(entries: object, where: str) -> list[tuple[str, Any]]:
    if isinstance(entries, dict):
        return [(k, entries[k]) for k in js_key_order(list(entries))]
    if isinstance(entries, list):
        return [(str(i), e) for i, e in enumerate(entries)]
    raise worded(LorebookError, "book.bad_entries", where=where, got=json_type(entries))


def _is_card_book(obj: dict[str, Any]) -> bool:
    entries = obj.get("entries")
    if not isinstance(entries, list) or not entries or not isinstance(entries[0], dict):
        return False
    return "keys" in entries[0] or "insertion_order" in entries[0] or "enabled" in entries[0]


def _unsupported(obj: dict[str, Any]) -> Phrase | None:
    """What ``obj`` looks like, when it is another tool's lore or a card."""
    if "lorebookVersion" in obj:
        return Phrase("book.novelai")
    if obj.get("kind") == "memory":
        return Phrase("book.agnai")
    if obj.get("type") == "risu":
        return Phrase("book.risu")
    if str(obj.get("spec", "")).startswith("chara_card") or "char_name" in obj:
        return Phrase("book.a_card")
    return None


def parse_lorebook(obj: object, where: str, name: str) -> Lorebook:
    """A lorebook from parsed JSON: a world file, a bare card book or a ``lorebook_v3`` file."""
    if not isinstance(obj, dict):
        raise worded(LorebookError, "book.not_object", where=where, got=json_type(obj))
    if obj.get("spec") == "lorebook_v3":
        data = obj.get("data")
        if not isinstance(data, dict):
            raise worded(LorebookError, "book.bad_data", where=where)
        book = card_book_to_lorebook(data, where, name or str(data.get("name") or ""))
        book.source = where
        return book
    if "entries" not in obj:
        kind = _unsupported(obj)
        looks = Phrase("book.looks_like", {"kind": kind}) if kind else ""
        raise worded(LorebookError, "book.no_entries", where=where, looks=looks)
    if _is_card_book(obj):
        book = card_book_to_lorebook(obj, where, name or str(obj.get("name") or ""))
        book.source = where
        return book
    entries = []
    for key, entry in _entry_items(obj["entries"], where):
        if not isinstance(entry, dict):
            raise worded(LorebookError, "book.entry_not_object", where=where,
                         entry=entry_label(key), got=json_type(entry))
        entries.append(world_entry(entry, key, where, name))
    extra = {k: v for k, v in obj.items() if k != "entries"}
    return Lorebook(name=name, entries=entries, extra=extra, source=where)


def load_lorebook(path: files.PathLike) -> Lorebook:
    """Read a world file (or a stand-alone card book) from ``path``."""
    where = os.fspath(path)
    obj = files.read_json(path, limit=files.MAX_JSON_BYTES, error=LorebookError, kind="lorebook")
    return parse_lorebook(obj, where, Path(where).stem)


def _nullable(out: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        out[key] = value


def world_entry_dict(entry: LoreEntry) -> dict[str, Any]:
    """One entry in world-file form; fields that were absent stay absent."""
    out: dict[str, Any] = {"uid": entry.uid, "key": list(entry.keys),
                           "keysecondary": list(entry.secondary_keys), "comment": entry.comment,
                           "content": join_decorators(entry.content, entry.decorators),
                           "constant": entry.constant, "vectorized": entry.vectorized}
    _nullable(out, "selective", entry.selective)
    out["selectiveLogic"] = entry.selective_logic
    _nullable(out, "order", entry.order)
    _nullable(out, "position", entry.position)
    out.update({
        "disable": entry.disabled, "ignoreBudget": entry.ignore_budget,
        "excludeRecursion": entry.exclude_recursion, "preventRecursion": entry.prevent_recursion,
        "delayUntilRecursion": entry.delay_until_recursion, "probability": entry.probability,
    })
    _nullable(out, "useProbability", entry.use_probability)
    out.update({"depth": entry.depth, "outletName": entry.outlet_name, "group": entry.group,
                "groupOverride": entry.group_override, "groupWeight": entry.group_weight,
                "scanDepth": entry.scan_depth, "caseSensitive": entry.case_sensitive,
                "matchWholeWords": entry.match_whole_words,
                "useGroupScoring": entry.use_group_scoring, "automationId": entry.automation_id,
                "role": entry.role, "sticky": entry.sticky, "cooldown": entry.cooldown,
                "delay": entry.delay, "triggers": list(entry.triggers)})
    out.update({flag: name in entry.match_sources for flag, name in MATCH_FLAGS.items()})
    if entry.character_filter:
        out["characterFilter"] = entry.character_filter
    _nullable(out, "displayIndex", entry.display_index)
    if entry.extensions:
        out["extensions"] = entry.extensions
    out.update(entry.extra)
    return out


def world_to_dict(book: Lorebook) -> dict[str, Any]:
    """The lorebook as a SillyTavern world file (entries keyed by uid)."""
    entries = {str(e.uid): world_entry_dict(e) for e in book.entries}
    return {"entries": entries, **{k: v for k, v in book.extra.items() if k != "entries"}}


@dataclass
class LoreSelection:
    """The lorebooks a story uses under a world-book source setting, and what was left out."""

    books: list[Lorebook]
    source: str  # "card", "world" or "none"
    skipped: list[str] = field(default_factory=list)  # "<book>: <why>"

    @property
    def entries(self) -> list[LoreEntry]:
        return [entry for book in self.books for entry in book.entries]


def select_lore(card: Card, worlds: list[Lorebook], source: str = "auto") -> LoreSelection:
    """The lorebooks a story uses under the world-book source setting.

    ``auto`` (default): the card's embedded book plus every world file the user named, since a
    user who passes ``--lorebook`` expects it to be read (SillyTavern, too, adds the selected
    global world books to character lore). ``card``: only the embedded book. ``world``: only the
    named world files. What is left out is listed in ``skipped``.
    A world file holding the card's own book (same name, or all of its entries) replaces the
    embedded book, so the book is loaded once.
    """
    if source not in SOURCES:
        raise ConfigError(f"worldbook source {source!r} is unknown (use auto, card or world)")
    book = card.character_book if card.character_book and card.character_book.entries else None
    books: list[Lorebook] = []
    skipped: list[str] = []
    twin = _same_book(book, worlds) if book is not None and source != "card" else None
    if book is not None and twin is not None:
        skipped.append(f"{book.name or 'card book'}: the world file {twin.name!r} holds the same "
                       "book; it is loaded once, from the world file")
        book = None
    if book is not None:
        if source == "world":
            name = book.name or "card book"
            skipped.append(f"{name}: worldbook source world skips the card's book")
        else:
            books.append(book)
    for world in worlds:
        if source == "card":
            skipped.append(f"{world.name}: worldbook source card uses only the card's own book")
        else:
            books.append(world)
    kinds = {"card" if b is book else "world" for b in books}
    label = "+".join(sorted(kinds)) if kinds else "none"
    return LoreSelection(books, label, skipped)


def linked_world(card: Card) -> str:
    """The world the card links (``data.extensions.world``), "" when none."""
    name = card.extensions.get("world")
    return name.strip() if isinstance(name, str) else ""


def _same_book(book: Lorebook, worlds: list[Lorebook]) -> Lorebook | None:
    """The world file that holds the card's own book: one with the book's name, or one that
    holds every entry of the book (same content and keys; the user may have added entries).
    A card's linked world alone is not enough: a card may link a different world."""
    name = book.name.strip()
    own = Counter(_fingerprint(book))
    for world in worlds:
        if (name and world.name.strip() == name) or not own - Counter(_fingerprint(world)):
            return world
    return None


def _fingerprint(book: Lorebook) -> list[tuple[str, tuple[str, ...]]]:
    return [(e.content.strip(), tuple(e.keys)) for e in book.entries]
