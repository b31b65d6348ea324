"""JSON payloads on disk: compressed encoding and deduplicated snapshot trees.

A turn snapshot is stored as a small *root* plus content-addressed blobs. Large values are
split structurally (dicts by key, long lists into chunks of items cut where an item's own hash
says, so the cuts travel with the items), hashed, and kept once: when turn N+1 appends one
summary to a list of 2,000, or slides a capped event log by one, it stores the one or two
chunks that changed, not the whole list again. Nothing here knows what the keys mean; any
JSON round-trips exactly (key order included).

Root node forms (JSON objects with one tag key):
``{"v": value}`` inline; ``{"d": {key: node}}`` a dict; ``{"b": hash}`` one blob holding the
value; ``{"l": [hash, ...]}`` a list stored as chunks of items, each chunk a blob.
"""

from __future__ import annotations

import json
import operator
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.errors import StoreError
from narrative_cli.shared_items import KnownJson, SharedItems
from narrative_cli.store.canonical import digest, dumps
from narrative_cli.store.chunks import (
    CHUNK_ITEMS,
    CHUNK_MIN_BYTES,
    LISTS_KEPT,
    grown,
    known_items,
    list_chunks,
    shared_prefix,
)
from narrative_cli.store.zsplit import split_blob

__all__ = [
    "BLOB_LEVEL", "COMPRESS_LEVEL", "INLINE_LIMIT", "Packed", "compress", "count_hashes",
    "decode", "decompress", "digest", "dumps", "encode", "pack", "root_hashes", "unpack",
]

INLINE_LIMIT = 512  # bytes of JSON kept inside the root
# A snapshot's new blobs each turn (the event log's first and last chunks): level 1
# compresses them in 60% of level 6's time, 1.4% larger on a replayed story (#17, session
# seven). The turn record and the snapshot's root too since session eight: 57% of the time
# on a replayed story's records, 5% larger (3.4 KB of JSON → 1,490 bytes, not 1,420). Any
# level reads back alike.
COMPRESS_LEVEL = 1
BLOB_LEVEL = 1


def encode(value: Any) -> bytes:
    """JSON → compressed bytes for a column."""
    return compress(dumps(value))


