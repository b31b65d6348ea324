"""The session store: turns, swipes with state following, undo, branch, migrations, errors."""

from __future__ import annotations

import functools
import json
import random
import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.errors import SnapshotMissing, StoreError
from narrative_cli.store import NewSession, SessionStore, SwipeData, TurnData
from narrative_cli.store.db import open_database
from narrative_cli.store.migrations import MIGRATIONS, migrate
from tests.store_support import pack_afresh


def record(number: int, text: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "number": number,
        "user_input": f"输入 {number}",
        "narrative": text or f"叙事 {number}",
        **extra,
    }


@functools.cache
def summary(number: int) -> str:
    """A distinct summary line per turn (seeded), so compression alone cannot shrink them."""
    rng = random.Random(number)
    return f"[第{number}轮] " + "".join(chr(0x4E00 + rng.randrange(3000)) for _ in range(80))


def snapshot(number: int, hp: int = 10) -> dict[str, Any]:
    return {
        "turn": number,
        "state": {
            "hp": hp,
            "location": "705公寓",
            "inventory": ["手电筒", "绷带"],
            "event_log": [  # keeps its last 100 events, like the state engine's log
                {"turn": i, "type": "add_item", "event": {"item": summary(i)[:20]}}
                for i in range(max(1, number - 100), number + 1)
            ],
        },
        "summaries": {"entries": [summary(i) for i in range(1, number + 1)]},
        "rng": [3, list(range(number, number + 50)), None],
    }


def new_session(store: SessionStore, name: str = "疫病公寓", **kwargs: Any) -> int:
    return store.create_session(
        name,
        card_path="cards/plague.png",
        card_hash="sha256:abc",
        snapshot=snapshot(0),
        greeting={"narrative": "敲门声响起。"},
        character_name="疫病公寓",
        user_name="琉阡",
        **kwargs,
    )


def played(store: SessionStore, turns: int, **kwargs: Any) -> int:
    session = new_session(store, **kwargs)
    for number in range(1, turns + 1):
        store.commit_turn(session, record(number), snapshot(number, hp=10 - number))
    return session


def ticking_clock() -> Callable[[], datetime]:
    """A clock one second further on at every reading, so orderings never tie."""
    moments = (datetime(2026, 5, 1, tzinfo=timezone.utc) + timedelta(seconds=s) for s in count())
    return lambda: next(moments)


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    opened = SessionStore(tmp_path / "sessions.db", clock=ticking_clock())
    yield opened  # type: ignore[misc]
    opened.close()


def test_a_new_session_resumes_at_its_greeting(store: SessionStore) -> None:
    session = new_session(
        store,
        seed=42,
        lore=[{"path": "world.json", "hash": "sha256:w"}],
        settings={"pipeline": {"recent_turns_for_writing": 3}},
    )
    state = store.resume(session)
    assert state.number == 0
    assert state.record["narrative"] == "敲门声响起。"
    assert state.snapshot == snapshot(0)
    info = store.session(session)
    assert (info.seed, info.last_turn, info.character_name) == (42, 0, "疫病公寓")
    assert [(ref.path, ref.hash) for ref in info.lore] == [("world.json", "sha256:w")]
    assert info.settings == {"pipeline": {"recent_turns_for_writing": 3}}


def test_committed_turns_come_back_exactly_with_their_snapshots(store: SessionStore) -> None:
    session = played(store, 40)
    for number in (0, 1, 17, 40):
        assert store.snapshot(session, number) == snapshot(number, hp=10 - number if number else 10)
    resumed = store.resume(session)
    assert resumed.number == 40
    assert resumed.record == record(40)
    assert list(resumed.snapshot) == ["turn", "state", "summaries", "rng"]  # key order kept
    assert [t.record["narrative"] for t in store.turns(session)][:2] == ["敲门声响起。", "叙事 1"]


def test_commit_refuses_a_gap_or_a_duplicate(store: SessionStore) -> None:
    session = played(store, 2)
    with pytest.raises(StoreError, match="turn 2 .*already stored"):
        store.commit_turn(session, record(2), snapshot(2))
    with pytest.raises(StoreError, match="turn 5 .*gap.*last turn is 2"):
        store.commit_turn(session, record(5), snapshot(5))
    with pytest.raises(StoreError, match="whole turn number"):
        store.commit_turn(session, {"narrative": "no number"}, snapshot(3))
    assert store.resume(session).number == 2


