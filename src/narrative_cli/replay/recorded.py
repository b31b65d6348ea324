"""``--responses TRACE_DIR``: a Backend that answers every call from a recorded trace.

A trace directory holds ``calls.jsonl`` (architecture §3), and a replay of several logs
writes one sub-directory per log; ``Recording.load(dir)`` reads both. Calls are keyed by
(session, turn, agent, attempt): the session is the log's label (or, for a trace of one
session, whatever it was called), and within a turn the n-th call of an agent gets the n-th
recorded call of that agent. When a trace holds a turn more than once (a turn that failed and
was played again, or a trace directory used twice), the last recording of the turn wins.

``RecordedBackend`` checks every request against the recorded one before answering: a
different prompt raises ``ReplayMismatch`` naming the log, turn and agent and showing the first
differing message and block (``replay.drift``). A recorded call that failed fails again, with
its recorded error, so a replay takes the same path as the run it repeats.

Loading indexes the files (where each call's line starts, and its session, turn, agent and
attempt: ``replay.call_index``, compact arrays); a call's request and response are read from
disk when the replay reaches it, so a replay of thousands of turns holds the index only, not
the trace.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from narrative_cli.agents.table import once_per_turn_agents
from narrative_cli.backends.base import ChatReply, ChatRequest, TextCallback, Usage
from narrative_cli.credentials import scrub
from narrative_cli.errors import BackendError, BadInput, ReplayMismatch
from narrative_cli.held import check_target
from narrative_cli.pipeline.trace import request_params
from narrative_cli.replay.call_index import CallIndex, trace_lines
from narrative_cli.replay.drift import Drift, first_difference
from narrative_cli.replay.sent import RESPONSE_KEY, Sent, same_request, without_messages

CALLS_FILE = "calls.jsonl"
SETTINGS_FILE = "replay-settings.json"  # what a recording replay needs beyond the calls
ONCE_PER_TURN = once_per_turn_agents()
DRIFT_HINT = (
    "the card, lore, settings or prompt templates changed since the trace was recorded "
    "(or it was recorded with another model profile: give the same backend flags); "
    "replay without --responses to record a new trace"
)


@dataclass(frozen=True)
class RecordedCall:
    """One line of calls.jsonl."""

    session: str
    turn: int
    agent: str
    attempt: int
    request: dict[str, Any]
    response: dict[str, Any]
    usage: dict[str, Any]
    latency_ms: float
    error: str | None
    speaker: str = ""  # a group scene's writing call: the member it wrote for
    # the line's request is, byte for byte, the JSON of the request being replayed (``Sent``)
    same_request: bool = field(default=False, compare=False)

    @classmethod
    def from_json(cls, data: Any, where: str, same_request: bool = False) -> RecordedCall:
        """A call from its JSON object; BadInput names the file and line when it is not one."""
        if not isinstance(data, dict):
            raise BadInput(f"{where}: not a trace call object")
        try:
            return cls(
                session=str(data.get("session", "")),
                turn=int(data["turn"]),
                agent=str(data["agent"]),
                attempt=int(data.get("attempt") or 1),
                request=dict(data.get("request") or {}),
                response=dict(data.get("response") or {}),
                usage=dict(data.get("usage") or {}),
                latency_ms=float(data.get("latency_ms") or 0.0),
                error=None if data.get("error") is None else str(data["error"]),
                speaker=str(data.get("speaker") or ""),
                same_request=same_request,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput(f"{where}: not a trace call ({type(exc).__name__}: {exc})") from None

    def reply(self) -> ChatReply:
        """The recorded answer as the backend gave it."""
        usage = Usage(
            prompt_tokens=int(self.usage.get("prompt_tokens") or 0),
            completion_tokens=int(self.usage.get("completion_tokens") or 0),
            cached_tokens=int(self.usage.get("cached_tokens") or 0),
        )
        return ChatReply(
            text=str(self.response.get("text") or ""),
            reasoning=str(self.response.get("reasoning") or ""),
            finish_reason=self.response.get("finish_reason"),
            usage=usage,
            latency_ms=self.latency_ms,
            model=str(self.request.get("model") or ""),
        )


@dataclass(frozen=True)
class CallRef:
    """Where one call's line is, and what picking a call needs to know about it."""

    file: Path
    offset: int
    line: int
    agent: str
    attempt: int
    speaker: str = ""
    size: int = field(default=0, compare=False)  # the line's bytes (0: read up to its end)

    def read(self, reader: TraceReader | None = None, sent: Sent | None = None) -> RecordedCall:
        """The call itself, read from its file (through ``reader``, which keeps it open).

        ``sent``: the request a replay is about to send. When the line's request is its JSON
        byte for byte (``_same_request``), the request is not decoded at all and the call is
        marked ``same_request``: the replay need not compare it (#17, session seven: decoding
        the parameters and comparing them was 3% of a replayed turn). When only the messages
        are (a parameter differs), the rest of the line is decoded without them
        (``_without_messages``: decoding every recorded prompt was 4% of a replayed turn,
        #17, session five). Anything else (a scrubbed key, another prompt) decodes the whole
        line, and the replay compares as before."""
        where = f"--responses {self.file}: line {self.line}"
        try:
            raw = (reader or TraceReader()).line(self.file, self.offset, self.size)
            if sent is not None:
                same = same_request(raw, sent)
                if same is not None:
                    return RecordedCall.from_json(same, where, same_request=True)
            data = without_messages(raw, sent) if sent is not None else None
            if data is None:
                data = json.loads(raw.decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise BadInput(f"{where}: cannot read it again ({exc})") from None
        return RecordedCall.from_json(data, where)


_READ_BUFFER = 1 << 18  # a call's line is about 30 KB: read in one go, not 8 KB at a time


class TraceReader:
    """Reads lines of a trace file, keeping the last file open: a replay reads its calls one
    after another from one file, and opening it for each call was 1.5% of a replayed turn
    (#17, session five). ``close`` when done; without a ``keep``, each read closes it."""

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._handle: BinaryIO | None = None

    def line(self, path: Path, offset: int, size: int = 0) -> bytes:
        """The line at ``offset``; ``size``: its length when known (the index noted it), read
        in one piece instead of searched for its newline byte by byte (1% of a replayed
        turn's instructions; #17, session eight)."""
        with self._lock:
            if self._handle is None or (self._path is not path and self._path != path):
                self._close()
                self._handle, self._path = path.open("rb", buffering=_READ_BUFFER), path
            try:
                self._handle.seek(offset)
                return self._handle.read(size) if size > 0 else self._handle.readline()
            finally:
                if not self.keep:
                    self._close()

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        handle, self._handle, self._path = self._handle, None, None
        if handle is not None:
            handle.close()


@dataclass
class SessionCalls:
    """The recorded calls of one session (one log), turn by turn (``turns``: a ``CallIndex``,
    compact arrays; a plain ``{turn: [CallRef, ...]}`` given here is made into one)."""

    session: str
    turns: CallIndex[CallRef] = field(default_factory=lambda: CallIndex(CallRef))
    reader: TraceReader = field(
        default_factory=lambda: TraceReader(keep=True), repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.turns, CallIndex):
            self.turns = CallIndex(CallRef, self.turns)

    def pick(
        self, turn: int, agent: str, index: int, sent: Sent | None = None
    ) -> RecordedCall | None:
        """The ``index``-th recorded call of ``agent`` in ``turn`` (0-based); ``sent``: see
        ``CallRef.read``."""
        found = self.turns.nth(turn, agent, index) if index >= 0 else None
        return None if found is None else found.read(self.reader, sent)

    def agents(self, turn: int) -> list[str]:
        """The agents recorded for ``turn``, in order, each once."""
        return list(dict.fromkeys(call.agent for call in self.turns.get(turn, [])))


class Recording:
    """Every call of a trace directory, by session and turn.

    ``context_limits`` holds the context window each agent's prompts were fitted to when the
    trace was recorded by ``narrative replay`` (``replay-settings.json``): the replay fits its
    prompts to the same windows, whatever model profile is configured now. A trace written by
    ``narrative run`` has none; the configured profile's windows are used then.
    """

    def __init__(
        self,
        directory: Path,
        sessions: dict[str, SessionCalls],
        context_limits: dict[str, int | None] | None = None,
    ) -> None:
        self.directory = directory
        self.sessions = sessions
        self.context_limits = context_limits

    @classmethod
    def load(cls, directory: str | Path) -> Recording:
        """Read ``DIR/calls.jsonl`` and ``DIR/*/calls.jsonl``; BadInput when there are none."""
        root = Path(directory)
        if not root.is_dir():
            raise BadInput(f"--responses {root}: no such trace directory")
        found = [root / CALLS_FILE] if (root / CALLS_FILE).is_file() else []
        found += sorted(p for p in root.glob(f"*/{CALLS_FILE}") if p.is_file())
        if not found:
            raise BadInput(
                f"--responses {root}: no {CALLS_FILE} in it",
                hint="record one first: narrative replay LOG --card CARD --trace DIR",
            )
        sessions: dict[str, SessionCalls] = {}
        for path in found:
            _index_calls(path, sessions)
        return cls(root, sessions, read_context_limits(root))

    def for_log(self, label: str, *, only_log: bool) -> SessionCalls:
        """The calls recorded for the log ``label`` (a one-session trace answers a lone log)."""
        if label in self.sessions:
            return self.sessions[label]
        if only_log and len(self.sessions) == 1:
            return next(iter(self.sessions.values()))
        known = ", ".join(sorted(self.sessions)) or "none"
        raise ReplayMismatch(
            f"{label}: --responses {self.directory} has no recorded calls for this log "
            f"(it holds: {known})",
            hint="record it first by replaying the log with --trace",
        )


def write_context_limits(directory: str | Path, limits: dict[str, int | None]) -> None:
    """Note in a trace directory the context window each agent's prompts were fitted to."""
    root = Path(directory)
    text = json.dumps({"context_limits": limits}, indent=1, sort_keys=True)
    check_target(root / SETTINGS_FILE, force=True, kind=f"--trace {SETTINGS_FILE}")
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / SETTINGS_FILE).write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"--trace {root}: cannot write {SETTINGS_FILE} ({exc.strerror})") from None


