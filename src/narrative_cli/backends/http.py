"""The HTTP half shared by the ``openai`` and ``anthropic`` backends.

``HTTPBackend.complete`` runs attempts through the ``Retrier``; one attempt posts the body,
maps error statuses, and either reads a whole JSON reply or an SSE stream into the
subclass's reply builder. A dropped stream is an ordinary retryable error unless its text was
already shown through ``on_text``: then ``StreamInterrupted`` carries the partial text.
Ctrl-C (KeyboardInterrupt) is never caught: leaving the ``with`` block closes the connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from narrative_cli import __version__
from narrative_cli.backends.base import (
    ChatReply,
    ChatRequest,
    SecretKey,
    TextCallback,
    backend_errors,
    redact,
    with_agent_defaults,
)
from narrative_cli.backends.http_errors import error_from_status
from narrative_cli.backends.retry import Retrier, RetryPolicy, parse_retry_after
from narrative_cli.backends.sse import iter_sse, split_lines
from narrative_cli.config import AgentSettings, Profile
from narrative_cli.credentials import remember, remember_url, scrub_url
from narrative_cli.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigError,
    ContentFiltered,
    ProviderError,
    RequestRejected,
    StreamInterrupted,
    same_words,
    worded,
)
from narrative_cli.logs import logger
from narrative_cli.safetext import clean_json

log = logger(__name__)  # sets logging up (logs.py): a backend's library may log


class Builder(Protocol):
    """Collects one reply; see ``openai_stream.ReplyBuilder``."""

    done: bool

    @property
    def finish_reason(self) -> str | None: ...

    @property
    def text(self) -> str: ...

    @property
    def reasoning(self) -> str: ...

    def feed(self, data: str) -> str: ...

    def whole(self, data: Any) -> None: ...

    def close(self) -> str: ...


_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def make_client(
    url: str,
    connect_timeout: float,
    read_timeout: float,
    transport: httpx.BaseTransport | None = None,
) -> httpx.Client:
    """An httpx client with our timeouts; proxy variables apply except on loopback."""
    timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
    loopback = (urlsplit(url).hostname or "") in _LOOPBACK
    return httpx.Client(timeout=timeout, transport=transport, trust_env=not loopback)


class HTTPBackend:
    """Retries, status mapping and streaming; subclasses shape bodies and replies."""

    max_variants = 4  # how many request step-downs one attempt may make

    def __init__(
        self,
        profile: Profile,
        agent: AgentSettings | None = None,
        *,
        api_key: str | None = None,
        retrier: Retrier | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.name = profile.name
        self.profile = profile
        self.agent = agent
        self.model = profile.model or ""  # the default model of requests that name none
        self.url = self.endpoint_url(profile.endpoint())
        self._key = SecretKey(api_key) if api_key else None
        remember(api_key)
        remember_url(self.url)  # a key inside the base URL is a key too
        agent = agent or AgentSettings()
        retries = agent.max_retries if agent.max_retries is not None else profile.max_retries
        self.retrier = retrier or Retrier(RetryPolicy(max_retries=retries))
        self.call_timeout = agent.timeout or profile.timeout
        self.client = make_client(
            self.url,
            agent.connect_timeout or profile.connect_timeout,
            min(agent.read_timeout or profile.read_timeout, self.call_timeout),
            transport,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, url={scrub_url(self.url)!r})"

    # --- what subclasses provide -------------------------------------------------------
    def endpoint_url(self, base_url: str) -> str:
        raise NotImplementedError

    def build_body(self, request: ChatRequest, model: str) -> dict[str, Any]:
        raise NotImplementedError

    def new_builder(self) -> Builder:
        raise NotImplementedError

    def auth_headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def step_down(self, message: str, body: dict[str, Any]) -> bool:
        """Adapt to a refusal that names an unsupported field; True if the body will change."""
        return False

    def finish(self, builder: Builder, request: ChatRequest, model: str) -> ChatReply:
        raise NotImplementedError

    # --- the shared machinery ----------------------------------------------------------
    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def complete(self, request: ChatRequest, on_text: TextCallback | None = None) -> ChatReply:
        """One call with retries; streams to ``on_text`` (or hands it the whole text at the end)."""
        request = with_agent_defaults(request, self.agent)
        model = request.model or self.profile.model
        if not model:
            raise ConfigError(
                f"profile {self.name!r}: no model set",
                hint="set model in the profile (config.yaml) or pass --model",
            )
        started = time.monotonic()
        builder, attempts = self.retrier.run(
            lambda n: self._attempt(request, model, on_text), self._retry_notice(request)
        )
        reply = self.finish(builder, request, model)
        if not request.stream:
            _show(on_text, reply.text)  # the callback always sees the story text
        reply.latency_ms = (time.monotonic() - started) * 1000
        reply.attempts = attempts
        log.debug(
            "%s %s: %d attempt(s), %.0f ms", self.name, request.agent, attempts, reply.latency_ms
        )
        return reply

    def _retry_notice(self, request: ChatRequest) -> Callable[[int, BackendError, float], None]:
        """The Retrier's callback: tell the request's ``on_retry`` (the Retrier logs it)."""
        allowed = self.retrier.policy.max_retries + 1

        def notice(attempt: int, error: BackendError, delay: float) -> None:
            if request.on_retry is not None:
                request.on_retry(attempt, allowed, error, delay)

        return notice

    def headers(self, request: ChatRequest) -> dict[str, str]:
        """Request headers: ours, the profile's, and the key's."""
        headers = {"User-Agent": f"narrative-cli/{__version__}", **self.profile.headers}
        if self._key:
            headers.update(self.auth_headers(self._key.reveal()))
        if request.agent:
            headers["X-Narrative-Agent"] = request.agent
        return headers

    def _attempt(self, request: ChatRequest, model: str, on_text: TextCallback | None) -> Builder:
        for _ in range(self.max_variants):
            body = self.build_body(request, model)
            try:
                if request.stream:
                    return self._stream(body, request, on_text)
                return self._whole(body, request)
            except RequestRejected as error:
                if isinstance(error, ContentFiltered) or not self.step_down(error.message, body):
                    raise
                log.info("%s: adapting the request after: %s", self.name, error.message)
        raise worded(RequestRejected, "http.every_variant", provider=self.name)

    def _whole(self, body: dict[str, Any], request: ChatRequest) -> Builder:
        with backend_errors(self.name, self.url):
            response = self.client.post(self.url, json=body, headers=self.headers(request))
        self._check_status(response)
        builder = self.new_builder()
        self._read_json(response, builder)
        return builder

    def _read_json(self, response: httpx.Response, builder: Builder) -> None:
        try:
            data = clean_json(response.json())  # an escaped lone surrogate: U+FFFD
        except (ValueError, RecursionError):
            snippet = redact(response.text[:120], self._key)
            raise worded(ProviderError, "http.not_json", provider=self.name,
                         snippet=repr(snippet)) from None
        builder.whole(data)
        builder.close()

    def _stream(
        self, body: dict[str, Any], request: ChatRequest, on_text: TextCallback | None
    ) -> Builder:
        builder = self.new_builder()
        try:
            with self.client.stream(
                "POST", self.url, json=body, headers=self.headers(request)
            ) as r:
                if r.status_code >= 400:
                    r.read()
                    self._check_status(r)
                if "text/event-stream" not in r.headers.get("content-type", ""):
                    r.read()  # a server that ignored "stream": read it whole
                    self._read_json(r, builder)
                    _show(on_text, builder.text)
                    return builder
                text = self._until(r.iter_text(), time.monotonic() + self.call_timeout)
                for event in iter_sse(split_lines(text)):
                    _show(on_text, builder.feed(event.data))
        except httpx.HTTPError as exc:
            if not builder.text and not builder.reasoning:
                with backend_errors(self.name, self.url):
                    raise
            raise self._dropped(builder, on_text) from exc
        except BackendError as error:
            if error.retryable and on_text is not None and builder.text:
                raise same_words(StreamInterrupted(error.message, partial=builder.text),
                                 error) from error
            raise
        if not builder.done and builder.finish_reason is None:
            raise self._dropped(builder, on_text)
        _show(on_text, builder.close())
        return builder

    def _until(self, chunks: Iterator[str], deadline: float) -> Iterator[str]:
        """The stream's text until the call's ``timeout`` runs out (keep-alives included: a
        server that only sends ``: keep-alive`` comments, or trickles bytes, cannot hold the
        turn forever; a silent one is stopped by the read timeout, at most ``timeout``)."""
        for line in chunks:
            if time.monotonic() > deadline:
                raise worded(BackendTimeout, "http.no_full_reply", ("http.no_full_reply_hint", {}),
                             provider=self.name, seconds=f"{self.call_timeout:g}",
                             url=scrub_url(self.url))
            yield line

    def _dropped(self, builder: Builder, on_text: TextCallback | None) -> BackendError:
        if on_text is not None and builder.text:
            return worded(StreamInterrupted, "http.broke_after", init={"partial": builder.text},
                          provider=self.name, count=len(builder.text))
        return worded(BackendUnavailable, "http.broke_before", provider=self.name)

    def _check_status(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        header = response.headers.get("x-should-retry")
        raise error_from_status(
            self.name,
            response.status_code,
            redact(response.text, self._key),
            retry_after=parse_retry_after(response.headers),
            should_retry=None if header is None else header.lower() == "true",
        )


def _show(on_text: TextCallback | None, text: str) -> None:
    if on_text is not None and text:
        on_text(text)
