"""Property tests (Hypothesis) over every reply parser and every file loader (issue #13).

Invariants, whatever the model or the file says:

- a reply parser never raises; when it recovers nothing it says why (``errors``), and ``ok``
  means a value with no errors;
- the state engine and the MVU patcher account for every proposed event or patch: applied or
  rejected with a reason, never dropped and never an exception;
- planning tool calls give one result per call, each failure with its text;
- the card and lorebook loaders return a value or raise our ``BadInput`` family, nothing else;
- a turn whose agents answer garbage on the scripted server is still played and stored.

A few hundred examples per parser by default (the file runs well under a minute), the same
examples every run (``derandomize``). Run longer, with fresh random examples::

    NARRATIVE_FUZZ_EXAMPLES=20000 python -m pytest -q tests/test_fuzz.py
    python -m pytest -q tests/test_fuzz.py --fuzz-examples 20000

To fuzz a new reply format, add its parser to ``REPLY_PARSERS`` and a few valid replies of it
to ``VALID_REPLIES``; the mutation strategies pick them up.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from narrative_cli.agents.parsing import ParseResult, parse_analysis, parse_mvu_patches, parse_plan
from narrative_cli.backends.sse import split_lines
from narrative_cli.domain import LoreEntry
from narrative_cli.errors import BadInput
from narrative_cli.load import book_from_card, load_card
from narrative_cli.load.card_export import card_to_png
from narrative_cli.load.cards import parse_card_bytes, parse_card_object
from narrative_cli.load.lorebooks import parse_lorebook
from narrative_cli.load.png import build_png, parse_chunks, text_chunk
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.state.engine import GameState, apply_events
from narrative_cli.state.mvu import apply_patches
from narrative_cli.state.mvu_commands import extract_commands
from narrative_cli.state.mvu_update import MvuData, update_variables
from narrative_cli.store import SessionStore
from narrative_cli.tools.definitions import load_tools
from narrative_cli.tools.runner import MAX_PLANNING_CALLS, run_planning_calls
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import Reply, ScriptedServer

scripted_server = servers.scripted_server

_ASKED = os.environ.get("NARRATIVE_FUZZ_EXAMPLES", "")
EXAMPLES = int(_ASKED) if _ASKED.isdigit() and int(_ASKED) > 0 else 0
LONG = EXAMPLES > 0


def fuzz(default: int, **extra: Any) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Hypothesis settings: ``default`` examples in CI, ``NARRATIVE_FUZZ_EXAMPLES`` if set."""
    return settings(
        **extra,
        max_examples=EXAMPLES or default,
        deadline=None,
        derandomize=not LONG,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                               HealthCheck.data_too_large],
    )


# --- strategies ---------------------------------------------------------------------------
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=10,
)

VALID_REPLIES: dict[str, list[Any]] = {
    "planning": [
        {"narrative_direction": "Edda shows the lamp.", "key_points": ["lamp", "fog"],
         "tool_calls": [{"tool": "roll_dice", "params": {"expr": "1d20+2", "dc": 10}}]},
    ],
    "analysis": [
        {"events": [{"type": "move", "params": {"location": "Lamp room"}},
                    {"type": "set_flag", "params": {"flag": "lit", "value": True}},
                    {"type": "add_item", "params": {"item": "key", "quantity": 1}}],
         "summary_entries": ["The apprentice climbed."]},
    ],
    "mvu": [
        {"patches": [{"op": "delta", "path": "/keeper/lamp_oil", "value": -1},
                     {"op": "replace", "path": "/keeper/mood", "value": "calm"}]},
        [{"op": "insert", "path": "/log/-", "value": "lit"}],
    ],
}
REPLY_PARSERS: dict[str, Callable[..., ParseResult]] = {
    "planning": parse_plan,
    "analysis": parse_analysis,
    "mvu": parse_mvu_patches,
}
_KEYS = ["narrative_direction", "key_points", "tool_calls", "events", "summary_entries",
         "patches", "op", "path", "value", "type", "params", "tool", "from"]


