"""Turn a provider's error reply (an HTTP status or an error event) into one clear BackendError.

Every message reads ``<provider>: <what happened> (HTTP <status>): <provider's reason>``. The
reason comes from whichever error shape the provider uses: OpenAI ``{"error": {...}}``,
Anthropic ``{"type": "error", "error": {...}}``, Gemini's one-element list, vLLM's flat
``{"object": "error"}``, Ollama's ``{"error": "text"}`` or FastAPI's ``{"detail": ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from narrative_cli.backends.base import one_line
from narrative_cli.errors import (
    AuthenticationError,
    BackendError,
    BackendTimeout,
    ContentFiltered,
    Phrase,
    ProviderError,
    QuotaError,
    RateLimited,
    RequestRejected,
    worded,
)

# Lower-cased markers of moderation rejections (llm-protocols §5).
_FILTER_MARKERS = (
    "content_filter",
    "content filter",
    "data_inspection_failed",
    "datainspectionfailed",
    "sensitive",
    "content exists risk",
    "high risk",
    "moderation",
    "flagged",
    "inappropriate content",
    "不安全或敏感",
)
_FILTER_CODES = frozenset({"1301", "1026", "1027"})
_QUOTA_MARKERS = ("insufficient_quota", "insufficient balance", "insufficient_balance", "billing")


@dataclass
class ErrorInfo:
    """The parts of an error body we act on."""

    message: str = ""
    type: str = ""
    code: str = ""
    metadata: Any = None


def parse_error_body(body: Any) -> ErrorInfo:
    """Pull message, type and code out of any known error shape (or plain text)."""
    if isinstance(body, bytes | str):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            body = json.loads(text)
        except ValueError:
            return ErrorInfo(message=one_line(text, 200))
    if isinstance(body, list) and body:
        body = body[0]
    if not isinstance(body, Mapping):
        return ErrorInfo(message=one_line(str(body), 200))
    inner = body.get("error", body)
    if isinstance(inner, str):
        return ErrorInfo(message=inner, type=str(body.get("type") or ""))
    if not isinstance(inner, Mapping):
        inner = body
    detail = inner.get("detail")
    message = inner.get("message") or inner.get("msg") or _detail_text(detail) or ""
    return ErrorInfo(
        message=str(message),
        type=str(inner.get("type") or inner.get("status") or ""),
        code=str(inner.get("code") if inner.get("code") is not None else ""),
        metadata=inner.get("metadata"),
    )


def _detail_text(detail: Any) -> str:
    if isinstance(detail, str):
        return detail
    if isinstance(detail, Mapping):
        return str(detail.get("msg") or detail.get("message") or detail.get("error") or "")
    return ""


def is_content_filter(info: ErrorInfo) -> bool:
    """Whether an error is a moderation / safety rejection."""
    haystack = f"{info.type} {info.code} {info.message}".lower()
    if info.code in _FILTER_CODES:
        return True
    if isinstance(info.metadata, Mapping) and (
        "reasons" in info.metadata or "flagged_input" in info.metadata
    ):
        return True
    return any(marker in haystack for marker in _FILTER_MARKERS)


def is_quota(info: ErrorInfo) -> bool:
    """Whether an error says the account is out of credit (no retry can help)."""
    haystack = f"{info.type} {info.code} {info.message}".lower()
    return any(marker in haystack for marker in _QUOTA_MARKERS)


def _reason(info: ErrorInfo) -> Phrase | str:
    """The provider's own reason, as it wrote it ("no reason given", in the reader's language,
    when it gave none)."""
    if not (info.message or info.type or info.code):
        return Phrase("http.no_reason")
    parts = [info.message or info.type or info.code]
    if info.type and info.message and info.type not in info.message:
        parts.append(f"[{info.type}]")
    return one_line(" ".join(parts), 300)


def error_from_status(
    provider: str,
    status: int,
    body: Any,
    *,
    retry_after: float | None = None,
    should_retry: bool | None = None,
) -> BackendError:
    """The BackendError for an HTTP error status and its body."""
    info = parse_error_body(body)
    error = _classify(provider, status, info, retry_after)
    if should_retry is not None and not isinstance(error, QuotaError | ContentFiltered):
        error.retryable = should_retry  # the server's x-should-retry header wins
    return error


def _classify(
    provider: str, status: int, info: ErrorInfo, retry_after: float | None
) -> BackendError:
    init = {"status": status, "retry_after": retry_after}
    said: dict[str, Any] = {"provider": provider, "status": status, "reason": _reason(info)}
    if status in (400, 403, 422) and is_content_filter(info):
        return worded(ContentFiltered, "http.filtered", ("http.filtered_hint", {}), init=init,
                      **said)
    if status == 402 or is_quota(info):
        return worded(QuotaError, "http.quota", ("http.quota_hint", {}), init=init, **said)
    if status in (401, 403):
        return worded(AuthenticationError, "http.key_refused" if status == 401 else "http.denied",
                      ("http.auth_hint", {}), init=init, **said)
    if status == 429:
        return worded(RateLimited, "http.rate_limited", init=init, **said)
    if status == 408:
        return worded(BackendTimeout, "http.server_timeout", init=init, **said)
    if status == 409 or status >= 500:
        busy = status in (503, 529)
        return worded(ProviderError, "http.overloaded" if busy else "http.server_error",
                      init=init, **said)
    if status == 404:
        return worded(RequestRejected, "http.not_found", ("http.not_found_hint", {}), init=init,
                      **said)
    return worded(RequestRejected, "http.refused", init=init, **said)


def error_from_event(provider: str, payload: Any) -> BackendError:
    """The BackendError for an ``error`` event inside a 200 stream."""
    info = parse_error_body(payload)
    said: dict[str, Any] = {"provider": provider, "reason": _reason(info)}
    if is_content_filter(info):
        return worded(ContentFiltered, "http.event_filtered", **said)
    if is_quota(info):
        return worded(QuotaError, "http.event_quota", **said)
    if (
        info.code.isdigit()
        and 400 <= int(info.code) < 500
        and int(info.code) not in (408, 409, 429)
    ):
        return worded(RequestRejected, "http.event_refused", **said)
    return worded(ProviderError, "http.event_error", **said)
