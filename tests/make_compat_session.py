"""Writes ``data/compat/LABEL-session.db`` and ``LABEL-export.json``: a session stored by the
code of one commit, kept so later code is tested against it (``tests/test_record_compat.py``).

Run from the repository root with that commit's ``src`` first on ``PYTHONPATH``:
``python -m tests.make_compat_session LABEL``. Kept: ``29cdb04`` (the first wave),
``ab23b4f`` (with #20's dice streams) and ``d42d10b`` (main just before turn records were
typed, #12, with #14's MagVarUpdate commands).
The session covers every part of a turn record: a plan with tool calls and text recall, a
tool result, accepted and rejected events, summary entries, MVU patches applied and rejected,
activated lore, budget cuts, warnings, usage, and a second swipe of the last turn.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.options import PlayOptions
from narrative_cli.store.export import session_dump
from narrative_cli.store.sessions import SessionStore

from .pipeline_support import (
    DICE_TOOL,
    PLAN,
    Script,
    entry,
    settings_for,
    tool_entry,
    write_card,
)
from .servers import ScriptedServer

HERE = Path(__file__).resolve().parent / "data" / "compat"

PLAN_WITH_CALLS = {
    **PLAN,
    "extra_from_model": {"kept": True},
    "tool_calls": [{"tool": "roll_dice", "params": {"expr": "1d20"}}, {"tool": "nope"}],
    "text_recall": [0],
}
ANALYSIS = {
    "events": [
        {"type": "move", "params": {"location": "ferry deck"}},
        {"type": "add_item", "params": {"item": "lantern", "count": 1}},
        {"type": "fly_away", "params": {}},
    ],
    "summary_entries": ["The ferry left the pier in fog."],
}
MVU_REPLY = (
    "<UpdateVariable>\n_.set('mood', 'wary', 'calm');//the fog lifts\n"
    "_.set('coins', 2, 5);//paid the fare\n_.set('missing.thing', 1, 2);//no such variable\n"
    "</UpdateVariable>"
)
PATCHES = {  # mvu_extract's JSON-patch reply before #14 (29cdb04, ab23b4f were written with it)
    "patches": [
        {"op": "replace", "path": "/mood", "value": "calm"},
        {"op": "delta", "path": "/coins", "value": 3},
        {"op": "remove", "path": "/missing/thing"},
    ]
}


def compat_card(folder: Path) -> Path:
    """The card the stored session was played with (the tests write it again to resume)."""
    entries = [
        entry(1, "The ferry crosses between two islands.", keys=("ferry",), comment="ferry"),
        entry(2, "Fog hides the far shore.", constant=True, comment="fog"),
        entry(3, '{"mood": "wary", "coins": 2}', comment="[initvar]", order=200),
        entry(4, "mood changes with the weather", comment="[mvu_update] mood", constant=True),
        tool_entry(5, DICE_TOOL),
    ]
    return write_card(folder, entries)


def play_compat_session(
    store: SessionStore, card: Path, server: ScriptedServer, mvu_reply: object = MVU_REPLY
) -> int:
    """Play the stored session's turns again (two turns, then a regenerate); its id."""
    settings = settings_for(server, mode="serial")
    settings.profiles["scripted"].context_size = 700
    Script({"planning": PLAN_WITH_CALLS, "analysis": ANALYSIS, "mvu_extract": mvu_reply}).install(
        server
    )
    options = PlayOptions(card=str(card), greeting=0, session="compat", seed=7)
    play = PlaySession.open(store, options, BackendSet.from_settings(settings))
    play.story.settings = settings
    play.play("I board the ferry.")
    play.play("I light the lantern.")
    play.regenerate()
    play.close()
    return play.session_id


def main() -> None:
    label = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as server:
        db = HERE / f"{label}-session.db"
        db.unlink(missing_ok=True)
        store = SessionStore(db)
        mvu_reply = PATCHES if label in ("29cdb04", "ab23b4f") else MVU_REPLY
        session_id = play_compat_session(store, compat_card(Path(tmp)), server, mvu_reply)
        dump = session_dump(store, session_id)
        (HERE / f"{label}-export.json").write_text(
            json.dumps(dump, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8"
        )
        store.close()


if __name__ == "__main__":
    main()
