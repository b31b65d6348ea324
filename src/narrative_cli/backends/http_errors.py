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
    ProviderError,
    QuotaError,
    RateLimited,
    RequestRejected,
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


def _reason(info: ErrorInfo) -> str:
    parts = [info.message or info.type or info.code or "no reason given"]
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
    reason = _reason(info)
    kw: dict[str, Any] = {"status": status, "retry_after": retry_after}
    if status in (400, 403, 422) and is_content_filter(info):
        return ContentFiltered(
            f"{provider}: the provider's content filter rejected the request (HTTP {status}): "
            f"{reason}",
            hint="edit or drop the flagged message; resending the same text fails the same way",
            **kw,
        )
    if status == 402 or is_quota(info):
        return QuotaError(
            f"{provider}: the account has no credit or quota left (HTTP {status}): {reason}",
            hint="top up the account or switch profile (--profile)",
            **kw,
        )
    if status in (401, 403):
        what = "the API key was refused" if status == 401 else "access was denied"
        return AuthenticationError(
            f"{provider}: {what} (HTTP {status}): {reason}",
            hint="check the key in the environment variable the profile names (api_key_env)",
            **kw,
        )
    if status == 429:
        return RateLimited(f"{provider}: rate limited (HTTP 429): {reason}", **kw)
    if status == 408:
        return BackendTimeout(f"{provider}: the server timed out (HTTP 408): {reason}", **kw)
    if status == 409 or status >= 500:
        what = "overloaded" if status in (503, 529) else "server error"
        return ProviderError(f"{provider}: {what} (HTTP {status}): {reason}", **kw)
    if status == 404:
        return RequestRejected(
            f"{provider}: not found (HTTP 404): {reason}",
            hint="check base_url and model in the profile",
            **kw,
        )
    return RequestRejected(f"{provider}: the request was refused (HTTP {status}): {reason}", **kw)


def error_from_event(provider: str, payload: Any) -> BackendError:
    """The BackendError for an ``error`` event inside a 200 stream."""
    info = parse_error_body(payload)
    reason = _reason(info)
    if is_content_filter(info):
        return ContentFiltered(f"{provider}: the content filter stopped the reply: {reason}")
    if is_quota(info):
        return QuotaError(f"{provider}: the account has no credit or quota left: {reason}")
    if (
        info.code.isdigit()
        and 400 <= int(info.code) < 500
        and int(info.code) not in (408, 409, 429)
    ):
        return RequestRejected(f"{provider}: the request was refused mid-stream: {reason}")
    return ProviderError(f"{provider}: the server reported an error mid-stream: {reason}")