def _wrapped(text: str, wrapper: int) -> str:
    return [
        text,
        f"```json\n{text}\n```",
        f"<think>I should answer.</think>\n{text}",
        f"Here you go: {text} hope that helps",
        f"<jsonpatch>{text}</jsonpatch>",
        f"<think>{text}",
        text[: len(text) // 2],
    ][wrapper % 7]


@st.composite
def mutated(draw: st.DrawFn, agent: str) -> str:
    """A valid reply of ``agent`` dumped, then cut, spliced and wrapped the way models do."""
    base = json.dumps(draw(st.sampled_from(VALID_REPLIES[agent])), ensure_ascii=False)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(base)))
        edit = draw(st.integers(0, 3))
        if edit == 0:
            base = base[:at] + base[at + draw(st.integers(1, 8)):]
        elif edit == 1:
            base = base[:at] + draw(st.sampled_from(['"', "{", "}", "[", "]", ",", ":", "\\",
                                                    "NaN", "-Infinity", "1e999", "null",
                                                    "'", "\n", "//x\n", "\\u00"])) + base[at:]
        elif edit == 2:
            base = base[:at] + draw(st.text(max_size=6)) + base[at:]
        else:
            base = base[:at]
    return _wrapped(base, draw(st.integers(0, 10)))


@st.composite
def shaped(draw: st.DrawFn) -> str:
    """Objects with the schemas' keys and values of any type (the validator's input)."""
    keys = st.sampled_from(_KEYS)
    obj = draw(st.dictionaries(keys, json_values | st.lists(
        st.dictionaries(keys, json_values, max_size=4), max_size=4), max_size=5))
    return _wrapped(json.dumps(obj, ensure_ascii=False), draw(st.integers(0, 10)))


def replies(agent: str) -> st.SearchStrategy[str]:
    return (
        st.text(max_size=200)
        | json_values.map(lambda value: json.dumps(value, ensure_ascii=False))
        | shaped()
        | mutated(agent)
    )


# --- reply parsers ------------------------------------------------------------------------
def check_parse(result: ParseResult) -> None:
    assert isinstance(result, ParseResult)
    if result.value is None:
        assert result.errors, "nothing recovered and no reason given"
        assert not result.ok
    else:
        assert isinstance(result.value, dict)
    assert result.ok == (result.value is not None and not result.errors)
    assert all(isinstance(error, str) and error.strip() for error in result.errors)


@pytest.mark.parametrize("agent", sorted(REPLY_PARSERS))
@fuzz(200)
@given(data=st.data())
def test_reply_parsers_never_raise_and_say_why(agent: str, data: st.DataObject) -> None:
    text = data.draw(replies(agent))
    lang = data.draw(st.sampled_from(["zh", "en"]))
    finish = data.draw(st.sampled_from([None, "stop", "length"]))
    check_parse(REPLY_PARSERS[agent](text, lang, finish))


# --- MVU update commands in the message (``<UpdateVariable>`` ``_.set(...)``, JSONPatch) -----
MVU_COMMANDS = [
    "_.set('keeper.lamp_oil', 5, 4);//burnt",
    "_.set('keeper.mood', 'calm');",
    "_.add('keeper.lamp_oil', -1);",
    "_.insert('log', 'lit');",
    "_.assign('keeper.new', {\"a\": 1});",
    "_.remove('log', 0);",
    "_.unset('keeper.mood');",
    "_.delete('keeper');",
    '<JSONPatch>[{"op": "replace", "path": "/keeper/lamp_oil", "value": 3}]</JSONPatch>',
]


@st.composite
def update_messages(draw: st.DrawFn) -> str:
    """Story text with update commands, cut, spliced and wrapped as models write them."""
    parts = draw(st.lists(st.sampled_from(MVU_COMMANDS) | st.text(max_size=12), max_size=6))
    body = "\n".join(parts)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from(["(", ")", "'", '"', ";", "//", ",", "_.set(",
                                                 "NaN", "1e999", "\\", "{", "]"])) + body[at:]
    wrap = draw(st.integers(0, 2))
    if wrap == 1:
        body = f"The fog.\n<UpdateVariable>\n{body}\n</UpdateVariable>"
    elif wrap == 2:
        body = f"<UpdateVariable>{body}"  # never closed
    return body


