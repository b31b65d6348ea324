"""The ``openai`` backend: any OpenAI-compatible Chat Completions server over httpx.

Works with OpenAI, DeepSeek, OpenRouter, Ollama ``/v1``, llama.cpp, vLLM, KoboldCpp, LM Studio
and Gemini's compatible endpoint. It sends only the fields that are set, picks ``max_tokens``
or ``max_completion_tokens`` and the strongest JSON mode the target accepts (``json_schema``,
else ``json_object``, else plain text; it steps down when a server refuses one), streams with
``include_usage``, and keeps reasoning apart from the story.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from narrative_cli.backends.base import ChatReply, ChatRequest, split_query
from narrative_cli.backends.http import Builder, HTTPBackend
from narrative_cli.backends.openai_stream import ReplyBuilder
from narrative_cli.backends.retry import Retrier
from narrative_cli.backends.usage import complete_usage, from_openai
from narrative_cli.config import AgentSettings, Profile
from narrative_cli.errors import ContentFiltered, worded

_FORMATS = ("json_schema", "json_object", "none")
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output")


def chat_url(base_url: str) -> str:
    """The Chat Completions URL for a base URL (``…/v1`` or the full endpoint)."""
    path, query = split_query(base_url)
    base = path.rstrip("/")
    return (base if base.endswith("/chat/completions") else base + "/chat/completions") + query


class OpenAIBackend(HTTPBackend):
    """A Backend for one OpenAI-compatible endpoint (and, usually, one agent)."""

    def __init__(
        self,
        profile: Profile,
        agent: AgentSettings | None = None,
        *,
        api_key: str | None = None,
        retrier: Retrier | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(profile, agent, api_key=api_key, retrier=retrier, transport=transport)
        host = urlsplit(self.url).hostname or ""
        self.max_tokens_field = _default_max_field(profile.max_tokens_field, host)
        self.json_mode = _default_format(profile.response_format, host)
        self.usage_in_stream = True

    def endpoint_url(self, base_url: str) -> str:
        return chat_url(base_url)

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def new_builder(self) -> Builder:
        return ReplyBuilder(self.name)

    def build_body(self, request: ChatRequest, model: str) -> dict[str, Any]:
        """The JSON body this backend sends for ``request``."""
        body: dict[str, Any] = {"model": model, "messages": [m.to_dict() for m in request.messages]}
        for name in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
            if getattr(request, name) is not None:
                body[name] = getattr(request, name)
        if request.max_tokens is not None:
            body[self.max_tokens_field] = request.max_tokens
        if request.stop:
            body["stop"] = list(request.stop)
        if request.json_schema and self.json_mode != "none":
            body["response_format"] = _response_format(self.json_mode, request.json_schema)
        if request.stream:
            body["stream"] = True
            if self.usage_in_stream:
                body["stream_options"] = {"include_usage": True}
        body.update(self.profile.extra_body)
        body.update(request.extra)
        return body

    def step_down(self, message: str, body: dict[str, Any]) -> bool:
        """Switch the token-limit field, weaken the JSON mode, or drop stream_options."""
        lowered = message.lower()
        if "max_completion_tokens" in lowered and self.max_tokens_field == "max_tokens":
            self.max_tokens_field = "max_completion_tokens"
        elif "max_tokens" in lowered and self.max_tokens_field == "max_completion_tokens":
            self.max_tokens_field = "max_tokens"
        elif "response_format" in body and any(w in lowered for w in _FORMAT_WORDS):
            self.json_mode = _FORMATS[_FORMATS.index(self.json_mode) + 1]
        elif "stream_options" in body and "stream_options" in lowered:
            self.usage_in_stream = False
        else:
            return False
        return True

    def finish(self, builder: Builder, request: ChatRequest, model: str) -> ChatReply:
        assert isinstance(builder, ReplyBuilder)
        text = builder.text
        if builder.finish_reason == "content_filter":
            raise worded(ContentFiltered, "http.withheld", ("http.rephrase_hint", {}),
                         provider=self.name)
        if builder.refusal and not text:
            raise worded(ContentFiltered, "http.model_refused", provider=self.name,
                         reason=builder.refusal)
        usage = complete_usage(from_openai(builder.usage, builder.timings), request.messages, text)
        return ChatReply(
            text=text,
            reasoning=builder.reasoning,
            finish_reason=builder.finish_reason,
            usage=usage,
            model=builder.model or model,
        )


def _default_max_field(setting: str, host: str) -> str:
    if setting != "auto":
        return setting
    return "max_completion_tokens" if host.endswith("api.openai.com") else "max_tokens"


def _default_format(setting: str, host: str) -> str:
    if setting != "auto":
        return setting
    return "json_object" if host.endswith("deepseek.com") else "json_schema"


def _response_format(mode: str, schema: dict[str, Any]) -> dict[str, Any]:
    if mode == "json_object":
        return {"type": "json_object"}
    inner = schema.get("schema", schema)
    return {
        "type": "json_schema",
        "json_schema": {"name": str(schema.get("name") or "reply"), "schema": inner},
    }
