"""The ``anthropic`` backend: the Messages API over httpx.

Leading system messages become top-level ``system`` text blocks; the rest alternate user /
assistant (same-role neighbours are merged, a conversation that opens with the assistant's
greeting gets a short user opener). Each message keeps its own text block, so a
``cache_control`` breakpoint lands exactly at the end of each stable prefix the caller names
(``ChatRequest.cache_breakpoints``, at most four: the last four are kept). Usage counts
``input_tokens`` + cache reads + cache writes as the prompt.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from narrative_cli.backends.base import ChatReply, ChatRequest, one_line, split_query
from narrative_cli.backends.http import Builder, HTTPBackend
from narrative_cli.backends.http_errors import error_from_event
from narrative_cli.backends.usage import complete_usage, from_anthropic
from narrative_cli.domain_chat import Message
from narrative_cli.errors import ContentFiltered, ProviderError, worded
from narrative_cli.safetext import clean_json

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
MAX_BREAKPOINTS = 4
OPENER = "[Start a new chat]"
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
    "tool_use": "tool_calls",
}


def to_messages(
    messages: Sequence[Message], breakpoints: Sequence[int] = ()
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) in Messages-API form, with cache breakpoints placed."""
    marks = sorted({i for i in breakpoints if 0 <= i < len(messages)})[-MAX_BREAKPOINTS:]
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    last_block: dict[str, Any] | None = None
    for index, message in enumerate(messages):
        if message.content:
            last_block = {"type": "text", "text": message.content}
            _place(last_block, message.role, system, out)
        if index in marks and last_block is not None:
            last_block["cache_control"] = {"type": "ephemeral"}
    if not out or out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": OPENER}]})
    return system, out


def _place(block: dict[str, Any], role: str, system: list[Any], out: list[dict[str, Any]]) -> None:
    if role == "system" and not out:
        system.append(block)
        return
    role = "assistant" if role == "assistant" else "user"
    if out and out[-1]["role"] == role:
        out[-1]["content"].append(block)
    else:
        out.append({"role": role, "content": [block]})


class AnthropicBuilder:
    """Collects one Messages-API reply from stream events or a whole message."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.text_parts: list[str] = []
        self.reasoning_parts: list[str] = []
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.model = ""
        self.done = False

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_parts)

    @property
    def finish_reason(self) -> str | None:
        if self.stop_reason is None:
            return None
        return _STOP_REASONS.get(self.stop_reason, self.stop_reason)

    def feed(self, data: str) -> str:
        """Take one event's data; returns the new story text."""
        try:
            event = clean_json(json.loads(data))  # an escaped lone surrogate: U+FFFD
        except (ValueError, RecursionError):
            raise worded(ProviderError, "http.malformed_event", provider=self.provider,
                         event=one_line(data, 80)) from None
        if not isinstance(event, Mapping):
            return ""
        kind = event.get("type")
        if kind == "error":
            raise error_from_event(self.provider, event)
        if kind == "message_start":
            self._message(event.get("message"))
        elif kind in ("content_block_start", "content_block_delta"):
            return self._block(event.get("content_block") or event.get("delta"))
        elif kind == "message_delta":
            self._message_delta(event)
        elif kind == "message_stop":
            self.done = True
        return ""

    def whole(self, data: Any) -> None:
        if not isinstance(data, Mapping) or not isinstance(data.get("content"), list):
            raise worded(ProviderError, "http.not_messages", provider=self.provider)
        self._message(data)
        for block in data["content"]:
            self._block(block)
        self.stop_reason = data.get("stop_reason") or self.stop_reason
        self.done = True

    def close(self) -> str:
        return ""

    def _message(self, message: Any) -> None:
        if isinstance(message, Mapping):
            self.model = str(message.get("model") or self.model)
            if isinstance(message.get("usage"), Mapping):
                self.usage.update(message["usage"])

    def _message_delta(self, event: Mapping[str, Any]) -> None:
        delta = event.get("delta")
        if isinstance(delta, Mapping) and delta.get("stop_reason"):
            self.stop_reason = str(delta["stop_reason"])
        if isinstance(event.get("usage"), Mapping):
            usage = {k: v for k, v in event["usage"].items() if v is not None}
            self.usage.update(usage)  # output_tokens is cumulative: the last value wins

    def _block(self, block: Any) -> str:
        if not isinstance(block, Mapping):
            return ""
        text = block.get("text")
        if block.get("type") in ("text", "text_delta") and isinstance(text, str):
            self.text_parts.append(text)
            return text
        thinking = block.get("thinking")
        if block.get("type") in ("thinking", "thinking_delta") and isinstance(thinking, str):
            self.reasoning_parts.append(thinking)
        return ""


class AnthropicBackend(HTTPBackend):
    """A Backend for the Anthropic Messages API (or a compatible endpoint)."""

    _no_top_p = False  # set once a model refused temperature together with top_p

    def endpoint_url(self, base_url: str) -> str:
        path, query = split_query(base_url)
        base = path.rstrip("/")
        if base.endswith("/messages"):
            return base + query
        return base + ("/messages" if base.endswith("/v1") else "/v1/messages") + query

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def headers(self, request: ChatRequest) -> dict[str, str]:
        return {"anthropic-version": API_VERSION, **super().headers(request)}

    def new_builder(self) -> Builder:
        return AnthropicBuilder(self.name)

    def build_body(self, request: ChatRequest, model: str) -> dict[str, Any]:
        """The JSON body this backend sends for ``request``."""
        system, messages = to_messages(request.messages, request.cache_breakpoints)
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": messages,
        }
        if system:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.top_p is not None and not self._no_top_p:
            body["top_p"] = request.top_p
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if request.stream:
            body["stream"] = True
        body.update(self.profile.extra_body)
        body.update(request.extra)
        return body

    def step_down(self, message: str, body: dict[str, Any]) -> bool:
        """Newer models refuse temperature together with top_p: drop top_p."""
        if "top_p" in body and "top_p" in message:
            self._no_top_p = True
            return True
        return False

    def finish(self, builder: Builder, request: ChatRequest, model: str) -> ChatReply:
        assert isinstance(builder, AnthropicBuilder)
        if builder.stop_reason == "refusal":
            raise worded(ContentFiltered, "http.declined", ("http.rephrase_short_hint", {}),
                         provider=self.name)
        usage = complete_usage(from_anthropic(builder.usage), request.messages, builder.text)
        return ChatReply(
            text=builder.text,
            reasoning=builder.reasoning,
            finish_reason=builder.finish_reason,
            usage=usage,
            model=builder.model or model,
        )