@fuzz(250)
@given(text=update_messages() | st.text(max_size=120), lang=st.sampled_from(["zh", "en"]))
def test_every_mvu_update_command_is_applied_or_rejected_with_a_reason(
    text: str, lang: str
) -> None:
    """The MVU update parser of issue #14 (``state.mvu_update.update_variables``)."""
    data = MvuData(stat_data=json.loads(json.dumps(MVU_TREE)))
    result = update_variables(text, data, lang=lang)
    extracted = extract_commands(text)
    assert len(result.applied) + len(result.rejected) >= len(extracted.malformed)
    assert all(record.reason.strip() for record in result.rejected)
    json.dumps(result.data.stat_data, allow_nan=False)  # what is kept can be stored


# --- what the parsed replies feed: the state engine and the MVU patcher -------------------
event_like = st.fixed_dictionaries(
    {"type": st.sampled_from(["move", "set_flag", "add_item", "remove_item", "advance_time",
                              "relationship", "quest", "note", "bogus"]) | json_values,
     "params": st.dictionaries(st.sampled_from(["location", "flag", "value", "item", "quantity",
                                                "minutes", "hours", "name", "delta", "status"]),
                               json_values, max_size=4) | json_values},
)


@fuzz(150)
@given(events=st.lists(event_like | json_values, max_size=6), lang=st.sampled_from(["zh", "en"]))
def test_every_event_is_applied_or_rejected_with_a_reason(events: list[Any], lang: str) -> None:
    result = apply_events(GameState(), events, lang=lang, turn=1)
    assert len(result.applied) + len(result.rejected) == len(events)
    assert all(record.reason.strip() for record in result.rejected)


# Found by this suite: a rejected event holding NaN/Infinity stays in the event log and makes
# the state unstorable. Issue #13 item 2 (NaN handling, branch wt-reldata, which adds
# ``narrative_cli.safetext.finite_copy``) fixes it; until that lands this test must fail.
_ITEM_2_LANDED = importlib.util.find_spec("narrative_cli.safetext") is not None


@pytest.mark.xfail(not _ITEM_2_LANDED, reason="needs #13 item 2 (finite_copy)", strict=True)
@fuzz(150, phases=[Phase.generate])  # an expected failure: no time spent shrinking it
@given(events=st.lists(event_like | json_values, max_size=6))
def test_the_state_after_any_events_can_be_stored(events: list[Any]) -> None:
    state = apply_events(GameState(), events, lang="en", turn=1).state
    json.dumps(state.to_dict(), allow_nan=False)


patch_like = st.fixed_dictionaries(
    {"op": st.sampled_from(["replace", "delta", "insert", "add", "remove", "move", "REPLACE",
                            "bogus"]) | json_values,
     "path": st.sampled_from(["/keeper/lamp_oil", "/keeper/mood", "/log/-", "/log/0", "/new",
                              "", "/", "keeper.lamp_oil", "/keeper/lamp_oil/deeper"])
     | json_values,
     "value": json_values,
     "from": st.sampled_from(["/keeper/mood", "/log/0"]) | json_values},
)
MVU_TREE = {"keeper": {"lamp_oil": [5, "litres left"], "mood": ["tired", "how Edda feels"]},
            "log": [["night one", "entries"]]}


@fuzz(150)
@given(patches=st.lists(patch_like | json_values, max_size=6), lang=st.sampled_from(["zh", "en"]))
def test_every_mvu_patch_is_applied_or_rejected_with_a_reason(
    patches: list[Any], lang: str
) -> None:
    result = apply_patches(MVU_TREE, patches, lang=lang)
    assert len(result.applied) + len(result.rejected) == len(patches)
    assert all(record.reason.strip() for record in result.rejected)
    json.dumps(result.variables, allow_nan=False)  # what is kept can be stored


# --- planning tool calls, llm tool output -------------------------------------------------
_BOOK_TOOLS = [e for e in book_from_card(load_card(SAMPLES / "lantern-keeper.png")).entries
               if e.comment.startswith("[TOOL:") and "tide_clock" not in e.comment]


def _planning_llm_tool() -> LoreEntry:
    log = next(e for e in _BOOK_TOOLS if "keeper_log" in e.comment)
    data = json.loads(log.content)
    data["trigger"] = "planning"
    data["function"]["name"] = "ask_edda"
    return LoreEntry(uid=99, comment="[TOOL:ask_edda]", content=json.dumps(data))


