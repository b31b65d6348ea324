"""One LLM call of a turn, with everything around it: request, accounting, trace, listener.

``CallRunner.complete(agent, messages)`` builds the ``ChatRequest`` (the agent's sampling
settings, the prompt's cache breakpoints, a JSON schema when asked), sends it, and whatever
happens records the call: usage and latency in the turn's account, one ``calls.jsonl`` line
in the trace, a ``CallFinished`` event for the listener. A backend error is re-raised;
Ctrl-C becomes ``TurnCancelled``.

``CallRunner.complete_json`` adds the parse-and-retry rule of the JSON agents: parse the reply
against its schema; on failure send one corrective retry that quotes the errors; if that fails
too, return what could be recovered (maybe nothing) together with the errors, so the caller
can warn visibly and go on.

``CallRunner.guess`` sends a call ahead of time (parallel mode's speculative post tools,
``pipeline.post``) without recording it; ``take`` later records it as the turn's call only
when the messages the turn ends up needing are the very ones it was sent with, so what is
kept is exactly the call the non-speculative order would have made. A discarded guess still
costs its tokens: they go into the turn's account (never the trace, which holds the calls
the turn is made of, so recorded replay, which sends no guesses, reads the same calls).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.agents.parsing import SCENE_PARSERS, corrective_message
from narrative_cli.agents.schemas import response_format
from narrative_cli.agents.table import agent as agent_spec
from narrative_cli.agents.table import find_agent
from narrative_cli.agents.validation import Dropped
from narrative_cli.backends import ChatReply, ChatRequest
from narrative_cli.backends.base import with_agent_defaults
from narrative_cli.domain_chat import Message
from narrative_cli.errors import BackendError, TurnCancelled
from narrative_cli.pipeline.accounting import TurnAccount
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.events import (
    CallFinished,
    CallRetrying,
    Listener,
    PipelineEvent,
    TextDelta,
)
from narrative_cli.pipeline.samplers import with_preset_samplers
from narrative_cli.pipeline.trace import CallTrace, TraceWriter, request_params


@dataclass
class JsonOutcome:
    """A JSON agent's parsed reply (``value`` None: nothing usable) and what went wrong."""

    value: dict[str, Any] | None
    errors: list[str] = field(default_factory=list)
    retried: bool = False
    truncated: bool = False
    text: str = ""
    dropped: list[Dropped] = field(default_factory=list)  # left out by validation, with why
    cuts: list[str] = field(default_factory=list)  # cut to the schema's length limits

    @property
    def ok(self) -> bool:
        return self.value is not None and not self.errors


@dataclass
class Guess:
    """A call sent before the turn knew its final prompt (``CallRunner.guess``)."""

    agent: str
    request: ChatRequest
    reply: ChatReply | None  # None: the backend failed (the real call is made instead)
    started: float
    latency_ms: float


def _writes_story(agent: str) -> bool:
    """The writers (their reply is the story, streamed): the calls a speaker is named on."""
    spec = find_agent(agent)
    return spec is not None and spec.streams


