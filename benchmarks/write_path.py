"""The store's write path of a recorded replay, this code's against another's, on the same objects.

    python benchmarks/write_path.py --log LOG --trace TRACE --before SRC [--passes 3]

A whole-process replay's speed moves by more, run to run on a shared machine, than the write
path can (it is a fifth of the process), so this compares the write path alone (#17, session
eight): the log is replayed once in this process with recorded responses, keeping every
record and snapshot ``SessionStore.commit_turn`` was given and every document list the text
index's ``sync`` was given. Then ``SRC``'s ``narrative_cli/store`` (copied into a temporary
folder as the package ``before_store``; the rest of the code is this one's, so both stores
see the very same objects) and this code's store each write them all into a database of
their own, batched as a replay is, turn by turn alternately, and the thread CPU time of each
call is added up (the first pass is not counted). Printed: each store's milliseconds a turn
for ``commit_turn`` and ``sync`` and the ratios, and ``commit_turn``'s milliseconds a turn
over the first and the last 200 turns (its growth with the story: #17, session nine). At
the end the two databases are compared (records, snapshots rebuilt from their roots and
blobs, documents), and each one's reference counts checked against the snapshots that use
each blob.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CARD = ROOT / "sample_cards" / "lantern-keeper.png"


def capture(log: Path, trace: Path, home: Path) -> list[tuple[Any, ...]]:
    """Replay ``log`` once, keeping what the store was asked to write, in order."""
    os.environ["NARRATIVE_HOME"] = str(home)
    from narrative_cli.cli.app import main
    from narrative_cli.store import sessions, text_index

    events: list[tuple[Any, ...]] = []
    commit, sync = sessions.SessionStore.commit_turn, text_index.SessionTextIndex.sync

    def kept_commit(self: Any, session: int, record: Any, snapshot: Any) -> int:
        events.append(("commit", record, snapshot))
        return commit(self, session, record, snapshot)

    def kept_sync(self: Any, documents: Any) -> None:
        events.append(("sync", list(documents)))
        sync(self, documents)

    sessions.SessionStore.commit_turn = kept_commit  # type: ignore[method-assign]
    text_index.SessionTextIndex.sync = kept_sync  # type: ignore[method-assign]
    try:
        main(["replay", str(log), "--card", str(CARD), "--responses", str(trace)])
    except SystemExit as done:
        if done.code:
            raise
    finally:
        sessions.SessionStore.commit_turn = commit  # type: ignore[method-assign]
        text_index.SessionTextIndex.sync = sync  # type: ignore[method-assign]
    return events


def before_store(src: Path, folder: Path) -> Any:
    """``src``'s store package, importable beside ours as ``before_store``."""
    target = folder / "before_store"
    shutil.copytree(src / "narrative_cli" / "store", target)
    for path in target.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"narrative_cli\.store\b", "before_store", text), "utf-8")
    sys.path.insert(0, str(folder))
    return importlib.import_module("before_store.sessions").SessionStore


def race(stores: dict[str, Any], events: list[tuple[Any, ...]], folder: Path,
         passes: int) -> tuple[dict[str, list[float]], dict[str, Path]]:
    """Thread CPU seconds of (commits, syncs, commits of the first 200 turns, commits of the
    last 200) for each store, passes after the first."""
    spent = {name: [0.0, 0.0, 0.0, 0.0] for name in stores}
    commits = sum(event[0] == "commit" for event in events)
    paths: dict[str, Path] = {}
    for run in range(passes):
        opened = {}
        for name, store_class in stores.items():
            paths[name] = folder / f"{name}-{run}.db"
            store = store_class(paths[name], durable_turns=False)
            session = store.create_session("b", card_path="c", card_hash="h", snapshot={"turn": 0})
            batch = store.batched()
            batch.__enter__()
            opened[name] = (store, session, store.text_index(session), batch)
        order = list(opened.items())
        gc.collect()
        turn = 0
        for event in events:
            for name, (store, session, index, _) in order if turn % 2 else order[::-1]:
                start = time.thread_time()
                if event[0] == "commit":
                    store.commit_turn(session, event[1], event[2])
                else:
                    index.sync(event[1])
                if run:
                    took = time.thread_time() - start
                    spent[name][event[0] == "sync"] += took
                    if event[0] == "commit" and turn < 200:
                        spent[name][2] += took
                    elif event[0] == "commit" and turn >= commits - 200:
                        spent[name][3] += took
            turn += event[0] == "commit"
        for store, _, _, batch in opened.values():
            batch.__exit__(None, None, None)
            store.close()
    return spent, paths


def rows(path: Path) -> dict[str, Any]:
    """What a database holds, as any reader sees it: the records, every snapshot rebuilt
    from its root and blobs, the text index's documents; and whether every blob's reference
    count is the number of snapshots that use it (the blobs themselves may be cut otherwise:
    #17, session nine)."""
    from narrative_cli.store.blobs import count_hashes, unpack

    with sqlite3.connect(path) as db:
        stored = {bytes(h): zlib.decompress(d) for h, d in db.execute("SELECT * FROM blobs")}
        swipes = list(db.execute("SELECT number, idx, record, snapshot FROM swipes"))
        refs = {bytes(h): n for h, n in db.execute("SELECT * FROM blob_refs")}
        counted = count_hashes(s for _, _, _, s in swipes)
        return {
            "records": [(n, i, zlib.decompress(r)) for n, i, r, _ in swipes],
            "snapshots": [(n, i, s and unpack(s, stored)) for n, i, _, s in swipes],
            "references counted": refs == dict(counted) and set(stored) == set(refs),
            "recall_docs": sorted(db.execute("SELECT * FROM recall_docs")),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--trace", type=Path, required=True)
    parser.add_argument("--before", type=Path, required=True, help="the other code's src folder")
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="write-path-"))
    try:
        events = capture(args.log, args.trace, folder / "home")
        from narrative_cli.store.sessions import SessionStore

        stores = {"before": before_store(args.before, folder), "after": SessionStore}
        spent, paths = race(stores, events, folder, max(args.passes, 2))
        turns = sum(event[0] == "commit" for event in events) * (max(args.passes, 2) - 1)
        edge = 200 * (max(args.passes, 2) - 1)
        for name, (commits, syncs, first, last) in spent.items():
            print(f"{name}: commit_turn {commits * 1e3 / turns:.3f} ms a turn, "
                  f"sync {syncs * 1e3 / turns:.3f} ms a turn; commit_turn over the first 200 "
                  f"turns {first * 1e3 / edge:.3f} ms, the last 200 {last * 1e3 / edge:.3f} ms "
                  f"({last / first:.2f}x)")
        (c0, s0, _, _), (c1, s1, _, _) = spent["before"], spent["after"]
        print(f"after / before: commit_turn {c1 / c0:.3f}, both {(c1 + s1) / (c0 + s0):.3f}")
        before, after = rows(paths["before"]), rows(paths["after"])
        print("same records, snapshots and documents:", before == after,
              "; reference counts right:", after["references counted"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
