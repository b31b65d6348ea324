"""The QuickJS sandbox for code tools: results, limits, and every escape attempt contained."""

from __future__ import annotations

import _thread
import sys
import threading

import pytest

from narrative_cli.tools.sandbox import (
    DEFAULT_MEMORY_LIMIT,
    DEFAULT_TIME_LIMIT,
    MAX_RESULT_CHARS,
    SandboxResult,
    check_syntax,
    run_code,
    shutdown,
)

FAST = 0.25  # seconds; keeps the time-limit tests quick

# Standard ECMAScript globals (plus QuickJS's internal Date clock): anything else would be a
# host object leaking in.
STANDARD_GLOBALS = {
    "Object", "Function", "Error", "EvalError", "RangeError", "ReferenceError", "SyntaxError",
    "TypeError", "URIError", "InternalError", "AggregateError", "Array", "parseInt", "parseFloat",
    "isNaN", "isFinite", "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent",
    "escape", "unescape", "Infinity", "NaN", "undefined", "__date_clock", "Number", "Boolean",
    "String", "Math", "Reflect", "Symbol", "eval", "globalThis", "Date", "RegExp", "JSON", "Proxy",
    "Map", "Set", "WeakMap", "WeakSet", "ArrayBuffer", "SharedArrayBuffer", "Uint8ClampedArray",
    "Int8Array", "Uint8Array", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
    "BigInt64Array", "BigUint64Array", "Float32Array", "Float64Array", "DataView", "Atomics",
    "Promise", "BigInt",
}  # fmt: skip


def test_design_doc_example_computes_damage():
    code = "const dmg = params.base_damage - (params.armor || 0); return Math.max(1, dmg);"
    assert run_code(code, {"base_damage": 10, "armor": 4}, {}).value == 6
    assert run_code(code, {"base_damage": 3, "armor": 9}, {}).value == 1


def test_state_and_chinese_names_round_trip():
    state = {"主角": {"生命值": 80, "装备": ["扫描器", "维修工具包"]}, "hp": 3}
    code = "return {hp: state.主角.生命值 - params.伤害, 第一件: state.主角.装备[0], n: null}"
    result = run_code(code, {"伤害": 30}, state)
    assert result.ok
    assert result.value == {"hp": 50, "第一件": "扫描器", "n": None}


def test_results_convert_to_json_compatible_python():
    assert run_code("return 'text'", {}, {}).value == "text"
    assert run_code("return [1, 2.5, true, null]", {}, {}).value == [1, 2.5, True, None]
    assert run_code("return", {}, {}).value is None  # undefined becomes null
    assert run_code("return () => 1", {}, {}).value is None
    assert run_code("return {a: undefined, b: NaN}", {}, {}).value == {"b": None}


@pytest.mark.parametrize(
    ("code", "kind", "needle"),
    [
        ("const a = {}; a.self = a; return a", "result", "circular"),
        ("return 10n", "result", "bigint"),
        ("return Promise.resolve(1)", "result", "Promise"),
        ("return 'x'.repeat(70000)", "result", f"the limit is {MAX_RESULT_CHARS}"),
    ],
)
def test_unusable_results_are_errors(code: str, kind: str, needle: str):
    result = run_code(code, {}, {})
    assert not result.ok and result.error_kind == kind
    assert needle.lower() in result.message("en").lower()


def test_thrown_errors_become_messages():
    result = run_code("throw new RangeError('too far')", {}, {})
    assert (result.ok, result.error_kind) == (False, "exception")
    assert result.message("en") == "RangeError: too far"
    assert run_code("throw 'plain'", {}, {}).message("zh") == "plain"
    assert run_code("null.x", {}, {}).detail.startswith("TypeError")


@pytest.mark.parametrize(
    "code",
    [
        "return require('fs').readFileSync('/etc/passwd', 'utf8')",
        "return process.env",
        "return fetch('http://127.0.0.1/')",
        "return new XMLHttpRequest()",
        "return std.loadFile('/etc/passwd')",
        "return os.exec(['ls'])",
        "return eval('require')('child_process')",
        "return Function('return process')().env",
        "return globalThis.constructor.constructor('return require')()('fs')",
        "return (0, eval)('this').process.env",
    ],
)
def test_host_access_attempts_fail(code: str):
    result = run_code(code, {}, {})
    assert not result.ok
    assert result.error_kind == "exception"
    assert "ReferenceError" in result.detail or "TypeError" in result.detail


