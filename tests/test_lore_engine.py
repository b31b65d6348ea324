"""Lore activation: one case per SillyTavern rule (compat §3), routing, timed effects."""

from __future__ import annotations

from typing import Any

import pytest

from narrative_cli.domain import LoreEntry
from narrative_cli.domain_chat import ChatMessage
from narrative_cli.errors import ConfigError
from narrative_cli.lore.engine import (
    ActivationResult,
    LoreSettings,
    ScanContext,
    TimedEffects,
    activate,
    routed_lore,
)
from narrative_cli.lore.index import sort_entries
from narrative_cli.lore.timed import entry_hash
from narrative_cli.rng import new_rng, rng_state


def entry(uid: int, keys: tuple[str, ...] = (), **fields: Any) -> LoreEntry:
    fields.setdefault("content", f"内容{uid}")
    fields.setdefault("position", 0)
    fields.setdefault("order", 100)
    return LoreEntry(uid=uid, keys=list(keys), source="book", **fields)


def run(entries: list[LoreEntry], text: str = "", **kwargs: Any) -> ActivationResult:
    kwargs.setdefault("rng", new_rng(1))
    return activate(entries, user_input=text, **kwargs)


def active(result: ActivationResult) -> list[int | str]:
    return [a.entry.uid for a in result.activated]


def rejected(result: ActivationResult) -> dict[int | str, str]:
    return {r.entry.uid: r.reason for r in result.rejected}


def reasons(result: ActivationResult) -> dict[int | str, str]:
    return {a.entry.uid: a.reason for a in result.activated}


# --- keys and the scan text -------------------------------------------------------------


def test_a_key_typed_this_turn_activates_this_turn() -> None:
    result = run([entry(1, ("露米埃尔",))], "我们去露米埃尔吧")
    assert active(result) == [1]
    assert reasons(result)[1] == 'key "露米埃尔"'


def test_history_and_state_summary_are_scanned() -> None:
    entries = [entry(1, ("月影阁",)), entry(2, ("夜百合",)), entry(3, ("教堂",))]
    whole = LoreSettings(depth=None)
    history = ["说起月影阁", "嗯"]
    result = run(entries, "你好", history=history, extra_text="地点：教堂", settings=whole)
    assert sorted(active(result)) == [1, 3]
    shipped = run(entries, "你好", history=["说起月影阁", "嗯"], extra_text="地点：教堂")
    assert sorted(active(shipped)) == [3]  # SillyTavern's depth 2: input and the last reply


@pytest.mark.parametrize(
    ("depth", "scan_depth", "expected"),
    [
        (None, None, [1]),  # default: the whole window
        (2, None, []),  # SillyTavern's world_info_depth 2: the key is 3 messages back
        (3, None, [1]),
        (None, 2, []),  # per-entry scanDepth wins
        (2, 3, [1]),
        (None, 0, []),  # depth 0: the entry sees nothing
    ],
)
def test_scan_depth_counts_messages_from_the_newest(
    depth: int | None, scan_depth: int | None, expected: list[int]
) -> None:
    entries = [entry(1, ("月影阁",), scan_depth=scan_depth)]
    history = ["月影阁的密信", "嗯"]  # with the input: the key is the 3rd newest message
    result = run(entries, "然后呢", history=history, settings=LoreSettings(depth=depth))
    assert active(result) == expected


def test_names_are_scanned_and_hidden_messages_are_not() -> None:
    history = [
        ChatMessage(name="Seraphina", is_user=False, mes="hello"),
        ChatMessage(name="Narrator", is_user=False, mes="secret 密室", is_system=True),
    ]
    entries = [entry(1, ("seraphina",)), entry(2, ("密室",))]
    assert active(run(entries, "hi", history=history)) == [1]
    no_names = LoreSettings(include_names=False)
    assert active(run(entries, "hi", history=history, settings=no_names)) == []


def test_entry_case_and_whole_word_settings_override_the_globals() -> None:
    entries = [
        entry(1, ("Cat",), case_sensitive=True),
        entry(2, ("cat",), match_whole_words=False),
        entry(3, ("cat",)),
    ]
    assert active(run(entries, "concatenate")) == [2]
    assert sorted(active(run(entries, "a Cat"))) == [1, 2, 3]
    assert sorted(active(run(entries, "a cat"))) == [2, 3]


