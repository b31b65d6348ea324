"""Embedded card books (``data.character_book``) ⇄ world-file ``Lorebook`` (compat §2.5, §2.6).

Reading follows SillyTavern's "Import Card Lore": ``extensions.position`` beats the position
string, a missing ``enabled`` disables the entry, a missing ``selective`` is false, and the
snake_case keys of ``extensions`` fill the world fields. V3 ``@@decorator`` lines at the start
of a content are split off into ``LoreEntry.decorators`` and put back on export.
"""

from __future__ import annotations

from typing import Any

from narrative_cli.domain import Lorebook, LoreEntry
from narrative_cli.errors import LorebookError
from narrative_cli.load.fields import Fields, entry_label, int_like, js_key_order, json_type

# extensions key → match_sources name
MATCH_EXTENSIONS = {
    "match_persona_description": "persona_description",
    "match_character_description": "character_description",
    "match_character_personality": "character_personality",
    "match_character_depth_prompt": "character_depth_prompt",
    "match_scenario": "scenario",
    "match_creator_notes": "creator_notes",
}
BOOK_FIELDS = frozenset({"name", "description", "scan_depth", "token_budget",
                         "recursive_scanning", "extensions", "entries"})
# Modelled entry keys; the ones SillyTavern ignores (name, priority, use_regex, the top-level
# case_sensitive) are kept in ``LoreEntry.extra`` so an edited book still carries them.
ENTRY_FIELDS = frozenset({"keys", "content", "extensions", "enabled", "insertion_order", "id",
                          "comment", "selective", "secondary_keys", "constant", "position"})


def split_decorators(content: str) -> tuple[str, list[str]]:
    """The content without its leading ``@@`` lines, and those lines (verbatim).

    When every line is a decorator SillyTavern leaves the content as it is; so do we."""
    if not content.startswith("@@"):
        return content, []
    lines = content.split("\n")
    for index, line in enumerate(lines):
        if not line.startswith("@@"):
            return "\n".join(lines[index:]), lines[:index]
    return content, lines


def join_decorators(content: str, decorators: list[str]) -> str:
    """The content as stored in a file: decorator lines first."""
    if not decorators or content.startswith("@@"):
        return content
    return "\n".join([*decorators, content])


def _recursion_level(value: object) -> int:
    if isinstance(value, bool) or value is None:
        return int(bool(value))
    if isinstance(value, (int, float)):
        return int(value)
    return 0


def _position(entry: Fields, ext: Fields) -> int:
    value = ext.opt_int("position")
    if value is not None:
        return value
    return 0 if entry.obj.get("position") == "before_char" else 1


def _card_uid(raw: object, index: int) -> int | str:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw:
        return int(raw) if int_like(raw) else raw
    return index


def card_entry(obj: dict[str, Any], index: int, where: str, source: str) -> LoreEntry:
    """One ``character_book`` entry in world-file terms (compat §2.5)."""
    uid = _card_uid(obj.get("id"), index)
    f = Fields(obj, f"{where}: book entry {entry_label(str(uid))}", LorebookError)
    raw_ext = f.mapping("extensions")
    e = Fields(raw_ext, f"{where}: book entry {entry_label(str(uid))}: extensions", LorebookError)
    content, decorators = split_decorators(f.text("content"))
    return LoreEntry(
        uid=uid, keys=f.strings("keys"), secondary_keys=f.strings("secondary_keys"),
        comment=f.text("comment"), content=content, constant=f.flag("constant"),
        selective=f.flag("selective"), selective_logic=e.integer("selectiveLogic", 0),
        order=f.opt_number("insertion_order"), position=_position(f, e),
        disabled=not f.flag("enabled"), depth=e.integer("depth", 4), role=e.integer("role", 0),
        probability=e.number("probability", 100),
        use_probability=e.flag("useProbability", True), scan_depth=e.opt_int("scan_depth"),
        case_sensitive=e.opt_flag("case_sensitive"),
        match_whole_words=e.opt_flag("match_whole_words"),
        use_group_scoring=e.opt_flag("use_group_scoring"), group=e.text("group"),
        group_override=e.flag("group_override"), group_weight=e.number("group_weight", 100),
        exclude_recursion=e.flag("exclude_recursion"),
        prevent_recursion=e.flag("prevent_recursion"),
        delay_until_recursion=_recursion_level(raw_ext.get("delay_until_recursion")),
        sticky=e.opt_int("sticky"), cooldown=e.opt_int("cooldown"), delay=e.opt_int("delay"),
        ignore_budget=e.flag("ignore_budget"), outlet_name=e.text("outlet_name"),
        triggers=e.strings("triggers"), automation_id=e.text("automation_id"),
        display_index=e.integer("display_index", index), vectorized=e.flag("vectorized"),
        match_sources=[name for key, name in MATCH_EXTENSIONS.items() if e.flag(key)],
        decorators=decorators, extensions=raw_ext,
        extra={k: v for k, v in obj.items() if k not in ENTRY_FIELDS}, source=source,
    )


