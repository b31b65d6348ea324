"""Loading: cards, lorebooks, presets, personas, chats and regex scripts, into ``domain`` types.

Parsing is pure; ``load.files`` is the only module that reads or writes files, with a size cap
per kind. Bad input raises a ``narrative_cli.errors.BadInput`` subclass whose message names
the file and the problem in one line.

The names below load on first use (PEP 562): a command imports the loader it calls and not
the rest (``inspect`` of a PNG card never pays for CHARX's ``zipfile`` or the chat reader).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from narrative_cli.load.card_books import card_book_to_lorebook, lorebook_to_card_book
    from narrative_cli.load.card_export import book_from_card, card_to_json, card_to_png
    from narrative_cli.load.cards import load_card, parse_card_bytes, parse_card_object
    from narrative_cli.load.chats import (
        chat_for_card,
        chat_to_jsonl,
        load_chat,
        parse_chat,
        prompt_messages,
        write_chat,
    )
    from narrative_cli.load.language import card_language
    from narrative_cli.load.lorebooks import (
        LoreSelection,
        load_lorebook,
        parse_lorebook,
        select_lore,
        world_to_dict,
    )
    from narrative_cli.load.personas import load_persona
    from narrative_cli.load.presets import load_preset, parse_preset
    from narrative_cli.load.regex import (
        compile_find_regex,
        load_regex_scripts,
        regex_problem,
        regex_scripts,
    )

__all__ = [
    "LoreSelection",
    "book_from_card",
    "card_book_to_lorebook",
    "card_language",
    "card_to_json",
    "card_to_png",
    "chat_for_card",
    "chat_to_jsonl",
    "compile_find_regex",
    "load_card",
    "load_chat",
    "load_lorebook",
    "load_persona",
    "load_preset",
    "load_regex_scripts",
    "lorebook_to_card_book",
    "parse_card_bytes",
    "parse_card_object",
    "parse_chat",
    "parse_lorebook",
    "parse_preset",
    "prompt_messages",
    "regex_problem",
    "regex_scripts",
    "select_lore",
    "world_to_dict",
    "write_chat",
]
_HOMES = {
    "LoreSelection": "lorebooks",
    "book_from_card": "card_export",
    "card_book_to_lorebook": "card_books",
    "card_language": "language",
    "card_to_json": "card_export",
    "card_to_png": "card_export",
    "chat_for_card": "chats",
    "chat_to_jsonl": "chats",
    "compile_find_regex": "regex",
    "load_card": "cards",
    "load_chat": "chats",
    "load_lorebook": "lorebooks",
    "load_persona": "personas",
    "load_preset": "presets",
    "load_regex_scripts": "regex",
    "lorebook_to_card_book": "card_books",
    "parse_card_bytes": "cards",
    "parse_card_object": "cards",
    "parse_chat": "chats",
    "parse_lorebook": "lorebooks",
    "parse_preset": "presets",
    "prompt_messages": "chats",
    "regex_problem": "regex",
    "regex_scripts": "regex",
    "select_lore": "lorebooks",
    "world_to_dict": "lorebooks",
    "write_chat": "chats",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value
