"""The lore index's and matcher's notes to authors in the reader's language.

The index writes its notes in English (``entry 3 (Fog): /[/ is not a JavaScript regex (…): it
is matched as plain text, as SillyTavern does``): they go to logs, traces and ``--json`` as
they are. ``note_words`` rewrites one for the screen through the catalogs (``lore.note_*``),
as ``lore.reasons`` does for activation reasons; English comes out unchanged, a note no rule
knows is shown as written, and keys, comments and JavaScript's own complaint stay exact.
"""

from __future__ import annotations

from narrative_cli.lore.reasons import compile_rules, rewrite

# (pattern, catalog key); an ``inner`` group is a note itself, rewritten in turn.
_RULES = compile_rules(
    (
        (r"lore: (?P<inner>.+)", "lore.note_lore"),
        (r"entry (?P<uid>\S+) \(no title\): (?P<inner>.+)", "lore.note_entry_untitled"),
        (r"entry (?P<uid>\S+) \((?P<comment>.*?)\): (?P<inner>.+)", "lore.note_entry"),
        (r"(?P<pattern>.+) is not a JavaScript regex \((?P<why>.*)\): it is matched as plain text,"
         r" as SillyTavern does", "lore.note_not_js"),
        (r"regex (?P<pattern>.+) is not supported here: (?P<why>.*)", "lore.note_unsupported"),
        (r"regex (?P<pattern>.+) ran longer than (?P<ms>\d+) ms and is skipped from now on",
         "lore.note_slow"),
        (r"(?P<book>.+): the world file (?P<world>'.*') holds the same book; it is loaded"
         r" once, from the world file", "lore.note_twin"),
        (r"(?P<book>.+): worldbook source world skips the card's book", "lore.note_world_only"),
        (r"(?P<book>.+): worldbook source card uses only the card's own book",
         "lore.note_card_only"),
    )
)


def note_words(note: str, lang: str | None) -> str:
    """``note`` as the lore code wrote it, in ``lang`` (unchanged when no rule knows it)."""
    return rewrite(note, _RULES, lang)
