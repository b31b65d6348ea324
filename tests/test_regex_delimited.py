"""``regex.delimited``: a script it runs in Python gives what JavaScript gives, checked against
the JavaScript runner itself (``quickjs_run``'s, in QuickJS) on generated patterns,
replacements and texts; and a card's block-hiding script no longer calls the sandbox."""

from __future__ import annotations

import json
import random

import pytest
import quickjs

from narrative_cli.regex import quickjs_run
from narrative_cli.regex.delimited import delimited, run_here
from narrative_cli.regex.quickjs_run import JsScript, run_many, run_scripts

_CONTEXT = quickjs.Context()
_CONTEXT.eval(
    "function runner(json) { const params = JSON.parse(json);"
    " const body = (function (params, state) {" + quickjs_run._RUNNER + "});"
    " return JSON.stringify(body(params, {})); }"
)
_RUN = _CONTEXT.get("runner")


def javascript(text: str, scripts: list[JsScript]) -> str:
    """The text after ``scripts`` by the sandbox's own JavaScript (never the Python path)."""
    params = {"text": text, "scripts": [s.params() for s in scripts]}
    result = json.loads(str(_RUN(json.dumps(params))))
    assert result["errors"] == [None] * len(scripts)
    return str(result["text"])


# Pattern pieces on both sides of the shape's border, replacements with and without what
# JavaScript would expand, and texts built from the same literals.
LITERALS = ["<a>", "</a>", "<b>", "a", "b", "状", "态", "\n", " ", "/", "-", "😀"]
PATTERN_TOKENS = LITERALS + [
    "\\/", "\\-", "\\.", "\\[", "\\]", "\\(", "\\)", "\\$", "\\^", "\\\\", "\\*", "\\?", "\\|",
    "[\\s\\S]*?", "[\\S\\s]*?", ".*?", "[\\s\\S]*", ".", "*", "?", "(", ")", "|", "^", "$",
    "\\s", "\\d", "[ab]", "{2}",
]  # fmt: skip
FLAGS = ["", "g", "gm", "gs", "s", "m", "gms", "i", "gi", "y", "gy", "gu", "d"]
REPLACEMENTS = ["", "X", "[hidden]", "$1", "$&", "$$", "{{match}}", "{{MATCH}}", "<%= 1 %>",
                "a$", "{{", "状"]  # fmt: skip
TEXT_TOKENS = LITERALS + ["<", ">", ".", "$", "[", "]", "\\", "*", "?", "\r\n", "\u2028",
                          "x", "é", "Ⅻ"]  # fmt: skip


def _pattern(rng: random.Random) -> str:
    return "".join(rng.choice(PATTERN_TOKENS) for _ in range(rng.randint(0, 7)))


def _text(rng: random.Random, pattern_bits: list[str]) -> str:
    pool = TEXT_TOKENS + pattern_bits
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))


def test_every_script_run_here_gives_what_javascript_gives() -> None:
    rng = random.Random(17)
    here = 0
    for _ in range(6_000):
        source = _pattern(rng)
        if rng.random() < 0.5:  # the shape itself, often: literal, middle, literal
            source = "".join(rng.choice(LITERALS) for _ in range(rng.randint(1, 3)))
            source += rng.choice(["[\\s\\S]*?", "[\\S\\s]*?", ".*?"])
            source += "".join(rng.choice(LITERALS + ["\\/"]) for _ in range(rng.randint(0, 3)))
        script = JsScript("s", source, rng.choice(FLAGS), rng.choice(REPLACEMENTS),
                          mark=rng.random() < 0.05)  # fmt: skip
        found = delimited(script.source, script.flags, script.replace, script.mark)
        if found is None:
            continue
        bits = [found.open, found.close, found.open[:1], found.close[-1:]]
        for _ in range(8):
            text = _text(rng, bits)
            assert run_here(text, [script]) == javascript(text, [script]), (script, text)
            here += 1
    assert here > 3_000  # the generator does reach the shape, often


def test_several_scripts_run_in_order_as_in_javascript() -> None:
    rng = random.Random(5)
    scripts = [
        JsScript("hide", "<a>[\\s\\S]*?<\\/a>", "g", ""),
        JsScript("first", "<b>[\\S\\s]*?-", "", "<a>"),  # writes what the next one finds
        JsScript("block", "<a>.*?<\\/a>", "gs", "[x]"),
    ]
    for _ in range(2_000):
        text = _text(rng, ["<a>", "</a>", "<b>", "-"])
        assert run_here(text, scripts) == javascript(text, scripts), text


def test_other_scripts_and_texts_go_to_javascript() -> None:
    hide = JsScript("hide", "<a>[\\s\\S]*?<\\/a>", "g", "")
    for script in [
        JsScript("group", "<a>([\\s\\S]*?)<\\/a>", "g", "$1"),
        JsScript("case", "<a>[\\s\\S]*?<\\/a>", "gi", ""),
        JsScript("dollar", "<a>[\\s\\S]*?<\\/a>", "g", "$&"),
        JsScript("match", "<a>[\\s\\S]*?<\\/a>", "g", "{{match}}"),
        JsScript("template", "<a>[\\s\\S]*?<\\/a>", "g", "<%= 1 %>", mark=True),
        JsScript("dot", "<a>.*?<\\/a>", "g", ""),  # "." stops at a line end without s
        JsScript("greedy", "<a>[\\s\\S]*<\\/a>", "g", ""),
        JsScript("empty open", "[\\s\\S]*?<\\/a>", "g", ""),
    ]:
        assert run_here("x <a>y</a>", [hide, script]) is None, script.name
    assert run_here("x <a>\ud83d</a>", [hide]) is None  # a lone surrogate: JavaScript's
    assert run_here("x <a>y</a> z", [hide]) == "x  z"


def test_a_block_hiding_script_makes_no_sandbox_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample card's script (``<keeper_log>…</keeper_log>`` removed from prompts): one
    text or many, the result is JavaScript's and the helper is not asked."""
    calls: list[object] = []
    monkeypatch.setattr(quickjs_run, "run_code", lambda *a, **k: calls.append(a))
    hide = JsScript("Hide keeper log", "<keeper_log>[\\s\\S]*?<\\/keeper_log>", "g", "")
    text = "The fog.\n<keeper_log>\nday 3: oil low\n</keeper_log>\nThe lamp."
    assert run_scripts(text, [hide]).text == javascript(text, [hide]) == "The fog.\n\nThe lamp."
    outcomes = run_many([(text, [hide]), ("", [hide]), ("plain", [hide])])
    assert outcomes is not None
    assert [o.text for o in outcomes] == ["The fog.\n\nThe lamp.", "", "plain"]
    assert calls == []


def test_many_texts_keep_their_order_when_some_go_to_javascript() -> None:
    hide = JsScript("hide", "<a>[\\s\\S]*?<\\/a>", "g", "")
    upper = JsScript("upper", "(y+)", "g", "[$1]")
    jobs = [("x<a>1</a>y", [hide]), ("yy<a>2</a>", [hide, upper]), ("<a>3</a>z", [hide])]
    outcomes = run_many(jobs)
    assert outcomes is not None
    assert [o.text for o in outcomes] == ["xy", "[yy]", "z"]
    assert [o.text for o in outcomes] == [javascript(t, s) for t, s in jobs]