def test_dynamic_import_is_refused():
    result = run_code("return import('os')", {}, {})
    assert not result.ok and "Promise" in result.detail
    assert not run_code("await import('fs')", {}, {}).ok  # not even valid syntax here


def test_only_standard_globals_exist():
    names = run_code("return Object.getOwnPropertyNames(globalThis)", {}, {}).value
    assert set(names) <= STANDARD_GLOBALS
    assert run_code("return typeof __date_clock()", {}, {}).value == "number"


def test_infinite_loop_stops_at_the_time_limit():
    result = run_code("while (true) {}", {}, {}, time_limit=FAST)
    assert (result.ok, result.error_kind) == (False, "timeout")
    assert result.message("zh") == "代码运行超过 0.25 秒，已被中止"
    assert result.message("en") == "code ran longer than 0.25 s and was stopped"


def test_default_time_limit_is_one_second():
    assert DEFAULT_TIME_LIMIT == 1.0
    result = run_code("for (;;) { Math.sqrt(2); }", {}, {})
    assert result.error_kind == "timeout" and result.limit == 1.0


def test_timeouts_inside_eval_and_getters_are_stopped_too():
    assert run_code("eval('while(true){}')", {}, {}, time_limit=FAST).error_kind == "timeout"
    getter = "return {get x() { for (;;) {} }}"  # runs while the result is converted
    assert run_code(getter, {}, {}, time_limit=FAST).error_kind == "timeout"


@pytest.mark.parametrize(
    "code",
    [
        "const a = []; for (;;) a.push(new Array(100000).fill(1));",
        "let s = 'x'; for (;;) s = s + s;",
        "return 'x'.repeat(2 ** 29)",
        "return new ArrayBuffer(64 * 1024 * 1024).byteLength",
    ],
)
def test_memory_bombs_stop_at_the_memory_limit(code: str):
    result = run_code(code, {}, {})
    assert (result.ok, result.error_kind) == (False, "memory")
    assert (
        result.message("en")
        == f"code used more than {DEFAULT_MEMORY_LIMIT // 2**20} MB of memory and was stopped"
    )


def test_deep_recursion_is_a_stack_error():
    result = run_code("function f(n) { return f(n + 1) + 1 } return f(0)", {}, {})
    assert (result.ok, result.error_kind) == (False, "stack")
    assert result.message("zh") == "代码递归过深（栈溢出）"


def test_state_snapshot_is_deeply_read_only():
    state = {"hp": 10, "bag": {"items": ["rope"]}}
    sloppy = "state.hp = 0; state.bag.items.push('gold'); return state"
    result = run_code(sloppy, {}, state)
    assert not result.ok and "TypeError" in result.detail  # the frozen array refuses push
    assigned = run_code("state.hp = 0; state.bag.x = 1; delete state.bag; return state", {}, state)
    assert assigned.ok and assigned.value == {"hp": 10, "bag": {"items": ["rope"]}}
    strict = run_code("'use strict'; state.hp = 0; return state.hp", {}, state)
    assert not strict.ok and "read-only" in strict.detail
    assert state == {"hp": 10, "bag": {"items": ["rope"]}}  # the Python side never changes


def test_params_are_a_copy():
    params = {"list": [1]}
    assert run_code("params.list.push(2); return params.list", params, {}).value == [1, 2]
    assert params == {"list": [1]}


def test_tampering_never_leaks_into_the_next_call():
    tamper = """
        globalThis.leak = 'secret';
        Object.prototype.polluted = 'yes';
        Array.prototype.map = function () { return ['hijacked']; };
        JSON.stringify = function () { return '"hijacked"'; };
        JSON.parse = function () { return {hijacked: true}; };
        Object.freeze = function (o) { return o; };
        Math.max = function () { return -1; };
        return 'done';
    """
    assert run_code(tamper, {}, {}).value == "done"
    probe = """
        return [typeof leak, ({}).polluted === undefined, [1, 2].map(x => x * 2),
                Math.max(1, 2), params.a, Object.isFrozen(state)];
    """
    result = run_code(probe, {"a": 5}, {"hp": 1})
    assert result.value == ["undefined", True, [2, 4], 2, 5, True]


def test_tampering_within_a_call_cannot_fool_the_conversion():
    code = """
        JSON.stringify = function () { return '{"forged": true}'; };
        Object.freeze = function (o) { return o; };
        return {real: true};
    """
    assert run_code(code, {}, {}).value == {"real": True}