def test_unknown_session_is_a_clear_error(store: SessionStore) -> None:
    with pytest.raises(StoreError, match="there is no session 99"):
        store.commit_turn(99, record(1), snapshot(1))
    with pytest.raises(StoreError, match="no session 99"):
        store.resume(99)


def test_regenerate_keeps_the_old_output_and_state_follows_the_chosen_swipe(
    store: SessionStore,
) -> None:
    session = played(store, 3)
    index = store.replace_turn(session, 3, record(3, "重写的叙事"), snapshot(3, hp=99))
    assert index == 1
    now = store.resume(session)
    assert (now.swipe_id, now.swipe_count, now.record["narrative"]) == (1, 2, "重写的叙事")
    assert now.snapshot["state"]["hp"] == 99

    back = store.select_swipe(session, 3, 0)
    assert back.record["narrative"] == "叙事 3" and back.snapshot["state"]["hp"] == 7
    assert store.resume(session).snapshot["state"]["hp"] == 7  # state followed the swipe
    assert store.snapshot(session, 3)["state"]["hp"] == 7

    store.commit_turn(session, record(4), snapshot(4, hp=6))
    assert store.snapshot(session, 3)["state"]["hp"] == 7


def test_add_swipe_without_selecting_keeps_the_shown_output(store: SessionStore) -> None:
    session = played(store, 1)
    assert store.add_swipe(session, 1, record(1, "备选"), snapshot(1, hp=50)) == 1
    state = store.resume(session)
    assert (state.swipe_id, state.swipe_count, state.snapshot["state"]["hp"]) == (0, 2, 9)
    assert store.select_swipe(session, 1, 1).snapshot["state"]["hp"] == 50


def test_only_the_last_turn_can_be_swiped_or_regenerated(store: SessionStore) -> None:
    session = played(store, 3)
    with pytest.raises(StoreError, match="only the last turn \\(3\\)") as caught:
        store.replace_turn(session, 2, record(2), snapshot(2))
    assert "branch from turn 1" in (caught.value.hint or "")
    with pytest.raises(StoreError, match="only the last turn"):
        store.select_swipe(session, 1, 0)
    with pytest.raises(StoreError, match="swipes 0..0, not 4"):
        store.select_swipe(session, 3, 4)
    with pytest.raises(StoreError, match="carries turn number 2"):
        store.add_swipe(session, 3, record(2), snapshot(3))
    assert store.resume(session).swipe_count == 1


def test_undo_drops_the_last_turn_and_restores_the_one_before(store: SessionStore) -> None:
    session = played(store, 3)
    store.replace_turn(session, 3, record(3, "另一个版本"), snapshot(3, hp=0))
    state = store.drop_last_turn(session)
    assert state.number == 2 and state.snapshot["state"]["hp"] == 8
    assert store.resume(session).number == 2
    store.commit_turn(session, record(3, "重新来过"), snapshot(3, hp=1))
    again = store.resume(session)
    assert (again.swipe_count, again.record["narrative"]) == (1, "重新来过")


def test_undo_stops_at_the_greeting(store: SessionStore) -> None:
    session = played(store, 1)
    store.drop_last_turn(session)
    with pytest.raises(StoreError, match="nothing to undo"):
        store.drop_last_turn(session)
    assert store.resume(session).number == 0


def test_branch_copies_turns_swipes_and_snapshots_and_lives_on_its_own(
    store: SessionStore,
) -> None:
    parent = played(store, 5, seed=7)
    store.replace_turn(parent, 5, record(5, "alt"), snapshot(5, hp=-1))
    branch = store.branch(parent, 3, "另一条路")
    info = store.session(branch)
    assert (info.name, info.parent_id, info.parent_turn, info.seed) == ("另一条路", parent, 3, 7)
    assert store.resume(branch).number == 3
    assert store.resume(branch).snapshot == snapshot(3, hp=7)

    store.commit_turn(branch, record(4, "分支"), snapshot(4, hp=100))
    assert store.snapshot(parent, 4)["state"]["hp"] == 6
    assert store.resume(parent).record["narrative"] == "alt"

    store.delete(parent)
    for number in range(4):
        assert store.snapshot(branch, number) == snapshot(number, hp=10 - number if number else 10)
    assert store.session(branch).parent_id is None


