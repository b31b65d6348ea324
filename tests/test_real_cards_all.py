"""Every real MVU / EJS / TavernHelper card of ../shared/fixtures, in every form it comes in (#14).

The fixtures hold these cards (found by scanning every folder for ``[InitVar]`` entries, ``<%``
templates and TavernHelper scripts): 青空理 (mvu/), 爱 (zh/ai-v3.json), 修女与女忍 as PNG and as
V2 JSON, and the V2 JSON card with its separate world file (which holds the same book, loaded
once). Each starts with its variables and sends no raw template, variable macro or status
placeholder in any prompt over two turns on the scripted server. Skipped without ../shared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import open_story
from tests import servers
from tests.conftest import fixture_file
from tests.pipeline_support import Script, backends_for, collect, settings_for
from tests.servers import ScriptedServer

scripted_server = servers.scripted_server

RAW = ("<%", "%>", "{{get_message_variable", "{{format_message_variable", "{{getvar::",
       "<StatusPlaceHolderImpl")  # fmt: skip


@dataclass(frozen=True)
class Case:
    card: str
    worlds: tuple[str, ...]
    top: str  # a top-level group of its variables


CASES = [
    Case("mvu/magvar-riri-mvu-update.png", (), "User"),
    Case("zh/ai-v3.json", (), "系统"),
    Case("zh/nun-ninja-anime.png", (), "教堂"),
    Case("zh/nun-ninja-v2.json", (), "教堂"),
    Case("zh/nun-ninja-v2.json", ("zh/nun-ninja-world.json",), "教堂"),
]
REPLY = "你推开门，晨光洒进来。\n<StatusPlaceHolderImpl/>"


@pytest.mark.parametrize("case", CASES, ids=[f"{c.card}+{len(c.worlds)}" for c in CASES])
def test_real_card_starts_with_variables_and_sends_nothing_raw(
    case: Case, scripted_server: ScriptedServer
) -> None:
    card = fixture_file(case.card)
    worlds = [fixture_file(w) for w in case.worlds]
    Script({"writing": REPLY, "merged_writing": REPLY}).install(scripted_server)
    settings = settings_for(scripted_server)
    story = open_story(card, lorebooks=worlds, settings=settings, seed=5)
    assert story.snapshot.mvu and case.top in story.snapshot.mvu
    assert not [p for p in story.problems if "template" in p or "模板" in p]
    backends = backends_for(scripted_server, settings)
    for line in ("我来看你了。", "我们出去走走吧。"):
        _, listener = collect()
        result = run_turn(story, line, backends, listener=listener)
        story.advance(result)
    assert story.snapshot.mvu and case.top in story.snapshot.mvu
    sent = "\n".join(json.dumps(r.json, ensure_ascii=False) for r in scripted_server.requests)
    assert scripted_server.requests
    for mark in RAW:
        assert mark not in sent, mark
    if case.worlds:  # the embedded book and the world file hold the same book: loaded once
        comments = [e.comment for e in story.entries]
        assert len(comments) == len(set(comments))
