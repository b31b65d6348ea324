"""Each fault a provider can throw gets the right behaviour: retry, wait, fail at once, or tell."""

from __future__ import annotations

import email.utils
import random
import socket
import time

import pytest

from narrative_cli.backends import ChatRequest, open_backend
from narrative_cli.backends.base import Backend
from narrative_cli.backends.http_errors import error_from_status
from narrative_cli.backends.retry import Retrier, RetryPolicy, parse_retry_after
from narrative_cli.config import AgentSettings
from narrative_cli.domain_chat import Message
from narrative_cli.errors import (
    AuthenticationError,
    BackendTimeout,
    BackendUnavailable,
    ContentFiltered,
    ProviderError,
    QuotaError,
    RateLimited,
    RequestRejected,
    StreamInterrupted,
)

from . import servers
from .servers import Reply, ScriptedServer, quick_retrier

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
MESSAGES = [Message("system", "Narrate."), Message("user", "Open the door.")]


def backend_with(
    server: ScriptedServer, waits: list[float], provider: str = "openai", **changes: object
) -> Backend:
    return open_backend(server.profile(provider, **changes), retrier=quick_retrier(2, waits))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_429_waits_as_long_as_retry_after_says(
    scripted_server: ScriptedServer, provider: str
) -> None:
    waits: list[float] = []
    scripted_server.queue_fault("rate_limit", retry_after=3)
    scripted_server.queue_fault("rate_limit", retry_after_ms=250)
    scripted_server.queue_text("At last.")
    reply = backend_with(scripted_server, waits, provider).complete(ChatRequest(MESSAGES))
    assert reply.text == "At last." and reply.attempts == 3
    assert waits == [3.0, 0.25]


def test_a_retry_after_beyond_the_cap_fails_at_once_saying_so(
    scripted_server: ScriptedServer,
) -> None:
    waits: list[float] = []
    scripted_server.queue_fault("rate_limit", retry_after=3600)
    with pytest.raises(RateLimited) as caught:
        backend_with(scripted_server, waits).complete(ChatRequest(MESSAGES))
    assert waits == [] and len(scripted_server.requests) == 1
    assert "3600 s" in caught.value.message and "429" in caught.value.message


def test_rate_limits_give_up_after_the_retries(scripted_server: ScriptedServer) -> None:
    waits: list[float] = []
    for _ in range(3):
        scripted_server.queue_fault("rate_limit", retry_after=0)
    with pytest.raises(RateLimited) as caught:
        backend_with(scripted_server, waits).complete(ChatRequest(MESSAGES))
    assert len(scripted_server.requests) == 3 and waits == [0.0, 0.0]
    assert caught.value.attempts == 3  # type: ignore[attr-defined]


def test_500_backs_off_exponentially_with_jitter(scripted_server: ScriptedServer) -> None:
    waits: list[float] = []
    scripted_server.queue_fault("server_error")
    scripted_server.queue_fault("server_error")
    scripted_server.queue_text("recovered")
    assert backend_with(scripted_server, waits).complete(ChatRequest(MESSAGES)).text == "recovered"
    assert 0.375 <= waits[0] <= 0.5 and 0.75 <= waits[1] <= 1.0
    again: list[float] = []
    scripted_server.queue_fault("server_error")
    scripted_server.queue_fault("server_error")
    scripted_server.queue_text("recovered")
    backend_with(scripted_server, again).complete(ChatRequest(MESSAGES))
    assert again == waits  # the jitter comes from the injected, seeded RNG


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_529_overloaded_retries_with_a_longer_wait(
    scripted_server: ScriptedServer, provider: str
) -> None:
    waits: list[float] = []
    scripted_server.queue_fault("overloaded")
    scripted_server.queue_text("fine now")
    reply = backend_with(scripted_server, waits, provider).complete(ChatRequest(MESSAGES))
    assert reply.text == "fine now"
    assert 0.75 <= waits[0] <= 1.0  # twice the first 500 wait


