"""Helpers for the snapshot store's tests: packing with nothing remembered."""

from __future__ import annotations

import json

from narrative_cli.store import blobs, chunks


def pack_afresh(value: object) -> blobs.Packed:
    """``value`` packed as a fresh process packs it: a plain JSON copy (every list a new
    list, no shared items), with the long lists' memory (``chunks.LISTS``) set aside and
    given back after, so the caller's packing goes on as before."""
    kept = dict(chunks.LISTS)
    chunks.LISTS.clear()
    try:
        return blobs.pack(json.loads(json.dumps(value)))
    finally:
        chunks.LISTS.clear()
        chunks.LISTS.update(kept)
