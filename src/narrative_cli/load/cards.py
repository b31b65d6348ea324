"""Character cards: V1, V2 and V3 from PNG, JSON, YAML or CHARX, into one ``Card`` (compat §1).

PNG: the first ``ccv3`` text chunk wins over the first ``chara`` one (keywords compared
case-insensitively; ``tEXt``, ``zTXt`` and ``iTXt`` all read); the payload is base64 of UTF-8
JSON, or raw JSON. JSON: a ``spec`` means V2/V3 with ``data`` authoritative over the top-level
V1 mirror; no ``spec`` but a ``name`` is V1; ``char_name`` is the old Pygmalion/Gradio shape.
Unknown ``data`` fields go to ``Card.extra``, unknown top-level fields to ``Card.top_level``;
``card_export`` writes them all back.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from pathlib import Path
from typing import Any

from narrative_cli.domain import Card
from narrative_cli.errors import CardError, Phrase, worded
from narrative_cli.load import files
from narrative_cli.load.card_books import card_book_to_lorebook
from narrative_cli.load.fields import Fields, json_type
from narrative_cli.load.png import PngError, TextChunk, is_png, text_chunks
from narrative_cli.logs import logger
from narrative_cli.safetext import MAX_JSON_DEPTH, clean_json, json_depth

SPECS = ("chara_card_v2", "chara_card_v3")
DATA_FIELDS = (
    "name", "description", "personality", "scenario", "first_mes", "mes_example",
    "creator_notes", "system_prompt", "post_history_instructions", "alternate_greetings",
    "group_only_greetings", "tags", "creator", "character_version", "nickname",
    "creator_notes_multilingual", "source", "creation_date", "modification_date", "assets",
    "extensions", "character_book",
)
GRADIO_FIELDS = {"char_name": "name", "char_persona": "description", "char_greeting": "first_mes",
                 "example_dialogue": "mes_example", "world_scenario": "scenario"}
CARD_KEYWORDS = ("ccv3", "chara")


def _text_list(f: Fields, key: str) -> list[str]:
    value = f.obj.get(key)
    if isinstance(value, str):
        return [value] if value else []
    return f.strings(key)


def _tags(f: Fields) -> list[str]:
    value = f.obj.get("tags")
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    return f.strings("tags")


def _multilingual(f: Fields) -> dict[str, str]:
    raw = f.mapping("creator_notes_multilingual")
    notes = Fields(raw, f"{f.where}: creator_notes_multilingual", CardError)
    return {key: notes.text(key) for key in raw}


def card_from_data(data: dict[str, Any], where: str, *, spec: str, spec_version: str,
                   origin: str, top_level: dict[str, Any]) -> Card:
    """A Card from the ``data`` object of a V2/V3 card (or the flat fields of a V1 card)."""
    f = Fields(data, f"{where}: data" if spec != "chara_card_v1" else where, CardError)
    name = f.text("name").strip() or Fields(top_level, where, CardError).text("name").strip()
    if not name:
        raise worded(CardError, "card.no_name", where=where)
    raw_book = data.get("character_book")
    if raw_book is not None and not isinstance(raw_book, dict):
        raise f.fail("character_book", "field.object")
    book = card_book_to_lorebook(raw_book, where, name) if raw_book else None
    if book is not None:
        book.source = f"card:{name}"
    return Card(
        name=name, description=f.text("description"), personality=f.text("personality"),
        scenario=f.text("scenario"), first_mes=f.text("first_mes"),
        mes_example=f.text("mes_example"), creator_notes=f.text("creator_notes"),
        system_prompt=f.text("system_prompt"),
        post_history_instructions=f.text("post_history_instructions"),
        alternate_greetings=_text_list(f, "alternate_greetings"),
        group_only_greetings=_text_list(f, "group_only_greetings"), tags=_tags(f),
        creator=f.text("creator"), character_version=f.text("character_version"),
        nickname=f.text("nickname"), creator_notes_multilingual=_multilingual(f),
        source_urls=_text_list(f, "source"), creation_date=f.opt_int("creation_date"),
        modification_date=f.opt_int("modification_date"), assets=f.objects("assets"),
        extensions=f.mapping("extensions"), character_book=book, spec=spec,
        spec_version=spec_version, source=origin, path=where,
        extra={k: v for k, v in data.items() if k not in DATA_FIELDS},
        top_level=top_level, raw_book=raw_book if isinstance(raw_book, dict) else None,
        data_keys=list(data) if spec != "chara_card_v1" else [],
    )


def _v1_data(obj: dict[str, Any]) -> dict[str, Any]:
    data = {GRADIO_FIELDS.get(k, k): v for k, v in obj.items()}
    if "creatorcomment" in obj and "creator_notes" not in obj:
        notes = obj["creatorcomment"]
        data["creator_notes"] = "" if notes == "Creator's notes go here." else notes
    extensions = {k: obj[k] for k in ("talkativeness", "fav") if k in obj}
    if extensions and not isinstance(obj.get("extensions"), dict):
        data["extensions"] = extensions
    return data


def parse_card_object(obj: object, where: str, origin: str = "json") -> Card:
    """A Card from parsed card JSON (V1, V2, V3 or Gradio)."""
    if json_depth(obj) > MAX_JSON_DEPTH:
        raise worded(CardError, "card.too_deep", where=where, levels=MAX_JSON_DEPTH)
    if not isinstance(obj, dict):
        raise worded(CardError, "card.not_object", where=where, got=json_type(obj))
    top = {k: v for k, v in obj.items() if k not in ("spec", "spec_version", "data")}
    spec = obj.get("spec")
    if spec is None:
        if "name" not in obj and "char_name" not in obj:
            raise worded(CardError, "card.no_spec", where=where)
        card = card_from_data(_v1_data(obj), where, spec="chara_card_v1", spec_version="1.0",
                              origin=origin, top_level=top)
        card.extra = {}  # a V1 card's other fields live at the top level
        return card
    if spec not in SPECS:
        raise worded(CardError, "card.lorebook_spec" if spec == "lorebook_v3" else
                     "card.unknown_spec", where=where, spec=repr(spec))
    data = obj.get("data")
    if data is None:  # SillyTavern uses such a card as it is
        data = top
    elif not isinstance(data, dict):
        raise CardError(f"{where}: 'data' must be an object, got {json_type(data)}")
    version = str(obj.get("spec_version") or ("3.0" if spec == "chara_card_v3" else "2.0"))
    return card_from_data(data, where, spec=str(spec), spec_version=version, origin=origin,
                          top_level=top)


def _decode_payload(chunk: TextChunk, where: str) -> object:
    what = Phrase("card.chunk", {"where": where, "keyword": repr(chunk.keyword)})
    text = chunk.text.strip()
    if not text.startswith("{"):
        compact = "".join(text.split())
        try:
            raw = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
        except (binascii.Error, ValueError):
            raise worded(CardError, "card.not_base64", what=what) from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise worded(CardError, "card.not_utf8", what=what) from None
    try:
        return clean_json(json.loads(text))
    except json.JSONDecodeError as exc:
        raise worded(CardError, "card.chunk_json", what=what, line=exc.lineno, column=exc.colno,
                     why=exc.msg) from None
    except RecursionError:
        raise worded(CardError, "card.chunk_deep", what=what) from None


def card_chunks(chunks: list[TextChunk]) -> list[TextChunk]:
    """The card chunks in reading order: the first ``ccv3``, then the first ``chara``."""
    picked = []
    for keyword in CARD_KEYWORDS:
        found = next((c for c in chunks if c.keyword.lower() == keyword), None)
        if found is not None:
            picked.append(found)
    return picked


def parse_png_card(data: bytes, where: str) -> Card:
    """A Card from PNG bytes; a broken ``ccv3`` chunk falls back to ``chara``."""
    try:
        candidates = card_chunks(text_chunks(data))
    except PngError as exc:
        raise worded(CardError, "card.png", where=where, problem=exc.words) from None
    if not candidates:
        raise worded(CardError, "card.png_no_card", where=where)
    first_error: CardError | None = None
    for chunk in candidates:
        try:
            obj = _decode_payload(chunk, where)
            return parse_card_object(obj, where, origin=f"png:{chunk.keyword.lower()}")
        except CardError as exc:
            if first_error is not None:
                break
            first_error = exc
            if len(candidates) > 1:
                logger(__name__).warning("%s; trying the 'chara' chunk", exc.message)
    assert first_error is not None
    raise first_error


def _parse_yaml(text: str, where: str) -> Card:
    import yaml  # YAML cards are rare; the import costs every other card its start-up

    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise worded(CardError, "card.bad_yaml", where=where,
                     why=str(exc).splitlines()[0]) from None
    except RecursionError:
        raise worded(CardError, "card.yaml_deep", where=where) from None
    if not isinstance(obj, dict) or "name" not in obj:
        raise worded(CardError, "card.yaml_no_name", where=where)
    flat = {"name": obj.get("name"), "description": obj.get("context"),
            "first_mes": obj.get("greeting")}
    return parse_card_object({k: v for k, v in flat.items() if v is not None}, where, "yaml")


def parse_card_bytes(data: bytes, where: str, suffix: str = "") -> Card:
    """A Card from the bytes of a card file: PNG, CHARX (zip), JSON or YAML."""
    suffix = suffix.lower()
    if is_png(data):
        return parse_png_card(data, where)
    if data.startswith(b"PK") or suffix in (".charx", ".jpg", ".jpeg", ".zip"):
        from narrative_cli.load.charx import find_zip, read_charx  # zipfile: for CHARX only

        if data.startswith(b"PK") or find_zip(data) >= 0:
            return parse_card_object(read_charx(data, where).card, where, origin="charx")
    if data[:3] == b"\xff\xd8\xff" or data[8:12] == b"WEBP":
        raise worded(CardError, "card.jpeg", where=where)
    text = files.decode_text(data, where, CardError, "card")
    if suffix in (".yaml", ".yml"):
        return _parse_yaml(text, where)
    if not text.lstrip().startswith(("{", "[")):
        raise worded(CardError, "card.not_a_card", where=where)
    return parse_card_object(files.parse_json_text(text, where, CardError, "card"), where)


def load_card(path: files.PathLike) -> Card:
    """Read a character card from ``path`` (PNG, JSON, CHARX or YAML)."""
    where = os.fspath(path)
    data = files.read_bytes(path, limit=files.MAX_CARD_BYTES, error=CardError, kind="card")
    return parse_card_bytes(data, where, Path(where).suffix)