def decode(data: bytes) -> Any:
    """Compressed bytes of a column → JSON value."""
    try:
        return json.loads(decompress(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreError(f"a stored value is damaged: {exc}") from exc


def compress(data: bytes, level: int = COMPRESS_LEVEL) -> bytes:
    return zlib.compress(data, level)


def decompress(data: bytes) -> bytes:
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        raise StoreError(f"a stored value is damaged: {exc}") from exc


@dataclass
class Packed:
    """A snapshot split into its root and the blobs it references (hash → raw JSON bytes)."""

    root: bytes
    blobs: dict[bytes, bytes] = field(default_factory=dict)
    # blobs whose column bytes (zlib) were made while packing (hash → bytes): the rest are
    # compressed when stored, if they are new
    compressed: dict[bytes, bytes] = field(default_factory=dict)

    @property
    def hashes(self) -> list[bytes]:
        return list(self.blobs)


class _Blobs(dict[bytes, bytes]):
    """A packing's blobs (hash → JSON) and the column bytes of those made while packing."""

    def __init__(self) -> None:
        super().__init__()
        self.made: dict[bytes, bytes] = {}


def pack(value: Any) -> Packed:
    """Split a JSON value into a compressed root and content-addressed blobs."""
    blobs = _Blobs()
    node, _ = _pack(value, blobs, ())
    return Packed(root=encode(node), blobs=dict(blobs), compressed=blobs.made)


def unpack(root: bytes, fetch: dict[bytes, bytes]) -> Any:
    """Rebuild a value from its root and the decompressed-to-JSON blobs it references."""
    return _unpack_node(decode(root), fetch)


def root_hashes(root: bytes) -> list[bytes]:
    """Every blob hash a root references (with repeats)."""
    found: list[bytes] = []
    _collect(decode(root), found)
    return found


def count_hashes(roots: Iterable[bytes | None]) -> Counter[bytes]:
    """How many references each blob gets from these roots (a missing root has none)."""
    counts: Counter[bytes] = Counter()
    for root in roots:
        if root is not None:
            counts.update(set(root_hashes(root)))
    return counts


def _pack(
    value: Any, blobs: _Blobs, path: tuple[str, ...]
) -> tuple[dict[str, Any], bytes | None]:
    """The node of ``value`` and, when the node is inline (``{"v": …}``), the value's JSON.

    A dict whose children are all inline is written from its children's JSON, not encoded
    again: encoding each level's whole subtree anew made a snapshot's small nested values
    (the variables, the game state) be encoded once per level of depth."""
    if isinstance(value, dict):
        if not _holds_long_list(value):
            return _plain_dict(value, blobs, path)
        children, whole = _children(value, path, lambda item, at: _pack(item, blobs, at))
        if whole is None:
            return {"d": children}, None
        return _inline_or_blob(value, whole, blobs)
    if isinstance(value, list) and len(value) > CHUNK_ITEMS:
        memo = shared_prefix(value, path)
        longer = None if memo is None else grown(value, memo)
        if longer is not None:
            return {"l": [_keep(chunk, key, blobs) for chunk, key in longer]}, None
        items = None
        if memo is not None:  # the last list's very items, then new ones: only those encoded
            items = memo.items + [dumps(item) for item in value[len(memo.items) :]]
        elif isinstance(value[0], KnownJson):  # objects that know their JSON (the event log)
            items = known_items(value, path)
        if items is None:
            data = dumps(value)
        elif sum(map(len, items)) + len(items) + 1 < CHUNK_MIN_BYTES:  # len of the JSON below
            data = b"[" + b",".join(items) + b"]"
        else:  # chunked from its items: the whole list's JSON is not made (#17: as long as
            data = b""  # the story every turn, and a hole in the C heap when dropped)
        if data and len(data) < CHUNK_MIN_BYTES:
            return {"b": _store(data, blobs)}, None
        chunks = list_chunks(value, data, path, items)
        return {"l": [_keep(chunk, key, blobs) for chunk, key in chunks]}, None
    if type(value) is list and any(type(i) is list and len(i) > CHUNK_ITEMS for i in value):
        data, cut = _short_list_json(value, path)
        if len(data) <= INLINE_LIMIT:
            return {"v": value}, data
        return {"b": _store_split(data, cut, path, blobs)}, None
    if isinstance(value, SharedItems):  # short (the chapters): the items' JSON kept
        return _inline_or_blob(value, _shared_json(value, path), blobs, path)
    return _inline_or_blob(value, dumps(value), blobs, path)


# A short SharedItems list's items and their JSON, by place: the chapters (one a few dozen
# turns, each a paragraph) were encoded whole every turn (#17, session nine).
_SHORT: dict[tuple[str, ...], tuple[tuple[Any, ...], list[bytes]]] = {}


def _shared_json(value: SharedItems, path: tuple[str, ...]) -> bytes:
    """``dumps(value)``, the JSON of the items the last list at ``path`` held (the very
    objects, never changed: ``SharedItems``) taken again."""
    held, made = _SHORT.get(path, ((), []))
    count = len(held) if len(held) <= len(value) else 0
    if not count or not all(map(operator.is_, held, value)):
        made, count = [], 0
    items = made[:count] + [dumps(item) for item in value[count:]]
    if len(_SHORT) >= LISTS_KEPT:
        _SHORT.clear()
    _SHORT[path] = (tuple(value), items)
    return b"[" + b",".join(items) + b"]"


def _short_list_json(value: list[Any], path: tuple[str, ...]) -> tuple[bytes, int]:
    """``dumps(value)`` of a short list holding a long one (the RNG state: its version, 625
    numbers, its Gaussian), the long one's JSON taken from ``_int_list_json``; and where
    the first long one's last item begins (after its last comma): what follows is what
    changes turn to turn in the RNG state (``zsplit``)."""
    parts: list[bytes] = []
    cut = -1
    for place, item in enumerate(value):
        if type(item) is list and len(item) > CHUNK_ITEMS:
            part = _int_list_json(item, (*path, str(place)))
            if cut < 0:
                cut = 1 + sum(map(len, parts)) + len(parts) + part.rindex(b",") + 1
            parts.append(part)
        else:
            parts.append(dumps(item))
    return b"[" + b",".join(parts) + b"]", cut


# The last list of whole numbers at a place (the RNG's 624 words and its index) and its JSON
# up to its last number: the words change only when the generator has used them all, the
# index every turn, so most turns' JSON is the last one's with another last number (#17,
# session seven).
_INTS: dict[tuple[str, ...], tuple[list[int], bytes]] = {}


def _int_list_json(items: list[Any], path: tuple[str, ...]) -> bytes:
    """``dumps(items)``; for a list of ints (``int`` itself: no ``bool``) like the last one at
    ``path`` but for its last number, made from the last one's JSON."""
    if set(map(type, items)) != {int}:
        return dumps(items)
    last = _INTS.get(path)
    if last is not None and len(items) == len(last[0]) and items[:-1] == last[0][:-1]:
        return last[1] + b"," + dumps(items[-1]) + b"]"
    data = dumps(items)
    if len(_INTS) >= LISTS_KEPT:
        _INTS.clear()
    _INTS[path] = (list(items), data[: data.rindex(b",")])
    return data


def _holds_long_list(value: dict[Any, Any] | list[Any]) -> bool:
    """Whether a list of more than ``CHUNK_ITEMS`` items is anywhere inside ``value`` (the one
    thing that packs a dict otherwise than by the sizes of its JSON and its children's); a
    value too deep to look through counts as holding one."""
    try:
        return _long_list_inside(value)
    except RecursionError:
        return True


def _long_list_inside(value: dict[Any, Any] | list[Any]) -> bool:
    for item in value.values() if isinstance(value, dict) else value:
        if isinstance(item, dict):
            if _long_list_inside(item):
                return True
        elif isinstance(item, list) and (len(item) > CHUNK_ITEMS or _long_list_inside(item)):
            return True
    return False


def _plain_dict(
    value: dict[Any, Any], blobs: _Blobs, path: tuple[str, ...]
) -> tuple[dict[str, Any], bytes | None]:
    """``_pack`` of a dict without long lists inside (#17, session seven): its JSON first, in
    one C call, which is the node when it is small enough to be inline, or the node made last
    time at ``path`` when the JSON is the same (``_PLAIN``); else (and at once where the JSON
    was not the same last time: it changes turn to turn, and encoding the whole dict, then
    each child again, encoded it twice) its children's, joined into its own, to learn
    whether it is inline, one blob (every child inline) or a ``{"d": …}``. The node is the
    one packing it from its leaves up gives (a dict's JSON is its children's joined), without
    a Python call for each of its leaves: the MVU schema and variables were most of a
    snapshot's 120 nodes."""
    known = _PLAIN.get(path)
    data = None
    if known is None or known[0] is not None:
        data = dumps(value)
        if len(data) <= INLINE_LIMIT:
            return {"v": value}, data
        if known is not None and known[0] == data:  # the same JSON: the same node and blobs
            blobs.update(known[2])
            return _again(known[1], value), None

    def pack(item: Any, at: tuple[str, ...]) -> tuple[dict[str, Any], bytes | None]:
        if isinstance(item, dict):
            return _plain_dict(item, blobs, at)
        return _inline_or_blob(item, dumps(item), blobs, at)

    children, whole = _children(value, path, pack)
    if whole is not None and len(whole) <= INLINE_LIMIT:
        _PLAIN.pop(path, None)
        return {"v": value}, whole
    node = {"d": children} if whole is None else _inline_or_blob(value, whole, blobs, path)[0]
    if len(_PLAIN) >= 4096:
        _PLAIN.clear()
    # its JSON when it was new here (kept to be compared next time), None when it changed
    if known is None:
        _PLAIN[path] = (data, node, {key: blobs[key] for key in _node_blobs(node)})
    else:
        _PLAIN[path] = (None, node, {})
    return node, None


# The node of the dict without long lists last packed at each place, with its JSON and its
# blobs: the MVU schema and the variables' display data are the same most turns, and were
# walked child by child, their blobs hashed, every turn (#17, session nine). A node's inline
# values are never reused (their objects may have changed since): ``_again`` takes this
# value's.
_PLAIN: dict[tuple[str, ...], tuple[bytes | None, dict[str, Any], dict[bytes, bytes]]] = {}


def _again(node: dict[str, Any], value: Any) -> dict[str, Any]:
    """``node`` (made for a value with the same JSON) with ``value``'s own inline values."""
    if "v" in node:
        return {"v": value}
    if "d" in node:
        return {"d": {name: _again(child, item)
                      for (name, child), item in zip(node["d"].items(), value.values(),
                                                     strict=True)}}
    return node  # a blob: its hash


def _node_blobs(node: dict[str, Any]) -> list[bytes]:
    found: list[bytes] = []
    _collect(node, found)
    return found


def _children(
    value: dict[Any, Any],
    path: tuple[str, ...],
    pack: Callable[[Any, tuple[str, ...]], tuple[dict[str, Any], bytes | None]],
) -> tuple[dict[str, dict[str, Any]], bytes | None]:
    """Each child of the dict ``value`` packed by ``pack`` (at its place under ``path``), and
    the dict's JSON joined from theirs; None when a child is not inline (a blob or a list of
    chunks), so the dict is a ``{"d": …}`` node."""
    children: dict[str, dict[str, Any]] = {}
    parts: list[bytes] | None = []
    for key, item in value.items():
        name = _key(key)
        child, data = pack(item, (*path, name))
        children[name] = child
        if parts is not None and data is not None:
            parts.append(_key_json(name) + data)
        else:
            parts = None
    return children, None if parts is None else b"{" + b",".join(parts) + b"}"


def _inline_or_blob(
    value: Any, data: bytes, blobs: _Blobs, path: tuple[str, ...] | None = None
) -> tuple[dict[str, Any], bytes | None]:
    if len(data) <= INLINE_LIMIT:
        return {"v": value}, data
    return {"b": _store(data, blobs, path)}, None


_KEYS: dict[str, bytes] = {}  # a dict key's JSON with its colon; the same keys recur


def _key_json(name: str) -> bytes:
    known = _KEYS.get(name)
    if known is None:
        known = dumps(name) + b":"
        if len(_KEYS) < 4096:
            _KEYS[name] = known
    return known


def _keep(data: bytes, key: bytes, blobs: _Blobs) -> str:
    blobs[key] = data
    return key.hex()


def _key(key: Any) -> str:
    """A dict key as JSON writes it (``1`` → ``"1"``); other key types are refused."""
    if isinstance(key, str):
        return key
    return str(next(iter(json.loads(dumps({key: 0})))))


def _store_split(data: bytes, cut: int, path: tuple[str, ...], blobs: _Blobs) -> str:
    """``_store``, the column bytes made by ``zsplit`` from the part before ``cut``."""
    made = split_blob(data, cut, path, BLOB_LEVEL)
    if made is None:
        return _store(data, blobs)
    key, column = made
    blobs[key] = data
    blobs.made[key] = column
    return key.hex()


def _store(data: bytes, blobs: _Blobs, path: tuple[str, ...] | None = None) -> str:
    """Add ``data`` to ``blobs``; its digest's hex. At a ``path``, the digest of the last blob
    stored there is taken again when the blob is the same (most are, turn to turn)."""
    if path is None:
        key = digest(data)
    else:
        last = _DIGESTS.get(path)
        if last is None or last[0] != data:  # a blob unlike the last one at its place: hashed
            if len(_DIGESTS) >= 4096:
                _DIGESTS.clear()
            last = _DIGESTS[path] = (data, digest(data))
        key = last[1]
    blobs[key] = data
    return key.hex()


# The last blob at each place with its digest: most are the same turn to turn (#17, session
# nine).
_DIGESTS: dict[tuple[str, ...], tuple[bytes, bytes]] = {}


def _unpack_node(node: Any, fetch: dict[bytes, bytes]) -> Any:
    if not isinstance(node, dict) or len(node) != 1:
        raise StoreError("a stored snapshot is damaged: unexpected node")
    tag, body = next(iter(node.items()))
    if tag == "v":
        return body
    if tag == "d":
        return {key: _unpack_node(child, fetch) for key, child in body.items()}
    if tag == "b":
        return json.loads(_fetch(body, fetch))
    if tag == "l":
        items: list[Any] = []
        for key in body:
            items.extend(json.loads(_fetch(key, fetch)))
        return items
    raise StoreError(f"a stored snapshot is damaged: unknown node {tag!r}")


def _fetch(key: str, fetch: dict[bytes, bytes]) -> bytes:
    try:
        return fetch[bytes.fromhex(key)]
    except (KeyError, ValueError) as exc:
        raise StoreError(f"a stored snapshot is damaged: blob {key[:12]} is missing") from exc


def _collect(node: Any, found: list[bytes]) -> None:
    tag, body = next(iter(node.items()))
    if tag == "d":
        for child in body.values():
            _collect(child, found)
    elif tag == "b":
        found.append(bytes.fromhex(body))
    elif tag == "l":
        found.extend(bytes.fromhex(key) for key in body)