def test_math_random_is_seeded():
    code = "return [Math.random(), Math.random()]"
    first = run_code(code, {}, {}, seed=7).value
    assert first == run_code(code, {}, {}, seed=7).value
    assert first != run_code(code, {}, {}, seed=8).value
    assert all(0 <= x < 1 for x in first)


def test_non_json_inputs_are_reported():
    result = run_code("return 1", {"x": object()}, {})
    assert not result.ok and "input is not JSON" in result.detail


def test_check_syntax_reports_the_line():
    assert check_syntax("const a = 1;\nreturn a + 1;") is None
    assert check_syntax("const a = 1;\nconst b = ;\nreturn b") == (
        "syntax error: unexpected token in expression: ';' (line 2)"
    )
    assert "line 1" in (check_syntax("return (1") or "")


def test_check_syntax_rejects_breaking_out_of_the_function():
    message = check_syntax("return 1 }); (function () {")
    assert message is not None and "closes its function early" in message
    assert not run_code("return 1 }, function () {", {}, {}).ok


def test_check_syntax_does_not_run_the_body():
    assert check_syntax("while (true) {}") is None  # compiled only


def test_runs_from_worker_threads():
    # Parallel post-pipeline mode runs tools beside the analysis, on another thread.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        doubled = [pool.submit(run_code, "return params.i * 2", {"i": i}, {}) for i in range(8)]
        looping = pool.submit(run_code, "for (;;) {}", {}, {}, FAST)
        assert [future.result().value for future in doubled] == [i * 2 for i in range(8)]
        assert looping.result().error_kind == "timeout"


def test_lone_surrogates_never_reach_quickjs_or_the_prompts():
    # A lone surrogate handed to QuickJS as a Python string crashes the process; JSON from a
    # lore file can hold one ("\ud800"), and JS strings can build one.
    state = {"名字": "\ud800a"}
    result = run_code("return [state.名字, params.p, '\\uDFFF', '😀']", {"p": "\udc00"}, state)
    assert result.value == ["\ufffda", "\ufffd", "\ufffd", "😀"]
    assert run_code("return {['\\uD800']: 1}", {}, {}).value == {"\ufffd": 1}
    bad_code = "return '\ud800'"
    assert "lone UTF-16 surrogate" in (check_syntax(bad_code) or "")
    assert run_code(bad_code, {}, {}).error_kind == "syntax"


# --- the outer wall: QuickJS runs in a helper process ------------------------------------------


def test_regex_backtracking_hang_is_stopped_by_the_process_wall():
    # QuickJS does not interrupt its regex engine, so only the helper process deadline helps.
    code = "return /(a+)+$/.test('a'.repeat(40) + 'b')"
    result = run_code(code, {}, {}, time_limit=0.2)
    assert (result.ok, result.error_kind) == (False, "timeout")
    assert result.message("en") == "code ran longer than 0.2 s and was stopped"
    assert run_code("return 'after'", {}, {}).value == "after"


def test_engine_crash_is_contained_and_the_helper_restarts():
    # JSON.stringify of a very deep value overflows QuickJS's C stack (a segfault).
    code = "let a = []; for (let i = 0; i < 100000; i++) a = [a]; return JSON.stringify(a)"
    result = run_code(code, {}, {}, time_limit=0.2)
    assert not result.ok and result.error_kind in ("crash", "timeout")
    assert run_code("return 'alive'", {}, {}).value == "alive"
    crash = SandboxResult(False, error_kind="crash")
    assert crash.message("zh") == "JavaScript 引擎运行这段代码时崩溃，已重启"


def test_a_dead_helper_is_replaced():
    assert run_code("return 1", {}, {}).value == 1
    shutdown()
    assert run_code("return 2", {}, {}).value == 2


def test_ctrl_c_while_waiting_leaves_no_stale_reply():
    assert run_code("return 1", {}, {}).value == 1  # the helper is up: the wait is the code's
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):  # 20 s of code: the Ctrl-C lands in it on any machine
        code = "const t = Date.now(); while (Date.now() - t < 20000) {} return 'stale'"
        run_code(code, {}, {}, time_limit=30)
    timer.join()
    assert run_code("return 'fresh'", {}, {}).value == "fresh"


def test_helper_that_cannot_start_is_an_error_result(monkeypatch: pytest.MonkeyPatch):
    shutdown()
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    result = run_code("return 1", {}, {})
    assert (result.ok, result.error_kind) == (False, "unavailable")
    assert result.message("en").startswith("the JavaScript sandbox could not start: ")
    assert check_syntax("return 1") is not None  # reported, not raised
    monkeypatch.undo()
    assert run_code("return 1", {}, {}).value == 1