def test_branch_of_the_last_turn_keeps_its_swipes(store: SessionStore) -> None:
    parent = played(store, 2)
    store.replace_turn(parent, 2, record(2, "alt"), snapshot(2, hp=0))
    branch = store.branch(parent, 2, "copy")
    assert store.resume(branch).swipe_count == 2
    assert store.select_swipe(branch, 2, 0).snapshot["state"]["hp"] == 8
    assert store.resume(parent).swipe_id == 1


def test_branch_outside_the_session_is_refused(store: SessionStore) -> None:
    session = played(store, 2)
    with pytest.raises(StoreError, match="cannot branch session .* at turn 3: it has turns 0..2"):
        store.branch(session, 3, "x")
    with pytest.raises(StoreError, match="name cannot be empty"):
        store.branch(session, 1, "   ")


def test_rename_find_list_and_delete(store: SessionStore) -> None:
    first = played(store, 1, name="one")
    second = played(store, 2, name="two")
    store.rename(first, "  first   game ")
    assert store.session(first).name == "first game"
    assert [s.id for s in store.list_sessions()] == [second, first]  # last played first
    store.commit_turn(first, record(2), snapshot(2))
    assert [s.id for s in store.list_sessions()] == [first, second]
    assert store.find("two").id == second
    assert store.find(str(first)).name == "first game"
    store.branch(second, 1, "first game")
    with pytest.raises(StoreError, match="several sessions are named 'first game'"):
        store.find("first game")
    with pytest.raises(StoreError, match="no session is named 'zzz'"):
        store.find("zzz")
    store.delete(second)
    with pytest.raises(StoreError, match="there is no session"):
        store.session(second)
    with pytest.raises(StoreError, match="there is no session"):
        store.delete(second)
    with pytest.raises(StoreError, match="there is no session"):
        store.rename(second, "x")


def test_missing_snapshot_is_an_error_never_a_reset(store: SessionStore) -> None:
    turns = [
        TurnData(0, [SwipeData({"narrative": "hi"}, None)]),
        TurnData(1, [SwipeData({"user_input": "u", "narrative": "r"}, None)]),
        TurnData(2, [SwipeData({"user_input": "u2", "narrative": "r2"}, snapshot(2))]),
    ]
    session = store.restore_session(NewSession("imported", "c.png", "h"), turns)
    assert store.resume(session).snapshot == snapshot(2)
    with pytest.raises(SnapshotMissing, match="turn 1 of session .* has no snapshot"):
        store.snapshot(session, 1)
    with pytest.raises(SnapshotMissing):
        store.drop_last_turn(session)
    assert store.resume(session).number == 2  # the refused undo changed nothing
    with pytest.raises(SnapshotMissing, match="no turn 7"):
        store.snapshot(session, 7)
    with pytest.raises(SnapshotMissing):
        store.branch(session, 1, "b")


def test_a_value_json_cannot_hold_is_refused_before_anything_is_written(
    store: SessionStore,
) -> None:
    session = played(store, 1)
    with pytest.raises(StoreError, match="turn 2 cannot be stored: .*not plain JSON"):
        store.commit_turn(session, record(2), {"state": {"seen": {1, 2}}})
    with pytest.raises(StoreError, match="turn 2 cannot be stored"):
        store.commit_turn(session, record(2, score=float("nan")), snapshot(2))
    assert store.resume(session).number == 1


def test_unchanged_parts_of_snapshots_are_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with SessionStore(path) as store:
        session = new_session(store)
        raw = 0
        for number in range(1, 301):
            snap = snapshot(number)
            raw += len(json.dumps(snap, ensure_ascii=False).encode("utf-8"))
            store.commit_turn(session, record(number), snap)
        assert store.snapshot(session, 300) == snapshot(300)
        stored = sum(len(row[0]) for row in store.db.query("SELECT data FROM blobs"))
    assert raw > 10_000_000  # 300 snapshots, each with every summary so far
    assert stored < raw / 8  # each chunk of summaries or events is kept once, not per turn
    assert path.stat().st_size < raw / 5


