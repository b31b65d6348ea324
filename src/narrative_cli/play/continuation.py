"""``/continue``: the writer picks up the last reply where it stopped, in the same turn.

The turn is rerun from the snapshot before it (so the analysis sees the whole, longer reply
and the state is computed once, not twice) with the writing agents wrapped: their request
gets the reply so far as an assistant message and a short "go on" user message, and their
answer is the reply so far followed by the new text. Only the new text streams.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from narrative_cli.agents.table import streaming_agents
from narrative_cli.backends.base import Backend, ChatReply, ChatRequest
from narrative_cli.config import AgentSettings
from narrative_cli.domain import Message
from narrative_cli.pipeline.backendset import BackendSet

WRITERS = streaming_agents()
INSTRUCTION = {
    "zh": "（继续：从上文结尾处接着写下去，不要重复已经写过的内容。）",
    "en": "(Continue the story from exactly where it stops. Do not repeat what is written.)",
}


class ContinuingBackend:
    """A writer backend that continues ``so_far`` instead of starting afresh."""

    def __init__(self, inner: Backend, so_far: str, lang: str, block: str = "") -> None:
        self.inner = inner
        self.so_far = so_far
        self.lang = lang
        self.block = block  # the reply's MVU update block, applied again unless a new one comes
        self.name = getattr(inner, "name", "continue")
        self.model = getattr(inner, "model", "")

    def complete(
        self, request: ChatRequest, on_text: Callable[[str], None] | None = None
    ) -> ChatReply:
        """Ask for the continuation; the reply text is the old text plus the new one."""
        from narrative_cli.pipeline.stages import clean_narrative

        messages = [
            *request.messages,
            Message("assistant", self.so_far),
            Message("user", INSTRUCTION["zh" if self.lang == "zh" else "en"]),
        ]
        reply = self.inner.complete(replace(request, messages=messages), on_text)
        from narrative_cli.state.mvu_commands import has_update

        new_text = clean_narrative(reply.text)
        joined = f"{self.so_far.rstrip()}\n\n{new_text}" if new_text else ""
        if joined and self.block and not has_update(new_text):
            joined = f"{joined}\n\n{self.block}"
        return replace(reply, text=joined)

    def close(self) -> None:
        """The wrapped backend belongs to the session; nothing to close here."""


class ContinuedBackends(BackendSet):
    """The session's backends with the writing agents continuing ``so_far``."""

    def __init__(self, inner: BackendSet, so_far: str, lang: str, block: str = "") -> None:
        super().__init__(settings=inner.settings, fixed=inner.fixed, opener=inner.opener)
        self.inner = inner
        self.so_far = so_far
        self.lang = lang
        self.block = block

    def get(self, agent: str) -> tuple[Backend, AgentSettings]:
        backend, settings = self.inner.get(agent)
        if agent in WRITERS:
            return ContinuingBackend(backend, self.so_far, self.lang, self.block), settings
        return backend, settings

    def model_of(self, agent: str) -> str:
        return self.inner.model_of(agent)

    def context_limit(self, agent: str) -> int | None:
        return self.inner.context_limit(agent)

    def close(self) -> None:
        """The inner set belongs to the session and is closed with it."""

    def __exit__(self, *exc: Any) -> None:
        self.close()
