"""Remembered text-search matches (#17, session six): a term asked again is answered from
what the index found before plus the writes since; it must find exactly what FTS5 finds."""

from __future__ import annotations

import random
from pathlib import Path

from narrative_cli.context.text_search import Document
from narrative_cli.store.sessions import SessionStore
from narrative_cli.store.term_memo import decidable

from .test_store import new_session

WORDS = (
    "Lamp", "lamp", "LAMPLIGHT", "fog", "Fog-bell", "oar", "the", "ſtep", "step", "Kelvin",
    "\u212aelvin", "café", "CAFÉ", "“quoted”", "老周", "老周说", "灯塔", "ｌａｍｐ", "ＬＡＭＰ",
    "İstanbul", "istanbul", "Straße", "STRASSE", "naïve", "…", "12", "x",
)  # fmt: skip
TERMS = ("lamp", "LAMP", "fog", "step", "kelvin", "café", "caf", "quoted", "老周说", "灯塔",
         "ｌａｍｐ", "istanbul", "strasse", "straße", "naïve", "stanbul", "fog-bell")  # fmt: skip


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 9)))


def test_remembered_matches_are_what_the_index_finds_as_the_story_changes(
    tmp_path: Path,
) -> None:
    rng = random.Random(17)
    store = SessionStore(tmp_path / "s.db", durable_turns=False)
    session = new_session(store)
    other = new_session(store, "another story")  # its rows share the index
    index, theirs = store.text_index(session), store.text_index(other)
    docs: dict[str, Document] = {}
    for step in range(60):
        for _ in range(rng.randrange(1, 4)):  # new documents
            key = f"turn:{len(docs) + step}"
            docs[key] = Document(key, step, "turn", text(rng))
        if docs and rng.random() < 0.3:  # one rewritten (a swipe), one gone (an undo)
            key = rng.choice(sorted(docs))
            docs[key] = Document(key, docs[key].turn, "turn", text(rng))
        if docs and rng.random() < 0.2:
            del docs[rng.choice(sorted(docs))]
        index.sync(list(docs.values()))
        theirs.sync([Document(f"turn:{step}", step, "turn", text(rng))])
        fresh = store.text_index(session)  # remembers nothing yet
        for term in TERMS:
            for at_most in (None, 2):
                expected = fresh.matches(term) if at_most is None else None
                got = index.matches(term, at_most)
                if expected is not None:
                    assert got == expected, (step, term)
                else:
                    every = fresh.matches(term)
                    assert len(got) > at_most or got == every, (step, term)
                    assert set(got) <= set(every), (step, term)
    store.close()


def test_only_text_whose_case_python_folds_as_sqlite_is_decided_in_python() -> None:
    assert decidable("The lamp, “lit” — 老周说：好。ｌ") is False  # a fullwidth letter
    assert decidable("The lamp, “lit” — 老周说：好！") is True
    assert not decidable("café") and not decidable("\u212aelvin") and not decidable("İ")