class CallRunner:
    """Sends a turn's calls and records each one (thread-safe: parallel mode shares it)."""

    def __init__(
        self,
        backends: BackendSet,
        *,
        turn: int,
        mode: str,
        lang: str,
        listener: Listener,
        trace: TraceWriter | None = None,
        samplers: dict[str, Any] | None = None,
    ) -> None:
        self.backends = backends
        self.samplers = samplers or {}  # a preset's, for the writer (pipeline.samplers)
        self.turn, self.mode, self.lang = turn, mode, lang
        self.trace = trace
        self.account = TurnAccount()
        self.speaker: str | None = None  # a group scene's writer: whom it writes for (trace)
        self._listener = listener
        self._lock = threading.RLock()

    def emit(self, event: PipelineEvent) -> None:
        """Give ``event`` to the listener, one event at a time."""
        with self._lock:
            self._listener(event)

    def complete(
        self,
        agent: str,
        messages: Sequence[Message],
        *,
        stream: bool | None = None,
        schema: str | None = None,
        cache_breakpoints: Sequence[int] = (),
        attempt: int = 1,
    ) -> ChatReply:
        """Send one request for ``agent`` and return the reply (BackendError on failure).

        ``stream`` defaults to the agent's row (``agents.table``: the writers stream)."""
        if stream is None:
            spec = find_agent(agent)
            stream = spec is not None and spec.streams
        backend, _ = self.backends.get(agent)
        request = self._request(agent, messages, stream, schema, cache_breakpoints)
        on_text = self._streamer(agent) if stream else None
        started = time.perf_counter()
        try:
            reply = backend.complete(request, on_text)
        except KeyboardInterrupt:
            self._record(agent, request, attempt, None, started, "cancelled (Ctrl-C)")
            raise TurnCancelled(f"turn {self.turn} cancelled during {agent}") from None
        except BackendError as exc:
            self._record(agent, request, attempt, None, started, exc.message)
            raise
        self._record(agent, request, attempt, reply, started, None)
        return reply

    def _request(
        self,
        agent: str,
        messages: Sequence[Message],
        stream: bool,
        schema: str | None,
        cache_breakpoints: Sequence[int],
    ) -> ChatRequest:
        _, agent_settings = self.backends.get(agent)
        request = ChatRequest(
            messages=list(messages),
            agent=agent,
            json_schema=response_format(schema) if schema else None,
            stream=stream,
            cache_breakpoints=list(cache_breakpoints),
            on_retry=self._retry_notice(agent),
        )
        request = with_preset_samplers(request, self.samplers, self.backends.configured(agent))
        return with_agent_defaults(request, agent_settings)

    def guess(self, agent: str, messages: Sequence[Message]) -> Guess | None:
        """Send a plain (unstreamed, schema-less) call now and record nothing yet; None when
        the agent's backend answers from a recording (``speculates = False``: recorded
        replay has no latency to hide and must see only the turn's own calls)."""
        backend, _ = self.backends.get(agent)
        if not getattr(backend, "speculates", True):
            return None
        request = self._request(agent, messages, False, None, ())
        started = time.perf_counter()
        try:
            reply: ChatReply | None = backend.complete(request, None)
        except BackendError:
            reply = None
        measured = (time.perf_counter() - started) * 1000
        latency = reply.latency_ms if reply is not None and reply.latency_ms > 0 else measured
        return Guess(agent, request, reply, started, latency)

    def take(self, guess: Guess, messages: Sequence[Message]) -> ChatReply | None:
        """The guess's reply, recorded as this turn's call, when it was sent with exactly
        ``messages``; otherwise None (its tokens are still counted: they were spent)."""
        if guess.reply is not None and list(messages) == guess.request.messages:
            self._record(guess.agent, guess.request, 1, guess.reply, guess.started, None,
                         latency=guess.latency_ms)
            return guess.reply
        self.drop(guess)
        return None

    def drop(self, guess: Guess) -> None:
        """A guess not used: its usage goes into the turn's account, nothing else."""
        if guess.reply is not None:
            with self._lock:
                self.account.record(guess.agent, guess.reply.usage, guess.latency_ms)

    def complete_json(
        self,
        agent: str,
        messages: Sequence[Message],
        *,
        cache_breakpoints: Sequence[int] = (),
        scene: bool = False,
    ) -> JsonOutcome:
        """A schema-constrained call, parsed; one corrective retry when parsing fails.

        The schema and the parser are the agent's ``agents.table`` row; ``scene`` (a group
        turn) asks for the row's ``scene_`` variant (a plan with speakers, events naming
        members)."""
        spec = agent_spec(agent)
        if spec.schema is None:
            raise ValueError(f"agent {agent!r} does not reply in JSON")
        schema, parse = spec.schema, spec.parse
        if scene and f"scene_{schema}" in SCENE_PARSERS:
            schema = f"scene_{schema}"
            parse = SCENE_PARSERS[schema]
        reply = self.complete(agent, messages, schema=schema, cache_breakpoints=cache_breakpoints)
        first = parse(reply.text, self.lang, reply.finish_reason)
        if first.ok:
            return JsonOutcome(
                first.value, truncated=first.truncated, text=reply.text, cuts=list(first.cuts)
            )
        retry = [
            *messages,
            Message("assistant", reply.text),
            Message("user", corrective_message(first.errors, self.lang)),
        ]
        again = self.complete(
            agent, retry, schema=schema, cache_breakpoints=cache_breakpoints, attempt=2
        )
        second = parse(again.text, self.lang, again.finish_reason)
        best = second if second.value is not None or first.value is None else first
        return JsonOutcome(
            best.value,
            list(best.errors),
            retried=True,
            truncated=best.truncated,
            text=again.text,
            dropped=list(best.dropped),
            cuts=list(best.cuts),
        )

    def _retry_notice(self, agent: str) -> Callable[[int, int, BackendError, float], None]:
        def on_retry(attempt: int, attempts: int, error: BackendError, wait_s: float) -> None:
            self.emit(CallRetrying(agent, attempt, attempts, error.message, wait_s))

        return on_retry

    def _streamer(self, agent: str) -> Callable[[str], None]:
        def on_text(text: str) -> None:
            if text:
                self.emit(TextDelta(agent, text))

        return on_text

    def _record(
        self,
        agent: str,
        request: ChatRequest,
        attempt: int,
        reply: ChatReply | None,
        started: float,
        error: str | None,
        *,
        latency: float | None = None,
    ) -> None:
        if latency is None:
            measured = (time.perf_counter() - started) * 1000
            latency = reply.latency_ms if reply is not None and reply.latency_ms > 0 else measured
        usage = reply.usage if reply is not None else None
        with self._lock:
            self.account.record(agent, usage, latency, failed=error is not None)
        if self.trace is not None:
            self.trace.record_call(self._trace(agent, request, attempt, reply, latency, error))
        self.emit(
            CallFinished(
                agent=agent,
                attempt=attempt,
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                cached_tokens=usage.cached_tokens if usage else 0,
                latency_ms=latency,
                error=error or "",
                estimated=bool(usage and usage.estimated),
            )
        )

    def _trace(
        self,
        agent: str,
        request: ChatRequest,
        attempt: int,
        reply: ChatReply | None,
        latency: float,
        error: str | None,
    ) -> CallTrace:
        model = request.model or (reply.model if reply else "") or self.backends.model_of(agent)
        usage = reply.usage if reply is not None else None
        return CallTrace(
            turn=self.turn,
            agent=agent,
            mode=self.mode,
            attempt=attempt,
            model=model,
            messages=[m.to_dict() for m in request.messages],
            params=request_params(request),
            text=reply.text if reply else "",
            reasoning=reply.reasoning if reply else "",
            finish_reason=reply.finish_reason if reply else None,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            cached_tokens=usage.cached_tokens if usage else 0,
            latency_ms=latency,
            error=error,
            speaker=self.speaker if _writes_story(agent) else None,
        )
