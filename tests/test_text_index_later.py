"""The text index's documents that may wait (#17, session nine): what the search leaves out
this turn (the writer's window, the summary block) is written once it can be found. Every
search must find exactly what an index that wrote everything at once finds, and nothing of
the story is lost from the database."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from narrative_cli.context.text_search import Document, search
from narrative_cli.errors import StoreError
from narrative_cli.store.sessions import SessionStore

from .test_store import new_session

WORDS = (
    "lamp", "Lamp", "fog", "oar", "bell", "keeper", "harbour", "rope", "tide", "ferry", "storm",
    "老周", "灯塔", "铜钥匙", "雾", "渡船", "café", "brass key",
)  # fmt: skip
TERMS = ("lamp", "fog", "bell", "keeper", "harbour", "rope", "tide", "ferry", "storm", "老周",
         "灯塔", "铜钥匙", "café", "brass key", "ope")  # fmt: skip


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 7)))


def stored(database: Path, session: int) -> list[tuple[str, int, str, str]]:
    with sqlite3.connect(database) as connection:
        return sorted(connection.execute(
            "SELECT key, turn, kind, text FROM recall_docs WHERE session_id = ?", (session,)
        ).fetchall())  # fmt: skip


def test_documents_left_to_wait_change_no_search_over_a_long_story(tmp_path: Path) -> None:
    """A story of 240 turns (new turns and summary lines, undo, rewritten and equal-but-new
    documents, folds) synced with ``later`` = the keys each turn's search leaves out; each
    turn, both searches and every term's matches are those of an index that wrote every
    document at once, read afresh (no memory of earlier searches)."""
    rng = random.Random(9)
    store = SessionStore(tmp_path / "s.db", durable_turns=False)
    reference = SessionStore(tmp_path / "ref.db", durable_turns=False)
    session, theirs = new_session(store), new_session(reference)
    other = new_session(store, "another story")  # its rows share the index
    index = store.text_index(session)
    docs: list[Document] = []  # grown in place most turns, as the pipeline's list is
    waited = 0
    for turn in range(1, 241):
        docs.append(Document(f"turn:{turn}", turn, "turn", text(rng)))
        if rng.random() < 0.8:
            docs.append(Document(f"summary:{turn}:0", turn, "summary", text(rng)))
        roll = rng.random()
        if roll < 0.05:  # undo: the last documents gone
            del docs[-rng.randrange(1, 4) :]
        elif roll < 0.1:  # a swipe: one rewritten
            at = rng.randrange(len(docs))
            docs[at] = Document(docs[at].key, docs[at].turn, docs[at].kind, text(rng))
        elif roll < 0.13:  # the same documents, other objects (a story restored)
            docs = [Document(d.key, d.turn, d.kind, d.text) for d in docs]
        elif roll < 0.16 and turn > 20:  # a fold: a chapter over older lines
            docs.append(Document(f"chapter:1-{turn - 10}:1:{turn}", turn - 10, "chapter",
                                 text(rng)))  # fmt: skip
        window = {d.key for d in docs if d.turn > turn - rng.randrange(3, 8)}
        shown = window | {d.key for d in rng.sample(docs, min(len(docs), rng.randrange(0, 12)))}
        index.sync(docs, later=shown)
        waited = max(waited, len(index) - len(stored(tmp_path / "s.db", session)))
        reference.text_index(theirs).sync(docs)
        store.text_index(other).sync([Document(f"turn:{turn}", turn, "turn", text(rng))])
        fresh = reference.text_index(theirs)  # remembers nothing
        exclude = shown | {d.key for d in rng.sample(docs, min(len(docs), 2))}
        total = len(docs) - len(exclude)
        asked = rng.sample(TERMS, 5)
        for rare in (True, False):
            got = search(index, asked, rare_only=rare, exclude=exclude, total=total)
            assert got == search(fresh, asked, rare_only=rare, exclude=exclude, total=total), turn
        for term in asked:
            assert [m for m in index.matches(term) if m[0] not in exclude] == [
                m for m in fresh.matches(term) if m[0] not in exclude
            ], (turn, term)
    assert waited > 5  # documents did wait
    index.sync(docs)  # nothing left out (``/recall``): all written
    assert stored(tmp_path / "s.db", session) == stored(tmp_path / "ref.db", theirs)
    store.close()
    reference.close()


def test_a_waiting_document_is_written_when_it_can_be_found_and_survives_reopening(
    tmp_path: Path,
) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = new_session(store)
    index = store.text_index(session)
    docs = [Document(f"turn:{n}", n, "turn", f"the ferry crossing {n}") for n in range(1, 6)]
    docs.append(Document("turn:6", 6, "turn", "the drowned bell rings"))
    index.sync(docs, later={"turn:5", "turn:6"})
    assert index.document("turn:6") == docs[-1] and len(index) == 6
    docs.append(Document("turn:7", 7, "turn", "fog"))
    index.sync(docs, later={"turn:6", "turn:7"})  # turn 5 left the window: written now
    assert index.matches("crossing 5") == [("turn:5", 5)]
    index.sync(docs[:-2], later={"turn:5"})  # undo two turns: the waiting one is gone
    index.sync(docs[:-2])
    assert index.matches("drowned") == [] and len(index) == 5
    docs[5:] = [Document("turn:6", 6, "turn", "the drowned bell again")]
    index.sync(docs, later={"turn:6"})  # the session ends with turn 6 waiting
    assert [key for key, *_ in stored(tmp_path / "s.db", session)] == [
        f"turn:{n}" for n in range(1, 6)
    ]
    store.close()
    store = SessionStore(tmp_path / "s.db")  # the next session: the story is synced again
    reopened = store.text_index(session)
    reopened.sync(docs)
    assert reopened.matches("drowned") == [("turn:6", 6)]
    store.close()


def test_a_word_as_common_as_the_limit_only_through_shown_turns_is_still_rare(
    tmp_path: Path,
) -> None:
    """The remembered count of a word (asked before) says it is common only when it is
    even if every excluded document holds it: three shown turns and three others name the
    lantern; outside what is shown, three is the limit, still rare, every time it is asked."""
    store = SessionStore(tmp_path / "s.db")
    index = store.text_index(new_session(store))
    texts = ["the lantern hums"] * 6 + ["fog over the quay"] * 40
    docs = [Document(f"turn:{n}", n, "turn", text) for n, text in enumerate(texts, start=1)]
    shown = {"turn:1", "turn:2", "turn:3"}
    index.sync(docs)
    for _ in range(4):  # the first ask is not remembered, the second is, then it is known
        found = search(index, ["lantern"], rare_only=True, exclude=shown, total=len(docs) - 3)
        assert [p.turn for p in found.passages] == [4, 5, 6]
    docs.append(Document("turn:47", 47, "turn", "a lantern by the door"))
    index.sync(docs)  # now four outside what is shown: common
    found = search(index, ["lantern"], rare_only=True, exclude=shown, total=len(docs) - 3)
    assert found.passages == []
    store.close()


def test_a_failed_write_loses_no_waiting_document(tmp_path: Path) -> None:
    """The write that should have taken the waiting turns fails (a trigger another program
    added refuses one of them): nothing is lost, the next sync writes them."""
    store = SessionStore(tmp_path / "s.db")
    index = store.text_index(new_session(store))
    texts = ["the ferry", "the quay", "the rope", "the bell tolls, boom", "fog at noon"]
    docs = [Document(f"turn:{n}", n, "turn", text) for n, text in enumerate(texts, start=1)]
    index.sync(docs, later={"turn:4", "turn:5"})
    with sqlite3.connect(tmp_path / "s.db") as other:
        other.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON recall_docs WHEN new.text LIKE '%boom%'"
            " BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    docs.append(Document("turn:6", 6, "turn", "a gull"))
    with pytest.raises(StoreError):
        index.sync(docs, later={"turn:6"})
    with sqlite3.connect(tmp_path / "s.db") as other:
        other.execute("DROP TRIGGER refuse")
    index.sync(docs, later={"turn:6"})
    assert index.matches("boom") == [("turn:4", 4)] and index.matches("noon") == [("turn:5", 5)]
    assert [key for key, *_ in stored(tmp_path / "s.db", 1)] == [f"turn:{n}" for n in range(1, 6)]
    store.close()
