"""``/continue`` and ``/edit --reply``: a turn rerun with the writers' answers given.

``/continue``: the writer picks up the last reply where it stopped, in the same turn. The
turn is rerun from the snapshot before it (so the analysis sees the whole, longer reply and
the state is computed once, not twice) with the writing agents wrapped: their answer is the
reply so far followed by the new text, and only the new text streams. The request is
assembled as SillyTavern's Chat Completion does for ``continue`` (``openai.js``
``populateChatHistory``, ``script.js`` ``Generate``) when a preset is given: the reply being
continued is not in the chat history, the preset's ``continue_nudge_prompt`` (SillyTavern's
default when the preset has none) closes the request as a system message with
``{{lastChatMessage}}`` the reply so far, and the new text is joined to it with the
preset's ``continue_postfix`` (a space by default) unless the reply already ends in a space.
Without a preset the reply so far is an assistant message followed by a short "go on" user
message, and the parts are joined by a blank line.

``/edit --reply``: the player's edited reply is the writer's answer (no writing call), the
planner's answer is the one stored with the turn (same tool calls, same dice from the turn's
random stream), and analysis, post tools and MVU extraction run again on the edited text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from narrative_cli.agents.table import streaming_agents
from narrative_cli.backends.base import Backend, ChatReply, ChatRequest
from narrative_cli.config import AgentSettings
from narrative_cli.domain_chat import Message
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.story import Story

WRITERS = streaming_agents()
INSTRUCTION = {
    "zh": "（继续：从上文结尾处接着写下去，不要重复已经写过的内容。）",
    "en": "(Continue the story from exactly where it stops. Do not repeat what is written.)",
}
# SillyTavern's defaults (public/scripts/openai.js, 1.12.x)
ST_CONTINUE_NUDGE = (
    "[Continue the following message. Do not include ANY parts of the original message. Use"
    " capitalization and punctuation as if your reply is a part of the original message:"
    " {{lastChatMessage}}]"
)
ST_CONTINUE_POSTFIX = " "
_LAST_MESSAGE = "{{lastChatMessage}}"


def continue_nudge(story: Story, so_far: str) -> tuple[str, str] | None:
    """(the nudge message, the postfix) SillyTavern would use with the story's preset; None
    without a preset (our own instruction is used then)."""
    if story.preset is None:
        return None
    from narrative_cli.context.macros import env_for, expand

    extra = story.preset.extra
    nudge = str(extra.get("continue_nudge_prompt") or ST_CONTINUE_NUDGE)
    nudge = _replace_macro(nudge, _LAST_MESSAGE, so_far.strip())
    postfix = extra.get("continue_postfix", ST_CONTINUE_POSTFIX)
    env = env_for(story.card, story.persona, lang=story.lang)
    return expand(nudge, env), postfix if isinstance(postfix, str) else ST_CONTINUE_POSTFIX


def _replace_macro(text: str, macro: str, value: str) -> str:
    lower, key = text.lower(), macro.lower()
    out, start = [], 0
    while (found := lower.find(key, start)) >= 0:
        out += [text[start:found], value]
        start = found + len(macro)
    return "".join([*out, text[start:]])


class ContinuingBackend:
    """A writer backend that continues ``so_far`` instead of starting afresh."""

    def __init__(
        self,
        inner: Backend,
        so_far: str,
        lang: str,
        block: str = "",
        nudge: tuple[str, str] | None = None,
    ) -> None:
        self.inner = inner
        self.so_far = so_far
        self.lang = lang
        self.block = block  # the reply's MVU update block, applied again unless a new one comes
        self.nudge = nudge  # (message, postfix) with a preset: SillyTavern's assembly
        self.name = getattr(inner, "name", "continue")
        self.model = getattr(inner, "model", "")

    def complete(
        self, request: ChatRequest, on_text: Callable[[str], None] | None = None
    ) -> ChatReply:
        """Ask for the continuation; the reply text is the old text plus the new one."""
        from narrative_cli.pipeline.stages import clean_narrative
        from narrative_cli.state.mvu_commands import has_update

        if self.nudge is not None:
            messages = [*request.messages, Message("system", self.nudge[0])]
        else:
            messages = [
                *request.messages,
                Message("assistant", self.so_far),
                Message("user", INSTRUCTION["zh" if self.lang == "zh" else "en"]),
            ]
        reply = self.inner.complete(replace(request, messages=messages), on_text)
        new_text = clean_narrative(reply.text)
        joined = self._join(new_text) if new_text else ""
        if joined and self.block and not has_update(new_text):
            joined = f"{joined}\n\n{self.block}"
        return replace(reply, text=joined)

    def _join(self, new_text: str) -> str:
        if self.nudge is None:
            return f"{self.so_far.rstrip()}\n\n{new_text}"
        head = self.so_far if self.so_far.endswith(" ") else self.so_far + self.nudge[1]
        return head + new_text

    def close(self) -> None:
        """The wrapped backend belongs to the session; nothing to close here."""


class GivenBackend:
    """Answers with a given text instead of calling the model (the player's edited reply,
    the stored plan); a streaming request gets the text as one piece."""

    def __init__(self, inner: Backend, text: str) -> None:
        self.text = text
        self.name = "given"
        self.model = getattr(inner, "model", "")

    def complete(
        self, request: ChatRequest, on_text: Callable[[str], None] | None = None
    ) -> ChatReply:
        if on_text is not None and request.stream:
            on_text(self.text)
        return ChatReply(text=self.text, finish_reason="stop", model=self.model)

    def close(self) -> None:
        """Nothing opened."""


Wrap = Callable[[str, Backend], Backend | None]  # (agent, backend) -> replacement or None


class WrappedBackends(BackendSet):
    """The session's backends with some agents answered differently (``wrap``)."""

    def __init__(self, inner: BackendSet, wrap: Wrap) -> None:
        super().__init__(settings=inner.settings, fixed=inner.fixed, opener=inner.opener)
        self.inner = inner
        self.wrap = wrap

    def get(self, agent: str) -> tuple[Backend, AgentSettings]:
        backend, settings = self.inner.get(agent)
        return self.wrap(agent, backend) or backend, settings

    def model_of(self, agent: str) -> str:
        return self.inner.model_of(agent)

    def context_limit(self, agent: str) -> int | None:
        return self.inner.context_limit(agent)

    def close(self) -> None:
        """The inner set belongs to the session and is closed with it."""

    def __exit__(self, *exc: Any) -> None:
        self.close()


def continued_backends(
    inner: BackendSet, so_far: str, lang: str, block: str = "", nudge: tuple[str, str] | None = None
) -> WrappedBackends:
    """The backends of a ``/continue``: the writers continue ``so_far``."""

    def wrap(agent: str, backend: Backend) -> Backend | None:
        if agent in WRITERS:
            return ContinuingBackend(backend, so_far, lang, block, nudge)
        return None

    return WrappedBackends(inner, wrap)


def edited_backends(
    inner: BackendSet, reply: str, block: str, plan: dict[str, Any] | None
) -> WrappedBackends:
    """The backends of an ``/edit --reply``: the writers answer ``reply`` (with the turn's
    MVU block unless the edit has its own), the planner the stored ``plan``."""
    from narrative_cli.state.mvu_commands import has_update

    text = f"{reply}\n\n{block}" if block and not has_update(reply) else reply

    def wrap(agent: str, backend: Backend) -> Backend | None:
        if agent in WRITERS:
            return GivenBackend(backend, text)
        if agent == "planning" and plan is not None:
            return GivenBackend(backend, json.dumps(plan, ensure_ascii=False))
        return None

    return WrappedBackends(inner, wrap)