def test_blobs_compressed_at_any_level_read_back_alike(tmp_path: Path) -> None:
    """#17, session seven: new blobs are compressed at a faster level than before; a database
    whose blobs were written at the old level (or any other) reads back the same snapshots,
    and what is written now is plain zlib any version reads."""
    import zlib

    path = tmp_path / "sessions.db"
    with SessionStore(path) as store:
        session = new_session(store)
        for number in range(1, 40):
            store.commit_turn(session, record(number), snapshot(number))
        rows = store.db.query("SELECT hash, data FROM blobs")
        assert rows and all(zlib.decompress(data) for _, data in rows)
        with store.db.transaction() as conn:
            conn.executemany(
                "UPDATE blobs SET data = ? WHERE hash = ?",
                [(zlib.compress(zlib.decompress(data), 6 + n % 4), h) for n, (h, data) in
                 enumerate(rows)],
            )  # fmt: skip
    with SessionStore(path) as store:
        assert [store.snapshot(session, n) for n in (1, 20, 39)] == [
            snapshot(n) for n in (1, 20, 39)
        ]


def test_deleting_every_session_leaves_no_orphan_blobs(store: SessionStore) -> None:
    first = played(store, 40)
    store.replace_turn(first, 40, record(40, "x"), snapshot(40, hp=3))
    second = store.branch(first, 20, "b")
    store.commit_turn(second, record(21), snapshot(21, hp=55))
    store.drop_last_turn(first)
    store.delete(first)
    assert store.resume(second).snapshot["state"]["hp"] == 55
    store.delete(second)
    assert store.db.query("SELECT COUNT(*) FROM blobs") == [(0,)]
    assert store.db.query("SELECT COUNT(*) FROM blob_refs") == [(0,)]


def test_api_keys_in_settings_or_records_never_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with SessionStore(path) as store:
        session = new_session(
            store,
            settings={
                "profiles": {
                    "x": {
                        "api_key": "sk-live-0123456789abcdef0123",
                        "api_key_env": "DEEPSEEK_API_KEY",
                    }
                }
            },
        )
        store.commit_turn(
            session,
            record(1, calls=[{"headers": {"Authorization": "Bearer abcdefghijklmnopqrstuvwxyz"}}]),
            snapshot(1),
        )
        assert store.session(session).settings["profiles"]["x"]["api_key_env"] == "DEEPSEEK_API_KEY"
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert len(data) > 4096
    assert b"sk-live-0123456789abcdef0123" not in data
    assert b"abcdefghijklmnopqrstuvwxyz" not in data


def test_two_processes_cannot_commit_the_same_turn(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with SessionStore(path) as one, SessionStore(path) as two:
        session = played(one, 1)
        two.commit_turn(session, record(2, "from two"), snapshot(2))
        with pytest.raises(StoreError, match="already stored"):
            one.commit_turn(session, record(2, "from one"), snapshot(2))
        assert one.resume(session).record["narrative"] == "from two"


def test_the_database_uses_wal_and_foreign_keys(store: SessionStore) -> None:
    assert store.db.query("PRAGMA journal_mode") == [("wal",)]
    assert store.db.query("PRAGMA foreign_keys") == [(1,)]
    names = [row[0] for row in store.db.query("SELECT name FROM _migrations ORDER BY rowid")]
    assert names == [m.name for m in MIGRATIONS]
    assert store.db.query("PRAGMA user_version") == [(len(MIGRATIONS),)]


def test_an_old_database_file_is_migrated_and_keeps_its_sessions(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = open_database(path)
    migrate(db, MIGRATIONS[:1])  # a file written by the first release
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO sessions (name, card_path, card_hash, settings, created_at, updated_at)"
            " VALUES ('old game', 'old.png', 'h', '{\"a\": 1}', '2026-01-01T00:00:00+00:00',"
            " '2026-01-01T00:00:00+00:00')"
        )
        conn.execute("INSERT INTO turns VALUES (1, 0, 0, '2026-01-01T00:00:00+00:00')")
    db.close()
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone() == (1,)
    raw.close()

    with SessionStore(path) as store:
        assert store.db.query("PRAGMA user_version") == [(len(MIGRATIONS),)]
        info = store.session(1)
        assert (info.name, info.settings, info.chat_metadata, info.parent_id) == (
            "old game",
            {"a": 1},
            {},
            None,
        )
        with pytest.raises(SnapshotMissing):  # the old row has no swipe: never a silent reset
            store.resume(1)


def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SessionStore(path).close()
    raw = sqlite3.connect(path)
    raw.execute("INSERT INTO _migrations VALUES ('m999_future', '2030-01-01')")
    raw.commit()
    raw.close()
    with pytest.raises(StoreError, match="newer narrative-cli .*m999_future"):
        SessionStore(path)


def test_a_file_that_is_not_a_database_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"this is a text file, not SQLite" * 100)
    with pytest.raises(StoreError, match="sessions.db") as caught:
        SessionStore(path)
    assert "not a narrative-cli database" in (caught.value.hint or "")


