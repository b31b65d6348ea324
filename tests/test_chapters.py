"""Chapter memory (issue #17 item 1): old summary entries fold into chapters and arcs at the
window's cut points, so the summary block has a fixed budget and every agent's prompt prefix
stays byte-stable between two cuts of its window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.context.window import window_first
from narrative_cli.pipeline.orchestrator import run_turn
from narrative_cli.pipeline.story import Story, open_story
from narrative_cli.state.chapters import ARC, CHAPTER, Chapter, plan_fold, visible_chapters
from narrative_cli.state.summaries import SummaryStore
from narrative_cli.tokens import estimate_tokens

from .pipeline_support import (
    Script,
    backends_for,
    block,
    message,
    settings_for,
    write_card,
)
from .servers import RecordedRequest, ScriptedServer

BUDGET = 120


def _folded(request: RecordedRequest) -> dict[str, Any]:
    source = block(message(request, "user"), "summary_to_fold") or ""
    lines = source.splitlines()
    return {"summary": f"Folded {len(lines)} lines, from {lines[0][:60]} to {lines[-1][:60]}"}


def _story(tmp_path: Path, server: ScriptedServer, **pipeline: Any) -> tuple[Story, Any]:
    pipeline = {"mode": "serial", "summary_budget": BUDGET, **pipeline}
    settings = settings_for(server, **pipeline)
    card = write_card(tmp_path, [])
    return open_story(card, settings=settings, seed=5), backends_for(server, settings)


def _play(story: Story, backends: Any, turns: int) -> None:
    for number in range(turns):
        story.advance(run_turn(story, f"I look at buoy {number + 1}.", backends))


def _summary_blocks(server: ScriptedServer, agent: str) -> list[str]:
    requests = [r for r in server.requests if r.agent == agent]
    texts = ["\n".join(str(m["content"]) for m in r.messages) for r in requests]
    return [block(text, "story_summary") or "" for text in texts]


@pytest.mark.parametrize(("mode", "agent", "n", "m"),
                         [("serial", "planning", 4, 4), ("merged", "merged_writing", 3, 4)])
def test_the_summary_block_stays_within_its_budget_and_changes_only_at_cuts(
    tmp_path: Path, scripted_server: ScriptedServer, mode: str, agent: str, n: int, m: int
) -> None:
    Script({"analysis": _analysis_reply(), "compaction": _folded}).install(scripted_server)
    story, backends = _story(tmp_path, scripted_server, mode=mode)
    _play(story, backends, 60)
    store = SummaryStore.from_dict(story.snapshot.summaries, story.lang)
    assert store.chapters, "60 turns over a 120-token budget fold chapters"
    assert len(store.entries) == 60, "folding hides entries from prompts, never deletes them"
    assert any(c.level == ARC for c in store.chapters), "chapters fold into arcs in turn"
    # The agent's block changes only on the turns its window cuts, byte for byte.
    blocks = _summary_blocks(scripted_server, agent)
    assert len(blocks) == 60
    changes = 0
    for index in range(1, 60):
        length = index + 1  # finished turns (the greeting is turn 0) when turn index+1 runs
        cut = window_first(length, n, m) != window_first(length - 1, n, m)
        if not cut:
            assert blocks[index] == blocks[index - 1], f"{agent} turn {index + 1}"
        changes += blocks[index] != blocks[index - 1]
    assert changes >= 8
    assert max(estimate_tokens(b) for b in blocks[-10:]) <= BUDGET * 1.5, blocks[-10:]
    assert "[Turns " in blocks[-1] and "arc]" in blocks[-1]


def _analysis_reply() -> Any:
    counter = {"turn": 0}

    def reply(request: RecordedRequest) -> dict[str, Any]:
        counter["turn"] += 1
        n = counter["turn"]
        return {"events": [], "summary_entries": [f"Mira ferried the traveller past buoy {n}."]}

    return reply


def test_compaction_runs_only_before_a_cut_of_the_writers_window(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    order: list[str] = []
    script = Script({"analysis": _analysis_reply(), "compaction": _folded})

    def hook(body: Any, request: RecordedRequest) -> Any:
        order.append(request.agent)
        return script.hook(body, request)

    scripted_server.reply_with(hook)
    story, backends = _story(tmp_path, scripted_server)
    turns_with_folds = []
    for number in range(1, 41):
        before = len(order)
        story.advance(run_turn(story, f"I look at buoy {number}.", backends))
        if "compaction" in order[before:]:
            turns_with_folds.append(number)
    assert turns_with_folds
    for number in turns_with_folds:  # the next turn's history (turns 0..number) is a cut
        length = number + 1
        assert window_first(length, 3, 4) != window_first(length - 1, 3, 4), number


def test_a_failed_compaction_keeps_the_entries_says_so_and_retries_at_the_next_cut(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    replies = ["not json at all", "still not json"] * 3 + [{"summary": "The first crossings."}]
    Script({"analysis": _analysis_reply(), "compaction": replies}).install(scripted_server)
    story, backends = _story(tmp_path, scripted_server)
    warnings: list[str] = []
    for number in range(1, 41):
        result = run_turn(story, f"I look at buoy {number}.", backends)
        warnings += [w for w in result.warnings if "compaction" in w]
        store = SummaryStore.from_dict(result.snapshot.summaries, story.lang)
        if warnings and not store.chapters:
            assert len(store.entries) == number  # nothing was lost or folded
        story.advance(result)
    assert warnings and "stay as they are" in warnings[0]
    store = SummaryStore.from_dict(story.snapshot.summaries, story.lang)
    assert [c.text for c in store.chapters][:1] == ["The first crossings."]


def test_chapters_round_trip_and_old_snapshots_are_unchanged() -> None:
    store = SummaryStore("en").add(1, "One.").add(2, "Two.")
    assert "chapters" not in store.to_dict()
    folded = store.with_chapter(Chapter(1, 2, CHAPTER, "Both.", shown_from=3))
    data = json.loads(json.dumps(folded.to_dict()))
    again = SummaryStore.from_dict(data, "en")
    assert again.chapters == folded.chapters
    assert again.render() == "[Turns 1-2, chapter] Both."
    assert again.lines() == ["[Turn 1] One.", "[Turn 2] Two."]
    assert again.drop_from(3).chapters == folded.chapters
    assert again.drop_from(2).chapters == (), "undoing the turn that folded drops the fold"


def test_a_wider_fold_hides_what_it_covers() -> None:
    one = Chapter(1, 10, CHAPTER, "a", 11)
    two = Chapter(11, 20, CHAPTER, "b", 21)
    arc = Chapter(1, 20, ARC, "ab", 26)
    assert visible_chapters([one, two, arc]) == [arc]
    assert visible_chapters([one, two, arc], shown_by=25) == [one, two]


def test_the_fold_rule_folds_the_oldest_entries_first() -> None:
    entries = [(n, f"[Turn {n}] The traveller counted buoy number {n} in the fog.") for n in
               range(1, 41)]
    fold = plan_fold(entries, [], before_turn=30, budget=100, lang="en")
    assert fold is not None and fold.level == CHAPTER
    assert fold.first == 1 and fold.last < 29
    assert plan_fold(entries[:3], [], before_turn=30, budget=100, lang="en") is None


def test_chapters_are_stored_exported_and_follow_undo(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    from narrative_cli.play.controller import PlaySession
    from narrative_cli.store.export import session_dump, session_to_chat
    from narrative_cli.store.sessions import SessionStore

    Script({"analysis": _analysis_reply(), "compaction": _folded}).install(scripted_server)
    story, backends = _story(tmp_path, scripted_server, mode="merged")
    store = SessionStore(tmp_path / "sessions.db")
    play = PlaySession.start(store, story, backends)
    try:
        folded_at = None
        for number in range(1, 41):
            play.play(f"I look at buoy {number}.")
            chapters = SummaryStore.from_dict(play.story.snapshot.summaries, "en").chapters
            if chapters and folded_at is None:
                folded_at = number
        assert folded_at is not None
        stored = store.snapshot(play.session_id, 40)["summaries"]["chapters"]
        assert stored == [c.to_dict() for c in
                          SummaryStore.from_dict(play.story.snapshot.summaries, "en").chapters]
        dump = json.dumps(session_dump(store, play.session_id), ensure_ascii=False)
        assert '"chapters"' in dump and "Folded " in dump
        chat = json.dumps(session_to_chat(store, play.session_id).chat_metadata,
                          ensure_ascii=False)
        assert "Folded " in chat  # the SillyTavern chat keeps our state, chapters included
        while play.story.snapshot.turn >= folded_at:
            play.undo()
        after = SummaryStore.from_dict(play.story.snapshot.summaries, "en")
        assert after.chapters == () and len(after.entries) == folded_at - 1
    finally:
        play.close()
        store.close()


def test_a_recorded_replay_makes_the_same_folds_and_recalls_byte_for_byte(
    tmp_path: Path, clean_environ: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from narrative_cli.play.options import PlayOptions

    from .test_replay import echo_writer, live, replay, requests_of, st_log

    monkeypatch.setenv("NARRATIVE_SUMMARY_BUDGET", "60")
    inputs = ("I wave to Oskar on the pier.", *(f"I look at buoy {n}." for n in range(2, 24)),
              "Where did Oskar go?")
    card, log = write_card(tmp_path, []), st_log(tmp_path, "long", inputs)
    with ScriptedServer() as server:
        Script({"analysis": _analysis_reply(), "compaction": _folded,
                "merged_writing": echo_writer}).install(server)
        recorded = replay([log], live(server, card, trace=str(tmp_path / "t1")))
    assert recorded.outcomes[0].status == "done"
    prompts = requests_of(tmp_path / "t1")
    assert any("<summary_to_fold>" in p for p in prompts)
    last_writer = prompts[-2]  # the last turn's writer (its analysis is the last call)
    assert "Oskar on the pier" in last_writer.split("<text_recall>")[1].split("</text_recall>")[0]
    offline = PlayOptions(card=str(card), trace=str(tmp_path / "t2"))
    again = replay([log], offline, responses=str(tmp_path / "t1"))
    assert again.outcomes[0].status == "done"
    assert requests_of(tmp_path / "t2") == prompts
    assert again.outcomes[0].final == recorded.outcomes[0].final


def test_folding_never_changes_what_the_state_engine_owns(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    def analysis() -> Any:
        counter = {"turn": 0}

        def reply(request: RecordedRequest) -> dict[str, Any]:
            counter["turn"] += 1
            n = counter["turn"]
            events = [{"type": "add_item", "params": {"item": f"shell {n % 4}", "quantity": 1}},
                      {"type": "move", "params": {"location": f"buoy {n}"}}]
            return {"events": events, "summary_entries": [f"The traveller pocketed shell {n}."]}

        return reply

    states = []
    for budget in (60, 0):
        Script({"analysis": analysis(), "compaction": _folded}).install(scripted_server)
        story, backends = _story(tmp_path, scripted_server, mode="merged", summary_budget=budget)
        _play(story, backends, 30)
        chapters = SummaryStore.from_dict(story.snapshot.summaries, "en").chapters
        assert bool(chapters) == bool(budget)
        states.append(story.snapshot.state)
    assert states[0] == states[1]
    assert "shell 1" in json.dumps(states[0])
