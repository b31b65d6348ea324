"""What every model backend speaks: requests, replies, usage, and the error boundary.

``ChatRequest`` goes in, ``ChatReply`` comes out, and anything that goes wrong on the wire is
raised as a ``narrative_cli.errors.BackendError`` whose message names the provider and its
reason. API keys never appear in messages, reprs or logs: ``redact`` scrubs server replies
(with ``narrative_cli.credentials``, which says what a secret is), URLs are shown scrubbed,
and ``SecretKey`` hides its value from ``repr``/``str``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from narrative_cli.credentials import scrub_text, scrub_url
from narrative_cli.dataclass_copy import replaced
from narrative_cli.domain_chat import Message
from narrative_cli.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ConfigError,
    Phrase,
    worded,
)

if TYPE_CHECKING:
    from narrative_cli.config import AgentSettings

TextCallback = Callable[[str], None]
# (attempt that failed, attempts allowed in all, the error, seconds before the next one)
RetryCallback = Callable[[int, int, BackendError, float], None]


@dataclass
class ChatRequest:
    """One model call: the messages plus the sampling parameters that are set."""

    messages: list[Message]
    agent: str = ""  # planning, writing, analysis, tool:<name>, ...
    model: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    json_schema: dict[str, Any] | None = None  # {"name": ..., "schema": {...}}
    stream: bool = False
    cache_breakpoints: list[int] = field(default_factory=list)  # message indexes (Anthropic)
    extra: dict[str, Any] = field(default_factory=dict)  # provider body fields, e.g. id_slot
    # told before each retry, so the user sees it (not part of the request: never compared)
    on_retry: RetryCallback | None = field(default=None, compare=False, repr=False)


@dataclass
class Usage:
    """Token counts of one call; ``estimated`` when the server reported none (or only part)."""

    prompt_tokens: int = 0  # all input tokens, cached ones included
    completion_tokens: int = 0  # reasoning tokens included
    cached_tokens: int = 0  # the part of prompt_tokens read from a prompt cache
    estimated: bool = False
    cache_write_tokens: int = 0  # Anthropic cache creation
    reasoning_tokens: int = 0


@dataclass
class ChatReply:
    """What the model answered. ``reasoning`` is kept apart from the story text."""

    text: str
    reasoning: str = ""
    finish_reason: str | None = None  # stop | length | content_filter | tool_calls | ...
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    model: str = ""
    attempts: int = 1  # how many HTTP attempts the call took (retries + 1)


@runtime_checkable
class Backend(Protocol):
    """A model endpoint. ``complete`` streams text to ``on_text`` when the request streams."""

    name: str

    def complete(self, request: ChatRequest, on_text: TextCallback | None = None) -> ChatReply:
        """Run one call (with retries) and return the reply, or raise a BackendError."""
        ...

    def close(self) -> None:
        """Release connections (and nothing else: shared local servers stay up)."""
        ...


class SecretKey:
    """An API key whose value never shows in ``repr``, ``str`` or f-strings."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The key itself, for the one header that needs it."""
        return self._value

    def __repr__(self) -> str:
        return "SecretKey('***')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def redact(text: str, key: SecretKey | None) -> str:
    """``text`` (a server's reply) scrubbed of ``key`` and of every other secret
    (``credentials.scrub_text``)."""
    return scrub_text(text, [key.reveal()] if key else [])


def split_query(url: str) -> tuple[str, str]:
    """``url`` without its query, and the query with its ``?`` ("" when none), so that an
    endpoint path can be appended to a base URL such as ``https://host/v1?key=…``."""
    base, mark, query = url.partition("?")
    return base, mark + query


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace and cut to ``limit`` characters, for error messages."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@contextmanager
def backend_errors(provider: str, url: str = "") -> Iterator[None]:
    """Translate httpx failures into BackendError subclasses naming ``provider``.

    KeyboardInterrupt and every non-httpx exception pass through untouched. httpx is imported
    here, by the backends that speak HTTP, not by every command that imports this module (a
    recorded replay never opens a connection, and httpx took 0.2 s of its start-up).
    """
    import httpx

    where: Phrase | str = Phrase("http.at", {"url": scrub_url(url)}) if url else ""
    try:
        yield
    except httpx.TimeoutException as exc:
        connecting = isinstance(exc, httpx.ConnectTimeout)
        raise worded(BackendTimeout, "http.timeout_connect" if connecting else "http.timeout_reply",
                     provider=provider, where=where) from exc
    except httpx.UnsupportedProtocol as exc:
        raise worded(ConfigError, "http.not_http", provider=provider,
                     url=repr(scrub_url(url))) from exc
    except httpx.InvalidURL as exc:
        raise worded(ConfigError, "http.bad_url", provider=provider,
                     url=repr(scrub_url(url))) from exc
    except httpx.ConnectError as exc:
        raise worded(BackendUnavailable, "http.cannot_connect", provider=provider, where=where,
                     reason=one_line(str(exc), 120)) from exc
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        raise worded(BackendUnavailable, "http.dropped", provider=provider, where=where) from exc
    except httpx.HTTPError as exc:
        raise worded(BackendUnavailable, "http.failed", provider=provider,
                     kind=type(exc).__name__, where=where) from exc


def with_agent_defaults(request: ChatRequest, agent: AgentSettings | None) -> ChatRequest:
    """``request`` with the unset sampling parameters taken from the agent's settings."""
    if agent is None:
        return request
    changes: dict[str, Any] = {}
    for name in ("temperature", "top_p", "max_tokens", "presence_penalty", "frequency_penalty"):
        if getattr(request, name) is None and getattr(agent, name, None) is not None:
            changes[name] = getattr(agent, name)
    if request.stop is None and agent.stop:
        changes["stop"] = list(agent.stop)
    return replaced(request, **changes) if changes else request


def attach_attempts(error: BackendError, attempts: int) -> BackendError:
    """Record on ``error`` how many attempts were made (read by the trace writer)."""
    error.attempts = attempts
    return error
