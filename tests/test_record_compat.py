"""Sessions stored before turn records were typed (#12) still load, play on and export the same.

``data/compat/LABEL-session.db`` and ``LABEL-export.json`` were written by the code of commit
LABEL (``tests/make_compat_session.py``): ``29cdb04`` is the first wave, ``ab23b4f`` adds dice
streams (``rng_stream``, #20), ``d42d10b`` is main just before #12 (MagVarUpdate commands,
#14). The session holds every part of a turn record.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.story import PlayedTurn, TurnRecord, TurnResult
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.options import PlayOptions
from narrative_cli.store.export import session_dump
from narrative_cli.store.sessions import SessionStore

from .make_compat_session import (
    ANALYSIS,
    MVU_REPLY,
    PLAN_WITH_CALLS,
    compat_card,
    play_compat_session,
)
from .pipeline_support import Script, settings_for
from .servers import ScriptedServer

DATA = Path(__file__).parent / "data" / "compat"
OLDEST, DICE, BEFORE_12 = "29cdb04", "ab23b4f", "d42d10b"
LABELS = (OLDEST, DICE, BEFORE_12)
ADDED_SINCE = {OLDEST: {"rng_stream": 0}, DICE: {}, BEFORE_12: {}}  # fields later versions write


def _open(label: str, folder: Path) -> SessionStore:
    shutil.copy(DATA / f"{label}-session.db", folder / "old.db")
    return SessionStore(folder / "old.db")


def _stored(store: SessionStore) -> list[tuple[dict[str, object], dict[str, object]]]:
    """Every (record, snapshot) of every swipe of the stored session, turn 0 left out."""
    [info] = store.list_sessions()
    pairs = []
    for turn in store.iter_turns(info.id, snapshots=True):
        for swipe in turn.swipes:
            if turn.number > 0:
                pairs.append((swipe.record, swipe.snapshot))
    return pairs


@pytest.mark.parametrize("label", LABELS)
def test_every_old_record_reads_into_types_and_writes_back_identically(
    label: str, tmp_path: Path
) -> None:
    store = _open(label, tmp_path)
    pairs = _stored(store)
    store.close()
    assert len(pairs) == 3  # turn 1, and turn 2 with two swipes
    for record, snapshot in pairs:
        written = TurnResult.from_record(record, snapshot).to_record()
        assert written == {**record, **ADDED_SINCE[label]}
        if label != OLDEST:  # the same bytes, key order included
            assert json.dumps(written, ensure_ascii=False) == json.dumps(record, ensure_ascii=False)
    last = TurnResult.from_record(*pairs[-1])
    assert last.plan is not None and [c.tool for c in last.plan.tool_calls] == ["roll_dice", "nope"]
    assert last.plan.text_recall == (0,) and last.plan.tone == "calm"
    assert [r.kind for r in last.tool_results] == ["dice", "warning"]
    assert [e.type for e in last.events_applied] == ["move", "add_item"]
    assert [e.type for e in last.events_rejected] == ["fly_away"]
    [rejected] = last.mvu_rejected
    assert "missing" in (rejected.patch if label == BEFORE_12 else rejected.patch["path"])
    assert {hit.comment for hit in last.lore} == {"fog", "ferry"}
    assert last.budget_cuts and last.budget_cuts[0].cuts[0].block
    assert PlayedTurn.from_record(pairs[-1][0]).user_input == "I light the lantern."
    assert TurnRecord.read(pairs[-1][0]).rng_stream == (0 if label == OLDEST else 1)


@pytest.mark.parametrize("label", LABELS)
def test_an_old_session_exports_exactly_as_before(label: str, tmp_path: Path) -> None:
    store = _open(label, tmp_path)
    [info] = store.list_sessions()
    expected = json.loads((DATA / f"{label}-export.json").read_text(encoding="utf-8"))
    assert session_dump(store, info.id) == expected
    store.close()


@pytest.mark.parametrize("label", LABELS)
def test_an_old_session_resumes_swipes_and_plays_on(label: str, tmp_path: Path) -> None:
    store = _open(label, tmp_path)
    card = compat_card(tmp_path)
    with ScriptedServer() as server:
        replies = {"planning": PLAN_WITH_CALLS, "analysis": ANALYSIS, "mvu_extract": MVU_REPLY}
        Script(replies).install(server)
        settings = settings_for(server, mode="serial")
        options = PlayOptions(card=str(card))
        play = PlaySession.resume(store, "compat", options, BackendSet.from_settings(settings))
        play.story.settings = settings
        assert play.turn == 2 and play.last is not None
        assert [e.type for e in play.last.events_rejected] == ["fly_away"]
        assert [s.selected for s in play.swipes()] == [False, True]
        play.swipe(0)
        assert play.story.history[-1].user_input == "I light the lantern."
        result = play.play("I ring the bell.")
        assert result.number == 3 and play.turn == 3
        assert result.plan is not None and result.plan.tool_calls[0].tool == "roll_dice"
        stored = store.record(play.session_id, 3)
        assert TurnResult.from_record(stored, result.snapshot.to_dict()).to_record() == stored
        assert play.undo() == 2
        play.close()
    store.close()


def _comparable(value: object, *, counts: bool = True) -> object:
    """JSON without what differs between runs: timestamps, latencies, the card's folder (and,
    ``counts`` False, the prompt-derived token counts)."""
    dropped = ("created_at", "latency_ms", "card_path", "id") + (() if counts else PROMPT_COUNTS)
    if isinstance(value, dict):
        return {k: _comparable(v, counts=counts) for k, v in value.items() if k not in dropped}
    if isinstance(value, list):
        return [_comparable(v, counts=counts) for v in value]
    return value


def test_todays_code_writes_the_records_and_snapshots_the_code_before_12_wrote(
    tmp_path: Path,
) -> None:
    """#12 changed no stored byte. A later issue that changes the record or snapshot shape on
    purpose writes a new fixture with the code before it (``make_compat_session``) and compares
    with that one; the tests above keep the older fixtures: old sessions still load."""
    with ScriptedServer() as server:
        store = SessionStore(tmp_path / "new.db")
        session_id = play_compat_session(store, compat_card(tmp_path), server)
        dump = session_dump(store, session_id)
        store.close()
    expected = json.loads((DATA / f"{BEFORE_12}-export.json").read_text(encoding="utf-8"))
    assert len(dump["turns"]) == 3
    # Issue #17 moved the planner's JSON format into its system message on purpose: the
    # token counts estimated from prompts may move by a token or two; every other byte stays.
    got, want = _prompt_counts(dump["turns"]), _prompt_counts(expected["turns"])
    assert got.keys() == want.keys() and all(abs(got[k] - want[k]) <= 2 for k in got)
    assert _comparable(dump["turns"], counts=False) == _comparable(expected["turns"], counts=False)
    assert _comparable(dump["session"]) == _comparable(expected["session"])


PROMPT_COUNTS = ("prompt_tokens", "tokens")  # a call's prompt tokens, a budget cut's tokens


def _prompt_counts(value: object, path: str = "") -> dict[str, int]:
    """Every prompt-derived token count in ``value``, by where it is."""
    found: dict[str, int] = {}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(
        value, list
    ) else ()
    for key, item in items:
        where = f"{path}/{key}"
        if key in PROMPT_COUNTS and isinstance(item, int):
            found[where] = item
        else:
            found.update(_prompt_counts(item, where))
    return found
