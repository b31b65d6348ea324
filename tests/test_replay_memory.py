"""What a long replay keeps in memory (#17 item 4, session seven): the same results as before
from smaller parts: the end report without its turn entries when no file is written, and the
recorded trace's index in compact arrays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from narrative_cli.replay.batch import ReplayRequest, run_replay
from narrative_cli.replay.report import build_report, read_report
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.replay_view import RichReplayView

from .servers import ScriptedServer
from .test_replay import dice_plan, install, live, replay, st_log, story_card

INPUTS = ("I cast off the rope.", "I ring the ferry bell.", "I steer toward the lights.",
          "I drop the anchor.")  # fmt: skip


def test_a_report_without_turn_entries_has_the_same_totals(tmp_path: Path) -> None:
    """The summary on screen reads a report built without its turn entries (no ``--report``
    file): every figure but the entries themselves is the one the whole report gives, a
    corrective retry, a rejected event and a warning included."""
    card, log = story_card(tmp_path), st_log(tmp_path, "ferry", INPUTS)
    analysis = {
        "events": [{"type": "move", "params": {"location": "ferry deck"}},
                   {"type": "remove_item", "params": {"item": "ghost lantern", "quantity": 1}}],
        "summary_entries": ["The ferry left the pier."],
    }  # fmt: skip
    planning = [dice_plan(None), "this is not JSON at all", dice_plan(None), dice_plan(None)]
    with ScriptedServer() as server:
        install(server, analysis=analysis, planning=planning)
        run = replay([log], live(server, card))

    whole, lean = build_report(run), build_report(run, turns=False)

    (entries,) = [log_report.pop("turns") for log_report in whole["logs"]]
    assert len(entries) == 4 and sum(turn["parse_failures"] for turn in entries) == 1
    assert sum(len(turn["rejected_events"]) for turn in entries) == 4
    assert whole == lean
    assert lean["logs"][0]["totals"]["rejected_events"] == 4
    assert lean["logs"][0]["totals"]["calls"] == whole["totals"]["calls"] > 0


def test_the_report_file_still_has_every_turn(tmp_path: Path) -> None:
    card, log = story_card(tmp_path), st_log(tmp_path, "ferry", INPUTS)
    report_file = tmp_path / "report.json"
    consoles = recording_consoles(120)
    with ScriptedServer() as server:
        install(server)
        options: Any = live(server, card)
        code = run_replay(ReplayRequest([str(log)], options, report=str(report_file)),
                          RichReplayView(consoles))  # fmt: skip
        no_file = run_replay(ReplayRequest([str(log)], options), RichReplayView(consoles))
    assert code == no_file == 0
    (logged,) = read_report(report_file)["logs"]
    assert [turn["turn"] for turn in logged["turns"]] == [1, 2, 3, 4]
    assert "4/4" in captured(consoles.out)
    assert json.loads(report_file.read_text(encoding="utf-8"))["totals"]["turns"] == 4


def _line(turn: int, agent: str, attempt: int = 1, speaker: str = "") -> str:
    call = {"session": "ferry", "turn": turn, "agent": agent, "mode": "serial",
            "attempt": attempt, "request": {"model": "m", "messages": []},
            "response": {"text": f"{agent} {turn}.{attempt}"}, "usage": {}, "latency_ms": 1.0,
            "error": None, **({"speaker": speaker} if speaker else {})}  # fmt: skip
    return json.dumps(call)


def test_the_compact_index_files_calls_as_the_plain_one_did(tmp_path: Path) -> None:
    """Every call of a trace is filed under its turn in recorded order, with its file, offset,
    line, agent, attempt and speaker; a turn recorded again (its once-a-turn writer seen a
    second time) keeps only its last recording; a trace in two files keeps each call's own
    file. The index answers as the ``{turn: [CallRef, ...]}`` it replaced."""
    from narrative_cli.replay.call_index import CallIndex
    from narrative_cli.replay.recorded import CallRef, Recording, SessionCalls, TraceReader

    first = [_line(1, "planning"), _line(1, "writing", speaker="Mira"),
             _line(1, "tool:log"), _line(1, "tool:log", 2), _line(2, "planning"),
             _line(2, "writing"), _line(2, "planning"), _line(2, "writing"),  # turn 2 again
             _line(300, "writing", attempt=7)]  # fmt: skip
    (tmp_path / "t" / "a").mkdir(parents=True)
    (tmp_path / "t" / "a" / "calls.jsonl").write_text("\n".join(first) + "\n", encoding="utf-8")
    (tmp_path / "t" / "b").mkdir()
    (tmp_path / "t" / "b" / "calls.jsonl").write_text(_line(3, "analysis") + "\n", "utf-8")
    calls = Recording.load(tmp_path / "t").for_log("ferry", only_log=False)

    a, b = tmp_path / "t" / "a" / "calls.jsonl", tmp_path / "t" / "b" / "calls.jsonl"
    starts = [0]
    for text in first:
        starts.append(starts[-1] + len(text) + 1)
    plain = {
        1: [CallRef(a, starts[0], 1, "planning", 1), CallRef(a, starts[1], 2, "writing", 1, "Mira"),
            CallRef(a, starts[2], 3, "tool:log", 1), CallRef(a, starts[3], 4, "tool:log", 2)],
        2: [CallRef(a, starts[6], 7, "planning", 1), CallRef(a, starts[7], 8, "writing", 1)],
        300: [CallRef(a, starts[8], 9, "writing", 7)],
        3: [CallRef(b, 0, 1, "analysis", 1)],
    }  # fmt: skip
    assert isinstance(calls.turns, CallIndex)
    assert dict(calls.turns) == plain and list(calls.turns) == [1, 2, 300, 3]
    assert calls == SessionCalls("ferry", plain)  # a plain mapping is made into an index
    read = calls.pick(2, "writing", 0)
    assert read is not None and read.response["text"] == "writing 2.1" and read.speaker == ""
    second = calls.pick(1, "tool:log", 1)
    assert second is not None and second.attempt == 2 and calls.pick(1, "tool:log", 2) is None
    assert calls.agents(1) == ["planning", "writing", "tool:log"] and calls.agents(9) == []
    for turn, refs in plain.items():  # ``nth`` makes one ref: the one the whole list gives
        for agent in ("planning", "writing", "tool:log", "analysis", "nobody"):
            mine = [ref for ref in refs if ref.agent == agent]
            for index in range(3):
                expected = mine[index] if index < len(mine) else None
                assert calls.turns.nth(turn, agent, index) == expected
    assert calls.turns.nth(9, "writing", 0) is None
    reader = TraceReader()  # each line read in one piece (its size noted) is the line itself
    for refs in calls.turns.values():
        for ref in refs:
            assert ref.size > 0
            assert reader.line(ref.file, ref.offset, ref.size) == reader.line(ref.file, ref.offset)


def test_the_scrub_memory_keeps_recent_texts_and_forgets_old_ones() -> None:
    """Texts scrubbed again and again (a record's keys and lore) stay remembered; a text
    scrubbed once is forgotten two generations on, so the memory holds at most two
    generations of texts, not every text of the last thousand turns. Every answer is the
    one scrubbing afresh gives, and a key read later is scrubbed from remembered texts of
    either generation."""
    from narrative_cli import credentials
    from narrative_cli.credentials import remember, scrub_text

    def fresh(text: str) -> str:  # given secrets: never remembered, always scrubbed anew
        return scrub_text(text, ["\x00not in any text\x00"])

    kept = credentials._SCRUBBED_KEPT
    hot = "Bearer abcdef1234567890 rings the bell"
    old = "the lamp key is kx-7781-lantern-oil"
    assert scrub_text(old) == fresh(old) == old
    for number in range(3 * kept):
        text = f"turn {number}: the fog lifts (api_key=k{number}x)"
        assert scrub_text(text) == fresh(text)
        if number % 50 == 0:
            assert scrub_text(hot) == fresh(hot) == "Bearer *** rings the bell"
        if number == kept - 2:
            assert scrub_text(old) == old  # asked again: kept into the next generation
    held = {**credentials._scrubbed_before, **credentials._scrubbed}
    assert len(credentials._scrubbed) <= kept and len(credentials._scrubbed_before) <= kept
    assert hot in held and "turn 0: the fog lifts (api_key=k0x)" not in held
    remember("kx-7781-lantern-oil")
    assert scrub_text(old) == "the lamp key is ***" == fresh(old)
