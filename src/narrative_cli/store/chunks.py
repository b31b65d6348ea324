"""Long lists of a snapshot as content-defined chunks, and what is kept of the last one at
each place so that a turn's write does not grow with the story (#17).

A list longer than ``CHUNK_ITEMS`` items whose JSON is ``CHUNK_MIN_BYTES`` or more is stored
as chunks of items, each a blob, cut where an item's own hash says (``level``), so the cuts
travel with the items: appending touches only the last chunks, dropping from the front only
the first. Between marks of level 2 and 3 the chunks are longer runs (``_segments``), so a
list that only grows has about 16 + its length / 256 chunks. Readers need none of this: a
list node is its chunks' items, in order (``blobs``).
"""

from __future__ import annotations

import operator
import zlib
from dataclasses import dataclass, field
from itertools import compress as chosen
from typing import Any

from narrative_cli.shared_items import KnownJson, SharedItems
from narrative_cli.state.slide import Slide
from narrative_cli.store.canonical import digest, dumps

CHUNK_ITEMS = 32  # items per list chunk, on average
CHUNK_MAX_ITEMS = 4 * CHUNK_ITEMS
CHUNK_MIN_BYTES = 8192  # lists smaller than this are one blob


@dataclass
class ListMemo:
    """A long list packed last time at one place of the value: its JSON, its items' JSON and
    its chunks by their place (first item, end) with their digests: the closed ones (every
    chunk but an open last one), which items appended without a mark of level 2 or more
    leave as they are, then the open one's first item."""

    data: bytes
    items: list[bytes]
    closed: list[tuple[bytes, bytes]]  # (chunk JSON, digest)
    places: list[tuple[int, int]]  # the closed chunks' (first item, end)
    open_start: int
    values: list[Any] | None = None  # a SharedItems list's items: the very objects
    # the chunks made or found by their items this time, by their items' JSON
    chunks: dict[tuple[bytes, ...], tuple[bytes, bytes]] = field(default_factory=dict)
    hits: list[int] = field(default_factory=list)  # each item's cut level (``level``)
    size: int = 0  # the bytes of the list's JSON, less one
    source: tuple[Any, ...] | None = None  # a SharedItems list's ``source`` (held: its id)


def grown(value: list[Any], memo: ListMemo) -> list[tuple[bytes, bytes]] | None:
    """The chunks of a ``SharedItems`` list that is ``memo``'s with items appended (checked
    by ``shared_prefix``), ``memo`` brought up to it in place: only the new items are
    encoded and tested, only the chunks from the open one on cut and made, and nothing as
    long as the list is copied (the summary lines: #17, session nine). None, with ``memo``
    as it was, for a list still too short to be chunked or when a new item is a mark of
    level 2 or more (``list_chunks`` then cuts it as a whole)."""
    start = len(memo.items)
    items = [dumps(item) for item in value[start:]]
    hits = _hits(items, {})
    if memo.size < CHUNK_MIN_BYTES or not memo.values or max(hits, default=0) > 1:
        return None
    memo.items.extend(items)
    memo.hits.extend(hits)
    memo.values.extend(value[start:])
    memo.size += sum(map(len, items)) + len(items)
    memo.source = value.source if isinstance(value, SharedItems) else None
    places = _cuts(len(memo.items), memo.open_start, memo.hits)
    if not places:  # nothing open, nothing new
        return list(memo.closed)
    made: dict[tuple[bytes, ...], tuple[bytes, bytes]] = {}
    chunks = [_chunk(memo.items, begin, end, memo.chunks, made) for begin, end in places]
    memo.chunks = made
    still_open = _open(places[-1], memo.hits)
    fixed = len(places) - 1 if still_open else len(places)
    memo.closed.extend(chunks[:fixed])
    memo.places.extend(places[:fixed])
    memo.open_start = places[-1][0] if still_open else len(memo.items)
    return memo.closed + chunks[fixed:]


# Long lists by their place in the value (("summaries", "entries"), …). A snapshot's lists
# mostly grow at the end, so turn N+1 finds turn N's list as a prefix of its own: its items
# are not encoded one by one and its closed chunks not cut and hashed again, which keeps a
# snapshot write from growing with the story (encoding the whole list is one C call).
LISTS: dict[tuple[str, ...], ListMemo] = {}
LISTS_KEPT = 64


def shared_prefix(value: list[Any], path: tuple[str, ...]) -> ListMemo | None:
    """The memo at ``path`` when ``value`` is a ``SharedItems`` list that starts with the very
    items the memo was made from (their JSON is then the memo's: they are never changed)."""
    memo = LISTS.get(path)
    if not isinstance(value, SharedItems) or memo is None or not memo.values:
        return None
    if value.base is not None and value.base is memo.source:  # made from the last one
        return memo
    if len(value) < len(memo.values) or not all(map(operator.is_, memo.values, value)):
        return None
    return memo


