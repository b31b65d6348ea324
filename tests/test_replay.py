"""Batch replay (#9): live and recorded replays, drift, jobs, resume, reports and diffs."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from narrative_cli import paths
from narrative_cli.errors import ChatFileError
from narrative_cli.pipeline.accounting import Price
from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.pipeline.trace import read_calls
from narrative_cli.play.options import PlayOptions
from narrative_cli.replay.batch import ReplayRequest, run_replay
from narrative_cli.replay.diff import diff_reports
from narrative_cli.replay.drift import block_at, first_difference, line_at
from narrative_cli.replay.limiter import TokenBucket
from narrative_cli.replay.logs import read_log, read_logs, unique_labels
from narrative_cli.replay.report import build_report, read_report
from narrative_cli.replay.runner import ReplayOptions, ReplayRun, replay_logs
from narrative_cli.store.export import export_json, export_jsonl
from narrative_cli.store.sessions import SessionStore
from narrative_cli.ui.console import captured, recording_consoles
from narrative_cli.ui.replay_view import RichReplayView, render_diff

from .pipeline_support import DICE_TOOL, PLAN, Script, entry, tool_entry, write_card
from .servers import Reply, ScriptedServer

INPUTS = ("I cast off the rope.", "I ring the ferry bell.", "I steer toward the lights.")
ANALYSIS_OK = {"events": [], "summary_entries": ["The ferry moves on."]}
OLD_LORE = "The harbour master is called Oskar and he hates fog."
NEW_LORE = "The harbour master is called Oskar and he loves fog."


def story_card(folder: Path, description: str = "") -> Path:
    """A card whose prompts use the seeded RNG, the clock, keyed lore and a dice tool."""
    entries = [
        entry(0, "The wind blows {{random::north::south::east::west}}.", constant=True, position=4),
        entry(1, "It is {{time}} on {{weekday}}.", constant=True, position=0),
        entry(2, "The bell has {{roll:1d100}} dents.", keys=("bell",)),
        tool_entry(3, DICE_TOOL),
    ]
    extra = {"description": description} if description else {}
    return write_card(folder, entries, **extra)


def world_file(folder: Path, content: str = OLD_LORE) -> Path:
    path = folder / "harbour.json"
    book = {
        "entries": {
            "0": {
                "uid": 0,
                "key": ["harbour"],
                "content": content,
                "constant": True,
                "comment": "Harbour master",
                "order": 50,
                "position": 1,
            }
        }
    }
    path.write_text(json.dumps(book), encoding="utf-8")
    return path


def st_log(folder: Path, name: str, inputs: tuple[str, ...] = INPUTS, user: str = "Lan") -> Path:
    """A SillyTavern 1.18 chat: greeting, then each input with an old reply after it."""
    lines: list[dict[str, Any]] = [
        {"chat_metadata": {}, "user_name": "unused", "character_name": "unused"},
        {
            "name": "Mira",
            "is_user": False,
            "mes": f"{name}: the bell rings at the pier.",
            "send_date": "2025-04-22T18:00:00.000Z",
        },
    ]
    for number, text in enumerate(inputs, start=1):
        stamp = f"2025-04-22T18:{number:02d}:00.000Z"
        lines.append({"name": user, "is_user": True, "mes": text, "send_date": stamp})
        lines.append({"name": "Mira", "is_user": False, "mes": f"old reply {number}"})
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return path


def dice_plan(request: Any) -> dict[str, Any]:
    return {**PLAN, "tool_calls": [{"tool": "roll_dice", "params": {"expr": "2d6+1", "dc": 8}}]}


def echo_writer(request: Any) -> str:
    """The story text names the user input it answers (so turns differ from one another)."""
    user = str(request.messages[-1]["content"])
    said = user.split("<user_input>\n", 1)[-1].split("\n</user_input>", 1)[0]
    return f"Mira answers '{said}' while the fog thickens."


def install(server: ScriptedServer, **answers: Any) -> Script:
    script = Script(answers={"planning": dice_plan, "writing": echo_writer, **answers})
    return script.install(server)


def live(server: ScriptedServer, card: Path, **options: Any) -> PlayOptions:
    """Play options whose every agent calls the scripted server."""
    return PlayOptions(
        card=str(card), provider="openai", base_url=server.base_url, model="scripted-model",
        **options,
    )  # fmt: skip


def replay(logs: list[Path], options: PlayOptions, **replay_options: Any) -> ReplayRun:
    return replay_logs(read_logs(logs), ReplayOptions(options, **replay_options))


def requests_of(trace: Path) -> list[str]:
    """Every recorded request, serialised as the trace holds it (key order kept)."""
    return [json.dumps(call["request"], ensure_ascii=False) for call in read_calls(trace)]


def stable(records: list[TurnRecord]) -> list[dict[str, Any]]:
    """Turn records without latencies (the only figure allowed to differ between runs)."""
    out = []
    for record in records:
        stored = record.to_record()
        usage = {a: {**u, "latency_ms": 0} for a, u in (stored.get("usage") or {}).items()}
        out.append({**stored, "usage": usage})
    return out


# -- determinism: record live, replay from the recording ------------------------------------


def test_recorded_replay_gives_byte_identical_prompts_and_identical_state(tmp_path: Path) -> None:
    card, world, log = story_card(tmp_path), world_file(tmp_path), st_log(tmp_path, "ferry")
    with ScriptedServer() as server:
        install(server)
        recorded = replay(
            [log], live(server, card, lorebooks=[str(world)], trace=str(tmp_path / "t1"))
        )
        sent = len(server.requests)
    original = recorded.outcomes[0]
    assert original.status == "done" and len(original.records) == 3
    assert any(r.tool_results for r in original.records)  # seeded dice were rolled

    offline = PlayOptions(card=str(card), lorebooks=[str(world)])
    first = replay(
        [log],
        PlayOptions(**{**vars(offline), "trace": str(tmp_path / "t2")}),
        responses=str(tmp_path / "t1"),
    )
    second = replay(
        [log],
        PlayOptions(**{**vars(offline), "trace": str(tmp_path / "t3")}),
        responses=str(tmp_path / "t1"),
    )

    assert [o.status for o in (first.outcomes + second.outcomes)] == ["done", "done"]
    prompts = requests_of(tmp_path / "t1")
    assert len(prompts) == sent
    assert requests_of(tmp_path / "t2") == prompts
    assert requests_of(tmp_path / "t3") == prompts
    assert first.outcomes[0].final == original.final == second.outcomes[0].final
    assert stable(first.outcomes[0].records) == stable(original.records)
    assert stable(second.outcomes[0].records) == stable(original.records)
    assert first.outcomes[0].session_id != original.session_id  # stored as its own session


def test_outcome_records_are_read_from_the_store_as_asked(tmp_path: Path) -> None:
    """A run keeps no turn records in memory (#17): they are read from the store, by index,
    slice or in order, and stay those of the turns the replay played."""
    card, log = story_card(tmp_path), st_log(tmp_path, "ferry")
    with ScriptedServer() as server:
        install(server)
        outcome = replay([log], live(server, card)).outcomes[0]
    records = outcome.records
    assert not isinstance(records, list) and len(records) == 3
    assert [r.user_input for r in records] == list(INPUTS)
    assert records[-1].user_input == INPUTS[2] and records[-1].number == 3
    assert [r.number for r in records[1:]] == [2, 3] and records[5:] == []
    with pytest.raises(IndexError):
        records[3]
    with SessionStore(paths.database_file()) as store:
        stored = [TurnRecord.read(v.record) for v in store.turns(outcome.session_id)][1:]
    assert stable(list(records)) == stable(stored) and records == stored


def test_the_report_reads_only_the_fields_it_shows_and_shows_the_same(tmp_path: Path) -> None:
    """#17, session seven: the report reads nine fields of each stored record, by the same
    readers as a whole record; its turns and usage are those of the whole records."""
    from dataclasses import fields, replace

    from narrative_cli.pipeline import records as turn_records
    from narrative_cli.replay.report import REPORT_FIELDS, log_report

    card, log = story_card(tmp_path), st_log(tmp_path, "ferry")
    with ScriptedServer() as server:
        install(server)
        outcome = replay([log], live(server, card)).outcomes[0]
    assert set(turn_records._READERS) == {f.name for f in fields(TurnRecord)} - {"number"}
    light = outcome.records.only(REPORT_FIELDS)  # type: ignore[attr-defined]
    whole = list(outcome.records)
    assert [r.plan for r in light] == [None] * 3 and all(r.plan for r in whole)
    assert log_report(outcome) == log_report(replace(outcome, records=whole))
    assert log_report(outcome)["turns"][2]["input"] == INPUTS[2]


def test_the_greeting_user_name_and_send_dates_come_from_the_log(tmp_path: Path) -> None:
    card, log = story_card(tmp_path), st_log(tmp_path, "ferry", user="Lan")
    with ScriptedServer() as server:
        install(server)
        run = replay([log], live(server, card, trace=str(tmp_path / "t")))
    first = read_calls(tmp_path / "t")[0]["request"]["messages"]
    text = "\n".join(m["content"] for m in first)
    assert "ferry: the bell rings at the pier." in text  # the log's greeting is turn 0
    assert "Lan" in text and "6:01 PM on Tuesday" in text  # the log's user and its send date
    assert run.outcomes[0].records[0].user_input == INPUTS[0]


# -- drift ----------------------------------------------------------------------------------


def recorded_trace(tmp_path: Path, card: Path, world: Path, log: Path) -> Path:
    trace = tmp_path / "recorded"
    with ScriptedServer() as server:
        install(server)
        run = replay([log], live(server, card, lorebooks=[str(world)], trace=str(trace)))
    assert run.outcomes[0].status == "done"
    return trace


def test_an_edited_card_fails_the_replay_at_the_first_differing_block(tmp_path: Path) -> None:
    card, world, log = story_card(tmp_path), world_file(tmp_path), st_log(tmp_path, "ferry")
    trace = recorded_trace(tmp_path, card, world, log)
    story_card(tmp_path, description="{{char}} keeps a lighthouse, not a ferry.")

    run = replay([log], PlayOptions(card=str(card), lorebooks=[str(world)]), responses=str(trace))

    outcome = run.outcomes[0]
    assert outcome.status == "failed" and outcome.error_kind == "ReplayMismatch"
    assert outcome.records == []  # nothing of the drifted turn was committed
    message = outcome.error or ""
    assert message.startswith("ferry: turn 1, planning (attempt 1)")
    assert "block <character>" in message
    assert "recorded: Mira keeps the ferry between two foggy islands." in message
    assert "now:      Mira keeps a lighthouse, not a ferry." in message
    assert run.failed == [outcome]


def test_an_edited_lorebook_entry_is_named_with_its_block(tmp_path: Path) -> None:
    card, world, log = story_card(tmp_path), world_file(tmp_path), st_log(tmp_path, "ferry")
    trace = recorded_trace(tmp_path, card, world, log)
    world_file(tmp_path, NEW_LORE)

    run = replay([log], PlayOptions(card=str(card), lorebooks=[str(world)]), responses=str(trace))

    message = run.outcomes[0].error or ""
    assert "block <worldinfo" in message
    assert f"recorded: {OLD_LORE}" in message and f"now:      {NEW_LORE}" in message


def test_a_prompt_holding_a_key_replays_from_its_scrubbed_recording(tmp_path: Path) -> None:
    """The trace keeps ``***`` where the prompt held a key; the replay's prompt, scrubbed the
    same way, matches it (the comparison first tries the prompt as it is, then scrubbed)."""
    key = "sk-" + "a1B2" * 10
    card = story_card(tmp_path)
    log = st_log(tmp_path, "ferry", inputs=(f"I read the note: {key}", "I ring the bell."))
    with ScriptedServer() as server:
        install(server)
        run = replay([log], live(server, card, trace=str(tmp_path / "t")))
    assert run.outcomes[0].status == "done"
    recorded = "\n".join(requests_of(tmp_path / "t"))
    assert key not in recorded and "I read the note: ***" in recorded

    again = replay([log], PlayOptions(card=str(card)), responses=str(tmp_path / "t"))

    assert again.outcomes[0].status == "done", again.outcomes[0].error
    assert len(again.outcomes[0].records) == 2


def test_prompts_are_fitted_to_the_recorded_context_window_not_the_local_one(
    tmp_path: Path,
) -> None:
    card, world, log = story_card(tmp_path), world_file(tmp_path), st_log(tmp_path, "ferry")
    trace = recorded_trace(tmp_path, card, world, log)  # a remote profile: prompts not fitted
    config = paths.config_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("profiles:\n  local: {provider: local, context_size: 700}\n")
    offline = PlayOptions(card=str(card), lorebooks=[str(world)])

    run = replay([log], offline, responses=str(trace))  # the default profile is local now
    assert run.outcomes[0].status == "done"

    (trace / "replay-settings.json").unlink()  # a trace that did not note its windows
    with SessionStore() as store:
        for info in store.list_sessions():
            store.delete(info.id)
    run = replay([log], offline, responses=str(trace))
    assert run.outcomes[0].error_kind == "ReplayMismatch"
    assert "give the same backend flags" in (run.outcomes[0].hint or "")


def test_a_log_the_trace_never_recorded_is_reported_by_name(tmp_path: Path) -> None:
    card, world = story_card(tmp_path), world_file(tmp_path)
    trace = recorded_trace(tmp_path, card, world, st_log(tmp_path, "ferry"))
    other = st_log(tmp_path, "other")
    run = replay(
        [st_log(tmp_path, "ferry"), other],
        PlayOptions(card=str(card), lorebooks=[str(world)]),
        responses=str(trace),
    )
    statuses = {o.log.label: (o.status, o.error or "") for o in run.outcomes}
    assert statuses["ferry"][0] == "done"  # the one-log trace was recorded under "ferry"
    assert "has no recorded calls for this log (it holds: ferry)" in statuses["other"][1]


def test_a_recorded_failure_fails_again_so_the_replay_takes_the_same_path(
    tmp_path: Path,
) -> None:
    card, log, trace = story_card(tmp_path), st_log(tmp_path, "ferry"), tmp_path / "t"
    refused = Reply(fault="status", status=400, body={"error": {"message": "analysis refused"}})
    analyses = [ANALYSIS_OK, refused, ANALYSIS_OK]
    with ScriptedServer() as server:
        install(server, analysis=analyses)
        original = replay([log], live(server, card, trace=str(trace))).outcomes[0]
    assert "analysis refused" in " ".join(original.records[1].warnings)

    offline = replay([log], PlayOptions(card=str(card)), responses=str(trace)).outcomes[0]

    assert offline.status == "done"
    assert stable(offline.records) == stable(original.records)


def test_drift_names_changed_parameters_and_missing_messages() -> None:
    recorded = {"model": "a", "messages": [{"role": "system", "content": "x"}], "temperature": 0.7}
    same_but_model = {**recorded, "model": "b"}
    hotter = {**recorded, "temperature": 0.9}
    longer = {**recorded, "messages": [*recorded["messages"], {"role": "user", "content": "more"}]}
    assert first_difference(recorded, same_but_model) is None
    drift = first_difference(recorded, hotter)
    assert drift is not None and (drift.where, drift.recorded, drift.current) == (
        "request parameter 'temperature'",
        "0.7",
        "0.9",
    )
    drift = first_difference(recorded, longer)
    assert drift is not None and drift.where == "message 2 (user): new, not recorded"
    assert drift.current == "more"


def test_the_innermost_block_and_line_are_shown() -> None:
    text = "<outer>\nintro\n<inner>\nline one\nline two\n</inner>\noutro\n</outer>\ntail"
    assert block_at(text, text.index("line two")) == "inner"
    assert block_at(text, text.index("outro")) == "outer"
    assert block_at(text, text.index("tail")) is None
    assert line_at(text, text.index("two")) == "line two"
    long_line = "a" * 300 + "X" + "b" * 300
    shown = line_at(long_line, 300)
    assert "X" in shown and shown.startswith("…") and shown.endswith("…") and len(shown) < 200


# -- jobs, the shared rate limit, traces per log ----------------------------------------------


def test_jobs_play_logs_in_parallel_under_one_shared_bucket(tmp_path: Path) -> None:
    card = story_card(tmp_path)
    logs = [st_log(tmp_path, f"log{i}") for i in range(3)]
    waits: list[float] = []
    bucket = TokenBucket(100.0, 1.0, clock=lambda: 0.0, sleep=waits.append)  # time stands still
    active, peak, lock = [0], [0], threading.Lock()
    script = Script(answers={"planning": dice_plan, "writing": echo_writer})

    def slow(body: Any, request: Any) -> Any:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1
        return script.hook(body, request)

    with ScriptedServer() as server:
        server.reply_with(slow)
        run = replay(logs, live(server, card, trace=str(tmp_path / "t")), jobs=2, bucket=bucket)
        calls = len(server.requests)

    assert [o.status for o in run.outcomes] == ["done"] * 3
    assert peak[0] == 2  # two logs at once, never more
    assert len(waits) == calls - 1  # every call of every thread took a token from one bucket
    assert bucket.waited == pytest.approx(sum(range(1, calls)) / 100.0)
    for log in ("log0", "log1", "log2"):
        sessions = {call["session"] for call in read_calls(tmp_path / "t" / log)}
        assert sessions == {log}
        assert (tmp_path / "t" / log / "turn-0003.md").exists()

    again = replay(
        logs,
        PlayOptions(card=str(card), trace=str(tmp_path / "t2")),
        jobs=2,
        responses=str(tmp_path / "t"),
    )
    assert [o.final for o in again.outcomes] == [o.final for o in run.outcomes]


def test_the_token_bucket_spaces_calls_at_its_rate() -> None:
    now, waits = [0.0], []
    bucket = TokenBucket(2.0, 2.0, clock=lambda: now[0], sleep=waits.append)
    assert [bucket.acquire() for _ in range(4)] == [0.0, 0.0, 0.5, 1.0]
    now[0] = 10.0  # a long pause refills to the burst, not beyond
    assert [bucket.acquire() for _ in range(3)] == [0.0, 0.0, 0.5]
    assert waits == [0.5, 1.0, 0.5]


# -- resume ---------------------------------------------------------------------------------


def test_finished_logs_are_skipped_and_a_broken_log_continues_where_it_stopped(
    tmp_path: Path,
) -> None:
    card = story_card(tmp_path)
    good, broken = st_log(tmp_path, "good"), st_log(tmp_path, "broken")
    refused = Reply(fault="status", status=400, body={"error": {"message": "context too long"}})

    def writer(request: Any) -> Any:
        text = echo_writer(request)
        return refused if "bell" in text and "broken" in str(request.messages) else text

    trace = str(tmp_path / "t")
    with ScriptedServer() as server:
        install(server, writing=writer)
        first = replay([good, broken], live(server, card, trace=trace))
        assert [o.status for o in first.outcomes] == ["done", "failed"]
        assert len(first.outcomes[1].records) == 1  # turn 1 committed, turn 2 refused
        assert "context too long" in (first.outcomes[1].error or "")

        install(server)  # the server works again; the same command runs again
        before = len(server.requests)
        second = replay([good, broken], live(server, card, trace=trace))
        later = server.requests[before:]
        inputs = [echo_writer(r) for r in later if r.agent == "writing"]
    assert [o.status for o in second.outcomes] == ["skipped", "done"]
    assert second.outcomes[1].session_id == first.outcomes[1].session_id
    assert [o.played for o in second.outcomes] == [0, 2]
    assert inputs == [f"Mira answers '{text}' while the fog thickens." for text in INPUTS[1:]]
    assert stable(second.outcomes[1].records[:1]) == stable(first.outcomes[1].records)
    with SessionStore() as store:
        assert len(store.list_sessions()) == 2

    # the trace now holds turn 2 twice (refused, then played): the last recording wins
    offline = replay([good, broken], PlayOptions(card=str(card)), responses=trace)
    assert [o.status for o in offline.outcomes] == ["done", "done"]
    assert offline.outcomes[1].final == second.outcomes[1].final


# -- report and diff ------------------------------------------------------------------------

TURN_KEYS = {
    "turn", "input", "mode", "calls", "failed_calls", "prompt_tokens", "completion_tokens",
    "cached_tokens", "latency_ms", "estimated", "parse_failures", "rejected_events", "warnings",
    "summary", "state", "narrative_chars",
}  # fmt: skip


def test_report_has_per_log_and_per_turn_figures(tmp_path: Path) -> None:
    card, log = story_card(tmp_path), st_log(tmp_path, "ferry")
    analysis = {
        "events": [{"type": "move", "params": {"location": "ferry deck"}},
                   {"type": "remove_item", "params": {"item": "ghost lantern", "quantity": 1}}],
        "summary_entries": ["The ferry left the pier."],
    }  # fmt: skip
    planning = [dice_plan(None), "this is not JSON at all", dice_plan(None)]
    report_file = tmp_path / "report.json"
    consoles = recording_consoles(120)
    with ScriptedServer() as server:
        install(server, analysis=analysis, planning=planning)
        code = run_replay(
            ReplayRequest([str(log)], live(server, card), report=str(report_file)),
            RichReplayView(consoles),
        )
        requests = len(server.requests)

    assert code == 0
    report = read_report(report_file)
    assert {"format", "version", "card", "card_hash", "settings_hash", "responses", "prices",
            "totals", "logs"} <= set(report)  # fmt: skip
    (log_report,) = report["logs"]
    assert log_report["status"] == "done" and log_report["turns_done"] == 3
    assert {"totals", "agents", "turns", "final_state", "session_id", "seed"} <= set(log_report)
    turns = log_report["turns"]
    assert [set(turn) for turn in turns] == [TURN_KEYS] * 3
    assert sum(turn["calls"] for turn in turns) == requests == report["totals"]["calls"]
    assert [turn["parse_failures"] for turn in turns] == [0, 1, 0]  # turn 2: a corrective retry
    rejected = turns[0]["rejected_events"]
    assert len(rejected) == 1 and rejected[0]["type"] == "remove_item" and rejected[0]["reason"]
    assert log_report["final_state"]["state"]["location"] == "ferry deck"
    assert log_report["final_state"]["summaries"][0].startswith("[Turn 1]")
    table = captured(consoles.out)
    assert "ferry" in table and "done" in table and "3/3" in table


def test_diff_shows_state_summary_and_token_changes(tmp_path: Path) -> None:
    card, world, log = story_card(tmp_path), world_file(tmp_path), st_log(tmp_path, "ferry")
    reports = []
    for location, lore in (("ferry deck", OLD_LORE), ("lighthouse", NEW_LORE)):
        world_file(tmp_path, lore)  # the author edits the world book between the two runs
        analysis = {"events": [{"type": "move", "params": {"location": location}}],
                    "summary_entries": [f"They reach the {location}."]}  # fmt: skip
        with ScriptedServer() as server:
            install(server, analysis=analysis)
            run = replay([log], live(server, card, lorebooks=[str(world)]))
        reports.append(build_report(run))
    prices = {"*": Price(prompt=1.0, cached=0.1, completion=2.0)}

    diff = diff_reports(reports[0], reports[1], prices)

    (log_diff,) = diff.logs
    assert log_diff.changed and diff.changed
    assert [(c.path, c.a, c.b) for c in log_diff.state if c.path == "state.location"] == [
        ("state.location", "ferry deck", "lighthouse")
    ]
    assert [c.path for c in log_diff.summaries] == ["1", "2", "3"]
    a_prompt, b_prompt = diff.totals["prompt_tokens"]
    assert b_prompt - a_prompt == (
        reports[1]["totals"]["prompt_tokens"] - reports[0]["totals"]["prompt_tokens"]
    )
    a_cost, b_cost = diff.totals["cost"]
    assert a_cost > 0 and b_cost > 0
    consoles = recording_consoles(120)
    render_diff(diff, consoles, "a.json", "b.json")
    text = captured(consoles.out)
    assert "state state.location: ferry deck → lighthouse" in text
    assert "They reach the lighthouse." in text
    assert "1 of 1 log(s) came out differently." in text
    chinese = recording_consoles(120)  # the same diff in Chinese (#18 item 7)
    render_diff(diff, chinese, "a.json", "b.json", "zh")
    text = captured(chinese.out)
    assert "状态 state.location：ferry deck → lighthouse" in text
    assert "1 条记录中有 1 条结果不同。" in text and "重放对比" in text
    data = " ".join(str(c.a) + " " + str(c.b) + " " + c.path for c in
                    [*log_diff.state, *log_diff.summaries, *log_diff.rejected])
    allowed = set(re.findall(r"[A-Za-z_]+", f"{data} {log_diff.label} {' '.join(diff.totals)}"
                             " a json b A B done failed ms s f l"))  # f…, l…: cut values
    assert sorted(set(re.findall(r"[A-Za-z_]+", text)) - allowed) == [], text
    same = diff_reports(reports[0], reports[0])
    assert not same.changed


# -- reading logs ---------------------------------------------------------------------------


def test_sillytavern_logs_skip_hidden_and_empty_messages(tmp_path: Path) -> None:
    lines = [
        {"user_name": "Ann", "character_name": "Mira", "create_date": "2025-04-22@18h00m52s",
         "chat_metadata": {}},
        {"name": "Mira", "is_user": False, "mes": "Hello."},
        {"name": "Ann", "is_user": True, "mes": "First."},
        {"name": "Ann", "is_user": True, "mes": "Second, right after.", "send_date": 1745344860000},
        {"name": "Mira", "is_user": False, "mes": "A reply.", "is_system": True},
        {"name": "Ann", "is_user": True, "mes": "   "},
        {"name": "Ann", "is_user": True, "mes": "Third.", "send_date": "April 22, 2025 6:05pm"},
    ]  # fmt: skip
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")

    log = read_log(path)

    assert log.kind == "sillytavern" and log.greeting == "Hello." and log.user_name == "Ann"
    assert [t.text for t in log.turns] == ["First.", "Second, right after.", "Third."]
    assert log.turns[1].sent is not None and log.turns[1].sent.year == 2025
    third = log.turns[2].sent
    assert third is not None and (third.hour, third.minute) == (18, 5)
    assert log.started is not None and log.started.second == 52
    assert len(log.warnings) == 2 and log.seed is None


def test_our_exports_replay_their_turns_with_their_seed(tmp_path: Path) -> None:
    card, log = story_card(tmp_path), st_log(tmp_path, "ferry")
    with ScriptedServer() as server:
        install(server)
        run = replay([log], live(server, card, seed=1234))
    with SessionStore() as store:
        session = run.outcomes[0].session_id
        assert session is not None
        export_json(store, session, tmp_path / "dump.json")
        export_jsonl(store, session, tmp_path / "export.jsonl")

    for path, kind in (
        (tmp_path / "dump.json", "export-json"),
        (tmp_path / "export.jsonl", "export-jsonl"),
    ):
        exported = read_log(path)
        assert exported.kind == kind and exported.seed == 1234
        assert [t.text for t in exported.turns] == list(INPUTS)
        assert exported.greeting == "ferry: the bell rings at the pier."
        assert exported.user_name == "Lan"


def test_bad_logs_name_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    greeting_only = tmp_path / "greeting.jsonl"
    greeting_only.write_text(
        json.dumps({"name": "Mira", "is_user": False, "mes": "Hi"}), encoding="utf-8"
    )
    dump = tmp_path / "dump.json"
    dump.write_text(
        json.dumps({"format": "narrative-cli-session", "turns": "nope"}), encoding="utf-8"
    )
    for path, problem in (
        (empty, "it is empty"),
        (greeting_only, "no user messages"),
        (dump, "no 'turns' list"),
        (tmp_path / "missing.jsonl", "no such chat file"),
    ):
        with pytest.raises(ChatFileError) as caught:
            read_logs([path])
        assert str(path) in caught.value.message and problem in caught.value.message
    with pytest.raises(ChatFileError, match="no chat logs given"):
        read_logs([])


def test_labels_stay_unique_and_short() -> None:
    assert unique_labels(["a/chat.jsonl", "b/chat.jsonl", "c.jsonl"]) == ["a/chat", "b/chat", "c"]
    assert unique_labels(["x/chat.jsonl", "x/chat.jsonl"]) == ["x/chat", "x/chat-2"]


def test_a_recorded_request_matches_however_its_parameters_were_held(tmp_path: Path) -> None:
    """The replay compares a prompt as it is first (#17, session five), then as JSON gives it
    back, then scrubbed: a tuple where the recording has a list and a schema with mixed key
    types match (the scrubbed key: ``test_a_prompt_holding_a_key_...``); a changed text or
    parameter is drift."""
    from narrative_cli.backends.base import ChatRequest
    from narrative_cli.domain_chat import Message
    from narrative_cli.errors import ReplayMismatch
    from narrative_cli.replay.recorded import CallRef, RecordedBackend, SessionCalls

    recorded = {
        "model": "m",
        "messages": [{"role": "user", "content": "lamp ***"}],
        "stop": ["a", "b"],
        "stream": False,
        "json_schema": {"name": "x", "schema": {"1": 0, "k": 1}},
    }
    line = {"session": "s", "turn": 1, "agent": "writing", "request": recorded,
            "response": {"text": "ok"}, "usage": {}, "latency_ms": 1}
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    calls = SessionCalls("s", {1: [CallRef(path, 0, 1, "writing", 1)]})

    def ask(text: str, stop: Any, schema: dict[Any, Any]) -> str:
        backend = RecordedBackend(calls, "log")
        backend.begin_turn(1)
        request = ChatRequest([Message("user", text)], agent="writing", model="m", stop=stop,
                              json_schema={"name": "x", "schema": schema})
        return backend.complete(request).text

    assert ask("lamp ***", ("a", "b"), {1: 0, "k": 1}) == "ok"
    with pytest.raises(ReplayMismatch, match="message 1"):
        ask("lamp oil", ["a", "b"], {"1": 0, "k": 1})
    with pytest.raises(ReplayMismatch, match="stop"):
        ask("lamp ***", ["a"], {"1": 0, "k": 1})


def test_a_recorded_line_is_read_without_its_prompt_only_when_it_holds_that_prompt(
    tmp_path: Path,
) -> None:
    """A replay decodes a recorded line without its request when that is byte for byte the
    one it is about to send (#17, session seven), without its messages when only they are
    (session five); otherwise it decodes the whole line."""
    from narrative_cli.replay.recorded import CallRef, Sent

    messages = [{"role": "system", "content": "灯塔守夜人\n<rules>\"雾\"</rules>"},
                {"role": "user", "content": "I trim the wick.", "name": "Lan"}]
    line = {"session": "s", "turn": 2, "agent": "writing", "mode": "serial", "attempt": 1,
            "request": {"model": "m", "messages": messages, "temperature": 0.7},
            "response": {"text": "好", "reasoning": "", "finish_reason": "stop"},
            "usage": {"prompt_tokens": 5}, "latency_ms": 1.0, "error": None}
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    ref = CallRef(path, 0, 1, "writing", 1)
    same = [dict(m) for m in messages]
    whole = ref.read(sent=Sent.made(same, {"temperature": 0.7}))
    assert whole.same_request and whole.request == line["request"]
    assert whole.request["messages"] is same
    fast = ref.read(sent=Sent.made(same, {"temperature": 0.6}))
    assert not fast.same_request and fast.request["messages"] is same
    assert fast.request["temperature"] == 0.7
    assert fast.reply().text == "好" and fast.usage == {"prompt_tokens": 5}
    other = [dict(messages[0]), {"role": "user", "content": "I trim the wick!", "name": "Lan"}]
    slow = ref.read(sent=Sent.made(other, {"temperature": 0.7}))
    assert not slow.same_request
    assert slow.request == line["request"] and slow.request["messages"] is not other
