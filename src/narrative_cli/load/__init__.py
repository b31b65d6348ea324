"""Loading: cards, lorebooks, presets, personas, chats and regex scripts, into ``domain`` types.

Parsing is pure; ``load.files`` is the only module that reads or writes files, with a size cap
per kind. Bad input raises a ``narrative_cli.errors.BadInput`` subclass whose message names
the file and the problem in one line.
"""

from __future__ import annotations

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
