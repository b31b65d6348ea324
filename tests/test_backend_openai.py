"""The openai backend against a real loopback server: bodies, streaming, reasoning, keys."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time

import pytest

from narrative_cli.backends import ChatRequest, open_backend
from narrative_cli.backends.openai_compat import OpenAIBackend
from narrative_cli.backends.sse import SSEEvent, iter_sse
from narrative_cli.config import AgentSettings, Profile
from narrative_cli.domain_chat import Message
from narrative_cli.errors import AuthenticationError

from . import servers
from .servers import Reply, ScriptedServer, quick_retrier

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures

KEY = "sk-test-0123456789abcdefSECRET"
STORY = "灯塔守望者抬起头。The keeper raises the lantern 🏮, and the fog parts."


def chat(*texts: str) -> list[Message]:
    return [Message("system", "You narrate.")] + [Message("user", t) for t in texts]


def backend_for(server: ScriptedServer, **changes: object) -> OpenAIBackend:
    backend = open_backend(server.profile("openai", **changes), retrier=quick_retrier())
    assert isinstance(backend, OpenAIBackend)
    return backend


def test_streamed_text_assembles_exactly_and_reaches_the_callback(
    scripted_server: ScriptedServer,
) -> None:
    pieces = ["灯塔", "守望者抬起头。The keeper raises the lan", "tern 🏮", ", and the fog parts."]
    scripted_server.queue_text(STORY, chunks=pieces)
    shown: list[str] = []
    reply = backend_for(scripted_server).complete(
        ChatRequest(chat("look up"), stream=True), on_text=shown.append
    )
    assert reply.text == STORY
    assert "".join(shown) == STORY
    assert shown == pieces
    assert reply.finish_reason == "stop"
    assert not reply.usage.estimated and reply.usage.completion_tokens > 0


def test_body_carries_only_the_set_fields_and_the_agent_defaults(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue_text("ok")
    agent = AgentSettings(temperature=0.7, max_tokens=321, top_p=0.9, stop=["<END>"])
    backend = open_backend(scripted_server.profile("openai"), agent, retrier=quick_retrier())
    request = ChatRequest(chat("hi"), agent="planning", temperature=0.2, presence_penalty=0.5)
    backend.complete(request)
    body = scripted_server.requests[0].json
    assert body == {
        "model": "scripted-model",
        "messages": [
            {"role": "system", "content": "You narrate."},
            {"role": "user", "content": "hi"},
        ],
        "temperature": 0.2,  # the request wins over the agent default
        "top_p": 0.9,
        "presence_penalty": 0.5,
        "max_tokens": 321,
        "stop": ["<END>"],
    }
    assert scripted_server.requests[0].agent == "planning"
    assert scripted_server.requests[0].path == "/v1/chat/completions"


def test_streaming_asks_for_usage_and_json_agents_ask_for_a_schema(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue_json({"plan": "go north"})
    schema = {
        "name": "plan",
        "schema": {"type": "object", "properties": {"plan": {"type": "string"}}},
    }
    reply = backend_for(scripted_server).complete(
        ChatRequest(chat("plan"), json_schema=schema, stream=True)
    )
    body = scripted_server.requests[0].json
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "plan", "schema": schema["schema"]},
    }
    assert json.loads(reply.text) == {"plan": "go north"}


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.parametrize("stream", [False, True])
def test_reasoning_is_kept_apart_from_the_story(
    scripted_server: ScriptedServer, field: str, stream: bool
) -> None:
    scripted_server.queue_text(
        "The door opens.", reasoning="User wants drama.", options={"reasoning_field": field}
    )
    shown: list[str] = []
    reply = backend_for(scripted_server).complete(
        ChatRequest(chat("open"), stream=stream), on_text=shown.append
    )
    assert reply.text == "The door opens."
    assert reply.reasoning == "User wants drama."
    assert "".join(shown) == "The door opens."


@pytest.mark.parametrize("stream", [False, True])
def test_a_leading_think_block_moves_to_the_reasoning(
    scripted_server: ScriptedServer, stream: bool
) -> None:
    text = "<think>plan the scene\nfirst</think>\nRain falls on the harbour."
    scripted_server.queue_text(
        text,
        chunks=["<th", "ink>plan the ", "scene\nfirst</thi", "nk>\nRain", " falls on the harbour."],
    )
    shown: list[str] = []
    reply = backend_for(scripted_server).complete(
        ChatRequest(chat("go"), stream=stream), on_text=shown.append
    )
    assert reply.text == "Rain falls on the harbour."
    assert reply.reasoning == "plan the scene\nfirst"
    assert "".join(shown) == "Rain falls on the harbour."


def test_text_that_merely_mentions_think_is_left_alone(scripted_server: ScriptedServer) -> None:
    scripted_server.queue_text("I <think> so.", chunks=["I <thi", "nk> so."])
    reply = backend_for(scripted_server).complete(ChatRequest(chat("x"), stream=True))
    assert reply.text == "I <think> so." and reply.reasoning == ""


def test_koboldcpp_style_stream_quirks_are_tolerated(scripted_server: ScriptedServer) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": "null"}]}
    last = {"choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": "stop"}]}
    scripted_server.queue_sse(
        [
            ": OPENROUTER PROCESSING\r\n\r\n",
            f"data: {json.dumps(chunk)}\r\n\r\n",
            f"data: {json.dumps(last)}\n\n",
            "data: [DONE]",  # no blank line after the last event
        ]
    )
    reply = backend_for(scripted_server).complete(ChatRequest(chat("hi"), stream=True))
    assert reply.text == "Hello there"
    assert reply.finish_reason == "stop"
    assert reply.usage.estimated  # the stream carried no usage


def test_a_server_that_ignores_stream_still_answers(scripted_server: ScriptedServer) -> None:
    body = {"choices": [{"index": 0, "message": {"content": "whole"}, "finish_reason": "stop"}]}
    scripted_server.queue(Reply(fault="status", status=200, body=body))
    shown: list[str] = []
    reply = backend_for(scripted_server).complete(
        ChatRequest(chat("hi"), stream=True), on_text=shown.append
    )
    assert reply.text == "whole" and shown == ["whole"]


def test_max_tokens_field_steps_over_to_max_completion_tokens(
    scripted_server: ScriptedServer,
) -> None:
    message = (
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead."
    )
    scripted_server.queue_fault(
        "status", status=400, body={"error": {"message": message, "type": "invalid_request_error"}}
    )
    scripted_server.queue_text("fine")
    scripted_server.queue_text("again")
    backend = backend_for(scripted_server)
    assert backend.complete(ChatRequest(chat("hi"), max_tokens=50)).text == "fine"
    assert backend.complete(ChatRequest(chat("hi"), max_tokens=50)).text == "again"
    bodies = [r.json for r in scripted_server.requests]
    assert "max_tokens" in bodies[0] and "max_completion_tokens" not in bodies[0]
    assert bodies[1]["max_completion_tokens"] == 50 and "max_tokens" not in bodies[1]
    assert bodies[2]["max_completion_tokens"] == 50  # remembered for later calls


def test_json_mode_steps_down_when_the_server_refuses_json_schema(
    scripted_server: ScriptedServer,
) -> None:
    refusal = {"error": {"message": "response_format type json_schema is unavailable"}}
    scripted_server.queue_fault("status", status=400, body=refusal)
    scripted_server.queue_fault("status", status=400, body=refusal)
    scripted_server.queue_json({"ok": True})
    schema = {"name": "x", "schema": {"type": "object"}}
    reply = backend_for(scripted_server).complete(ChatRequest(chat("hi"), json_schema=schema))
    formats = [r.json.get("response_format") for r in scripted_server.requests]
    assert formats == [
        {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
        {"type": "json_object"},
        None,
    ]
    assert json.loads(reply.text) == {"ok": True}


def test_known_hosts_get_their_token_field_and_json_mode() -> None:
    request = ChatRequest(chat("hi"), max_tokens=10, json_schema={"name": "x", "schema": {}})
    openai = OpenAIBackend(Profile(name="o", provider="openai"))
    deepseek = OpenAIBackend(
        Profile(name="d", provider="openai", base_url="https://api.deepseek.com/v1")
    )
    assert "max_completion_tokens" in openai.build_body(request, "gpt")
    assert openai.url == "https://api.openai.com/v1/chat/completions"
    body = deepseek.build_body(request, "deepseek-chat")
    assert body["max_tokens"] == 10 and body["response_format"] == {"type": "json_object"}


def test_the_key_goes_only_into_the_authorization_header(
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("SCRIPTED_KEY", KEY)
    profile = scripted_server.profile("openai", api_key_env="SCRIPTED_KEY")
    backend = open_backend(profile, retrier=quick_retrier())
    scripted_server.queue_text("ok")
    scripted_server.queue_fault("unauthorized")  # echoes the key back, as some proxies do
    caplog.set_level(logging.DEBUG)
    backend.complete(ChatRequest(chat("hi")))
    assert scripted_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    with pytest.raises(AuthenticationError) as caught:
        backend.complete(ChatRequest(chat("hi")))
    assert len(scripted_server.requests) == 2  # 401 is never retried
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)
    assert "scripted" in caught.value.message and "401" in caught.value.message
    assert KEY not in repr(backend) and KEY not in repr(vars(backend))
    assert KEY not in caplog.text


def test_ctrl_c_in_the_middle_of_a_stream_closes_the_connection(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue_text("word " * 400, chunk_delay=0.01)

    def interrupt(_: str) -> None:
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        backend_for(scripted_server).complete(
            ChatRequest(chat("go"), stream=True), on_text=interrupt
        )
    assert scripted_server.disconnected.wait(3.0), "the server never saw the client hang up"
    assert time.monotonic() - started < 3.0


def test_ctrl_c_while_waiting_for_a_reply_propagates_promptly(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue_fault("hang", seconds=20)
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(0.3, signal.pthread_kill, args=(main, signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        backend_for(scripted_server, read_timeout=30.0).complete(ChatRequest(chat("go")))
    assert time.monotonic() - started < 3.0
    assert scripted_server.disconnected.wait(3.0)
    assert len(scripted_server.requests) == 1  # no retry after Ctrl-C


def test_sse_parser_follows_the_event_stream_rules() -> None:
    lines = [
        ": comment",
        "event: content_block_delta",
        'data: {"a":',
        "data:1}",
        "id: 7",
        "",
        "data: second",
        "",
        "",
        "data: [DONE]",
    ]
    assert list(iter_sse(lines)) == [
        SSEEvent('{"a":\n1}', "content_block_delta", "7"),
        SSEEvent("second", "message", "7"),
        SSEEvent("[DONE]", "message", "7"),
    ]
