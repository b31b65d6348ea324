"""Assembling an OpenAI-compatible reply, streamed or whole.

``ReplyBuilder`` takes the decoded chunks of a Chat Completions stream (or one whole
completion) and keeps the story text, the reasoning text, the finish reason, the usage and the
llama.cpp timings apart. Reasoning arrives as ``reasoning_content`` (DeepSeek, llama.cpp) or
``reasoning`` (vLLM, OpenRouter, Ollama); a leading ``<think>…</think>`` block inside the
content (LM Studio, raw llama.cpp) is moved to the reasoning as well.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from narrative_cli.backends.base import one_line
from narrative_cli.backends.http_errors import error_from_event
from narrative_cli.errors import ProviderError, worded
from narrative_cli.safetext import clean_json

_OPEN, _CLOSE = "<think>", "</think>"


class ThinkSplitter:
    """Moves a leading ``<think>…</think>`` block out of streamed content."""

    def __init__(self) -> None:
        self.pending = ""
        self.state = "start"  # start → (think →) text
        self.reasoning = ""

    def feed(self, delta: str) -> str:
        """The part of ``delta`` that is story text."""
        if self.state == "text":
            return delta
        self.pending += delta
        if self.state == "start":
            head = self.pending.lstrip()
            if _OPEN.startswith(head):
                return ""  # could still become "<think>"
            if not head.startswith(_OPEN):
                self.state = "text"
                out, self.pending = self.pending, ""
                return out
            self.state = "think"
            self.pending = head[len(_OPEN) :]
        end = self.pending.find(_CLOSE)
        if end < 0:
            return ""
        self.reasoning += self.pending[:end]
        self.state = "text"
        out, self.pending = self.pending[end + len(_CLOSE) :].lstrip("\n"), ""
        return out

    def finish(self) -> str:
        """Text still held at the end (an unclosed think block counts as reasoning)."""
        if self.state == "think":
            self.reasoning += self.pending
            self.pending = ""
        out, self.pending = self.pending, ""
        return out


class ReplyBuilder:
    """Collects one reply from stream chunks (``feed``) or a whole completion (``whole``)."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.text_parts: list[str] = []
        self.reasoning_parts: list[str] = []
        self.refusal = ""
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.timings: Mapping[str, Any] | None = None
        self.model = ""
        self.done = False
        self.think = ThinkSplitter()

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def reasoning(self) -> str:
        return "".join(self.reasoning_parts) + self.think.reasoning

    def feed(self, data: str) -> str:
        """Take one SSE ``data`` payload; returns the new story text it carried."""
        if data.strip() == "[DONE]":
            self.done = True
            return ""
        chunk = self._decode(data)
        self._common(chunk)
        out = []
        for choice in chunk.get("choices") or []:
            if isinstance(choice, Mapping) and not choice.get("index"):
                out.append(self._take(choice.get("delta"), choice.get("finish_reason")))
        return "".join(out)

    def whole(self, data: Any) -> None:
        """Take a non-streamed completion body."""
        if not isinstance(data, Mapping):
            raise worded(ProviderError, "http.not_object", provider=self.provider)
        self._common(data)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise worded(ProviderError, "http.no_choices", provider=self.provider)
        self._take(choices[0].get("message"), choices[0].get("finish_reason"))
        self.done = True

    def close(self) -> str:
        """Flush what the think splitter still holds; returns text not yet shown."""
        rest = self.think.finish()
        if rest:
            self.text_parts.append(rest)
        return rest

    def _decode(self, data: str) -> Mapping[str, Any]:
        try:
            chunk = clean_json(json.loads(data))  # an escaped lone surrogate: U+FFFD
        except (ValueError, RecursionError):
            raise worded(ProviderError, "http.malformed_event", provider=self.provider,
                         event=one_line(data, 80)) from None
        if not isinstance(chunk, Mapping):
            raise worded(ProviderError, "http.event_not_object", provider=self.provider)
        return chunk

    def _common(self, chunk: Mapping[str, Any]) -> None:
        if "error" in chunk or chunk.get("object") == "error":
            raise error_from_event(self.provider, chunk)
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), Mapping):
            self.timings = chunk["timings"]
        if chunk.get("model"):
            self.model = str(chunk["model"])

    def _take(self, message: Any, finish_reason: Any) -> str:
        if finish_reason not in (None, "", "null"):
            self.finish_reason = str(finish_reason)
        if not isinstance(message, Mapping):
            return ""
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str):
            self.reasoning_parts.append(reasoning)
        if isinstance(message.get("refusal"), str):
            self.refusal += message["refusal"]
        content = message.get("content")
        if not isinstance(content, str) or not content:
            return ""
        shown = self.think.feed(content)
        if shown:
            self.text_parts.append(shown)
        return shown
