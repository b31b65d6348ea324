"""Snapshot blobs in SQL: write with reference counts, read back, release when turns go.

Callers pass an open transaction's connection for writes. A blob lives while some swipe's
snapshot root references it (``blob_refs.refs`` counts those swipes) and is deleted in the
same transaction that drops its last reference.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from narrative_cli.store.blobs import (
    BLOB_LEVEL,
    Packed,
    compress,
    count_hashes,
    decompress,
    root_hashes,
    unpack,
)

PARAMS_PER_QUERY = 500  # well under SQLite's host-parameter limit


def save_blobs(conn: sqlite3.Connection, packed: Packed) -> None:
    """Store a packed snapshot's blobs, or count one more reference to those already stored."""
    hashes = packed.hashes
    known = _existing(conn, hashes)
    for group in _groups([h for h in hashes if h in known]):  # one statement, not one a blob
        marks = ",".join("?" * len(group))
        conn.execute(f"UPDATE blob_refs SET refs = refs + 1 WHERE hash IN ({marks})", group)
    fresh = [h for h in hashes if h not in known]
    made = packed.compressed
    conn.executemany(
        "INSERT INTO blobs (hash, data) VALUES (?, ?)",
        [(h, made.get(h) or compress(packed.blobs[h], BLOB_LEVEL)) for h in fresh],
    )
    conn.executemany("INSERT INTO blob_refs (hash, refs) VALUES (?, 1)", [(h,) for h in fresh])


def add_references(conn: sqlite3.Connection, roots: Iterable[bytes | None]) -> None:
    """Count one more reference from each root (used when turns are copied to a branch)."""
    counts = count_hashes(roots)
    conn.executemany(
        "UPDATE blob_refs SET refs = refs + ? WHERE hash = ?", [(n, h) for h, n in counts.items()]
    )


def release(conn: sqlite3.Connection, roots: Iterable[bytes | None]) -> None:
    """Drop one reference per root; delete blobs nobody references any more."""
    counts: Counter[bytes] = count_hashes(roots)
    if not counts:
        return
    conn.executemany(
        "UPDATE blob_refs SET refs = refs - ? WHERE hash = ?", [(n, h) for h, n in counts.items()]
    )
    dead: list[bytes] = []
    for group in _groups(list(counts)):
        marks = ",".join("?" * len(group))
        rows = conn.execute(
            f"SELECT hash FROM blob_refs WHERE refs <= 0 AND hash IN ({marks})", group
        ).fetchall()
        dead.extend(row[0] for row in rows)
    conn.executemany("DELETE FROM blobs WHERE hash = ?", [(h,) for h in dead])
    conn.executemany("DELETE FROM blob_refs WHERE hash = ?", [(h,) for h in dead])


def load_snapshot(conn: sqlite3.Connection, root: bytes) -> Any:
    """Rebuild one snapshot from its root."""
    hashes = list(dict.fromkeys(root_hashes(root)))
    fetched: dict[bytes, bytes] = {}
    for group in _groups(hashes):
        marks = ",".join("?" * len(group))
        for key, data in conn.execute(
            f"SELECT hash, data FROM blobs WHERE hash IN ({marks})", group
        ):
            fetched[bytes(key)] = decompress(data)
    return unpack(root, fetched)


def _existing(conn: sqlite3.Connection, hashes: list[bytes]) -> set[bytes]:
    found: set[bytes] = set()
    for group in _groups(hashes):
        marks = ",".join("?" * len(group))
        rows = conn.execute(f"SELECT hash FROM blob_refs WHERE hash IN ({marks})", group)
        found.update(bytes(row[0]) for row in rows)
    return found


def _groups(items: Sequence[bytes]) -> Iterator[tuple[bytes, ...]]:
    for start in range(0, len(items), PARAMS_PER_QUERY):
        yield tuple(items[start : start + PARAMS_PER_QUERY])
