"""PNG chunks: parse with length and CRC checks, read text chunks, write card chunks.

A PNG is an 8-byte signature followed by chunks (``uint32`` big-endian length, 4-byte type,
data, CRC-32 over type and data). Cards live in text chunks: ``tEXt`` (keyword, NUL, Latin-1
text), ``zTXt`` (keyword, NUL, method byte, zlib data) and ``iTXt`` (keyword, NUL, compression
flag, method, language tag, NUL, translated keyword, NUL, UTF-8 text, maybe zlib). Decompressed
text is capped so a tiny chunk cannot inflate into gigabytes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from narrative_cli.errors import Phrase

SIGNATURE = b"\x89PNG\r\n\x1a\n"
TEXT_TYPES = (b"tEXt", b"zTXt", b"iTXt")
MAX_TEXT_BYTES = 64 * 1024 * 1024  # decoded size of one text chunk


class PngError(ValueError):
    """The bytes are not a well-formed PNG (the message says what is wrong); ``words``: the
    same in any language (the catalogs' ``png.*``)."""

    def __init__(self, key: str, **values: object) -> None:
        self.words = Phrase(key, values)
        super().__init__(str(self.words))


@dataclass(frozen=True)
class Chunk:
    type: bytes
    data: bytes

    @property
    def name(self) -> str:
        return self.type.decode("latin-1")


@dataclass(frozen=True)
class TextChunk:
    keyword: str
    text: str
    chunk_type: str  # tEXt, zTXt or iTXt


def is_png(data: bytes) -> bool:
    """True when ``data`` starts with the PNG signature."""
    return data.startswith(SIGNATURE)


def _spans(data: bytes, check_crc: frozenset[bytes]) -> Iterator[tuple[bytes, int, int]]:
    """(type, start, end) of every chunk body up to IEND, checked, without copying bodies."""
    if not is_png(data):
        raise PngError("png.no_signature")
    view = memoryview(data)
    offset = len(SIGNATURE)
    while True:
        if offset + 8 > len(data):
            raise PngError("png.truncated")
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        end = offset + 12 + length
        if end > len(data):
            name = kind.decode("latin-1", "replace")
            raise PngError("png.truncated_chunk", chunk=repr(name), length=length,
                           left=max(0, len(data) - offset - 12))
        start = offset + 8
        if kind in check_crc:
            (crc,) = struct.unpack(">I", data[start + length : end])
            if zlib.crc32(view[start : start + length], zlib.crc32(kind)) != crc:
                raise PngError("png.bad_crc", chunk=repr(kind.decode("latin-1", "replace")))
        yield kind, start, start + length
        offset = end
        if kind == b"IEND":
            return


def parse_chunks(
    data: bytes, *, check_crc: frozenset[bytes] = frozenset(TEXT_TYPES)
) -> list[Chunk]:
    """Every chunk up to IEND; raises PngError for a bad signature, truncation or a bad CRC."""
    return [Chunk(kind, data[start:end]) for kind, start, end in _spans(data, check_crc)]


def _inflate(data: bytes, what: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_TEXT_BYTES + 1)
    except zlib.error as exc:
        raise PngError("png.damaged", what=what, why=exc) from None
    if len(out) > MAX_TEXT_BYTES or inflater.unconsumed_tail:
        raise PngError("png.inflates", what=what, mib=MAX_TEXT_BYTES // (1024 * 1024))
    return out


def _split_keyword(data: bytes, what: str) -> tuple[str, bytes]:
    keyword, sep, rest = data.partition(b"\x00")
    if not sep:
        raise PngError("png.no_keyword", what=what)
    return keyword.decode("latin-1"), rest


def decode_text_chunk(chunk: Chunk) -> TextChunk:
    """The keyword and text of a tEXt, zTXt or iTXt chunk."""
    what = f"text chunk {chunk.name}"
    keyword, rest = _split_keyword(chunk.data, what)
    what = f"{chunk.name} chunk {keyword!r}"
    if chunk.type == b"tEXt":
        return TextChunk(keyword, rest.decode("latin-1"), chunk.name)
    if chunk.type == b"zTXt":
        if not rest:
            raise PngError("png.empty", what=what)
        return TextChunk(keyword, _inflate(rest[1:], what).decode("latin-1"), chunk.name)
    if len(rest) < 2:
        raise PngError("png.short", what=what)
    compressed, body = rest[0], rest[2:]
    _language, _, body = body.partition(b"\x00")
    _translated, _, body = body.partition(b"\x00")
    raw = _inflate(body, what) if compressed else body
    try:
        return TextChunk(keyword, raw.decode("utf-8"), chunk.name)
    except UnicodeDecodeError:
        raise PngError("png.not_utf8", what=what) from None


def text_chunks(data: bytes) -> list[TextChunk]:
    """Every text chunk of a PNG, in file order (image data is walked over, never copied)."""
    return [decode_text_chunk(Chunk(kind, data[start:end]))
            for kind, start, end in _spans(data, frozenset(TEXT_TYPES)) if kind in TEXT_TYPES]


def chunk_bytes(chunk: Chunk) -> bytes:
    """One chunk as it is stored: length, type, data, CRC."""
    crc = zlib.crc32(chunk.type + chunk.data) & 0xFFFFFFFF
    return struct.pack(">I", len(chunk.data)) + chunk.type + chunk.data + struct.pack(">I", crc)


def build_png(chunks: list[Chunk]) -> bytes:
    """A PNG file from its chunks."""
    return SIGNATURE + b"".join(chunk_bytes(c) for c in chunks)


def text_chunk(keyword: str, text: str) -> Chunk:
    """A tEXt chunk (keyword and text must be Latin-1; base64 payloads always are)."""
    return Chunk(b"tEXt", keyword.encode("latin-1") + b"\x00" + text.encode("latin-1"))


def chunk_keyword(chunk: Chunk) -> str | None:
    """The keyword of a text chunk, lower-cased; None for other chunks."""
    if chunk.type not in TEXT_TYPES:
        return None
    return chunk.data.partition(b"\x00")[0].decode("latin-1").lower()


def replace_text_chunks(data: bytes, keywords: frozenset[str], new: list[Chunk]) -> bytes:
    """The PNG with every text chunk whose keyword (any case) is in ``keywords`` replaced by
    ``new``, inserted just before IEND; other chunks are kept byte for byte."""
    kept = [c for c in parse_chunks(data) if chunk_keyword(c) not in keywords]
    return build_png([*kept[:-1], *new, kept[-1]])


def encode_rgba(width: int, height: int, pixels: bytes) -> bytes:
    """A minimal RGBA PNG (8 bits per channel) from raw row-major pixels."""
    if width <= 0 or height <= 0 or len(pixels) != width * height * 4:
        raise PngError("png.pixels")
    stride = width * 4
    raw = b"".join(b"\x00" + pixels[y * stride : (y + 1) * stride] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return build_png([
        Chunk(b"IHDR", header),
        Chunk(b"IDAT", zlib.compress(raw, 9)),
        Chunk(b"IEND", b""),
    ])


def placeholder_image() -> bytes:
    """A 32×32 slate-blue square, used when a card is exported without an image."""
    return encode_rgba(32, 32, bytes((70, 90, 120, 255)) * (32 * 32))