TOOLSET = load_tools([*_BOOK_TOOLS, _planning_llm_tool()])
call_like = st.fixed_dictionaries(
    {"tool": st.sampled_from(["roll_dice", "ask_edda", "keeper_log", "nope"]) | json_values,
     "params": st.fixed_dictionaries({}, optional={
         "expr": st.sampled_from(["1d20+2", "2d6", "d%", "4d6kh3", "1d0", "999d999", ""])
         | json_values,
         "dc": json_values, "mode": json_values, "success_branch": json_values,
     }) | json_values},
)


@fuzz(150)
@given(calls=st.lists(call_like | json_values, max_size=12), tool_output=st.text(max_size=80),
       seed=st.integers(0, 2**32))
def test_planning_calls_give_one_result_each_with_a_reason_when_they_fail(
    calls: list[Any], tool_output: str, seed: int
) -> None:
    assert {tool.name for tool in TOOLSET.tools} >= {"roll_dice", "ask_edda"}
    results = run_planning_calls(calls, TOOLSET, {}, random.Random(seed),
                                 lambda tool, messages: tool_output, "en")
    expected = min(len(calls), MAX_PLANNING_CALLS) + (len(calls) > MAX_PLANNING_CALLS)
    assert len(results) == expected
    assert all(result.text.strip() for result in results if not result.ok)


@fuzz(200)
@given(contents=st.lists(json_values.map(json.dumps) | st.text(max_size=60) | st.just(
    _BOOK_TOOLS[0].content), min_size=1, max_size=4))
def test_every_tool_entry_is_a_tool_or_a_problem_with_a_reason(contents: list[str]) -> None:
    entries = [LoreEntry(uid=i, comment=f"[TOOL:t{i}]", content=c) for i, c in enumerate(contents)]
    toolset = load_tools(entries)
    assert len(toolset.tools) + len(toolset.problems) == len(entries)
    assert all(problem.message.strip() for problem in toolset.problems)


# --- card and lorebook loaders ------------------------------------------------------------
SAMPLE_PNG = (SAMPLES / "lantern-keeper.png").read_bytes()
CARD_JSON = json.dumps({"spec": "chara_card_v2", "spec_version": "2.0",
                        "data": {"name": "Edda", "first_mes": "Fog."}})


def loads_or_refuses(call: Callable[[], object]) -> None:
    try:
        call()
    except BadInput as error:
        assert error.message.strip() and "\n" not in error.message.strip()


@st.composite
def damaged_png(draw: st.DrawFn) -> bytes:
    """The sample card's PNG, or a small one with a fuzzed card chunk, then bytes damaged."""
    if draw(st.booleans()):
        data = bytearray(SAMPLE_PNG)
    else:
        payload = draw(st.text(max_size=120) | json_values.map(json.dumps) | st.just(CARD_JSON))
        raw = payload.encode()
        encoded = (base64.b64encode(raw) if draw(st.booleans()) else raw).decode("latin-1")
        keyword = draw(st.sampled_from(["chara", "ccv3", "other"]))
        chunks = parse_chunks(card_to_png(parse_card_object(json.loads(CARD_JSON), "x")))
        chunks = [c for c in chunks if c.type != b"tEXt"]
        chunks.insert(-1, text_chunk(keyword, encoded))
        data = bytearray(build_png(chunks))
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


@fuzz(200)
@given(data=damaged_png() | st.binary(max_size=200),
       suffix=st.sampled_from([".png", ".json", ".yaml", ".charx", ".card", ""]))
def test_card_bytes_load_or_are_refused_with_one_line(data: bytes, suffix: str) -> None:
    loads_or_refuses(lambda: parse_card_bytes(data, "fuzz" + suffix, suffix))


card_like = st.fixed_dictionaries(
    {"spec": st.sampled_from(["chara_card_v2", "chara_card_v3"]) | json_values,
     "spec_version": json_values,
     "data": st.dictionaries(st.sampled_from(["name", "description", "first_mes",
                                              "alternate_greetings", "tags", "extensions",
                                              "character_book", "creator_notes"]),
                             json_values, max_size=6) | json_values},
)


