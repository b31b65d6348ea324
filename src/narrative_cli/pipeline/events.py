"""What a running turn tells its listener: stages, streamed text, tool results, warnings, calls.

``run_turn(..., listener=fn)`` calls ``fn(event)`` with one of the small frozen dataclasses
below, in the order things happen. The REPL renders them (a spinner per stage, the streamed
narrative, dice panels, yellow warnings, a token footer); tests collect them in a list.

Events are plain data: a listener must not raise (an exception from it would abort the turn)
and must not block for long, because the writer streams through it. In parallel mode some
events come from a worker thread; the orchestrator serialises the calls with a lock, so a
listener never runs twice at once.

Stage names, in pipeline order (``agents.table.STAGES``): ``lore``, ``templates``,
``planning``, ``tools``, ``recall``, ``writing`` (also used for the merged writer),
``analysis``, ``state``, ``post``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from narrative_cli.agents.table import stage_names

STAGES = stage_names()


@dataclass(frozen=True)
class StageStarted:
    """A pipeline stage begins."""

    stage: str


@dataclass(frozen=True)
class StageFinished:
    """A pipeline stage ended after ``elapsed_ms`` wall-clock milliseconds."""

    stage: str
    elapsed_ms: float


@dataclass(frozen=True)
class TextDelta:
    """A piece of the narrative as the writer streams it."""

    agent: str
    text: str


@dataclass(frozen=True)
class ToolResultEvent:
    """A planning or post-pipeline tool produced a result (``ok`` False: an error text)."""

    tool: str
    trigger: str
    ok: bool
    text: str  # what the player may see (a hidden roll's notice, not its result)
    data: Any = None  # a dice roll's JSON when the player may see it
    hidden: bool = False


@dataclass(frozen=True)
class TurnWarning:
    """Something went wrong but the turn goes on; the REPL shows ``message`` in yellow."""

    stage: str
    message: str


@dataclass(frozen=True)
class CallFinished:
    """One LLM call ended (``error`` is set when it failed)."""

    agent: str
    attempt: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    latency_ms: float
    error: str = ""
    estimated: bool = False


@dataclass(frozen=True)
class CallRetrying:
    """Attempt ``attempt`` of ``attempts`` of a call failed; the next starts in ``wait_s``."""

    agent: str
    attempt: int
    attempts: int
    reason: str
    wait_s: float


@dataclass(frozen=True)
class SpeakerStarted:
    """In a group scene, the writer starts on member ``name``'s reply (``index``: 0, 1, …);
    the ``TextDelta`` events that follow are that member's text."""

    name: str
    key: str
    index: int


PipelineEvent = (
    StageStarted
    | SpeakerStarted
    | StageFinished
    | TextDelta
    | ToolResultEvent
    | TurnWarning
    | CallFinished
    | CallRetrying
)
Listener = Callable[[PipelineEvent], None]


def ignore(event: PipelineEvent) -> None:
    """The listener used when the caller gives none."""
