"""The anthropic backend: system blocks, cache breakpoints, streaming events, usage, refusals."""

from __future__ import annotations

import pytest

from narrative_cli.backends import ChatRequest, open_backend
from narrative_cli.backends.anthropic import AnthropicBackend, to_messages
from narrative_cli.config import Profile
from narrative_cli.domain_chat import Message
from narrative_cli.errors import ContentFiltered

from . import servers
from .servers import ScriptedServer, quick_retrier

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
EPHEMERAL = {"type": "ephemeral"}


def anthropic(server: ScriptedServer, **changes: object) -> AnthropicBackend:
    backend = open_backend(server.profile("anthropic", **changes), retrier=quick_retrier())
    assert isinstance(backend, AnthropicBackend)
    return backend


def test_system_messages_become_blocks_with_breakpoints_at_the_stable_ends() -> None:
    messages = [
        Message("system", "card"),
        Message("system", "lore"),
        Message("assistant", "Greeting from the keeper."),
        Message("user", "hello"),
        Message("user", "look around"),
        Message("system", "late note"),
    ]
    system, out = to_messages(messages, breakpoints=[1, 3])
    assert system == [
        {"type": "text", "text": "card"},
        {"type": "text", "text": "lore", "cache_control": EPHEMERAL},
    ]
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "[Start a new chat]"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Greeting from the keeper."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hello", "cache_control": EPHEMERAL},
                {"type": "text", "text": "look around"},
                {"type": "text", "text": "late note"},
            ],
        },
    ]


def test_at_most_four_breakpoints_are_sent_the_last_four() -> None:
    messages = [Message("user" if i % 2 else "assistant", f"m{i}") for i in range(8)]
    system, out = to_messages(messages, breakpoints=[0, 1, 2, 3, 4, 5, 99])
    marked = [
        block["text"]
        for message in out
        for block in message["content"]
        if block.get("cache_control") == EPHEMERAL
    ]
    assert system == [] and marked == ["m2", "m3", "m4", "m5"]


def test_a_breakpoint_on_an_empty_message_lands_on_the_block_before() -> None:
    system, out = to_messages([Message("system", "card"), Message("system", "")], breakpoints=[1])
    assert system == [{"type": "text", "text": "card", "cache_control": EPHEMERAL}]


def test_request_body_and_headers(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_TEST_KEY", "sk-ant-test-key-0000")
    scripted_server.queue_text("The tide turns.")
    backend = anthropic(scripted_server, api_key_env="ANTHROPIC_TEST_KEY")
    request = ChatRequest(
        [Message("system", "Narrate."), Message("user", "Wait.")],
        agent="writing",
        temperature=0.9,
        stop=["\n\nUser:"],
        presence_penalty=0.3,  # not an Anthropic parameter: left out
        cache_breakpoints=[0],
    )
    reply = backend.complete(request)
    sent = scripted_server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test-key-0000"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.json == {
        "model": "scripted-model",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Wait."}]}],
        "system": [{"type": "text", "text": "Narrate.", "cache_control": EPHEMERAL}],
        "temperature": 0.9,
        "stop_sequences": ["\n\nUser:"],
    }
    assert reply.text == "The tide turns." and reply.finish_reason == "stop"


def test_streamed_events_assemble_text_thinking_and_usage(scripted_server: ScriptedServer) -> None:
    usage = {
        "input_tokens": 12,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 100,
        "output_tokens": 42,
    }
    text = "雾散了。The fog lifts over the bay."
    scripted_server.queue_text(text, reasoning="Consider the weather.", usage=usage)
    shown: list[str] = []
    reply = anthropic(scripted_server).complete(
        ChatRequest([Message("user", "Wait.")], stream=True, max_tokens=100), on_text=shown.append
    )
    assert reply.text == text == "".join(shown) and len(shown) > 1
    assert reply.reasoning == "Consider the weather."
    assert reply.finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.cached_tokens) == (1012, 900)
    assert reply.usage.cache_write_tokens == 100
    assert reply.usage.completion_tokens == 42 and not reply.usage.estimated
    assert scripted_server.requests[0].json["stream"] is True


def test_max_tokens_stop_maps_to_length(scripted_server: ScriptedServer) -> None:
    scripted_server.queue_text("cut", finish_reason="length")
    reply = anthropic(scripted_server).complete(ChatRequest([Message("user", "go")]))
    assert reply.finish_reason == "length"


@pytest.mark.parametrize("stream", [False, True])
def test_a_refusal_is_reported_as_a_content_filter(
    scripted_server: ScriptedServer, stream: bool
) -> None:
    scripted_server.queue_text("", finish_reason="content_filter")  # stop_reason "refusal"
    with pytest.raises(ContentFiltered) as caught:
        anthropic(scripted_server).complete(ChatRequest([Message("user", "x")], stream=stream))
    assert "refusal" in caught.value.message


def test_top_p_is_dropped_when_the_model_refuses_it_with_temperature(
    scripted_server: ScriptedServer,
) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "`temperature` and `top_p` cannot both be specified for this model.",
        },
    }
    scripted_server.queue_fault("status", status=400, body=body)
    scripted_server.queue_text("ok")
    backend = anthropic(scripted_server)
    request = ChatRequest([Message("user", "x")], temperature=0.8, top_p=0.9)
    assert backend.complete(request).text == "ok"
    assert "top_p" in scripted_server.requests[0].json
    assert "top_p" not in scripted_server.requests[1].json


def test_base_url_forms_all_reach_the_messages_endpoint() -> None:
    for base in (
        "https://api.anthropic.com",
        "https://proxy.example/v1",
        "https://p.example/v1/messages",
    ):
        backend = AnthropicBackend(Profile(name="a", provider="anthropic", base_url=base))
        assert backend.url.endswith("/v1/messages")
    assert AnthropicBackend(Profile(name="a", provider="anthropic")).url == (
        "https://api.anthropic.com/v1/messages"
    )
