"""A blob's column bytes made from a remembered compressed prefix and a short stored tail.

A snapshot's random-number state is a 7 KB JSON list (``[3, [624 words, index], null]``)
that changes, most turns, only after its last comma: the words change when the generator
has used them all, the index every turn. Compressing it anew was the largest zlib call of a
turn and hashing it the largest digest (#17, session eight). Here the part before the cut is
compressed once (a raw deflate stream flushed to a byte boundary, no final block) and hashed
once, and each turn's blob is

    zlib header + the prefix's deflate blocks + one final stored block holding the tail
    + the Adler-32 of the whole

which is a valid zlib stream of the whole JSON: ``zlib.decompress`` reads it as it reads any
other (main's code and older versions included), and the blob's hash is the hash of the whole
JSON, made from the prefix's BLAKE2b state. The bytes depend only on the data and the cut
(the prefix is compressed by a fresh compressor each time it is made), so two stores of the
same story hold the same bytes whatever was packed before.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass

DIGEST_SIZE = 16
HEADER = b"\x78\x01"  # deflate, 32 KB window, "fastest" (what zlib writes at level 1)
MAX_TAIL = 256  # a longer tail is compressed with the rest, as any blob
_KEPT = 64


def hasher(data: bytes = b"") -> hashlib.blake2b:
    """The store's blob hash (BLAKE2b, 16 bytes) fed ``data``, open for more."""
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE)


@dataclass(frozen=True)
class _Prefix:
    data: bytes
    deflated: bytes  # raw deflate blocks of ``data``, sync-flushed: byte-aligned, not final
    adler: int
    hashed: hashlib.blake2b  # its state after ``data``


# The last prefix at each place of a snapshot (replaced whole: a reader on another thread
# sees an old one or the new one, and checks its bytes before using it).
_PREFIXES: dict[tuple[str, ...], _Prefix] = {}


def split_blob(
    data: bytes, cut: int, place: tuple[str, ...], level: int
) -> tuple[bytes, bytes] | None:
    """The digest and zlib bytes of ``data`` compressed as ``data[:cut]`` (remembered at
    ``place``) and ``data[cut:]`` stored; None when the tail is too long for that."""
    tail = data[cut:]
    if cut <= 0 or len(tail) > MAX_TAIL:
        return None
    prefix = _PREFIXES.get(place)
    if prefix is None or len(prefix.data) != cut or not data.startswith(prefix.data):
        prefix = _prefix(data[:cut], level)
        if len(_PREFIXES) >= _KEPT:
            _PREFIXES.clear()
        _PREFIXES[place] = prefix
    hashed = prefix.hashed.copy()
    hashed.update(tail)
    check = zlib.adler32(tail, prefix.adler).to_bytes(4, "big")
    stored = b"\x01" + struct.pack("<HH", len(tail), len(tail) ^ 0xFFFF) + tail  # final
    return hashed.digest(), HEADER + prefix.deflated + stored + check


def _prefix(data: bytes, level: int) -> _Prefix:
    compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    deflated = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return _Prefix(data, deflated, zlib.adler32(data), hasher(data))
