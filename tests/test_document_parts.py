"""A turn's search document keeps the player's words and the story's apart and makes its text
when asked (#17: the story's text held once). It must be the very document the joined text
makes: the same text, equal and hashed alike, the same matches in the index (short terms are
scanned in memory, per part), checked on generated texts and terms against plain documents."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from narrative_cli.context.text_search import Document
from narrative_cli.store.sessions import SessionStore
from narrative_cli.store.text_index import SessionTextIndex
from tests.test_store import new_session

_PIECES = ["lamp", "Lamp", "LAMP", "老周", "老周说", "灯塔", " ", "\n", "\t", "", "fog", "ß", "SS",
           "ss", "-", "'", "雾", "Edda", "edda", "  ", "night", "。", "K", "\u212a"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 9)))


def _term(rng: random.Random) -> str:
    term = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 3)))
    return term if term.strip() else "lamp"


def test_a_joined_document_is_the_plain_document_of_its_joined_text() -> None:
    rng = random.Random(17)
    for step in range(3000):
        first, second = _text(rng), _text(rng)
        joined = Document.joined(f"turn:{step}", step, "turn", first, second)
        plain = Document(f"turn:{step}", step, "turn", f"{first}\n{second}".strip())
        assert joined.text == plain.text
        assert joined == plain and plain == joined and hash(joined) == hash(plain)
        assert joined != Document(f"turn:{step}", step, "turn", plain.text + "x")
        for _ in range(4):
            term = _term(rng)
            assert joined.contains(term) == (term in plain.text)
            folded = term.casefold()
            assert joined.folded_contains(folded) == (folded in plain.text.casefold())


def test_a_document_cannot_be_changed() -> None:
    document = Document.joined("turn:1", 1, "turn", "I trim the wick.", "The flame steadies.")
    with pytest.raises(AttributeError):
        document.key = "turn:2"  # type: ignore[misc]
    assert "The flame steadies." in repr(document)


def _index(path: Path) -> SessionTextIndex:
    store = SessionStore(path)
    return store.text_index(new_session(store))


def test_the_index_finds_the_same_documents_in_joined_and_plain_ones(tmp_path: Path) -> None:
    rng = random.Random(5)
    parts = [(_text(rng) + " lamp", _text(rng) + " 老周") for _ in range(120)]
    joined = [Document.joined(f"turn:{n}", n, "turn", a, b) for n, (a, b) in enumerate(parts, 1)]
    plain = [Document(d.key, d.turn, d.kind, d.text) for d in joined]
    first, second = _index(tmp_path / "a.db"), _index(tmp_path / "b.db")
    first.sync(joined)
    second.sync(plain)
    for _ in range(300):
        term = _term(rng)
        assert first.matches(term) == second.matches(term), term
    # what was written is the joined text, and a plain copy of it is not written again
    written = sqlite3.connect(tmp_path / "a.db").execute("SELECT key, text FROM recall_docs")
    assert dict(written.fetchall()) == {d.key: d.text for d in plain}
    changes = first.db.connection.total_changes
    first.sync(plain)
    assert first.db.connection.total_changes == changes
    assert first.matches("lamp") == second.matches("lamp")