def list_chunks(
    value: list[Any], data: bytes, path: tuple[str, ...], items: list[bytes] | None = None
) -> list[tuple[bytes, bytes]]:
    """The chunks of a long list with their digests, reusing what the last list at ``path``
    had in common with this one (see ``LISTS``); ``items``: the items' JSON, when known to
    extend the memo's (``shared_prefix``)."""
    memo = LISTS.get(path)
    if items is None:
        if memo is not None and _extends(memo, value, data):
            items = memo.items + [dumps(item) for item in value[len(memo.items) :]]
        else:
            items = [dumps(item) for item in value]
    closed: list[tuple[bytes, bytes]] = []
    places: list[tuple[int, int]] = []
    kept: dict[tuple[int, int], tuple[bytes, bytes]] = {}  # chunks of the same items, by place
    if memo is not None and _starts_with(items, memo.items):  # items appended
        new = _hits(items[len(memo.items) :], {})
        hits = memo.hits + new
        if max(new, default=0) < 2:  # no new mark: the closed chunks stay, the rest is cut
            closed, places = list(memo.closed), list(memo.places)
            segments = _cuts(len(items), memo.open_start, hits)
        else:
            kept = dict(zip(memo.places, memo.closed, strict=True))
            segments = _segments(len(items), hits)
    else:  # not the last list with items appended (a log that drops its oldest): by items
        last = {} if memo is None else dict(zip(memo.items, memo.hits, strict=True))
        hits = _hits(items, last)
        segments = _segments(len(items), hits)
    known = memo.chunks if memo is not None else {}
    made: dict[tuple[bytes, ...], tuple[bytes, bytes]] = {}
    for place in segments:
        chunk = kept.get(place) or _chunk(items, place[0], place[1], known, made)
        closed.append(chunk)
        places.append(place)
    chunks = list(closed)
    open_start = len(items)
    if places and _open(places[-1], hits):  # the last chunk may still grow
        open_start = places.pop()[0]
        closed.pop()
    if len(LISTS) >= LISTS_KEPT:
        LISTS.clear()
    shared = list(value) if isinstance(value, SharedItems) else None  # held: ids stay theirs
    # A shared list's next one is matched by its items (``shared_prefix``), never by its
    # JSON (``_extends``): the whole list's JSON is not kept for it (#17: a third copy of
    # every summary line's JSON; b"", also given for a list chunked from its items' JSON,
    # extends nothing)
    whole = data if shared is None else b""
    size = sum(map(len, items)) + len(items)
    source = value.source if isinstance(value, SharedItems) else None
    LISTS[path] = ListMemo(
        whole, items, closed, places, open_start, shared, made, hits, size, source
    )
    return chunks


def _open(place: tuple[int, int], hits: list[int]) -> bool:
    """Whether the list's last chunk (at ``place``) is open: it ends with the list, not with
    a cut (an item of level 1 or more, or ``CHUNK_MAX_ITEMS`` items)."""
    begin, end = place
    return end == len(hits) and not hits[end - 1] and end - begin < CHUNK_MAX_ITEMS


def _chunk(
    items: list[bytes],
    begin: int,
    end: int,
    known: dict[tuple[bytes, ...], tuple[bytes, bytes]],
    made: dict[tuple[bytes, ...], tuple[bytes, bytes]],
) -> tuple[bytes, bytes]:
    """The JSON and digest of the chunk ``items[begin:end]``: those of the last list's chunk
    of the same items when it had one (a log that drops its oldest record keeps all its
    chunks but the first and the last: #17, session seven), else made now."""
    key = tuple(items[begin:end])
    found = known.get(key)
    if found is None:
        data = b"[" + b",".join(key) + b"]"
        found = (data, digest(data))
    made[key] = found
    return found


# The items' JSON of the last list of objects that know their JSON, by place in the value:
# the event log slides by one record a turn, so all its items but the newest are the very
# objects of the last turn's log (#17, session seven).
KNOWN: dict[tuple[str, ...], Slide[Any, bytes]] = {}
_TOUCHED = operator.attrgetter("touched")


def known_items(value: list[Any], path: tuple[str, ...]) -> list[bytes]:
    """``[_item_json(item) for item in value]``, taking the JSON of the very objects the last
    list at ``path`` held when none of them changed since (``KnownJson.touched``)."""
    slide = KNOWN.get(path)
    if slide is None:
        if len(KNOWN) >= LISTS_KEPT:
            KNOWN.clear()
        slide = KNOWN[path] = Slide()
    known = slide.known(value)
    if known and any(map(_TOUCHED, value[: len(known)])):
        known = []
    made = known + [_item_json(item) for item in value[len(known) :]]
    slide.keep(value, made)
    return made


