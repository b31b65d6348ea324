"""Start the sandbox's helper process early for a card that will need it.

The helper (a Python process importing QuickJS, ``tools.sandbox``) takes 0.1–0.2 s to start.
Started by the first request, it made that request wait: a card's code tool has its syntax
checked while the story opens, so ``narrative run`` and ``narrative replay`` waited for it on
the way to the first turn, after importing the pipeline (about 0.5 s). Started as soon as the
card is read, before those imports, it is ready by then: the start overlaps them on another
core instead of following them.

The test is cheap and leans towards starting: a helper started for nothing idles and is
stopped at exit; one not started costs the wait above and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from narrative_cli.domain import Card, LoreEntry

if TYPE_CHECKING:
    from narrative_cli.domain_chat import Preset


def needs_helper(card: Card, entries: Sequence[LoreEntry]) -> bool:
    """Whether playing ``card`` with ``entries`` (its lore) will run JavaScript: a code tool
    other than the dice engine (checked when the story opens), an EJS template, or a regex
    script that is not of the shape run in Python (``regex.delimited``)."""
    return _code_tools(entries) or has_templates(card, entries) or _scripts(card)


def warm_up_for(card: Card, entries: Sequence[LoreEntry]) -> bool:
    """Start the helper in the background when ``needs_helper``; whether it was asked to."""
    if not needs_helper(card, entries):
        return False
    from narrative_cli.tools.sandbox import warm_up

    warm_up()
    return True


def _code_tools(entries: Sequence[LoreEntry]) -> bool:
    from narrative_cli.lore.routed import routes_for
    from narrative_cli.lore.routing import TOOL
    from narrative_cli.safetext import loads
    from narrative_cli.tools.definitions import DICE_TOOL

    for entry in routes_for(entries).enabled(TOOL):
        try:
            data = loads(entry.content.strip(), strict=False)
        except ValueError:
            continue  # the tool loader names what is wrong with it
        if not isinstance(data, dict) or data.get("type") != "code":
            continue
        function = data.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if name != DICE_TOOL:
            return True
    return False


def has_templates(card: Card, entries: Sequence[LoreEntry], preset: Preset | None = None) -> bool:
    """Whether a text that reaches prompts (card fields, lore, ``preset``'s prompts) holds an
    EJS template: the template runner is JavaScript."""
    from narrative_cli.context.ejs import has_template
    from narrative_cli.context.macro_scan import card_sources

    return any(has_template(text) for _, text in card_sources(card, entries, preset))


def _scripts(card: Card) -> bool:
    from narrative_cli.context.ejs import has_template
    from narrative_cli.load import regex_scripts
    from narrative_cli.load.regex import split_find_regex
    from narrative_cli.regex.delimited import delimited

    for script in regex_scripts(card):
        if script.disabled or not script.find_regex:
            continue
        body, flags = split_find_regex(script.find_regex)
        replace = script.replace_string
        if script.trim_strings or delimited(body, flags, replace, has_template(replace)) is None:
            return True
    return False


def warm_up_for_file(path: str) -> Card | None:
    """Read the card at ``path`` and ``warm_up_for`` it with its own lore; None when it does
    not load (whoever loads it for the story says why)."""
    from narrative_cli.errors import NarrativeError
    from narrative_cli.load import load_card, select_lore

    try:
        card = load_card(path)
    except (NarrativeError, OSError, ValueError):
        return None
    warm_up_for(card, select_lore(card, [], "auto").entries)
    return card
