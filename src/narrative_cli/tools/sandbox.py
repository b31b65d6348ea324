"""Run a code tool's JavaScript inside QuickJS, with nothing of the host reachable.

Every call gets a fresh QuickJS context (about 0.1 ms to create), so nothing a tool does to
globals, prototypes or built-ins can reach the next call. The context has no module loader and
no host functions: no files, no network, no Python. The code is the body of
``function (params, state) { … }``; ``state`` is a deep-frozen copy of the session state,
``params`` a plain copy of the call's parameters. ``Math.random`` is replaced by a generator
seeded from the session RNG, so replays reproduce it. Errors, time-outs and memory blow-ups
come back as a ``SandboxResult`` with ``ok=False``; nothing here raises for bad tool code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import quickjs

DEFAULT_TIME_LIMIT = 1.0  # seconds of run time per call
DEFAULT_MEMORY_LIMIT = 32 * 1024 * 1024  # bytes
MAX_RESULT_CHARS = 65_536  # JSON text of a result
_CHECK_TIME_LIMIT = 1.0
_CHECK_MEMORY_LIMIT = 16 * 1024 * 1024
_MAX_DETAIL_CHARS = 300

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
}


@dataclass(frozen=True)
class SandboxResult:
    """What one code run produced: a JSON-compatible ``value``, or an error kind and detail."""

    ok: bool
    value: Any = None
    error_kind: str = ""  # timeout | memory | stack | syntax | exception | result
    detail: str = ""
    limit: float = 0.0  # the limit that was hit (seconds or MB), for the message

    def message(self, lang: str = "en") -> str:
        """The error in words, in ``lang`` (zh or en); empty when the run succeeded."""
        if self.ok:
            return ""
        en, zh = _MESSAGES.get(self.error_kind, _MESSAGES["exception"])
        template = zh if lang == "zh" else en
        return template.format(limit=_number(self.limit), detail=self.detail)


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
    except (TypeError, ValueError) as error:
        return SandboxResult(False, error_kind="result", detail=f"input is not JSON: {error}")
    if _SURROGATE.search(code):
        return SandboxResult(False, error_kind="syntax", detail=_BAD_CHARACTER)
    try:
        host = _new_host(time_limit, memory_limit)
        text = host("run", code, params_json, state_json, seed & 0xFFFFFFFF)
    except quickjs.JSException as error:
        return _failure(error, time_limit, memory_limit, code)
    except MemoryError:
        return SandboxResult(False, error_kind="memory", limit=memory_limit / 2**20)
    return _decode(text)


def check_syntax(code: str) -> str | None:
    """The syntax error of a code tool's body (with its line), or None when it compiles."""
    if _SURROGATE.search(code):
        return SandboxResult(False, error_kind="syntax", detail=_BAD_CHARACTER).message("en")
    try:
        host = _new_host(_CHECK_TIME_LIMIT, _CHECK_MEMORY_LIMIT)
        host("check", code, "{}", "{}", 0)
    except quickjs.JSException as error:
        result = _failure(error, _CHECK_TIME_LIMIT, _CHECK_MEMORY_LIMIT, code)
        return result.message("en")
    return None


def _new_host(time_limit: float, memory_limit: int) -> Any:
    context = quickjs.Context()
    context.set_memory_limit(memory_limit)
    context.set_time_limit(time_limit)
    return context.eval(_BOOTSTRAP)


def _failure(error: Exception, time_limit: float, memory_limit: int, code: str) -> SandboxResult:
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


def _decode(text: object) -> SandboxResult:
    if not isinstance(text, str):
        return SandboxResult(False, error_kind="result", detail="no JSON text came back")
    if len(text) > MAX_RESULT_CHARS:
        detail = f"{len(text)} characters of JSON, the limit is {MAX_RESULT_CHARS}"
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
