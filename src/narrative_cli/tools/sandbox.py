"""Run a code tool's JavaScript inside QuickJS, with nothing of the host reachable.

Two walls. Inside, every call gets a fresh QuickJS context with no module loader and no host
functions (no files, no network, no Python), a time limit, a memory limit and a stack limit;
nothing a tool does to globals, prototypes or built-ins reaches the next call. Outside, QuickJS
runs in a long-lived helper process: a tool that hangs the engine in native code (a
catastrophic regex backtrack is not interrupted by QuickJS) or crashes it (``JSON.stringify``
of a very deeply nested value) gets the helper killed and restarted, and the story goes on.

The code is the body of ``function (params, state) { … }``; ``state`` is a deep-frozen copy of
the session state, ``params`` a plain copy of the call's parameters. ``Math.random`` is seeded
from the session RNG, so replays reproduce it. Errors, time-outs, memory blow-ups and crashes
come back as a ``SandboxResult`` with ``ok=False``; nothing here raises for bad tool code.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass
from typing import IO, Any

DEFAULT_TIME_LIMIT = 1.0  # seconds of run time per call
DEFAULT_MEMORY_LIMIT = 32 * 1024 * 1024  # bytes
MAX_RESULT_CHARS = 65_536  # JSON text of a result
MAX_PROGRAM_RESULT_CHARS = 4 * 1024 * 1024  # JSON text of a whole script's result (templates)
_CHECK_TIME_LIMIT = 1.0
_CHECK_MEMORY_LIMIT = 16 * 1024 * 1024
_MAX_DETAIL_CHARS = 300
_WALL_GRACE = 2.0  # seconds beyond twice the time limit before the helper process is killed
_START_TIMEOUT = 30.0
_WORKER_MAIN = "from narrative_cli.tools.sandbox import serve; serve()"

# The host side of the sandbox, evaluated before any tool code runs. It captures the built-ins
# it needs, so a tool that overwrites JSON, Object or eval cannot fool the conversion.
_BOOTSTRAP = r"""
(function () {
  'use strict';
  const indirectEval = eval, stringify = JSON.stringify, parse = JSON.parse;
  const freeze = Object.freeze, names = Object.getOwnPropertyNames, PromiseCtor = Promise;
  const fnToString = Function.prototype.toString;
  function deepFreeze(value) {
    if (value !== null && typeof value === 'object') {
      for (const key of names(value)) deepFreeze(value[key]);
      freeze(value);
    }
    return value;
  }
  function seededRandom(seed) {
    let s = seed >>> 0;
    return function random() {
      s = (s + 0x6D2B79F5) >>> 0;
      let t = s;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function compile(code) {
    const source = '(function (params, state) {\n' + code + '\n})';
    const fn = indirectEval(source);
    if (typeof fn !== 'function' || fnToString.call(fn) !== source.slice(1, -1)) {
      throw new SyntaxError('the code closes its function early; write only the function body');
    }
    return fn;
  }
  return function (action, code, paramsJson, stateJson, seed) {
    const fn = compile(code);
    if (action === 'check') return 'true';
    Math.random = seededRandom(seed);
    const result = fn(parse(paramsJson), deepFreeze(parse(stateJson)));
    if (result instanceof PromiseCtor) {
      throw new TypeError('__result__:the code returned a Promise; return a plain value');
    }
    let text;
    try { text = stringify(result); } catch (error) {
      throw new TypeError('__result__:' + String(error && error.message || error));
    }
    return text === undefined ? 'null' : text;
  };
})()
"""

_LINE = re.compile(r"^\s+at <input>:(\d+)$", re.MULTILINE)
_RESULT_MARK = "__result__:"
_SURROGATE = re.compile("[\ud800-\udfff]")
_BAD_CHARACTER = "the code holds an invalid character (a lone UTF-16 surrogate)"

_MESSAGES = {
    "timeout": (
        "code ran longer than {limit} s and was stopped",
        "代码运行超过 {limit} 秒，已被中止",
    ),
    "memory": (
        "code used more than {limit} MB of memory and was stopped",
        "代码内存超过 {limit} MB，已被中止",
    ),
    "stack": ("code recursed too deeply (stack overflow)", "代码递归过深（栈溢出）"),
    "syntax": ("syntax error: {detail}", "语法错误：{detail}"),
    "exception": ("{detail}", "{detail}"),
    "result": ("result cannot be used: {detail}", "结果无法使用：{detail}"),
    "crash": (
        "the JavaScript engine crashed on this code and was restarted",
        "JavaScript 引擎运行这段代码时崩溃，已重启",
    ),
    "unavailable": (
        "the JavaScript sandbox could not start: {detail}",
        "JavaScript 沙箱无法启动：{detail}",
    ),
}


@dataclass(frozen=True)
class SandboxResult:
    """What one code run produced: a JSON-compatible ``value``, or an error kind and detail."""

    ok: bool
    value: Any = None
    error_kind: str = ""  # timeout | memory | stack | syntax | exception | result | crash
    detail: str = ""
    limit: float = 0.0  # the limit that was hit (seconds or MB), for the message

    def message(self, lang: str = "en") -> str:
        """The error in words, in ``lang`` (zh or en); empty when the run succeeded."""
        if self.ok:
            return ""
        en, zh = _MESSAGES.get(self.error_kind, _MESSAGES["exception"])
        template = zh if lang == "zh" else en
        return template.format(limit=_number(self.limit), detail=self.detail)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxResult:
        return cls(**{key: data[key] for key in ("ok", "value", "error_kind", "detail", "limit")})


def run_code(
    code: str,
    params: dict[str, Any],
    state: dict[str, Any],
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    seed: int = 0,
) -> SandboxResult:
    """Run a code tool's function body with ``params`` and a frozen ``state``; never raises."""
    try:  # ASCII JSON: QuickJS never sees a lone surrogate (which would crash it)
        params_json = json.dumps(params, allow_nan=False)
        state_json = json.dumps(state, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        return SandboxResult(False, error_kind="result", detail=f"input is not JSON: {error}")
    if _SURROGATE.search(code):
        return SandboxResult(False, error_kind="syntax", detail=_BAD_CHARACTER)
    request: dict[str, Any] = {"op": "run", "code": code, "params": params_json}
    request.update(state=state_json, seed=seed & 0xFFFFFFFF, time=time_limit, memory=memory_limit)
    return _WORKER.request(request, time_limit)


def check_syntax(code: str) -> str | None:
    """The syntax error of a code tool's body (with its line), or None when it compiles."""
    if _SURROGATE.search(code):
        return SandboxResult(False, error_kind="syntax", detail=_BAD_CHARACTER).message("en")
    request: dict[str, Any] = {"op": "check", "code": code, "params": "{}", "state": "{}"}
    request.update(seed=0, time=_CHECK_TIME_LIMIT, memory=_CHECK_MEMORY_LIMIT)
    result = _WORKER.request(request, _CHECK_TIME_LIMIT)
    return None if result.ok else result.message("en")


def run_program(
    program: str,
    payload: str,
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
) -> SandboxResult:
    """Run a whole script (``tools.templates``) that reads the global ``__payload`` text and
    leaves JSON text in ``__done``, draining its promise jobs; never raises.

    The time limit covers the script and every job it queues. A script stopped before it set
    ``__done`` (the limit hit inside a job) comes back as a time-out whose ``value`` is the
    JSON text the script left in ``__progress``, so the caller can tell how far it got."""
    if _SURROGATE.search(program) or _SURROGATE.search(payload):
        return SandboxResult(False, error_kind="syntax", detail=_BAD_CHARACTER)
    request: dict[str, Any] = {"op": "program", "code": program, "params": payload, "state": ""}
    request.update(seed=0, time=time_limit, memory=memory_limit)
    return _WORKER.request(request, time_limit)


def _run_program_in_process(request: dict[str, Any]) -> SandboxResult:
    import quickjs  # in the helper process (``serve``), which imports it before it is ready

    code, time_limit, memory_limit = request["code"], request["time"], request["memory"]
    context = quickjs.Context()
    try:
        context.set_memory_limit(memory_limit)
        context.set_time_limit(time_limit)
        context.set("__payload", request["params"])
        context.eval(code)
        while context.execute_pending_job():
            pass
        done = context.get("__done")
    except quickjs.JSException as error:
        return _failure(error, time_limit, memory_limit, code)
    except MemoryError:
        return SandboxResult(False, error_kind="memory", limit=memory_limit / 2**20)
    if not isinstance(done, str):
        progress = context.get("__progress")
        return SandboxResult(False, value=progress if isinstance(progress, str) else None,
                             error_kind="timeout", limit=time_limit)
    return _decode(done, MAX_PROGRAM_RESULT_CHARS)


def run_in_process(request: dict[str, Any]) -> SandboxResult:
    """One request run by QuickJS in this process (the helper's side of ``run_code``)."""
    import quickjs

    if request["op"] == "program":
        return _run_program_in_process(request)
    code, time_limit, memory_limit = request["code"], request["time"], request["memory"]
    try:
        host = _new_host(time_limit, memory_limit)
        text = host(request["op"], code, request["params"], request["state"], request["seed"])
    except quickjs.JSException as error:
        return _failure(error, time_limit, memory_limit, code)
    except MemoryError:
        return SandboxResult(False, error_kind="memory", limit=memory_limit / 2**20)
    return _decode(text)


def serve() -> None:
    """The helper process: one JSON request per stdin line, one JSON reply per stdout line."""
    import quickjs  # noqa: F401 (loaded before "ready": a request then runs at once)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the story, not to us
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        reply = asdict(run_in_process(request))
        sys.stdout.write(json.dumps({"id": request.get("id"), **reply}) + "\n")
        sys.stdout.flush()


class _Worker:
    """The helper process: started on first use, killed and restarted when it hangs or dies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._ready = False  # the current process has said "ready"
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._ids = itertools.count(1)

    def request(self, request: dict[str, Any], time_limit: float) -> SandboxResult:
        with self._lock:
            try:
                process = self._running()
            except (OSError, ValueError, RuntimeError) as error:
                return SandboxResult(False, error_kind="unavailable", detail=str(error))
            request_id = next(self._ids)
            try:
                reply = self._exchange(process, {"id": request_id, **request}, time_limit)
            except BaseException:  # Ctrl-C while waiting: never leave a stale reply behind
                self.stop()
                raise
            if reply is None or reply.get("id") != request_id:
                self.stop()
                return SandboxResult(False, error_kind="crash")
            if reply.get("error_kind") == "wall":
                return SandboxResult(False, error_kind="timeout", limit=time_limit)
            return SandboxResult.from_dict(reply)

    def _exchange(
        self, process: subprocess.Popen[str], request: dict[str, Any], time_limit: float
    ) -> dict[str, Any] | None:
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        except OSError:
            return None
        try:
            line = self._replies.get(timeout=time_limit * 2 + _WALL_GRACE)
        except queue.Empty:
            self.stop()
            return {"id": request["id"], "error_kind": "wall"}
        return None if line is None else dict(json.loads(line))

    def _running(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._start()
        process = self._process
        assert process is not None
        if not self._ready:  # started by ``warm_up`` or just now: wait for its "ready"
            try:
                ready = self._replies.get(timeout=_START_TIMEOUT)
            except queue.Empty:
                ready = None
            if ready != "ready":
                self.stop()
                raise RuntimeError("the helper process did not start")
            self._ready = True
        return process

    def _start(self) -> None:
        """Start a new helper process; its "ready" line is read by the first request."""
        self.stop()
        self._replies = queue.Queue()
        process = subprocess.Popen(
            [sys.executable, "-c", _WORKER_MAIN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            start_new_session=os.name == "posix",
        )
        assert process.stdout is not None
        threading.Thread(target=_pump, args=(process.stdout, self._replies), daemon=True).start()
        self._process, self._ready = process, False

    def warm_up(self) -> None:
        """Start the helper now, without waiting, unless one is running or starting."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                with contextlib.suppress(OSError, ValueError):  # the request will say why
                    self._start()

    def stop(self) -> None:
        """Kill the helper process (a new one starts on the next request)."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            process.wait(timeout=5)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def _pump(stream: IO[str], replies: queue.Queue[str | None]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in stream:
            replies.put(line.rstrip("\n"))
    replies.put(None)


_WORKER = _Worker()
atexit.register(_WORKER.stop)


def warm_up() -> None:
    """Start the helper process in the background, for a caller that knows it will run code
    soon (``inspect`` of a card with regex scripts): the helper's start-up (a Python process
    importing QuickJS) then overlaps the caller's own work instead of following it."""
    _WORKER.warm_up()


def shutdown() -> None:
    """Stop the helper process now; the next call starts a fresh one."""
    _WORKER.stop()


def _new_host(time_limit: float, memory_limit: int) -> Any:
    import quickjs

    context = quickjs.Context()
    context.set_memory_limit(memory_limit)
    context.set_time_limit(time_limit)
    return context.eval(_BOOTSTRAP)


def _failure(error: Exception, time_limit: float, memory_limit: int, code: str) -> SandboxResult:
    import quickjs

    text = str(error)
    first = text.split("\n", 1)[0].strip()
    if isinstance(error, quickjs.StackOverflow) or "stack overflow" in first:
        return SandboxResult(False, error_kind="stack")
    if first == "InternalError: interrupted":
        return SandboxResult(False, error_kind="timeout", limit=time_limit)
    if "out of memory" in first:
        return SandboxResult(False, error_kind="memory", limit=memory_limit / 2**20)
    if _RESULT_MARK in first:
        detail = first.split(_RESULT_MARK, 1)[1]
        return SandboxResult(False, error_kind="result", detail=_clip(detail))
    if first.startswith("SyntaxError"):
        line = _LINE.search(text)
        last = code.count("\n") + 1  # an unclosed construct is reported past the last line
        where = f" (line {min(max(1, int(line.group(1)) - 1), last)})" if line else ""
        detail = first.removeprefix("SyntaxError:").strip()
        return SandboxResult(False, error_kind="syntax", detail=_clip(detail) + where)
    return SandboxResult(False, error_kind="exception", detail=_clip(first or "error"))


def _decode(text: object, limit: int = MAX_RESULT_CHARS) -> SandboxResult:
    if not isinstance(text, str):
        return SandboxResult(False, error_kind="result", detail="no JSON text came back")
    if len(text) > limit:
        detail = f"{len(text)} characters of JSON, the limit is {limit}"
        return SandboxResult(False, error_kind="result", detail=detail)
    return SandboxResult(True, value=_clean(json.loads(text)))


def _clean(value: Any) -> Any:
    """Lone surrogates (valid in JS strings, not in UTF-8) become U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {_clean(key): _clean(item) for key, item in value.items()}
    return value


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_DETAIL_CHARS else text[: _MAX_DETAIL_CHARS - 1] + "…"


def _number(value: float) -> str:
    return f"{value:g}"