def _item_json(item: Any) -> bytes:
    known = item.known_json() if isinstance(item, KnownJson) else None
    return dumps(item) if known is None else known


def _starts_with(items: list[bytes], prefix: list[bytes]) -> bool:
    """Whether ``items`` begins with ``prefix`` (the very bytes objects, mostly: fast)."""
    return bool(prefix) and len(items) >= len(prefix) and items[: len(prefix)] == prefix


def _extends(memo: ListMemo, value: list[Any], data: bytes) -> bool:
    """True when ``data`` (the JSON of ``value``) is the memo's list with items appended."""
    size = len(memo.data) - 1  # without the closing bracket
    if not memo.items or len(value) < len(memo.items) or not data.startswith(memo.data[:size]):
        return False
    return data[size : size + 1] == (b"]" if len(value) == len(memo.items) else b",")


def _segments(size: int, hits: list[int]) -> list[tuple[int, int]]:
    """A long list's chunks (first index, end index), cut where its items' own hashes say,
    so the cuts travel with the items (``hits``: each item's ``level``).

    Between the first and the last item of level 2 or more, the chunks are the runs from
    one such item to the next (about 256 items each: ``CHUNK_ITEMS * TIER``), and between
    two items of level 3, when there are two, the whole run (about 2,048 items); before the
    first and after the last, the chunks of level 1 (``_cuts``, about 32 items). A list
    that grows at the end (the summary lines, one a turn) then has a root listing about
    16 + its length / 256 chunks, not its length / 32: each chunk is a reference count a
    turn (#17, session nine). Appending touches only the last chunks; dropping items from
    the front (a log that keeps its last N entries) only the first; a run of the middle is
    written again only when an item of it changes or a new mark closes it, once."""
    marks = [index for index in chosen(range(size), hits) if hits[index] > 1]
    if len(marks) < 2:
        return _cuts(size, 0, hits)
    threes = [index for index in marks if hits[index] > 2]
    first3, last3 = (threes[0], threes[-1]) if len(threes) > 1 else (size, -1)
    chunks = _cuts(marks[0] + 1, 0, hits)
    begin = marks[0] + 1
    for index in marks[1:]:
        if first3 < index <= last3 and hits[index] < 3:
            continue  # inside a run between two marks of level 3: one chunk
        chunks.append((begin, index + 1))
        begin = index + 1
    return chunks + _cuts(size, begin, hits)


def _cuts(size: int, start: int, hits: list[int]) -> list[tuple[int, int]]:
    """The items from ``start`` on (of ``size``) cut after each item of level 1 or more
    (``hits``): (first index, end index) of each chunk; the last one may be open.

    A chunk ends after an item whose CRC-32 is a multiple of ``CHUNK_ITEMS`` or when it has
    ``CHUNK_MAX_ITEMS`` items."""
    chunks: list[tuple[int, int]] = []
    begin = start
    for index in chosen(range(start, size), hits[start:size]):
        while index + 1 - begin > CHUNK_MAX_ITEMS:
            chunks.append((begin, begin + CHUNK_MAX_ITEMS))
            begin += CHUNK_MAX_ITEMS
        chunks.append((begin, index + 1))
        begin = index + 1
    while size - begin >= CHUNK_MAX_ITEMS:
        chunks.append((begin, begin + CHUNK_MAX_ITEMS))
        begin += CHUNK_MAX_ITEMS
    if begin < size:
        chunks.append((begin, size))
    return chunks


TIER = 8  # a mark of level 2 is one item's cut of level 1 in TIER, level 3 one in TIER**2


def level(item: bytes) -> int:
    """0: no chunk ends after this item; 1: a chunk does; 2 and 3: a longer run may (one
    item in ``CHUNK_ITEMS``, in ``CHUNK_ITEMS * TIER``, in ``CHUNK_ITEMS * TIER**2``)."""
    crc = zlib.crc32(item)
    if crc % CHUNK_ITEMS:
        return 0
    crc //= CHUNK_ITEMS
    return 1 + (crc % TIER == 0) + (crc % (TIER * TIER) == 0)


def _hits(items: list[bytes], known: dict[bytes, int]) -> list[int]:
    """Each item's ``level``: ``known`` (the last list's, by item JSON) for the items it
    had, the CRC test for the new ones only (found in C, not one by one)."""
    hits: list[int | None] = list(map(known.get, items))
    index = _next_unknown(hits, 0)
    while index is not None:
        hits[index] = level(items[index])
        index = _next_unknown(hits, index + 1)
    return hits  # type: ignore[return-value]  # no None is left


def _next_unknown(hits: list[int | None], start: int) -> int | None:
    try:
        return hits.index(None, start)
    except ValueError:
        return None
