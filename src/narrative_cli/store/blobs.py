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

import hashlib
import json
import operator
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.errors import StoreError
from narrative_cli.shared_items import KnownJson, SharedItems

INLINE_LIMIT = 512  # bytes of JSON kept inside the root
CHUNK_ITEMS = 32  # items per list chunk, on average
CHUNK_MAX_ITEMS = 4 * CHUNK_ITEMS
CHUNK_MIN_BYTES = 8192  # lists smaller than this are one blob
COMPRESS_LEVEL = 6


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _fast_encoder() -> Callable[[Any], str] | None:
    """CPython's C encoder built once (``json.dumps`` rebuilds it per call), if available."""
    try:
        from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]

        build = c_make_encoder(
            None, _ENCODER.default, encode_basestring, None, ":", ",", False, False, False
        )
    except (ImportError, TypeError):
        return None
    return lambda value: "".join(build(value, 0))


_encode_text: Callable[[Any], str] = _fast_encoder() or _ENCODER.encode


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON; raises StoreError for values JSON cannot hold."""
    try:
        text = _encode_text(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(f"cannot store a value that is not plain JSON: {exc}") from exc
    return text.encode("utf-8")


def encode(value: Any) -> bytes:
    """JSON → compressed bytes for a column."""
    return compress(dumps(value))


def decode(data: bytes) -> Any:
    """Compressed bytes of a column → JSON value."""
    try:
        return json.loads(decompress(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreError(f"a stored value is damaged: {exc}") from exc


def compress(data: bytes) -> bytes:
    return zlib.compress(data, COMPRESS_LEVEL)


def decompress(data: bytes) -> bytes:
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        raise StoreError(f"a stored value is damaged: {exc}") from exc


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass
class Packed:
    """A snapshot split into its root and the blobs it references (hash → raw JSON bytes)."""

    root: bytes
    blobs: dict[bytes, bytes] = field(default_factory=dict)

    @property
    def hashes(self) -> list[bytes]:
        return list(self.blobs)


def pack(value: Any) -> Packed:
    """Split a JSON value into a compressed root and content-addressed blobs."""
    blobs: dict[bytes, bytes] = {}
    node, _ = _pack(value, blobs, ())
    return Packed(root=encode(node), blobs=blobs)


@dataclass
class _ListMemo:
    """A long list packed last time at one place of the value: its JSON, its items' JSON and
    its closed chunks (the items before ``open_start``, with their digests)."""

    data: bytes
    items: list[bytes]
    closed: list[tuple[bytes, bytes]]  # (chunk JSON, digest)
    open_start: int
    values: tuple[Any, ...] | None = None  # a SharedItems list's items: the very objects


# Long lists by their place in the value (("summaries", "entries"), …). A snapshot's lists
# mostly grow at the end, so turn N+1 finds turn N's list as a prefix of its own: its items
# are not encoded one by one and its closed chunks not cut and hashed again, which keeps a
# snapshot write from growing with the story (encoding the whole list is one C call).
_LISTS: dict[tuple[str, ...], _ListMemo] = {}
_LISTS_KEPT = 64


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
    value: Any, blobs: dict[bytes, bytes], path: tuple[str, ...]
) -> tuple[dict[str, Any], bytes | None]:
    """The node of ``value`` and, when the node is inline (``{"v": …}``), the value's JSON.

    A dict whose children are all inline is written from its children's JSON, not encoded
    again: encoding each level's whole subtree anew made a snapshot's small nested values
    (the variables, the game state) be encoded once per level of depth."""
    if isinstance(value, dict):
        children: dict[str, dict[str, Any]] = {}
        parts: list[bytes] | None = []
        for key, item in value.items():
            name = _key(key)
            child, data = _pack(item, blobs, (*path, name))
            children[name] = child
            if parts is not None and data is not None:
                parts.append(_key_json(name) + data)
            else:
                parts = None
        if parts is None:
            return {"d": children}, None
        return _inline_or_blob(value, b"{" + b",".join(parts) + b"}", blobs)
    if isinstance(value, list) and len(value) > CHUNK_ITEMS:
        memo = _shared_prefix(value, path)
        items = None
        if memo is not None:  # the last list's very items, then new ones: only those encoded
            items = memo.items + [dumps(item) for item in value[len(memo.items) :]]
        elif isinstance(value[0], KnownJson):  # objects that know their JSON (the event log)
            items = [_item_json(item) for item in value]
        data = dumps(value) if items is None else b"[" + b",".join(items) + b"]"
        if len(data) < CHUNK_MIN_BYTES:
            return {"b": _store(data, blobs)}, None
        chunks = _list_chunks(value, data, path, items)
        return {"l": [_keep(chunk, key, blobs) for chunk, key in chunks]}, None
    return _inline_or_blob(value, dumps(value), blobs)


def _inline_or_blob(
    value: Any, data: bytes, blobs: dict[bytes, bytes]
) -> tuple[dict[str, Any], bytes | None]:
    if len(data) <= INLINE_LIMIT:
        return {"v": value}, data
    return {"b": _store(data, blobs)}, None


_KEYS: dict[str, bytes] = {}  # a dict key's JSON with its colon; the same keys recur


def _key_json(name: str) -> bytes:
    known = _KEYS.get(name)
    if known is None:
        known = dumps(name) + b":"
        if len(_KEYS) < 4096:
            _KEYS[name] = known
    return known


def _shared_prefix(value: list[Any], path: tuple[str, ...]) -> _ListMemo | None:
    """The memo at ``path`` when ``value`` is a ``SharedItems`` list that starts with the very
    items the memo was made from (their JSON is then the memo's: they are never changed)."""
    memo = _LISTS.get(path)
    if not isinstance(value, SharedItems) or memo is None or not memo.values:
        return None
    if len(value) < len(memo.values) or not all(map(operator.is_, memo.values, value)):
        return None
    return memo


def _list_chunks(
    value: list[Any], data: bytes, path: tuple[str, ...], items: list[bytes] | None = None
) -> list[tuple[bytes, bytes]]:
    """The chunks of a long list with their digests, reusing what the last list at ``path``
    had in common with this one (see ``_LISTS``); ``items``: the items' JSON, when known to
    extend the memo's (``_shared_prefix``)."""
    memo = _LISTS.get(path)
    if items is None:
        if memo is not None and _extends(memo, value, data):
            items = memo.items + [dumps(item) for item in value[len(memo.items) :]]
        else:
            items = [dumps(item) for item in value]
    if memo is not None and _starts_with(items, memo.items):
        closed, start = list(memo.closed), memo.open_start
    else:  # not the last list with items appended (a log that drops its oldest): cut anew
        closed, start = [], 0
    tail: list[tuple[bytes, bytes]] = []
    for end, chunk in _cuts(items, start):
        if end < len(items) or _is_cut(items[end - 1], end - start):
            closed.append((chunk, digest(chunk)))
            start = end
        else:  # the last chunk, still open: the next items may join it
            tail.append((chunk, digest(chunk)))
    if len(_LISTS) >= _LISTS_KEPT:
        _LISTS.clear()
    shared = tuple(value) if isinstance(value, SharedItems) else None  # held: ids stay theirs
    _LISTS[path] = _ListMemo(data, items, closed, start, shared)
    return closed + tail


def _item_json(item: Any) -> bytes:
    known = item.known_json() if isinstance(item, KnownJson) else None
    return dumps(item) if known is None else known


def _starts_with(items: list[bytes], prefix: list[bytes]) -> bool:
    """Whether ``items`` begins with ``prefix`` (the very bytes objects, mostly: fast)."""
    return bool(prefix) and len(items) >= len(prefix) and items[: len(prefix)] == prefix


def _extends(memo: _ListMemo, value: list[Any], data: bytes) -> bool:
    """True when ``data`` (the JSON of ``value``) is the memo's list with items appended."""
    size = len(memo.data) - 1  # without the closing bracket
    if not memo.items or len(value) < len(memo.items) or not data.startswith(memo.data[:size]):
        return False
    return data[size : size + 1] == (b"]" if len(value) == len(memo.items) else b",")


def _is_cut(item: bytes, size: int) -> bool:
    """Whether a chunk ends after ``item``, the ``size``-th item of its chunk."""
    return zlib.crc32(item) % CHUNK_ITEMS == 0 or size >= CHUNK_MAX_ITEMS


def _cuts(items: list[bytes], start: int) -> list[tuple[int, bytes]]:
    """``items[start:]`` cut where an item's own hash says so, so cuts move with the items:
    (end index, chunk JSON) for each chunk, the last one possibly still open.

    Appending touches only the last chunk; dropping items from the front (a log that keeps
    its last N entries) touches only the first one.
    """
    chunks: list[tuple[int, bytes]] = []
    for index in range(start, len(items)):
        if _is_cut(items[index], index + 1 - start):
            chunks.append((index + 1, b"[" + b",".join(items[start : index + 1]) + b"]"))
            start = index + 1
    if start < len(items):
        chunks.append((len(items), b"[" + b",".join(items[start:]) + b"]"))
    return chunks


def _keep(data: bytes, key: bytes, blobs: dict[bytes, bytes]) -> str:
    blobs[key] = data
    return key.hex()


def _key(key: Any) -> str:
    """A dict key as JSON writes it (``1`` → ``"1"``); other key types are refused."""
    if isinstance(key, str):
        return key
    return str(next(iter(json.loads(dumps({key: 0})))))


def _store(data: bytes, blobs: dict[bytes, bytes]) -> str:
    key = digest(data)
    blobs[key] = data
    return key.hex()


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
