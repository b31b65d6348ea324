"""Indexing a recorded trace (#17, session six): a line's call is filed without decoding its
request, which is decoded (and checked) when the replay reads the call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.backends.base import ChatRequest
from narrative_cli.domain_chat import Message
from narrative_cli.errors import BadInput, ReplayMismatch
from narrative_cli.pipeline.trace import CallTrace, TraceWriter, request_params
from narrative_cli.replay.recorded import RecordedBackend, Recording, Sent, SessionCalls


def call(turn: int, agent: str, **extra: Any) -> dict[str, Any]:
    """A calls.jsonl object laid out as pipeline.trace writes it."""
    schema = {"properties": {"text": {"type": "string"}, "response": {"type": "object"}}}
    return {
        "session": "ferry", "turn": turn, "agent": agent, "mode": "serial", "attempt": 1,
        "request": {"model": "m", "messages": [
            {"role": "user", "content": 'say ", "response": {"text": "no"} to me'}],
            "json_schema": schema},
        "response": {"text": f"reply {turn}", "reasoning": "", "finish_reason": "stop"},
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "cached_tokens": 0},
        "latency_ms": 1.0, "error": None, **extra,
    }  # fmt: skip


def trace(folder: Path, lines: list[str]) -> Path:
    folder.mkdir()
    (folder / "calls.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_calls_are_filed_by_turn_agent_and_speaker_and_read_whole(tmp_path: Path) -> None:
    lines = [json.dumps(call(1, "planning")), json.dumps(call(1, "writing", speaker="Mira")),
             json.dumps(call(2, "planning"))]  # fmt: skip
    calls = Recording.load(trace(tmp_path / "t", lines)).for_log("ferry", only_log=True)
    assert [(ref.agent, ref.speaker) for ref in calls.turns[1]] == [
        ("planning", ""),
        ("writing", "Mira"),
    ]
    read = calls.pick(1, "writing", 0)
    assert read is not None and read.request == call(1, "writing")["request"]
    assert read.response["text"] == "reply 1" and read.speaker == "Mira"


def test_a_damaged_request_is_reported_when_its_call_is_read(tmp_path: Path) -> None:
    good = json.dumps(call(1, "planning"))
    broken = good.replace('"messages": [', '"messages": [}', 1)
    calls = Recording.load(trace(tmp_path / "t", [broken])).for_log("ferry", only_log=True)
    with pytest.raises(BadInput, match="line 1: cannot read it again"):
        calls.pick(1, "planning", 0)


def test_a_line_that_is_not_json_outside_its_request_is_refused_at_load(tmp_path: Path) -> None:
    good = json.dumps(call(1, "planning"))
    with pytest.raises(BadInput, match="line 1: invalid JSON"):
        Recording.load(trace(tmp_path / "t", [good.replace('"turn": 1', '"turn": 1,,', 1)]))
    with pytest.raises(BadInput, match="line 2: not a trace call"):
        Recording.load(trace(tmp_path / "u", [good, json.dumps({**call(1, "x"), "turn": "a"})]))


@pytest.mark.parametrize(
    ("recorded", "now", "differs"),
    [
        ({"temperature": 1.0}, {"temperature": 1.0}, False),
        ({"temperature": 1.0}, {"temperature": 1}, True),  # equal in Python, not in JSON
        ({"temperature": 0.0}, {"temperature": -0.0}, True),
        ({"stop": ["\n"]}, {"stop": ("\n",)}, False),  # a tuple is a list in JSON
        ({"json_schema": {"a": [1, {"b": None}]}}, {"json_schema": {"a": [1, {"b": None}]}}, False),
        ({"json_schema": {"a": [1, {"b": None}]}}, {"json_schema": {"a": [1, {"b": 0}]}}, True),
        ({"json_schema": {"a": 1, "b": 2}}, {"json_schema": {"b": 2, "a": 1}}, False),
        ({"json_schema": {"1": True}}, {"json_schema": {1: True}}, False),
        ({"json_schema": {"x": True}}, {"json_schema": {"x": 1}}, True),
        ({"top_p": float("nan")}, {"top_p": float("nan")}, False),
    ],
)
def test_request_parameters_differ_exactly_when_their_json_does(
    recorded: dict[str, Any], now: dict[str, Any], differs: bool
) -> None:
    from narrative_cli.replay.drift import first_difference

    messages = [{"role": "user", "content": "hello"}]
    drift = first_difference({"messages": messages, **recorded}, {"messages": messages, **now})
    assert (drift is not None) is differs
    if differs:
        assert drift is not None and "request parameter" in drift.where


def _written(folder: Path, request: Any, session: str = "ferry") -> SessionCalls:
    """A one-call trace written by the trace writer itself, loaded for replay."""
    writer = TraceWriter(folder, session=session)
    writer.record_call(CallTrace(
        turn=1, agent=request.agent, mode="serial", attempt=1, model=request.model or "m",
        messages=[m.to_dict() for m in request.messages], params=request_params(request),
        text="the reply", finish_reason="stop", prompt_tokens=9, completion_tokens=2,
    ))  # fmt: skip
    return Recording.load(folder).for_log(session, only_log=True)


def _request(**change: Any) -> ChatRequest:
    fields: dict[str, Any] = {
        "messages": [Message("system", "<rules>\n灯塔 \"quoted\" \\ end\n</rules>"),
                     Message("user", 'say ", "response": {"text": "no"} to me')],
        "agent": "planning", "model": "m", "temperature": 0.7, "max_tokens": 256,
        "json_schema": {"name": "plan", "schema": {"type": "object", "required": ["a"]}},
        "cache_breakpoints": [0],
    }  # fmt: skip
    return ChatRequest(**{**fields, **change})


def test_a_request_equal_to_its_line_byte_for_byte_is_not_decoded_nor_compared(
    tmp_path: Path,
) -> None:
    request = _request()
    calls = _written(tmp_path / "t", request)
    whole = calls.pick(1, "planning", 0)  # decoded whole, as before
    fast = calls.pick(1, "planning", 0, Sent.of(request))
    assert whole is not None and fast is not None
    assert fast.same_request and not whole.same_request
    assert fast == whole  # the same call: request, response, usage, everything
    again = calls.pick(1, "planning", 0, Sent.of(_request(model="")))  # no model sent
    assert again is not None and again.same_request and again.request["model"] == "m"
    backend = RecordedBackend(calls, "ferry")
    backend.begin_turn(1)
    reply = backend.complete(_request(model=""))
    assert reply.text == "the reply" and reply.model == "m"


@pytest.mark.parametrize(
    "change",
    [
        {"temperature": 0.8},
        {"temperature": None},
        {"max_tokens": 300},  # not compared, but not the same bytes: decoded and compared
        {"json_schema": {"name": "plan", "schema": {"type": "object", "required": ["b"]}}},
        {"messages": [Message("system", "<rules>\n灯塔 \"quoted\" \\ end\n</rules>"),
                      Message("user", 'say ", "response": {"text": "yes"} to me')]},
        {"cache_breakpoints": []},
    ],
)
def test_any_other_request_is_compared_as_before(tmp_path: Path, change: dict[str, Any]) -> None:
    calls = _written(tmp_path / "t", _request())
    changed = _request(**change)
    read = calls.pick(1, "planning", 0, Sent.of(changed))
    assert read is not None and not read.same_request
    assert read == calls.pick(1, "planning", 0)
    backend = RecordedBackend(calls, "ferry")
    backend.begin_turn(1)
    if "max_tokens" in change:  # drift leaves the reply limit out
        assert backend.complete(changed).text == "the reply"
    else:
        with pytest.raises(ReplayMismatch, match="differs from the recorded one"):
            backend.complete(changed)


def test_a_request_is_encoded_as_json_encodes_it_whole() -> None:
    """``Sent`` builds the request's JSON from remembered messages: byte for byte what
    ``json.dumps`` gives for the whole, on generated messages, repeated and not."""
    import random

    rng = random.Random(7)
    pieces = ["灯塔", "\n", '"', "\\", "a", " ", "\u2028", "😀", "<x>", "\t", "é", "\r", "\b",
              "\f", "\x00", "\x0b", "\x1f", "\x7f", "/", "\u00ff" * 40]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(40)]
    for _ in range(400):
        messages = [{"role": rng.choice(["system", "user"]), "content": rng.choice(texts)}
                    for _ in range(rng.randint(0, 4))]  # fmt: skip
        if rng.random() < 0.2:
            messages.append({"role": "user", "content": rng.choice(texts), "name": "Lan"})
        params = rng.choice([{}, {"max_tokens": 9}, {"temperature": 0.5, "stop": ["\n"]},
                             {"json_schema": {"b": [1, None], "a": "x"}, "stream": False}])
        expected = json.dumps({"messages": messages, **params}, ensure_ascii=False)
        assert Sent.made(messages, params).encoded == expected.encode("utf-8")
    assert Sent.made([{"role": "user", "content": "\ud800"}], {}).encoded is None
    assert Sent.made([{"role": "user", "content": "a\x01\ud800"}], {}).encoded is None


def test_the_trace_is_split_into_lines_as_iterating_the_file_splits_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``trace_lines`` reads 256 KB at a time and finds newlines with ``bytes.find``: for
    lines shorter and longer than its chunk, blank lines, a last line without its newline and
    lines that end exactly at a chunk's end, it gives the lines iterating the file gives (a
    small chunk here, so lines cross many chunks)."""
    import random

    from narrative_cli.replay import call_index
    from narrative_cli.replay.recorded import _ends_object

    rng = random.Random(3)
    monkeypatch.setattr(call_index, "_CHUNK", 16)
    for case in range(60):
        lines = [bytes(rng.choice(b"ab {}\r\t") for _ in range(rng.choice([0, 1, 15, 16, 17,
                                                                        40])))
                 for _ in range(rng.randint(0, 12))]  # fmt: skip
        data = b"\n".join(lines) + (b"\n" if case % 2 else b"")
        path = tmp_path / f"calls-{case}.jsonl"
        path.write_bytes(data)
        with path.open("rb") as handle:
            expected = list(handle)
        with path.open("rb") as handle:
            assert list(call_index.trace_lines(handle)) == expected
        for line in expected + [b" " * 70 + b"}" + b" " * 70, b"}" + b"\n" * 80, b"\t" * 90]:
            assert _ends_object(line) is line.rstrip().endswith(b"}")