def test_macros_in_keys_use_the_names() -> None:
    context = ScanContext(user_name="Alice", char_name="Seraphina")
    entries = [entry(1, ("{{char}}的森林",)), entry(2, ("{{user}}",))]
    result = run(
        entries, "Seraphina的森林", context=context, settings=LoreSettings(include_names=False)
    )
    assert active(result) == [1]


def test_opted_in_sources_are_scanned() -> None:
    context = ScanContext(sources={"character_description": "守护着月影阁的女忍"})
    entries = [
        entry(1, ("月影阁",), match_sources=["character_description"]),
        entry(2, ("月影阁",)),
    ]
    assert active(run(entries, "你好", context=context)) == [1]


# --- secondary keys ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("logic", "secondary", "selective", "activates"),
    [
        (0, ("火", "冰"), True, True),  # AND ANY: 火 matches
        (0, ("冰",), True, False),
        (1, ("火", "冰"), True, True),  # NOT ALL: 冰 is missing
        (1, ("火",), True, False),
        (2, ("冰",), True, True),  # NOT ANY
        (2, ("火", "冰"), True, False),
        (3, ("火",), True, True),  # AND ALL
        (3, ("火", "冰"), True, False),
        (3, ("火", "  "), True, False),  # an empty secondary key never matches
        (2, ("火",), None, True),  # selective absent: secondary keys ignored
        (2, ("火",), False, True),
        (7, ("火",), True, False),  # unknown logic
    ],
)
def test_secondary_key_logic(
    logic: int, secondary: tuple[str, ...], selective: bool | None, activates: bool
) -> None:
    item = entry(
        1, ("龙",), secondary_keys=list(secondary), selective_logic=logic, selective=selective
    )
    result = run([item], "一条喷火的龙")
    assert (active(result) == [1]) is activates
    if not activates:
        assert "secondary" in rejected(result)[1] or "selectiveLogic" in rejected(result)[1]


# --- constant, disabled, decorators, filters --------------------------------------------


def test_constant_disabled_and_decorators() -> None:
    entries = [
        entry(1, constant=True),
        entry(2, constant=True, disabled=True),
        entry(3, ("龙",), disabled=True),
        entry(4, decorators=["@@activate"]),
        entry(5, ("龙",), decorators=["@@dont_activate"]),
        entry(6, ("虎",), disabled=True),  # no match: not worth reporting
    ]
    result = run(entries, "龙")
    assert sorted(active(result)) == [1, 4]
    assert rejected(result) == {2: "disabled", 3: "disabled", 5: "@@dont_activate"}
    assert reasons(result) == {1: "constant", 4: "@@activate"}


def test_triggers_and_character_filters() -> None:
    entries = [
        entry(1, ("龙",), triggers=["continue"]),
        entry(2, ("龙",), character_filter={"isExclude": False, "names": ["Seraphina"]}),
        entry(3, ("龙",), character_filter={"isExclude": True, "names": ["Seraphina"]}),
    ]
    result = run(entries, "龙", context=ScanContext(char_name="Seraphina"))
    assert active(result) == [2]
    assert set(rejected(result)) == {1, 3}
    continued = run(entries, "龙", context=ScanContext(char_name="Bob", generation="continue"))
    assert sorted(active(continued)) == [1, 3]


def test_formatting_entries_never_activate() -> None:
    entries = [
        entry(1, ("龙",), comment="[TOOL:roll_dice]"),
        entry(2, constant=True, comment="[mvu_update]规则"),
        entry(3, ("龙",), content='{"type": "code", "function": {"name": "f"}}'),
        entry(4, ("龙",)),
    ]
    assert active(run(entries, "龙")) == [4]


# --- probability ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_probability_rolls_on_the_seeded_rng(seed: int) -> None:
    item = entry(1, ("龙",), probability=40, use_probability=True)
    expected = new_rng(seed).random() * 100 <= 40
    result = run([item], "龙", rng=new_rng(seed))
    assert (active(result) == [1]) is expected
    if not expected:
        assert rejected(result)[1].startswith("probability: rolled")


def test_probability_is_not_rolled_when_unused_or_certain() -> None:
    rng = new_rng(3)
    before = rng_state(rng)
    entries = [
        entry(1, ("龙",), probability=0, use_probability=None),  # absent: no roll
        entry(2, ("龙",), probability=0, use_probability=False),
        entry(3, ("龙",), probability=100, use_probability=True),
    ]
    assert sorted(active(run(entries, "龙", rng=rng))) == [1, 2, 3]
    assert rng_state(rng) == before


