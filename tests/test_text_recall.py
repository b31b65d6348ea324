"""Recall of anything said (issue #17 item 2): the session database's full-text index, the
automatic search for the input's rare words, the planner's search terms, and ``/recall``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.context.text_search import Document, input_terms, search
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.options import PlayOptions
from narrative_cli.store.sessions import SessionStore

from .pipeline_support import PLAN, Script, block, write_card
from .servers import RecordedRequest, ScriptedServer

FACT = "老周把铜钥匙藏在灯塔第三级台阶下面，叮嘱你别告诉任何人。"
FILLER = "雾从海面漫上来，渡船在码头边轻轻摇晃，灯塔的光一圈圈扫过水面。"


def _docs(*texts: str) -> list[Document]:
    return [Document(f"turn:{n}", n, "turn", text) for n, text in enumerate(texts, start=1)]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Any]:
    store = SessionStore(tmp_path / "s.db")
    sid = store.create_session("s", card_path="c", card_hash="h", snapshot={"turn": 0})
    yield store.text_index(sid)
    store.close()


def test_two_character_chinese_names_are_found_as_well_as_longer_terms(index: Any) -> None:
    index.sync(_docs(FILLER, FACT, "你问老周：天亮了吗？", "Edda lights the LAMP."))
    assert [key for key, _ in index.matches("老周")] == ["turn:2", "turn:3"]  # under 3 characters
    assert [key for key, _ in index.matches("铜钥匙")] == ["turn:2"]  # trigram phrase
    assert [key for key, _ in index.matches("lamp")] == ["turn:4"]  # case-insensitive
    assert index.matches("周") == [("turn:2", 2), ("turn:3", 3)]
    assert index.matches("50%") == [] and index.matches("_") == []  # LIKE wildcards are text


def test_sync_follows_undo_and_edits_and_survives_reopening(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    sid = store.create_session("s", card_path="c", card_hash="h", snapshot={"turn": 0})
    index = store.text_index(sid)
    index.sync(_docs(FILLER, FACT))
    index.sync(_docs(FILLER))  # undo turn 2
    assert index.matches("铜钥匙") == []
    index.sync(_docs(FILLER, "老周把银钥匙给了你。"))  # a new turn 2
    assert [key for key, _ in index.matches("银钥匙")] == ["turn:2"]
    other = store.create_session("t", card_path="c", card_hash="h", snapshot={"turn": 0})
    store.text_index(other).sync(_docs("银钥匙在另一个故事里。", "银钥匙。", "银钥匙！"))
    assert [key for key, _ in index.matches("银钥匙", 0)] == ["turn:2"]  # never another's
    store.close()
    again = SessionStore(tmp_path / "s.db")
    assert [key for key, _ in again.text_index(sid).matches("银钥匙")] == ["turn:2"]
    again.delete(sid)
    counts = "SELECT session_id, count(*) FROM recall_docs GROUP BY session_id"
    assert again.db.query(counts) == [(other, 3)]  # the deleted session's documents went too
    assert again.db.query("SELECT count(*) FROM recall_fts WHERE recall_fts MATCH '银钥匙'") == [
        (3,)
    ]
    again.close()


def test_the_automatic_search_takes_rare_words_and_leaves_common_ones(index: Any) -> None:
    index.sync(_docs(*([FILLER] * 30), FACT, *([FILLER] * 10)))
    found = search(index, input_terms("我去码头问老周钥匙的事。"), rare_only=True, total=41)
    assert [p.turn for p in found.passages] == [31]
    assert "老周" in found.passages[0].text and "台阶" in found.passages[0].text
    assert all("码头" not in p.terms for p in found.passages)  # in every turn: common
    again = search(index, input_terms("我去码头问老周钥匙的事。"), rare_only=True, total=41)
    assert again == found  # deterministic


def test_ties_are_broken_by_turn_number(index: Any) -> None:
    index.sync(_docs("The brass key is cold.", FILLER, "Old Zhou hides the brass key."))
    found = search(index, ["brass"], rare_only=False, total=3)
    assert [p.turn for p in found.passages] == [1, 3]


@dataclass
class Turns:
    count: int = 0


def _story_reply(turns: Turns) -> Any:
    def reply(request: RecordedRequest) -> str:
        turns.count += 1
        return FACT if turns.count == 2 else f"{FILLER}（第{turns.count}段）"

    return reply


def _card(tmp_path: Path) -> Path:
    return write_card(tmp_path, [], name="阿澄", description="{{char}}是雾港渡船的船夫。",
                      personality="寡言", scenario="{{user}}登上{{char}}的渡船。",
                      first_mes="渡船的铃响了。")


def _play(tmp_path: Path, server: ScriptedServer, **extra: Any) -> tuple[PlaySession, Any]:
    options = PlayOptions(card=str(_card(tmp_path)), provider="openai", base_url=server.base_url,
                          model="scripted-model", seed=3, session="雾港", **extra)
    store = SessionStore(tmp_path / "sessions.db")
    return PlaySession.open(store, options), store


def _writer_prompts(server: ScriptedServer) -> list[str]:
    writers = [r for r in server.requests if r.agent in ("writing", "merged_writing")]
    return ["\n".join(str(m["content"]) for m in r.messages) for r in writers]


def test_a_fact_said_long_ago_reaches_the_prompt_of_the_turn_that_names_it(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    turns = Turns()
    Script({"merged_writing": _story_reply(turns), "writing": _story_reply(turns)}).install(
        scripted_server
    )
    play, store = _play(tmp_path, scripted_server)
    try:
        for number in range(1, 16):
            play.play(f"我沿着码头走了第{number}圈。")
        prompts_before = _writer_prompts(scripted_server)
        assert all(block(p, "text_recall") is None for p in prompts_before)
        play.play("我去找老周，问他藏东西的事。")
        recalled = block(_writer_prompts(scripted_server)[-1], "text_recall")
        assert recalled is not None and "铜钥匙藏在灯塔第三级台阶下面" in recalled
        assert "[第2轮]" in recalled
        assert any("text search" in note for note in play.last.notes)  # type: ignore[union-attr]
    finally:
        play.close()
        store.close()


def test_the_planner_can_ask_for_search_terms(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    turns = Turns()
    plans = [PLAN] * 15 + [{**PLAN, "recall_terms": ["台阶"]}]
    Script({"writing": _story_reply(turns), "planning": plans}).install(scripted_server)
    play, store = _play(tmp_path, scripted_server, mode="serial")
    try:
        for number in range(1, 16):
            play.play(f"我沿着码头走了第{number}圈。")
        play.play("我想想接下来做什么。")  # nothing rare in the input: only the planner asks
        recalled = block(_writer_prompts(scripted_server)[-1], "text_recall")
        assert recalled is not None and "台阶" in recalled
        assert play.last is not None
        assert any(note.startswith("planner text search") for note in play.last.notes)
        planners = [r for r in scripted_server.requests if r.agent == "planning"]
        systems = [str(r.messages[0]["content"]) for r in planners]
        # Told about recall_terms once there are turns before its window (from its first cut
        # on, turn 9 with the default 4+4 window), and from then on in the same words.
        assert ["recall_terms" in text for text in systems] == [False] * 8 + [True] * 8
    finally:
        play.close()
        store.close()


def test_recall_and_chapters_in_line_mode(
    scripted_server: ScriptedServer, clean_environ: Path
) -> None:
    from tests.story_replies import StoryScript
    from tests.test_run_linemode import CARD, narrative

    scripted_server.reply_with(StoryScript())
    lines = ("I climb the stairs.\nI trim the wick.\n/recall brass key\n/recall zebra\n/recall\n"
             "/chapters\n/quit\n")
    done = narrative(scripted_server, "run", CARD, "--seed", "5", stdin=lines)
    assert done.returncode == 2, done.stderr  # the bare /recall was a usage error
    out = done.stdout
    assert "Recall: brass key" in out
    assert "Edda hands you the brass key." in out and "text" in out
    assert "Nothing found for zebra." in out
    assert "/recall needs a QUERY" in done.stderr
    assert "(no chapters yet: the summary fits)" in out
    assert "Traceback" not in done.stderr