def test_quota_exhausted_fails_at_once(scripted_server: ScriptedServer) -> None:
    waits: list[float] = []
    scripted_server.queue_fault("quota")
    with pytest.raises(QuotaError) as caught:
        backend_with(scripted_server, waits).complete(ChatRequest(MESSAGES))
    assert len(scripted_server.requests) == 1 and waits == []
    assert "quota" in caught.value.message and caught.value.hint


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_401_fails_at_once_with_the_providers_reason(
    scripted_server: ScriptedServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THE_KEY", "sk-live-abcdefghijklmnopqrstuvwxyz")
    waits: list[float] = []
    scripted_server.queue_fault("unauthorized")
    backend = backend_with(scripted_server, waits, provider, api_key_env="THE_KEY")
    with pytest.raises(AuthenticationError) as caught:
        backend.complete(ChatRequest(MESSAGES))
    message = caught.value.message
    assert len(scripted_server.requests) == 1
    assert message.startswith("scripted: the API key was refused (HTTP 401): Incorrect API key")
    assert "abcdefghijklmnop" not in message and "***" in message


@pytest.mark.parametrize("status", [422, 400])
def test_content_filter_rejection_is_clear_and_not_retried(
    scripted_server: ScriptedServer, status: int
) -> None:
    waits: list[float] = []
    scripted_server.queue_fault(
        "content_filter", status=status, reason="input new_sensitive (1026)"
    )
    with pytest.raises(ContentFiltered) as caught:
        backend_with(scripted_server, waits).complete(ChatRequest(MESSAGES))
    assert len(scripted_server.requests) == 1
    assert "content filter" in caught.value.message
    assert "input new_sensitive (1026)" in caught.value.message
    assert "edit or drop" in (caught.value.hint or "")


def test_finish_reason_content_filter_is_reported(scripted_server: ScriptedServer) -> None:
    scripted_server.queue_text("", finish_reason="content_filter")
    with pytest.raises(ContentFiltered):
        backend_with(scripted_server, []).complete(ChatRequest(MESSAGES))
    assert len(scripted_server.requests) == 1


def test_non_json_body_is_retried_then_reported(scripted_server: ScriptedServer) -> None:
    for _ in range(3):
        scripted_server.queue_fault("non_json")
    with pytest.raises(ProviderError) as caught:
        backend_with(scripted_server, []).complete(ChatRequest(MESSAGES))
    assert len(scripted_server.requests) == 3
    assert "not JSON" in caught.value.message and "502 Bad Gateway" in caught.value.message


def test_a_hanging_server_times_out_and_is_retried(scripted_server: ScriptedServer) -> None:
    scripted_server.queue_fault("hang", seconds=10)
    scripted_server.queue_text("woke up")
    backend = backend_with(scripted_server, [], read_timeout=0.3)
    started = time.monotonic()
    assert backend.complete(ChatRequest(MESSAGES)).text == "woke up"
    assert 0.3 <= time.monotonic() - started < 3
    scripted_server.queue_fault("hang", seconds=10)
    scripted_server.queue_fault("hang", seconds=10)
    scripted_server.queue_fault("hang", seconds=10)
    with pytest.raises(BackendTimeout) as caught:
        backend.complete(ChatRequest(MESSAGES))
    assert "timed out waiting for a reply" in caught.value.message


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_unwatched_dropped_stream_is_retried(
    scripted_server: ScriptedServer, provider: str
) -> None:
    scripted_server.queue_fault("drop", text="The door creaks and")
    scripted_server.queue_text("The door creaks and opens.")
    backend = backend_with(scripted_server, [], provider)
    reply = backend.complete(ChatRequest(MESSAGES, stream=True))
    assert reply.text == "The door creaks and opens." and reply.attempts == 2


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_watched_dropped_stream_hands_back_the_partial_text(
    scripted_server: ScriptedServer, provider: str
) -> None:
    scripted_server.queue_fault("drop", text="The door creaks and")
    scripted_server.queue_text("never sent")
    shown: list[str] = []
    backend = backend_with(scripted_server, [], provider)
    with pytest.raises(StreamInterrupted) as caught:
        backend.complete(ChatRequest(MESSAGES, stream=True), on_text=shown.append)
    assert caught.value.partial == "The door creaks and" == "".join(shown)
    assert len(scripted_server.requests) == 1  # the caller decides whether to retry
    assert scripted_server.pending == 1


def test_a_truncated_whole_reply_is_retried(scripted_server: ScriptedServer) -> None:
    scripted_server.queue_fault("drop")
    scripted_server.queue_text("complete")
    assert backend_with(scripted_server, []).complete(ChatRequest(MESSAGES)).text == "complete"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_error_event_inside_a_200_stream(scripted_server: ScriptedServer, provider: str) -> None:
    backend = backend_with(scripted_server, [], provider)
    scripted_server.queue_fault("stream_error", text="Half a")
    scripted_server.queue_text("Whole story.")
    assert backend.complete(ChatRequest(MESSAGES, stream=True)).text == "Whole story."
    scripted_server.queue_fault("stream_error", text="Half a")
    shown: list[str] = []
    with pytest.raises(StreamInterrupted) as caught:
        backend.complete(ChatRequest(MESSAGES, stream=True), on_text=shown.append)
    assert caught.value.partial == "Half a"
    assert ("Overloaded" if provider == "anthropic" else "upstream model failed") in str(
        caught.value
    )


def test_a_moderation_error_event_mid_stream_is_a_content_filter(
    scripted_server: ScriptedServer,
) -> None:
    event = {
        "message": "Output data may contain inappropriate content.",
        "code": "data_inspection_failed",
    }
    scripted_server.queue_fault("stream_error", text="Once", error=event)
    with pytest.raises(ContentFiltered):
        backend_with(scripted_server, []).complete(
            ChatRequest(MESSAGES, stream=True), on_text=lambda _: None
        )
    assert len(scripted_server.requests) == 1


def test_x_should_retry_false_is_obeyed(scripted_server: ScriptedServer) -> None:
    scripted_server.queue_fault("server_error", headers={"x-should-retry": "false"})
    with pytest.raises(ProviderError):
        backend_with(scripted_server, []).complete(ChatRequest(MESSAGES))
    assert len(scripted_server.requests) == 1


def test_an_empty_queue_is_a_clear_rejection(scripted_server: ScriptedServer) -> None:
    with pytest.raises(RequestRejected) as caught:
        backend_with(scripted_server, []).complete(ChatRequest(MESSAGES))
    assert "no reply queued" in caught.value.message


def test_nobody_listening_is_unavailable_after_retries() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits: list[float] = []
    with ScriptedServer() as server:
        profile = server.profile("openai", base_url=f"http://127.0.0.1:{port}/v1")
    backend = open_backend(profile, retrier=quick_retrier(2, waits))
    with pytest.raises(BackendUnavailable) as caught:
        backend.complete(ChatRequest(MESSAGES))
    assert len(waits) == 2 and f"127.0.0.1:{port}" in caught.value.message


def test_reply_hook_answers_by_agent(scripted_server: ScriptedServer) -> None:
    scripted_server.reply_with(
        lambda body, req: Reply(text=f"for {req.agent}") if req.agent != "analysis" else None
    )
    scripted_server.queue_json({"events": []})
    backend = backend_with(scripted_server, [])
    assert backend.complete(ChatRequest(MESSAGES, agent="writing")).text == "for writing"
    assert backend.complete(ChatRequest(MESSAGES, agent="analysis")).text == '{"events": []}'


@pytest.mark.parametrize(
    ("status", "body", "kind", "words"),
    [
        (
            400,
            {"error": {"message": "Content Exists Risk", "type": "invalid_request_error"}},
            ContentFiltered,
            "Content Exists Risk",
        ),
        (
            400,
            {
                "error": {
                    "code": "1301",
                    "message": "系统检测到输入或生成内容可能包含不安全或敏感内容",
                }
            },
            ContentFiltered,
            "不安全",
        ),
        (
            400,
            {
                "error": {
                    "code": "data_inspection_failed",
                    "message": "Input data may contain inappropriate content.",
                }
            },
            ContentFiltered,
            "inappropriate",
        ),
        (
            403,
            {"error": {"code": 403, "message": "flagged", "metadata": {"reasons": ["violence"]}}},
            ContentFiltered,
            "flagged",
        ),
        (402, {"error": {"message": "Insufficient Balance"}}, QuotaError, "Insufficient Balance"),
        (
            400,
            [
                {
                    "error": {
                        "code": 400,
                        "message": 'Unknown name "thinking"',
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ],
            RequestRejected,
            "Unknown name",
        ),
        (404, {"detail": "Model not found"}, RequestRejected, "Model not found"),
        (
            400,
            {
                "object": "error",
                "message": "max_tokens must be at least 1",
                "type": "BadRequestError",
            },
            RequestRejected,
            "max_tokens must be",
        ),
        (503, {"error": "model is loading"}, ProviderError, "model is loading"),
        (
            401,
            {"detail": {"error": "Unauthorized", "msg": "bad key", "type": "unauthorized"}},
            AuthenticationError,
            "bad key",
        ),
    ],
)
def test_error_bodies_of_every_known_shape_are_classified(
    status: int, body: object, kind: type[Exception], words: str
) -> None:
    error = error_from_status("deepseek", status, body)
    assert type(error) is kind
    assert error.message.startswith("deepseek: ") and f"HTTP {status}" in error.message
    assert words in error.message


def test_retry_after_accepts_seconds_milliseconds_and_http_dates() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5
    date = "Wed, 21 Oct 2026 07:28:00 GMT"
    epoch = email.utils.parsedate_to_datetime(date).timestamp()
    assert parse_retry_after({"Retry-After": date}, now=epoch - 30) == 30
    assert parse_retry_after({}) is None and parse_retry_after({"Retry-After": "soon"}) is None


def test_backoff_is_capped_at_the_maximum_delay() -> None:
    retrier = Retrier(RetryPolicy(max_retries=10, max_delay=8.0, jitter=0.0), rng=random.Random(1))
    delays = [retrier.delay_for(ProviderError("x", status=500), n) for n in range(6)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


def test_an_agents_own_timeout_and_retries_override_the_profile(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.queue_fault("hang", seconds=10)
    agent = AgentSettings(read_timeout=0.2, max_retries=0)
    backend = open_backend(scripted_server.profile("openai", read_timeout=30.0), agent)
    started = time.monotonic()
    with pytest.raises(BackendTimeout):
        backend.complete(ChatRequest(MESSAGES))
    assert time.monotonic() - started < 2 and len(scripted_server.requests) == 1