def card_book_to_lorebook(raw: dict[str, Any], where: str, name: str) -> Lorebook:
    """A ``character_book`` object as a world-file ``Lorebook``; a later duplicate id replaces
    an earlier entry, and entries follow JavaScript object-key order, as in SillyTavern."""
    f = Fields(raw, f"{where}: character_book", LorebookError)
    items = raw.get("entries")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise LorebookError(f"{where}: character_book 'entries' must be a list, "
                            f"got {json_type(items)}")
    by_uid: dict[str, LoreEntry] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise LorebookError(f"{where}: book entry {index} must be an object, "
                                f"got {json_type(item)}")
        entry = card_entry(item, index, where, "card")
        by_uid[str(entry.uid)] = entry
    return Lorebook(
        name=f.text("name") or name, entries=[by_uid[k] for k in js_key_order(list(by_uid))],
        description=f.text("description"), scan_depth=f.opt_int("scan_depth"),
        token_budget=f.opt_int("token_budget"), recursive_scanning=f.opt_flag("recursive_scanning"),
        extensions=f.mapping("extensions"),
        extra={k: v for k, v in raw.items() if k not in BOOK_FIELDS}, source=f"card:{name}",
    )


def _entry_extensions(entry: LoreEntry, index: int) -> dict[str, Any]:
    ext = dict(entry.extensions)
    display = entry.display_index if entry.display_index is not None else index
    ext.update({
        "position": entry.position, "exclude_recursion": entry.exclude_recursion,
        "display_index": display, "probability": entry.probability,
        "useProbability": True if entry.use_probability is None else entry.use_probability,
        "depth": entry.depth, "selectiveLogic": entry.selective_logic,
        "outlet_name": entry.outlet_name, "group": entry.group,
        "group_override": entry.group_override, "group_weight": entry.group_weight,
        "prevent_recursion": entry.prevent_recursion,
        "delay_until_recursion": entry.delay_until_recursion, "scan_depth": entry.scan_depth,
        "match_whole_words": entry.match_whole_words, "use_group_scoring": entry.use_group_scoring,
        "case_sensitive": entry.case_sensitive, "automation_id": entry.automation_id,
        "role": entry.role, "vectorized": entry.vectorized, "sticky": entry.sticky,
        "cooldown": entry.cooldown, "delay": entry.delay, "triggers": list(entry.triggers),
        "ignore_budget": entry.ignore_budget,
    })
    ext.update({key: name in entry.match_sources for key, name in MATCH_EXTENSIONS.items()})
    if ext["position"] is None:
        del ext["position"]
    return ext


def card_entry_dict(entry: LoreEntry, index: int = 0) -> dict[str, Any]:
    """One entry in ``character_book`` form (compat §2.6)."""
    out: dict[str, Any] = {
        "id": entry.uid, "keys": list(entry.keys), "secondary_keys": list(entry.secondary_keys),
        "comment": entry.comment, "content": join_decorators(entry.content, entry.decorators),
        "constant": entry.constant,
    }
    if entry.selective is not None:
        out["selective"] = entry.selective
    if entry.order is not None:
        out["insertion_order"] = entry.order
    out.update({
        "enabled": not entry.disabled,
        "position": "before_char" if entry.position == 0 else "after_char",
        "use_regex": entry.extra.get("use_regex", True),
        "extensions": _entry_extensions(entry, index),
    })
    out.update({k: v for k, v in entry.extra.items() if k not in out})
    return out


def lorebook_to_card_book(book: Lorebook) -> dict[str, Any]:
    """The lorebook as a ``character_book`` object; a world's ``originalData`` wins, as in ST."""
    original = book.extra.get("originalData")
    if isinstance(original, dict):
        return original
    out: dict[str, Any] = {"name": book.name}
    if book.description:
        out["description"] = book.description
    for key, value in (("scan_depth", book.scan_depth), ("token_budget", book.token_budget),
                       ("recursive_scanning", book.recursive_scanning)):
        if value is not None:
            out[key] = value
    out["extensions"] = dict(book.extensions)
    out["entries"] = [card_entry_dict(e, i) for i, e in enumerate(book.entries)]
    out.update({k: v for k, v in book.extra.items() if k not in out})
    return out
