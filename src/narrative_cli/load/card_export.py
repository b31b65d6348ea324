"""Cards back to files: card JSON (V2/V3 with the V1 mirror) and PNG (compat §1.6).

A round trip keeps every field: the ``data`` keys the file had (in its order), unknown ``data``
and top-level fields, unknown extension fields, and the embedded book exactly as it was unless
the ``Lorebook`` was changed. The top-level V1 mirror is refreshed from ``data``, which wins.
A PNG gets a ``chara`` chunk and a ``ccv3`` chunk (the same JSON with the V3 spec) just before
IEND; existing card chunks are dropped and every other chunk is kept.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

from narrative_cli.domain import Card, Lorebook
from narrative_cli.errors import CardError, LorebookError
from narrative_cli.load.card_books import card_book_to_lorebook, lorebook_to_card_book
from narrative_cli.load.png import (
    PngError,
    is_png,
    placeholder_image,
    replace_text_chunks,
    text_chunk,
)

SPECS = ("chara_card_v2", "chara_card_v3")
STANDARD_V2 = ("name", "description", "personality", "scenario", "first_mes", "mes_example",
               "creator_notes", "system_prompt", "post_history_instructions",
               "alternate_greetings", "tags", "creator", "character_version", "extensions")
STANDARD_V3 = (*STANDARD_V2, "group_only_greetings")
# Top-level fields SillyTavern copies from ``data`` (readFromV2); other top-level keys stay as is.
V1_MIRROR = frozenset({"name", "description", "personality", "scenario", "first_mes",
                       "mes_example", "tags"})


def book_from_card(card: Card) -> Lorebook:
    """The card's embedded book as a world-file Lorebook (compat §2.5); empty when it has none."""
    if card.character_book is not None:
        return card.character_book
    if card.raw_book is not None:
        return card_book_to_lorebook(card.raw_book, card.path or card.name, card.name)
    return Lorebook(name=card.name, source=f"card:{card.name}")


def _unchanged(raw: dict[str, Any], book: Lorebook, card: Card) -> bool:
    try:
        fresh = card_book_to_lorebook(raw, card.path, book.name)
    except LorebookError:
        return False
    return dataclasses.replace(fresh, source="") == dataclasses.replace(book, source="")


def book_json(card: Card) -> dict[str, Any] | None:
    """The ``character_book`` object to embed: the original when unchanged, else converted."""
    book = card.character_book
    if book is None:
        return None
    if card.raw_book is not None and _unchanged(card.raw_book, book, card):
        return card.raw_book
    return lorebook_to_card_book(book)


def data_values(card: Card) -> dict[str, Any]:
    """Every modelled ``data`` field of the card, by its file key."""
    return {
        "name": card.name, "description": card.description, "personality": card.personality,
        "scenario": card.scenario, "first_mes": card.first_mes, "mes_example": card.mes_example,
        "creator_notes": card.creator_notes, "system_prompt": card.system_prompt,
        "post_history_instructions": card.post_history_instructions,
        "alternate_greetings": list(card.alternate_greetings),
        "group_only_greetings": list(card.group_only_greetings), "tags": list(card.tags),
        "creator": card.creator, "character_version": card.character_version,
        "nickname": card.nickname, "creator_notes_multilingual": card.creator_notes_multilingual,
        "source": list(card.source_urls), "creation_date": card.creation_date,
        "modification_date": card.modification_date, "assets": card.assets,
        "extensions": card.extensions, "character_book": book_json(card),
    }


def _empty(value: object) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _data(card: Card, spec: str, values: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    keys = card.data_keys or list(STANDARD_V3 if spec == "chara_card_v3" else STANDARD_V2)
    for key in keys:
        if key in values:
            if values[key] is not None:
                data[key] = values[key]
        elif key in card.extra:
            data[key] = card.extra[key]
    for key, value in values.items():
        if key not in data and not _empty(value):
            data[key] = value
    for key, value in card.extra.items():
        data.setdefault(key, value)
    return data


def _mirror(card: Card, values: dict[str, Any]) -> dict[str, Any]:
    top: dict[str, Any] = {}
    for key, value in card.top_level.items():
        if key == "creatorcomment":
            top[key] = card.creator_notes
        elif key in ("talkativeness", "fav") and key in card.extensions:
            top[key] = card.extensions[key]
        elif key in V1_MIRROR:
            top[key] = values[key]
        else:
            top[key] = value
    return top


def card_to_json(card: Card) -> dict[str, Any]:
    """The card as V2/V3 JSON with its top-level V1 mirror (a V1 card becomes V2)."""
    spec = card.spec if card.spec in SPECS else "chara_card_v2"
    version = card.spec_version if card.spec in SPECS else "2.0"
    values = data_values(card)
    return {**_mirror(card, values), "spec": spec, "spec_version": version,
            "data": _data(card, spec, values)}


def _encode(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def card_to_png(card: Card, image: bytes | None = None, *, ccv3: bool = True) -> bytes:
    """PNG bytes carrying the card: ``chara`` then ``ccv3`` before IEND (compat §1.6).

    ``ccv3=False`` writes the ``chara`` chunk alone, as V2-only tools (and ST ≤1.12) do."""
    picture = image if image is not None else placeholder_image()
    if not is_png(picture):
        raise CardError(f"{card.name}: the image to embed the card in is not a PNG")
    payload = card_to_json(card)
    v3 = {**payload, "spec": "chara_card_v3", "spec_version": "3.0"}
    new = [text_chunk("chara", _encode(payload))]
    if ccv3:
        new.append(text_chunk("ccv3", _encode(v3)))
    try:
        return replace_text_chunks(picture, frozenset({"chara", "ccv3"}), new)
    except PngError as exc:
        raise CardError(f"{card.name}: cannot embed the card in the image ({exc})") from None