def test_same_inputs_and_seed_give_the_same_result() -> None:
    entries = [
        entry(i, ("龙",), probability=50, use_probability=True, group="g" * (i % 2))
        for i in range(10)
    ]
    first = run(entries, "龙", rng=new_rng(9))
    second = run(entries, "龙", rng=new_rng(9))
    assert [(a.entry.uid, a.reason) for a in first.activated] == [
        (a.entry.uid, a.reason) for a in second.activated
    ]
    assert rejected(first) == rejected(second)


# --- recursion --------------------------------------------------------------------------


def chain(**overrides: dict[str, Any]) -> list[LoreEntry]:
    """甲 → (content mentions 乙) → 乙 → (mentions 丙) → 丙."""
    specs = {1: ("甲", "说到乙"), 2: ("乙", "说到丙"), 3: ("丙", "完")}
    return [
        entry(uid, (key,), content=content, **overrides.get(str(uid), {}))
        for uid, (key, content) in specs.items()
    ]


def test_recursion_follows_a_chain_and_names_the_step() -> None:
    result = run(chain(), "甲")
    assert reasons(result) == {
        1: 'key "甲"',
        2: 'key "乙" (recursion step 2)',
        3: 'key "丙" (recursion step 3)',
    }
    assert result.steps == 4


@pytest.mark.parametrize(
    ("settings", "overrides", "expected", "why"),
    [
        (LoreSettings(recursive=False), {}, [1], None),
        (LoreSettings(max_recursion_steps=2), {}, [1, 2], None),
        (LoreSettings(max_recursion_steps=1), {}, [1], None),
        (LoreSettings(), {"2": {"prevent_recursion": True}}, [1, 2], None),
        (LoreSettings(), {"3": {"exclude_recursion": True}}, [1, 2], "excludeRecursion"),
    ],
)
def test_recursion_limits(
    settings: LoreSettings, overrides: dict[str, Any], expected: list[int], why: str | None
) -> None:
    result = run(chain(**overrides), "甲", settings=settings)
    assert sorted(active(result)) == expected
    if why:
        assert why in rejected(result)[3]


def test_delay_until_recursion_levels_open_one_by_one() -> None:
    entries = [
        entry(1, ("龙",), delay_until_recursion=1),
        entry(2, ("龙",), delay_until_recursion=2),
        entry(3, ("龙",)),
    ]
    result = run(entries, "龙")
    steps = {a.entry.uid: a.step for a in result.activated}
    assert steps[3] == 1 and steps[1] == 2 and steps[2] > steps[1]
    no_recursion = run(entries[:1], "虎")
    assert active(no_recursion) == []


def test_delay_until_recursion_entry_is_rejected_when_recursion_never_reaches_it() -> None:
    entries = [entry(1, ("龙",), delay_until_recursion=1)]
    result = run(entries, "龙", settings=LoreSettings(max_recursion_steps=1))
    assert "delayUntilRecursion" in rejected(result)[1]


# --- inclusion groups -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_group_weighted_roll_keeps_one_member(seed: int) -> None:
    entries = [
        entry(1, ("龙",), group="坐骑", group_weight=30),
        entry(2, ("龙",), group="坐骑", group_weight=70),
    ]
    roll = new_rng(seed).random() * 100
    winner = 1 if roll <= 30 else 2
    result = run(entries, "龙", rng=new_rng(seed))
    assert active(result) == [winner]
    assert "won the weighted roll" in rejected(result)[3 - winner]


def test_group_override_wins_by_highest_order() -> None:
    entries = [
        entry(1, ("龙",), group="g", group_override=True, order=10),
        entry(2, ("龙",), group="g", group_override=True, order=50),
        entry(3, ("龙",), group="g", order=90),
    ]
    result = run(entries, "龙")
    assert active(result) == [2]
    assert "priority" in rejected(result)[1] and "priority" in rejected(result)[3]


def test_group_scoring_keeps_the_best_match() -> None:
    entries = [entry(1, ("龙", "火"), group="g"), entry(2, ("龙", "冰"), group="g")]
    result = run(entries, "喷火的龙", settings=LoreSettings(use_group_scoring=True))
    assert active(result) == [1]
    assert "matched 1 keys" in rejected(result)[2]


