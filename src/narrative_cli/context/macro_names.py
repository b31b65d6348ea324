"""The names of the macros ``context.macros`` runs (its handlers and their aliases), for the
places that only ask whether ``{{name}}`` is one of them: ``context.macro_scan`` (``inspect``
and a story's opening problems) reads this list without loading the macro engine. A test
keeps it equal to the engine's own table (``tests/test_macros.py``).
"""

from __future__ import annotations

MACRO_NAMES = frozenset("""
    user char description personality scenario persona mesexamples mesexamplesraw charprompt
    charinstruction chardepthprompt creatornotes charversion original input model newline
    space noop trim time date weekday isotime isodate random pick roll outlet
    getvar setvar addvar incvar decvar hasvar deletevar getglobalvar setglobalvar addglobalvar
    incglobalvar decglobalvar hasglobalvar deleteglobalvar get_message_variable
    format_message_variable get_chat_variable format_chat_variable get_global_variable
    format_global_variable lastusermessage lastmessage lastcharmessage reverse
    chardescription charpersonality charscenario charjailbreak charcreatornotes char_version
    version varexists flushvar globalvarexists flushglobalvar charifnotgroup group notchar
""".split())


def known_macro(name: str) -> bool:
    """Whether ``{{name…}}`` is a macro ``context.macros`` runs (names are case-insensitive)."""
    return name.lower() in MACRO_NAMES
