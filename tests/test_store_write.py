"""The turn's write path, #17 session eight: what is stored is what encoding each value whole
and compressing it with zlib gives, read back by any zlib, whatever was written before."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.store import blobs, zsplit
from narrative_cli.store.sessions import SessionStore

from .test_store import new_session, record, snapshot


def _states(seed: int, count: int) -> list[list[Any]]:
    """RNG states as a story makes them (the words kept for a while, the index moving), with
    the odd state a generator never makes (a bool, a float, a length that changes)."""
    rng = random.Random(seed)
    words = [rng.getrandbits(32) for _ in range(624)]
    states = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.05:
            words = [rng.getrandbits(32) for _ in range(624)]
        elif roll < 0.08:
            words = [*words[:-1], rng.choice([True, 1.0, -0.0, 2**70, "x,y"])]
        elif roll < 0.1:
            words = words[:-1]
        tail: Any = rng.randrange(625) if roll < 0.97 else "," * rng.randrange(250, 400)
        states.append([3, [*words, tail], None if roll < 0.5 else 0.25])
    return states


def _column(packed: blobs.Packed, key: bytes) -> bytes:
    return packed.compressed.get(key) or zlib.compress(packed.blobs[key], blobs.BLOB_LEVEL)


def test_a_random_number_state_is_stored_as_zlib_of_its_json_under_its_json_s_hash() -> None:
    for state in _states(5, 300):
        packed = blobs.pack({"rng": state, "turn": 1})
        node = blobs.decode(packed.root)["d"]["rng"]
        key = bytes.fromhex(node["b"])
        data = json.dumps(state, separators=(",", ":")).encode()
        assert packed.blobs == {key: data}
        assert key == hashlib.blake2b(data, digest_size=16).digest()
        assert zlib.decompress(_column(packed, key)) == data
    assert packed.compressed  # the split form was used


def test_a_blob_s_bytes_depend_on_its_json_alone_not_on_what_was_packed_before() -> None:
    """Two stores of the same story hold the same bytes (the batched replay's test compares
    them), so the split form must not depend on the prefix remembered from earlier turns."""
    states = _states(9, 120)
    first = [_columns(state) for state in states]
    zsplit._PREFIXES.clear()
    blobs._INTS.clear()
    again = [_columns(state) for state in reversed(states)]
    assert first == list(reversed(again))


def _columns(state: list[Any]) -> dict[bytes, bytes]:
    packed = blobs.pack({"rng": state})
    return {key: _column(packed, key) for key in packed.blobs}


@pytest.mark.parametrize("cut", [1, 100, 4000, 6999])
def test_a_split_blob_is_a_plain_zlib_stream_of_the_whole(cut: int) -> None:
    data = bytes(random.Random(cut).getrandbits(8) for _ in range(7000))
    made = zsplit.split_blob(data, cut, ("test", str(cut)), 1)
    if len(data) - cut > zsplit.MAX_TAIL:
        assert made is None
        return
    assert made is not None
    key, column = made
    assert key == blobs.digest(data)
    assert zlib.decompress(column) == data
    assert zlib.decompressobj().decompress(column) == data  # read as a stream too


def test_a_database_of_split_blobs_reads_back_with_plain_sqlite_and_zlib(tmp_path: Path) -> None:
    """What older versions (main's reader included) do with a blob: decompress it, parse it."""
    path = tmp_path / "sessions.db"
    states = _states(2, 40)
    with SessionStore(path) as store:
        session = new_session(store)
        for number, state in enumerate(states, start=1):
            store.commit_turn(session, record(number), {**snapshot(number), "rng": state})
        assert store.snapshot(session, 33)["rng"] == states[32]
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT hash, data FROM blobs").fetchall()
    found = {bytes(h): json.loads(zlib.decompress(data)) for h, data in rows}
    assert all(blobs.digest(blobs.dumps(value)) == h for h, value in found.items())
    assert sum(value in states for value in found.values()) == len({str(s) for s in states})