def test_a_group_filled_in_an_earlier_step_admits_no_more() -> None:
    entries = [
        entry(1, ("甲",), group="g", content="说到乙"),
        entry(2, ("乙",), group="g"),
        entry(3, ("甲",), group="h, g2"),
        entry(4, ("甲",), group="g2"),
    ]
    result = run(entries, "甲", rng=new_rng(2))
    assert 1 in active(result) and 2 not in active(result)
    assert "earlier step" in rejected(result)[2]
    assert len({3, 4} & set(active(result))) == 1  # one winner in g2


# --- budget -----------------------------------------------------------------------------


def test_token_budget_and_ignore_budget() -> None:
    settings = LoreSettings(max_context=100, budget_percent=25)  # 25 tokens
    assert settings.budget == 25
    body = "一二三四五六七八九十"  # 10 tokens, 11 with its newline
    entries = [
        entry(1, ("龙",), content=body, order=300),
        entry(2, ("龙",), content=body, order=200),
        entry(3, ("龙",), content=body, order=150),  # 31 ≥ 25: over budget (joined text)
        entry(4, ("龙",), content=body, order=120, ignore_budget=True),
        entry(5, ("龙",), content=body, order=110),
    ]
    result = run(entries, "龙", settings=settings)
    assert sorted(active(result)) == [1, 2, 4]
    assert rejected(result)[3] == "budget: would reach 31 of 25 tokens"
    assert "used up" in rejected(result)[5]
    assert LoreSettings(max_context=1000, budget_cap=30).budget == 30
    assert LoreSettings(max_context=1000, budget_percent=500).budget == 250


def test_min_activations_widen_the_scan() -> None:
    entries = [entry(1, ("月影阁",))]
    history = ["月影阁", "嗯", "哦"]
    settings = LoreSettings(depth=1, min_activations=1)
    result = run(entries, "然后", history=history, settings=settings)
    assert active(result) == [1]
    assert "scan widened to 4 messages" in reasons(result)[1]
    capped = LoreSettings(depth=1, min_activations=1, min_activations_depth_max=2)
    assert active(run(entries, "然后", history=history, settings=capped)) == []


# --- timed effects ----------------------------------------------------------------------


def turns(entries: list[LoreEntry], inputs: list[str]) -> list[ActivationResult]:
    timed = TimedEffects()
    results = []
    for number, text in enumerate(inputs, start=1):
        result = run(entries, text, timed=timed, turn=number)
        timed = TimedEffects.from_dict(result.timed.to_dict())  # as saved in a snapshot
        results.append(result)
    return results


def test_sticky_keeps_an_entry_for_its_messages() -> None:
    results = turns([entry(1, ("龙",), sticky=4)], ["龙", "走", "走"])
    assert [active(r) for r in results] == [[1], [1], []]
    assert reasons(results[1])[1] == "sticky"


def test_cooldown_blocks_reactivation() -> None:
    results = turns([entry(1, ("龙",), cooldown=4)], ["龙", "龙", "龙"])
    assert [active(r) for r in results] == [[1], [], [1]]
    assert rejected(results[1])[1] == "cooldown"


def test_delay_waits_for_enough_messages() -> None:
    results = turns([entry(1, ("龙",), delay=5)], ["龙", "龙", "龙"])
    assert [active(r) for r in results] == [[], [], [1]]
    assert rejected(results[0])[1] == "delay: needs 5 messages in the chat"


def test_an_ended_sticky_starts_its_cooldown() -> None:
    results = turns([entry(1, ("龙",), sticky=2, cooldown=4)], ["龙", "龙", "龙", "龙"])
    assert [active(r) for r in results] == [[1], [], [], [1]]


def test_regenerating_a_turn_drops_effects_started_by_it() -> None:
    item = entry(1, ("龙",), cooldown=10)
    first = run([item], "龙", turn=1)
    again = run([item], "龙", turn=1, timed=first.timed)  # same turn: the chat did not advance
    assert active(again) == [1]


def test_sticky_entries_win_their_group_and_skip_the_roll() -> None:
    entries = [
        entry(1, ("龙",), group="g", sticky=6, probability=1, use_probability=True),
        entry(2, ("龙",), group="g"),
    ]
    timed = TimedEffects.from_dict({"sticky": {"book.1": {"hash": "", "start": 2, "end": 8}}})
    timed.sticky["book.1"].hash = entry_hash(entries[0])
    result = run(entries, "龙", timed=timed, turn=2)
    assert active(result) == [1]
    assert "sticky entry 1 holds it" in rejected(result)[2]