def read_context_limits(directory: Path) -> dict[str, int | None] | None:
    """The context windows a recording noted, or None when it noted none."""
    path = directory / SETTINGS_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        limits = data["context_limits"]
        return {str(k): None if v is None else int(v) for k, v in limits.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise BadInput(f"--responses {path}: not a replay settings file") from None


def _index_calls(path: Path, sessions: dict[str, SessionCalls]) -> None:
    """Add the calls of one calls.jsonl to ``sessions`` (each line's call checked, none kept;
    a request is decoded when the replay reaches its call)."""
    try:
        with path.open("rb") as handle:
            offset = 0
            for number, raw in enumerate(trace_lines(handle), start=1):
                _index_line(path, raw, offset, number, sessions)
                offset += len(raw)
    except OSError as exc:
        raise BadInput(f"--responses {path}: cannot read it ({exc})") from None


def _index_line(
    path: Path, raw: bytes, offset: int, number: int, sessions: dict[str, SessionCalls]
) -> None:
    where = f"--responses {path}: line {number}"
    if not raw or raw.isspace():  # ``raw.strip()`` copied every 30 KB line to look
        return
    call = _indexed(raw, path, where)
    ref = CallRef(path, offset, number, call.agent, call.attempt, call.speaker, len(raw))
    _add(sessions, call.session, call.turn, ref)


def _indexed(raw: bytes, path: Path, where: str) -> RecordedCall:
    """The call of a line, its request left out when the line allows (``_outside_request``)."""
    outside = _outside_request(raw)
    if outside is not None:
        try:
            return RecordedCall.from_json(outside, where)
        except BadInput:
            pass  # another layout: decoded whole below, which names what is wrong
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"--responses {path}: cannot read it ({exc})") from None
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise BadInput(f"{where}: invalid JSON ({exc})") from None
    return RecordedCall.from_json(data, where)


