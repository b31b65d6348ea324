"""Group chats replay in batch like single ones (issue 19, item 5).

A SillyTavern group chat (each member's greeting, then user lines with several members'
replies) is replayed live with ``--card a --card b`` and a trace, then offline from that trace:
the prompts are byte-identical, the records and final state the same, and the trace names the
speaker of every writing call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.pipeline.trace import read_calls
from narrative_cli.play.options import PlayOptions
from narrative_cli.replay.logs import read_logs
from narrative_cli.replay.runner import ReplayOptions, ReplayRun, replay_logs

from .pipeline_support import PLAN, Script, entry, write_card
from .servers import RecordedRequest, ScriptedServer

INPUTS = ("Who steers tonight?", "Pip, fetch the lantern.")


def cards(folder: Path) -> tuple[Path, Path]:
    wren = write_card(folder, [entry(1, "WREN-LORE: the compass.", constant=True)], name="Wren")
    pip = write_card(folder, [entry(2, "PIP-LORE: the fireflies.", constant=True)], name="Pip")
    return wren, pip


def group_log(folder: Path) -> Path:
    """A SillyTavern group chat: both greetings, then each line with both members' replies."""
    lines: list[dict[str, Any]] = [
        {"chat_metadata": {}, "user_name": "Lan", "character_name": "unused"},
        {"name": "Wren", "is_user": False, "mes": "Wren checks the compass."},
        {"name": "Pip", "is_user": False, "mes": "Pip waves a lantern."},
    ]
    for number, text in enumerate(INPUTS, start=1):
        lines.append({"name": "Lan", "is_user": True, "mes": text,
                      "send_date": f"2025-04-22T18:{number:02d}:00.000Z"})
        lines += [{"name": "Wren", "is_user": False, "mes": f"old Wren {number}"},
                  {"name": "Pip", "is_user": False, "mes": f"old Pip {number}"}]
    path = folder / "ferry-group.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    return path


def writer(request: RecordedRequest) -> str:
    text = "\n".join(str(m["content"]) for m in request.messages)
    name = "Wren" if "Write only Wren's reply" in text else "Pip"
    said = text.split("<user_input>\n", 1)[-1].split("\n</user_input>", 1)[0]
    return f"{name} answers '{said}'."


def planner(request: RecordedRequest) -> dict[str, Any]:
    """Pip then Wren on the second line; the group's strategy chooses otherwise."""
    text = str(request.messages[-1]["content"])
    said = text.split("<user_input>\n", 1)[-1].split("\n</user_input>", 1)[0]
    order = ["Pip", "Wren"] if "lantern" in said else []
    return {**PLAN, "speakers": [{"name": n, "intent": f"{n} wants"} for n in order]}


def replay(log: Path, options: PlayOptions, **more: Any) -> ReplayRun:
    return replay_logs(read_logs([log]), ReplayOptions(options, **more))


def stable(records: list[TurnRecord]) -> list[dict[str, Any]]:
    out = []
    for record in records:
        stored = record.to_record()
        stored["usage"] = {a: {**u, "latency_ms": 0} for a, u in stored["usage"].items()}
        out.append(stored)
    return out


def test_a_group_chat_replays_live_then_from_its_trace_identically(tmp_path: Path) -> None:
    wren, pip = cards(tmp_path)
    log = group_log(tmp_path)
    base = {"card": str(wren), "members": [str(pip)], "seed": 3}
    with ScriptedServer() as server:
        Script({"planning": planner, "writing": writer}).install(server)
        live = replay(log, PlayOptions(**base, provider="openai", base_url=server.base_url,
                                       model="scripted-model", trace=str(tmp_path / "t1")))
    outcome = live.outcomes[0]
    assert outcome.status == "done", outcome
    first, second = outcome.records
    chosen = [s.name for s in first.speakers]  # natural order: seeded talkativeness rolls
    assert chosen and set(chosen) <= {"Wren", "Pip"}
    assert [s.name for s in second.speakers] == ["Pip", "Wren"]  # the planner's order
    assert second.speakers[0].text == "Pip answers 'Pip, fetch the lantern.'."
    calls = read_calls(tmp_path / "t1")
    writers = [(c["turn"], c.get("speaker")) for c in calls if c["agent"] == "writing"]
    assert writers == [*((1, n) for n in chosen), (2, "Pip"), (2, "Wren")]
    greeting = calls[0]["request"]["messages"][-1]["content"]
    assert "Wren: Wren checks the compass.\n\nPip: Pip waves a lantern." in greeting

    offline = replay(log, PlayOptions(**base, trace=str(tmp_path / "t2")),
                     responses=str(tmp_path / "t1"))
    again = offline.outcomes[0]
    assert again.status == "done", again
    recorded = [json.dumps(c["request"], ensure_ascii=False) for c in calls]
    replayed = [json.dumps(c["request"], ensure_ascii=False)
                for c in read_calls(tmp_path / "t2")]
    assert replayed == recorded
    assert stable(again.records) == stable(outcome.records)
    assert again.final == outcome.final
