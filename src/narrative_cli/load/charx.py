"""CHARX cards: a zip with ``card.json`` at its root (compat §1.7), opened defensively.

Bytes before the first ``PK\\x03\\x04`` header are skipped (self-extracting archives, RisuAI's
"JPEG followed by a zip" cards). Before anything is read the archive is checked: no member
path may leave the archive (absolute, ``..``, drive letters), the file count and the unpacked
size are capped, and a member that inflates far beyond its compressed size is refused as a
zip bomb. ``card.json`` itself is read with a hard limit, whatever its header claims.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from narrative_cli.errors import CardError, worded
from narrative_cli.load.fields import json_type
from narrative_cli.load.files import MiB, describe_size, parse_json_text

ZIP_HEADER = b"PK\x03\x04"
MAX_MEMBERS = 10_000
MAX_UNPACKED_BYTES = 1024 * MiB
MAX_CARD_JSON_BYTES = 32 * MiB
MAX_RATIO = 200  # unpacked / packed, for members above RATIO_FLOOR
RATIO_FLOOR = 1 * MiB


@dataclass
class CharxContents:
    card: dict[str, Any]
    members: list[str] = field(default_factory=list)  # every file name in the archive


def find_zip(data: bytes) -> int:
    """Offset of the first local zip header, or -1."""
    return data.find(ZIP_HEADER)


def _open(data: bytes, where: str) -> zipfile.ZipFile:
    start = find_zip(data)
    if start < 0:
        raise worded(CardError, "charx.no_zip", where=where)
    for candidate in (data[start:], data):
        try:
            return zipfile.ZipFile(io.BytesIO(candidate))
        except (zipfile.BadZipFile, OSError, ValueError):
            continue
    raise worded(CardError, "charx.damaged", where=where)


def unsafe_member(name: str) -> bool:
    """True for member names that would escape the folder they are unpacked into."""
    if not name or name.startswith(("/", "\\")) or "\\" in name or "\x00" in name:
        return True
    if len(name) > 1 and name[1] == ":":
        return True
    return ".." in PurePosixPath(name).parts


def check_archive(archive: zipfile.ZipFile, where: str) -> list[zipfile.ZipInfo]:
    """The members, after the traversal, count, size and ratio checks."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise worded(CardError, "charx.too_many", where=where, count=len(infos),
                     limit=MAX_MEMBERS)
    total = 0
    for info in infos:
        if unsafe_member(info.filename):
            raise worded(CardError, "charx.unsafe", where=where, name=repr(info.filename))
        total += info.file_size
        packed = max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR and info.file_size / packed > MAX_RATIO:
            raise worded(CardError, "charx.bomb", where=where, name=repr(info.filename),
                         ratio=info.file_size // packed, size=describe_size(info.file_size))
    if total > MAX_UNPACKED_BYTES:
        raise worded(CardError, "charx.too_big", where=where, size=describe_size(total),
                     limit=describe_size(MAX_UNPACKED_BYTES))
    return infos


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, where: str) -> bytes:
    """A member's bytes, never more than ``limit`` whatever its header says."""
    try:
        with archive.open(info) as handle:
            data = handle.read(limit + 1)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
        raise worded(CardError, "charx.member_damaged", where=where, name=repr(info.filename),
                     why=exc) from None
    except RuntimeError as exc:  # encrypted members
        raise worded(CardError, "charx.member_unreadable", where=where,
                     name=repr(info.filename), why=exc) from None
    if len(data) > limit:
        raise worded(CardError, "charx.member_large", where=where, name=repr(info.filename),
                     limit=describe_size(limit))
    return data


def read_charx(data: bytes, where: str) -> CharxContents:
    """The parsed ``card.json`` of a CHARX archive (it must name a ``spec``)."""
    with _open(data, where) as archive:
        infos = check_archive(archive, where)
        card_info = next((i for i in infos if i.filename == "card.json"), None)
        if card_info is None:
            raise worded(CardError, "charx.no_card_json", where=where)
        raw = read_member(archive, card_info, MAX_CARD_JSON_BYTES, where)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise worded(CardError, "charx.not_utf8", where=where) from None
    card = parse_json_text(text, f"{where}: card.json", CardError, "card")
    if not isinstance(card, dict):
        raise worded(CardError, "charx.not_object", where=where, got=json_type(card))
    if "spec" not in card:
        raise worded(CardError, "charx.no_spec", where=where)
    return CharxContents(card=card, members=[i.filename for i in infos])