def test_a_worker_thread_can_commit_through_the_same_store(store: SessionStore) -> None:
    session = played(store, 1)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            store.commit_turn(session, record(2), snapshot(2))
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=30)
    assert errors == []
    assert store.resume(session).number == 2


def test_several_processes_opening_a_new_database_at_once_all_succeed(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "fresh.db"
    script = (
        "import sys; from narrative_cli.store.sessions import SessionStore; "
        "SessionStore(sys.argv[1])"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path)], stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    failures = [p.stderr.read().decode() for p in procs if p.wait(timeout=60) != 0]  # type: ignore[union-attr]
    assert failures == []
    assert len(SessionStore(path).list_sessions()) == 0


def test_a_snapshot_s_nested_values_are_stored_as_encoding_each_whole_value_gives() -> None:
    """Snapshots are written from their parts' JSON (issue #17, session five); the stored
    bytes must stay what encoding each value whole gives, or a database written before would
    stop sharing its blobs with new turns."""
    from narrative_cli.store import blobs

    small = {"名字": "艾达", "hp": 3.5, "flags": [True, None, {"深": {"更深": [1, 2]}}], "": {}}
    big: dict[Any, Any] = {
        f"键{i}": {"值": i, "说明": "雾里的灯" * 3, "列": [i, 0.25]} for i in range(9)
    }
    big.update({1: "int key", "ok": False})
    value = {"small": small, "big": big, "text": "x" * 600}
    packed = blobs.pack(value)
    root = blobs.decode(packed.root)["d"]
    assert root["small"] == {"v": small} and "b" in root["text"]
    stored = packed.blobs[bytes.fromhex(root["big"]["b"])]
    assert stored == json.dumps(big, ensure_ascii=False, separators=(",", ":")).encode()
    assert blobs.unpack(packed.root, packed.blobs) == json.loads(json.dumps(value))
    with pytest.raises(StoreError):
        blobs.pack({"a": {"b": float("nan")}})


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON-like value: nested dicts (some keys not text), short and long lists,
    texts of every size around the inline limit, numbers, booleans, None, tuples."""
    roll = rng.random()
    if depth < 4 and roll < 0.35:
        keys: list[Any] = [f"键{rng.randrange(40)}" for _ in range(rng.randrange(7))]
        keys += [rng.choice([3, 2.5, True, None])] if rng.random() < 0.1 else []
        return {key: _random_json(rng, depth + 1) for key in keys}
    if depth < 4 and roll < 0.5:
        size = rng.choice([0, 2, 9, 32, 33, 40, 90])
        return [_random_json(rng, depth + 2) for _ in range(size)]
    if roll < 0.55:
        return tuple(range(rng.choice([3, 40])))
    if roll < 0.8:
        return "雾" * rng.choice([0, 3, 100, 160, 170, 171, 200, 600])
    return rng.choice([0, -7, 1.5, 10**20, True, False, None])


def test_a_snapshot_packed_from_the_top_down_is_what_packing_it_leaf_by_leaf_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#17, session seven: a dict without long lists is packed from its whole JSON down, not
    leaf by leaf; over random values the root and the blobs must be byte for byte the same
    (and the value must come back)."""
    from narrative_cli.store import blobs, chunks

    rng = random.Random(17)
    values = [{"turn": n, "v": _random_json(rng), "w": _random_json(rng)} for n in range(400)]
    fast = [blobs.pack(value) for value in values]
    chunks.LISTS.clear()
    monkeypatch.setattr(blobs, "_holds_long_list", lambda value: True)  # always leaf by leaf
    slow = [blobs.pack(value) for value in values]
    chunks.LISTS.clear()
    shapes: set[str] = set()
    for value, one, other in zip(values, fast, slow, strict=True):
        assert one.root == other.root and one.blobs == other.blobs
        assert blobs.unpack(one.root, one.blobs) == json.loads(json.dumps(value))
        shapes.update(_tags(blobs.decode(one.root)))
    assert shapes == {"v", "d", "b", "l"}  # every kind of node was made