def test_timed_effects_round_trip_and_drop_malformed_records() -> None:
    timed = TimedEffects.from_dict(
        {
            "sticky": {"a.1": {"hash": 12, "start": 2, "end": 6}, "bad": "x"},
            "cooldown": {"b.2": {"start": "nope"}},
        }
    )
    assert timed.to_dict() == {
        "sticky": {"a.1": {"hash": "12", "start": 2, "end": 6, "protected": False}},
        "cooldown": {},
    }
    assert TimedEffects.from_dict(None).to_dict() == {"sticky": {}, "cooldown": {}}


# --- order and routing ------------------------------------------------------------------


def test_output_is_in_sillytavern_prompt_order() -> None:
    entries = [
        entry(1, ("龙",), order=50),
        entry(2, ("龙",), order=10),
        entry(3, ("龙",), order=50),
        entry(4, constant=True, order=30),
    ]
    assert active(run(entries, "龙")) == [2, 4, 3, 1]  # ascending; ties reversed


def test_absent_order_keeps_file_place() -> None:
    entries = [entry(1, order=5), entry(2, order=None), entry(3, order=9), entry(4, order=None)]
    assert sort_entries(entries) == [2, 1, 0, 3]


def test_routed_lore_follows_the_design() -> None:
    entries = [
        entry(1, constant=True, position=4, order=20, content="系统A"),
        entry(2, constant=True, position=4, order=10, content="系统B"),
        entry(3, constant=True, position=0, content="角色前"),
        entry(4, constant=True, position=1, order=99, content="角色后"),
        entry(5, ("龙",), position=4, order=1, content="关键词@D"),
        entry(6, ("龙",), position=0, order=50, content="关键词前"),
        entry(7, ("龙",), position=7, outlet_name="地图", content="出口"),
        entry(8, constant=True, position=None, content="无位置"),
    ]
    result = run(entries, "龙")
    routes = {a.entry.uid: a.route for a in result.activated}
    assert routes == {
        1: "worldinfo1",
        2: "worldinfo1",
        3: "worldinfo2",
        4: "worldinfo3",
        5: "keyword",
        6: "keyword",
        7: "outlet",
        8: "unrouted",
    }
    routed = routed_lore(result)
    assert routed.text("worldinfo1") == "系统B\n系统A"
    assert routed.text("worldinfo2") == "角色前"
    assert routed.text("worldinfo3") == "角色后\n关键词@D\n关键词前"
    assert routed.outlet("地图") == "出口" and routed.outlet("别处") == ""


def test_invalid_regex_is_plain_text_and_a_slow_one_is_reported_once() -> None:
    entries = [entry(7, ("/[龙/",), comment="坏正则"), entry(8, ("龙",)),
               entry(9, ("/(a|aa)+$/",), comment="慢正则")]
    result = run(entries, "龙 " + "a" * 40 + "b")
    assert active(result) == [8]
    assert result.problems[0].startswith("entry 7 (坏正则): /[龙/ is not a JavaScript regex")
    assert result.problems[1].startswith("entry 9 (慢正则): regex /(a|aa)+$/ ran longer than")
    assert len(result.problems) == 2
    again = run(entries, "我说 /[龙/ " + "a" * 40 + "b")
    assert sorted(active(again)) == [7, 8]  # matched as plain text, as SillyTavern does
    assert not any("慢正则" in problem for problem in again.problems)  # skipped, not re-run


# --- settings ---------------------------------------------------------------------------


def test_settings_defaults_and_dict_forms() -> None:
    defaults = LoreSettings()
    assert (defaults.recursive, defaults.match_whole_words, defaults.case_sensitive) == (
        True,
        True,
        False,
    )
    assert (defaults.budget_percent, defaults.budget_cap, defaults.depth) == (25, 0, 2)
    custom = LoreSettings.from_dict(
        {"world_info_depth": 3, "world_info_budget": 30, "recursive": "off", "unknown": 1}
    )
    assert (custom.depth, custom.budget_percent, custom.recursive) == (3, 30, False)
    assert LoreSettings.from_dict(custom.to_dict()) == custom
    assert LoreSettings.from_dict({"world_info_depth": 5000}).depth == 1000


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"world_info_depth": "deep"}, "world_info_depth"),
        ({"max_recursion_steps": -1}, "max_recursion_steps"),
        ({"match_whole_words": "maybe"}, "match_whole_words"),
    ],
)
def test_bad_settings_name_the_key(data: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        LoreSettings.from_dict(data)
