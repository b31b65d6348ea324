"""``--trace DIR``: every LLM call as JSON lines, and every turn as readable Markdown.

The format is a contract (architecture §3):

- ``DIR/calls.jsonl``: one JSON object per LLM call, appended when the call ends, also when it
  fails, with exactly the keys ``session, turn, agent, mode, attempt, request, response,
  usage, latency_ms, error``, plus ``speaker`` (the member's name) on a group scene's
  writing calls. ``request`` holds ``model``, ``messages`` and the sampling
  parameters that were set; ``response`` holds ``text``, ``reasoning``, ``finish_reason``;
  ``usage`` holds ``prompt_tokens``, ``completion_tokens``, ``cached_tokens``.
- ``DIR/turn-0001.md``: the same calls as readable text, then the tool results, the applied
  and rejected state events, summary entries, MVU patches, warnings, prompt-budget cuts and
  the state after the turn. A turn that failed gets its file too, ending with the error.

Usage by the orchestrator::

    writer = TraceWriter(Path("trace"), session="s1")
    writer.record_call(CallTrace(turn=1, agent="writing", mode="serial", attempt=1, ...))
    writer.finish_turn(result)          # or writer.fail_turn(1, "serial", error)

API keys never reach a trace: requests carry none, and ``credentials.scrub`` (what a secret
is, in one place) masks credential-named keys, URL credentials and known keys before writing.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from narrative_cli import held
from narrative_cli.credentials import is_secret_name, scrub, scrub_text
from narrative_cli.errors import BadInput, NarrativeError
from narrative_cli.safetext import clean_surrogates

if TYPE_CHECKING:
    from narrative_cli.pipeline.story import TurnResult

PRESET_EXTRA_KEYS = ("top_k", "min_p", "top_a", "repetition_penalty", "seed", "reasoning_effort")
_REQUEST_PARAMS = (
    "temperature",
    "top_p",
    "max_tokens",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "json_schema",
    "stream",
    "cache_breakpoints",
)


@dataclass
class CallTrace:
    """One finished (or failed) LLM call, as the trace records it."""

    turn: int
    agent: str
    mode: str
    attempt: int
    model: str
    messages: list[dict[str, str]]
    params: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    reasoning: str = ""
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    latency_ms: float = 0.0
    error: str | None = None
    speaker: str | None = None  # a group scene's writing call: the member it writes for

    def to_json(self, session: str) -> dict[str, Any]:
        """The calls.jsonl object, with exactly the architecture §3 keys."""
        params = {k: v for k, v in self.params.items() if not is_secret_name(k)}  # not ours
        request = {"model": self.model, "messages": self.messages, **params}
        traced: dict[str, Any] = scrub(
            {
                "session": session,
                "turn": self.turn,
                "agent": self.agent,
                "mode": self.mode,
                "attempt": self.attempt,
                "request": request,
                "response": {
                    "text": self.text,
                    "reasoning": self.reasoning,
                    "finish_reason": self.finish_reason,
                },
                "usage": {
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "cached_tokens": self.cached_tokens,
                },
                "latency_ms": round(self.latency_ms, 1),
                "error": self.error,
                # added for group scenes (issue 19); absent from every other call
                **({"speaker": self.speaker} if self.speaker else {}),
            }
        )
        return traced


def request_params(request: Any) -> dict[str, Any]:
    """The sampling parameters of a ChatRequest that are set (None and empty left out), with
    the preset's provider sampling fields (``top_k``, ``min_p`` …) when sent."""
    params: dict[str, Any] = {}
    for name in _REQUEST_PARAMS:
        value = getattr(request, name, None)
        if value is None or value == []:
            continue
        params[name] = value
    extra = getattr(request, "extra", None) or {}
    params.update({k: v for k, v in extra.items() if k in PRESET_EXTRA_KEYS})
    return params


class TraceWriter:
    """Writes ``calls.jsonl`` as calls end and ``turn-NNNN.md`` when a turn ends."""

    def __init__(self, directory: Path | str, session: str = "") -> None:
        self.directory = Path(directory)
        self.session = session
        self._calls: list[CallTrace] = []
        self._lock = threading.Lock()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _io_error(self.directory, "cannot create it", exc) from None

    @property
    def calls_file(self) -> Path:
        return self.directory / "calls.jsonl"

    def turn_file(self, number: int) -> Path:
        return self.directory / f"turn-{number:04d}.md"

    def record_call(self, call: CallTrace) -> None:
        """Append one call to calls.jsonl (thread-safe) and keep it for the turn file."""
        line = clean_surrogates(json.dumps(call.to_json(self.session), ensure_ascii=False))
        with self._lock:
            self._calls.append(call)
            self._append(line)

    def finish_turn(self, result: TurnResult) -> Path:
        """Write turn-NNNN.md for a finished turn; returns its path."""
        from narrative_cli.pipeline.trace_text import turn_markdown

        with self._lock:
            calls, self._calls = self._calls, []
        return self._write(result.number, turn_markdown(result, calls, self.session))

    def fail_turn(self, number: int, mode: str, error: str) -> Path:
        """Write turn-NNNN.md for a turn that failed or was cancelled (nothing committed)."""
        from narrative_cli.pipeline.trace_text import failed_turn_markdown

        with self._lock:
            calls, self._calls = self._calls, []
        return self._write(number, failed_turn_markdown(number, mode, calls, error, self.session))

    def _append(self, line: str) -> None:
        _check_trace_file(self.calls_file)
        try:
            with self.calls_file.open("a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        except OSError as exc:
            raise _io_error(self.calls_file, "cannot write", exc) from None

    def _write(self, number: int, text: str) -> Path:
        path = self.turn_file(number)
        _check_trace_file(path)
        try:
            path.write_text(clean_surrogates(scrub_text(text)), encoding="utf-8")
        except OSError as exc:
            raise _io_error(path, "cannot write", exc) from None
        return path


def _check_trace_file(path: Path) -> None:
    """A trace file is ours to append or rewrite, but never the open database (or a link to
    it) and never a FIFO or a directory: those are refused before anything is written."""
    what = held.protected(path)
    if what is not None:
        raise BadInput(f"--trace {path}: refusing to write the trace over {what}",
                       hint="give --trace a directory of its own")
    if os.path.lexists(path) and not path.is_file():
        raise BadInput(f"--trace {path}: is not a regular file; refusing to write to it")


def _io_error(path: Path, what: str, exc: OSError) -> NarrativeError:
    return NarrativeError(f"--trace {path}: {what} ({exc.strerror or exc})")


def read_calls(directory: Path | str) -> list[dict[str, Any]]:
    """The call objects of a trace directory's calls.jsonl, in order."""
    path = Path(directory) / "calls.jsonl"
    lines: Sequence[str] = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]