def test_a_long_list_s_chunks_are_the_same_however_it_changed_before() -> None:
    """#17, sessions seven and nine: a list's chunks keep their cuts and digests from the last
    list at the same place (a log sliding by one reuses all its chunks but two; a list
    growing at the end keeps its long runs). Over random changes (appends, the oldest
    dropped, an item rewritten, runs of items with no cut in them, items that mark a run of
    level 2 or 3), the chunks must be those cutting the list from scratch by the rule gives."""
    import zlib

    from narrative_cli.store import blobs, chunks

    def level(item: bytes) -> int:
        crc = zlib.crc32(item)
        if crc % 32:
            return 0
        return 1 + (crc // 32 % 8 == 0) + (crc // 32 % 64 == 0)

    def by_level_one(items: list[bytes], start: int, end: int) -> list[tuple[int, int]]:
        spans = []
        for index in range(start, end):
            if level(items[index]) or index + 1 - start >= 128:
                spans.append((start, index + 1))
                start = index + 1
        return spans + ([(start, end)] if start < end else [])

    def by_the_rule(items: list[bytes]) -> list[bytes]:
        levels = [level(item) for item in items]
        marks = [index for index, found in enumerate(levels) if found >= 2]
        threes = [index for index in marks if levels[index] == 3]
        if len(marks) < 2:
            spans = by_level_one(items, 0, len(items))
        else:
            spans = by_level_one(items, 0, marks[0] + 1)
            ends = [m for m in marks[1:] if len(threes) < 2 or not threes[0] < m < threes[-1]
                    or levels[m] == 3]
            for begin, end in zip([marks[0], *ends[:-1]], ends, strict=True):
                spans.append((begin + 1, end + 1))
            spans += by_level_one(items, ends[-1] + 1, len(items))
        return [b"[" + b",".join(items[begin:end]) + b"]" for begin, end in spans]

    def item(n: int, wanted: int) -> str:  # an item of the wanted cut level
        text = f"item {n} " + "x" * 300
        while level(json.dumps(text).encode()) != wanted:
            text += "y"
        return text

    rng = random.Random(7)
    log: list[str] = []
    marks = 0
    chunks.LISTS.clear()
    for step in range(500):
        roll = rng.random()
        if roll < 0.45:
            log = [*log, f"item {step} " + "x" * rng.randrange(300)]
        elif roll < 0.7:
            log = [*log[1:], f"item {step} " + "x" * rng.randrange(300)]
        elif roll < 0.78 and log:
            log = list(log)
            log[rng.randrange(len(log))] = f"rewritten {step} " + "z" * 280
        elif roll < 0.9:  # an item that may end a long run
            log = [*log, item(step, rng.choice([2, 2, 3]))]
        else:  # a run without cuts, then one that ends a chunk or not
            run = rng.choice([40, 126, 127, 128, 129, 255, 256, 257])
            log = [*log, *(item(step * 1000 + k, 0) for k in range(run))]
            log += [item(step * 1000 + run, 1)] if rng.random() < 0.5 else []
        log = log[-600:]
        packed = blobs.pack({"log": log})
        node = blobs.decode(packed.root).get("d", {}).get("log", {})
        items = [json.dumps(item, ensure_ascii=False).encode() for item in log]
        if "l" not in node:
            continue
        expected = by_the_rule(items)
        marks += sum(level(item) >= 2 for item in items) >= 2
        assert [packed.blobs[bytes.fromhex(key)] for key in node["l"]] == expected
        assert node["l"] == [blobs.digest(chunk).hex() for chunk in expected]
        assert blobs.unpack(packed.root, packed.blobs) == {"log": log}
    assert marks > 100  # long runs were made most of the time
    chunks.LISTS.clear()


def test_parts_packed_as_last_turn_are_what_packing_them_afresh_gives() -> None:
    """#17, session nine: a dict without long lists whose JSON is the last one's at its place
    takes the last node and blobs; a blob like the last one at its place its digest; a short
    shared list the last items' JSON. Over turns that keep, change, change in place (after
    they were packed), turn lists into tuples, or share items, every pack must be what packing
    the same value with nothing remembered gives, and read back as the value."""
    from narrative_cli.shared_items import SharedItems
    from narrative_cli.store import blobs, chunks

    memos = (chunks.LISTS, chunks.KNOWN, blobs._INTS, blobs._PLAIN, blobs._DIGESTS, blobs._SHORT)

    def afresh(value: Any) -> blobs.Packed:
        kept = [dict(memo) for memo in memos]
        for memo in memos:
            memo.clear()
        try:
            return blobs.pack(value)
        finally:
            for memo, held in zip(memos, kept, strict=True):
                memo.clear()
                memo.update(held)  # type: ignore[arg-type]

    rng = random.Random(9)
    schema = {"type": "object", "properties": {f"p{n}": {"type": "string", "description":
              "雾" * 40 + str(n)} for n in range(12)}, "required": ["p1"]}
    chapters: list[dict[str, Any]] = []
    lines = {"long": "x" * 700, "list": list(range(30)), "mixed": [{"a": "y" * 300}, 2]}
    hits = 0
    for turn in range(300):
        roll = rng.random()
        if roll < 0.2:
            schema["properties"][f"p{rng.randrange(12)}"]["type"] = rng.choice(["string", 1])
        elif roll < 0.3:
            schema = json.loads(json.dumps(schema))  # equal, another object
        elif roll < 0.4:
            lines["list"] = tuple(lines["list"]) if rng.random() < 0.5 else list(lines["list"])
        elif roll < 0.5:
            lines["long"] = "x" * rng.choice([700, 701])
        if rng.random() < 0.1:
            chapters = [*chapters, {"first": turn, "text": "章" * rng.randrange(10, 200)}]
        elif chapters and rng.random() < 0.05:
            chapters = chapters[1:]
        value = {"turn": turn, "mvu_data": {"schema": schema, "display": dict(lines)},
                 "chapters": SharedItems(chapters), "rng": [3, list(range(40)), None]}
        packed = blobs.pack(value)
        hits += ("mvu_data",) in blobs._PLAIN and turn > 0
        expected = afresh(value)
        assert packed.root == expected.root and packed.blobs == expected.blobs
        assert blobs.unpack(packed.root, packed.blobs) == json.loads(json.dumps(value))
        if rng.random() < 0.3:  # the objects change in place after they were packed
            lines["mixed"][0]["a"] = "z" * rng.choice([300, 301])
            if chapters:
                chapters[-1]["text"] += "!"  # a shared item changed: the next list is new
                chapters = [dict(item) for item in chapters]
    assert hits > 250
    small = {"mood": "steady"}  # packed inline inside a larger dict, then changed in place
    blobs.pack({"vars": {"small": small, "big": "x" * 600}})
    small["mood"] = "worried"
    again = {"vars": {"small": {"mood": "steady"}, "big": "x" * 600}}  # the first one's JSON
    assert blobs.unpack(blobs.pack(again).root, afresh(again).blobs) == again
    for memo in memos:
        memo.clear()


def test_a_growing_shared_list_is_stored_as_packing_it_afresh_gives() -> None:
    """#17, session nine: a shared list that grows at the end (the summary lines) is brought
    up to date in place from the last one at its place: only its new items are encoded and
    its open chunk cut, its first items taken without a look when its owner says it was made
    from the last one (``base``). Over 600 steps that append one to three lines (said so or
    not), go back (an undo), start another story, or pack another story's lines at the same
    place in between, with the marks of longer runs among them, every pack must be what
    packing a plain copy with nothing remembered gives."""
    from narrative_cli.shared_items import SharedItems
    from narrative_cli.store import blobs, chunks


    rng = random.Random(11)
    lines: tuple[dict[str, Any], ...] = ()
    marks = set()
    for step in range(600):
        roll, before = rng.random(), lines
        if roll < 0.9:
            lines += tuple({"turn": step, "text": f"line {step}.{k} " + "雾" * rng.randrange(60)}
                           for k in range(rng.choice([1, 1, 1, 2, 3])))
        elif roll < 0.97:
            lines = lines[: max(0, len(lines) - rng.randrange(1, 4))]
        else:
            lines = tuple(dict(line) for line in lines)  # equal lines, other objects
        # made from the last lines by appending (its owner says so: ``base``), or not said
        base = before if roll < 0.9 and rng.random() < 0.7 else None
        value = {"summaries": {"entries": SharedItems(lines, base=base)}}
        packed = blobs.pack(value)
        expected = pack_afresh(value)
        assert packed.root == expected.root and packed.blobs == expected.blobs
        marks.update(line["turn"] for line in lines
                     if chunks.level(blobs.dumps(line)) > 1)
        if rng.random() < 0.1:  # another story at the same place between two turns
            other = tuple({"turn": n, "text": f"other {step} {n}"} for n in range(400))
            blobs.pack({"summaries": {"entries": SharedItems(other)}})
    assert len(marks) >= 2  # runs of level 2 were made and kept
    chunks.LISTS.clear()


def test_a_list_of_numbers_like_the_last_one_is_stored_as_encoding_it_gives() -> None:
    """#17, session seven: the RNG state's numbers are written from the last state's JSON when
    only its last number changed; over random states (the words kept, redrawn, a number that
    is a bool or a float, a length that changes) the blobs must be what encoding gives."""
    from narrative_cli.store import blobs

    rng = random.Random(3)
    words = [rng.getrandbits(32) for _ in range(624)]
    for step in range(300):
        roll = rng.random()
        if roll < 0.05:
            words = [rng.getrandbits(32) for _ in range(624)]
        elif roll < 0.1:
            words = [*words[:-1], rng.choice([True, 1.0, -0.0, 2**70])]
        elif roll < 0.12:
            words = words[:-1]
        elif roll < 0.15:
            words = [True if n == 5 else w for n, w in enumerate(words)]
        elif roll < 0.2:
            words = [*words[:-1], 1, 1]
        state = [3, [*words, rng.randrange(625)], None if roll < 0.5 else 0.25]
        packed = blobs.pack({"rng": state, "turn": step})
        node = blobs.decode(packed.root)["d"]["rng"]
        expected = json.dumps(state, separators=(",", ":")).encode()
        assert packed.blobs[bytes.fromhex(node["b"])] == expected
    blobs._INTS.clear()


def _tags(node: dict[str, Any]) -> set[str]:
    tag, body = next(iter(node.items()))
    found = {tag}
    if tag == "d":
        for child in body.values():
            found |= _tags(child)
    return found


def test_each_commit_waits_for_the_disk_unless_it_may_be_rebuilt(tmp_path: Path) -> None:
    """``synchronous`` is set only when it changes (#17, session five): a durable commit after
    relaxed ones still waits for the disk, and relaxed ones after it do not."""
    db = open_database(tmp_path / "s.db")
    seen = []
    try:
        for durable in (True, False, False, True, True, False):
            with db.transaction(durable=durable) as conn:
                seen.append(conn.execute("PRAGMA synchronous").fetchone()[0])
        with db.transaction(write=False) as conn:
            seen.append(conn.execute("PRAGMA synchronous").fetchone()[0])
    finally:
        db.close()
    full, normal = 2, 1
    assert seen == [full, normal, normal, full, full, normal, normal]