@fuzz(150)
@given(obj=card_like | json_values)
def test_card_json_objects_load_or_are_refused(obj: Any) -> None:
    loads_or_refuses(lambda: parse_card_object(obj, "fuzz.json"))
    text = json.dumps(obj)
    loads_or_refuses(lambda: parse_card_bytes(text.encode(), "fuzz.json", ".json"))


entry_like = st.dictionaries(
    st.sampled_from(["key", "keys", "keysecondary", "comment", "content", "constant",
                     "selective", "order", "position", "disable", "probability", "depth",
                     "group", "scanDepth", "uid", "id", "extensions", "sticky", "cooldown"]),
    json_values, max_size=8,
)


@example(obj={"entries": {"\n": None}})  # found: a key with a newline broke the one line
@example(obj={"entries": {"¹": {}}})  # found: "¹".isdigit() is true, int("¹") fails
@example(obj={"entries": [{"id": "a\nb", "keys": 3}]})
@fuzz(150)
@given(obj=st.fixed_dictionaries({"entries": st.dictionaries(st.text(max_size=4), entry_like,
                                                             max_size=4)
                                  | st.lists(entry_like, max_size=4) | json_values})
       | json_values)
def test_lorebooks_load_or_are_refused(obj: Any) -> None:
    loads_or_refuses(lambda: parse_lorebook(obj, "fuzz.json", "fuzz"))


# --- a whole turn with garbage replies ----------------------------------------------------
class GarbageScript:
    """Answers every agent with the text it is given (the writer keeps a story line)."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def __call__(self, body: Any, request: servers.RecordedRequest) -> Reply | str:
        agent = request.agent
        if agent in ("writing", "merged_writing"):
            return Reply(text=self.texts.get("writing") or "The fog rolls on.")
        return self.texts.get(agent.split(":")[0], "")


@pytest.fixture
def garbage_play(scripted_server: ScriptedServer) -> Iterator[tuple[PlaySession, GarbageScript]]:
    script = GarbageScript()
    scripted_server.reply_with(script)
    options = PlayOptions(card=str(SAMPLES / "lantern-keeper.png"), provider="openai",
                          base_url=scripted_server.base_url, model="m", seed=3)
    with SessionStore() as store:
        play = PlaySession.open(store, options)
        try:
            yield play, script
        finally:
            play.close()


@fuzz(12)
@given(planning=replies("planning"), analysis=replies("analysis"), mvu=replies("mvu"),
       tool=st.text(max_size=60), writing=st.text(max_size=80))
def test_a_turn_with_garbage_replies_is_played_and_stored(
    garbage_play: tuple[PlaySession, GarbageScript], planning: str, analysis: str, mvu: str,
    tool: str, writing: str,
) -> None:
    play, script = garbage_play
    script.texts = {"planning": planning, "analysis": analysis, "mvu_extract": mvu,
                    "tool": tool, "writing": writing}
    before = play.turn
    result = play.play("I look around.", lambda event: None)
    assert play.turn == before + 1
    assert all(str(record.reason).strip() for record in result.events_rejected)
    assert all(str(record.reason).strip() for record in result.mvu_rejected)
    with SessionStore() as store:
        stored = store.turns(play.session_id)
    assert stored[-1].number == play.turn


# --- the SSE line splitter (found: httpx's iter_lines breaks JSON at U+0085/U+2028) --------
@fuzz(300)
@given(lines=st.lists(st.text(max_size=12).map(lambda t: t.replace("\r", "").replace("\n", "")),
                      max_size=8),
       ends=st.lists(st.sampled_from(["\n", "\r", "\r\n"]), min_size=8, max_size=8),
       cuts=st.lists(st.integers(1, 6), max_size=40))
def test_sse_lines_split_only_at_cr_lf_wherever_the_chunks_break(
    lines: list[str], ends: list[str], cuts: list[int]
) -> None:
    # a CR followed by an empty line's LF would be one CRLF: such a line ends in LF there
    ends = [end if end != "\r" or lines[i + 1 :] and lines[i + 1] else "\n"
            for i, end in enumerate(ends[: len(lines)])]
    text = "".join(line + end for line, end in zip(lines, ends, strict=True))
    chunks, index = [], 0
    for cut in cuts:
        chunks.append(text[index : index + cut])
        index += cut
    chunks.append(text[index:])
    assert list(split_lines(chunks)) == lines