_REQUEST = b', "request": {'


def _outside_request(raw: bytes) -> dict[str, Any] | None:
    """A trace line's object without its request (``{}`` in its place), decoded from what
    comes before and after it, when the line is laid out as the trace writes it
    (``pipeline.trace``: the request after the attempt, the response after the request);
    else None. Indexing needs only the call's session, turn, agent, attempt and speaker, and
    decoding every prompt of an 80 MB trace was 3% of a 500-turn replay (#17, session six);
    the request is decoded when the replay reads the call (``CallRef.read``). A key's quote
    is never escaped and a string's always is, so the request's key is its first
    occurrence and the top-level response's key the last."""
    start, end = raw.find(_REQUEST), raw.rfind(RESPONSE_KEY)
    if start < 0 or end <= start or not _ends_object(raw):
        return None
    try:
        data = json.loads(raw[:start] + b', "request": {}' + raw[end:])
    except (UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("request") == {} else None


def _ends_object(raw: bytes) -> bool:
    """``raw.rstrip().endswith(b"}")`` without copying the line (only its end is looked at)."""
    tail = raw[-64:].rstrip()
    return tail.endswith(b"}") if tail or len(raw) <= 64 else raw.rstrip().endswith(b"}")


def _add(sessions: dict[str, SessionCalls], session: str, turn: int, ref: CallRef) -> None:
    """File a call by session and turn; a turn recorded again replaces its earlier recording
    (a group scene's writer is once per turn and speaker)."""
    calls = sessions.get(session)
    if calls is None:  # not made for every line (setdefault makes its default each time)
        calls = sessions[session] = SessionCalls(session)
    calls.turns.add(turn, ref, once_per_turn=ref.agent in ONCE_PER_TURN)


class RecordedBackend:
    """A Backend answering from ``SessionCalls``; tell it the turn with ``begin_turn``."""

    name = "recorded"
    speculates = False  # answers only the calls a turn is made of (pipeline.calls.guess)

    def __init__(self, calls: SessionCalls, log: str) -> None:
        self.calls = calls
        self.log = log
        self.model = ""
        self.turn = 0
        self._used: dict[tuple[int, str], int] = defaultdict(int)
        self._lock = threading.Lock()

    def begin_turn(self, turn: int) -> None:
        """The next calls belong to turn ``turn`` (its recorded calls are used from the start)."""
        with self._lock:
            self.turn = turn
            self._used.clear()  # only this turn's counts are read again (kept: a 2,000-turn log)

    def complete(self, request: ChatRequest, on_text: TextCallback | None = None) -> ChatReply:
        """The recorded reply for this request; ReplayMismatch when the prompt drifted."""
        with self._lock:
            turn, key = self.turn, (self.turn, request.agent)
            index = self._used[key]
            self._used[key] += 1
        sent = Sent.of(request)  # its messages made once: read and compared
        call = self.calls.pick(turn, request.agent, index, sent)
        if call is None:
            raise self._missing(turn, request.agent, index)
        drift = None if call.same_request else _drift(call, request, sent.messages)
        if drift is not None:
            raise ReplayMismatch(
                f"{self.log}: turn {turn}, {request.agent} (attempt {call.attempt}): the prompt "
                f"differs from the recorded one at {drift.where}\n" + "\n".join(drift.lines()),
                hint=DRIFT_HINT,
            )
        if call.error is not None:
            raise BackendError(call.error)
        reply = call.reply()
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply

    def close(self) -> None:
        """Close the trace file (a later call opens it again)."""
        self.calls.reader.close()

    def _missing(self, turn: int, agent: str, index: int) -> ReplayMismatch:
        recorded = self.calls.agents(turn)
        if not recorded:
            turns = sorted(self.calls.turns)
            span = f"turns {turns[0]}-{turns[-1]}" if turns else "no turns"
            what = f"the trace has no turn {turn} for this log (it recorded {span})"
        else:
            nth = f"call {index + 1} of {agent}" if index else f"a {agent} call"
            what = f"the trace recorded no {nth} (it recorded: {', '.join(recorded)})"
        return ReplayMismatch(f"{self.log}: turn {turn}: {what}", hint=DRIFT_HINT)


def _drift(
    call: RecordedCall, request: ChatRequest, messages: list[dict[str, str]]
) -> Drift | None:
    """Where ``request`` (whose ``messages`` are given as dicts) differs from the recorded one:
    compared as it is first, then as JSON gives it back, then scrubbed as the recording was
    (see ``current_request``)."""
    try:
        shaped = current_request(request, call, shaped=True, messages=messages)
        if first_difference(call.request, shaped) is None:
            return None
    except (TypeError, ValueError):  # parameters JSON cannot sort as they are: round-trip
        pass
    drift = first_difference(
        call.request, current_request(request, call, scrubbed=False, messages=messages)
    )
    if drift is not None:
        drift = first_difference(call.request, current_request(request, call, messages=messages))
    return drift


def current_request(
    request: ChatRequest,
    recorded: RecordedCall,
    *,
    scrubbed: bool = True,
    shaped: bool = False,
    messages: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """``request`` as the trace writes it, JSON round-tripped so it compares with a record.

    ``scrubbed=False`` leaves secrets in: a request equal to the recording that way is equal
    to it scrubbed too (the recording is scrubbed already, and scrubbing twice changes
    nothing), and scrubbing every prompt of a replay was a tenth of its time (#17).
    ``shaped=True``: not scrubbed and not round-tripped either. ``first_difference`` compares
    the messages' roles and texts, which JSON gives back as they were, and the parameters as
    canonical JSON, so a request equal to the recording this way is equal to it round-tripped
    (the round trip of every prompt was 2% of a replayed turn; #17, session five).
    ``messages``: the request's messages as dicts, when the caller has made them already."""
    model = request.model or str(recorded.request.get("model") or "")
    value = {
        "model": model,
        "messages": [m.to_dict() for m in request.messages] if messages is None else messages,
        **request_params(request),
    }
    if shaped:
        return value
    copied: dict[str, Any] = json.loads(
        json.dumps(scrub(value) if scrubbed else value, ensure_ascii=False)
    )
    return copied
