"""The language of a card, for choosing prompt templates: "zh" or "en".

A card is Chinese when Han characters outnumber Latin words in its text (description,
personality, scenario, greetings, examples, system prompt and book entries), once macros
(``{{user}}``) and markup (``<div …>``) are removed: one Han character carries about as much
as one English word, and Chinese cards often embed English HTML or variable names.
"""

from __future__ import annotations

import re
from functools import cache

from narrative_cli.domain import Card

_LATIN_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_NOISE = re.compile(r"\{\{[^{}]*\}\}|<[^<>]*>")
MAX_CHARS = 200_000


@cache
def _han() -> re.Pattern[str]:
    """Han characters, compiled on first use: a wide class like this takes milliseconds to
    compile, and an ASCII card never needs it."""
    return re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def card_text(card: Card) -> str:
    """The card text that shows its language (capped for very large cards)."""
    parts = [card.name, card.description, card.personality, card.scenario, card.first_mes,
             *card.alternate_greetings, card.mes_example, card.system_prompt]
    if card.character_book is not None:
        parts.extend(entry.content for entry in card.character_book.entries)
    return "\n".join(parts)[:MAX_CHARS]


def text_language(text: str) -> str:
    """"zh" when Han characters outnumber Latin words in ``text``, else "en"."""
    clean = _NOISE.sub(" ", text)
    if clean.isascii():
        return "en"
    han = len(_han().findall(clean))
    return "zh" if han > 0 and han >= len(_LATIN_WORD.findall(clean)) else "en"


def card_language(card: Card) -> str:
    """"zh" when the card's text is mostly Chinese, else "en"."""
    return text_language(card_text(card))
