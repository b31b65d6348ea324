"""Memos of the turn's compute path (#17, session eight), each against its result made anew.

A replayed turn builds the same blocks as the turn before wherever their inputs did not
change; what is remembered must be exactly what building it again gives, whatever changed.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from narrative_cli.context import parts
from narrative_cli.context.inputs import HistoryTurn, PromptInputs, SummaryEntry, WindowSettings
from narrative_cli.domain import Card
from narrative_cli.safetext import json_copy
from narrative_cli.state.chapters import ARC, CHAPTER, Chapter


def _fresh(inputs: PromptInputs, window: list[HistoryTurn] | None, settings: WindowSettings |
           None) -> str:  # fmt: skip
    parts._FOLDED.clear()
    return parts.story_summary(inputs, window, settings).text


def test_the_folded_summary_remembered_is_the_one_made_anew() -> None:
    """A story grows turn by turn (a line each, a fold now and then, its window moving, a
    line rewritten or a fold replaced by an equal or a different one): the block built with
    the memo of the turns before is the block built from nothing, for windows and without."""
    rng = random.Random(11)
    for _ in range(12):
        entries: list[SummaryEntry] = []
        folds: list[Chapter] = []
        settings = WindowSettings(rng.randint(1, 4), rng.randint(0, 4))
        parts._FOLDED.clear()
        for turn in range(1, 120):
            entries = [*entries, SummaryEntry(turn, f"[Turn {turn}] line {turn} ")]
            if turn % 9 == 0:
                start = folds[-1].last + 1 if folds else 1
                folds = [*folds, Chapter(start, turn - 2, CHAPTER, f"chapter {turn}", turn + 1)]
            if turn % 40 == 0:
                folds = [*folds, Chapter(1, turn - 5, ARC, f"arc {turn}", turn + 2)]
            change = rng.random()
            if change < 0.05 and entries:  # an older line rewritten (a new object)
                at = rng.randrange(len(entries))
                old = entries[at]
                entries = [*entries[:at], SummaryEntry(old.turn, old.text + "!"), *entries[at + 1:]]
            elif change < 0.1 and folds:  # a fold replaced by an equal one: another object
                at = rng.randrange(len(folds))
                f = folds[at]
                copy = Chapter(f.first, f.last, f.level, f.text, f.shown_from)
                folds = [*folds[:at], copy, *folds[at + 1:]]
            elif change < 0.13 and folds:  # a fold's text told again
                at = rng.randrange(len(folds))
                f = folds[at]
                told = Chapter(f.first, f.last, f.level, f.text + " again", f.shown_from)
                folds = [*folds[:at], told, *folds[at + 1:]]
            lang = rng.choice(["en", "en", "zh"])
            history = [HistoryTurn(n, f"u{n}", f"n{n}") for n in range(1, turn)]
            inputs = PromptInputs(Card(name="c"), lang=lang, turn=turn, history=history,
                                  summaries=entries, chapters=folds)  # fmt: skip
            window = parts.window(inputs, settings)
            for shown, given in ((window, settings), (None, None), (window, None)):
                remembered = parts.story_summary(inputs, shown, given).text
                saved = list(parts._FOLDED)
                assert remembered == _fresh(inputs, shown, given), (turn, lang)
                parts._FOLDED[:] = saved  # go on with the memo as the turns left it


def test_a_window_between_its_cuts_finds_its_text_again() -> None:
    """Between the window's cuts the next turn's block is the remembered one (the entries
    after the window's first turn are not in it): it is not made again."""
    folds = [Chapter(1, 20, CHAPTER, "the first night", 22)]
    settings = WindowSettings(4, 4)
    parts._FOLDED.clear()
    made = []
    original = parts._fold_lines

    def counting(*args: object) -> str:
        made.append(args)
        return original(*args)  # type: ignore[arg-type]

    parts._fold_lines = counting  # type: ignore[assignment]
    try:
        for turn in range(30, 34):  # the window (n 4, m 4) does not cut in these turns
            entries = [SummaryEntry(n, f"line {n}") for n in range(1, turn)]
            history = [HistoryTurn(n, "", f"n{n}") for n in range(1, turn)]
            inputs = PromptInputs(Card(name="c"), turn=turn, history=history,
                                  summaries=entries, chapters=folds)  # fmt: skip
            window = parts.window(inputs, settings)
            parts.story_summary(inputs, window, settings)
    finally:
        parts._fold_lines = original  # type: ignore[assignment]
    assert len(made) == 1


def test_an_update_through_a_view_is_the_update_of_a_copy() -> None:
    """``update_variables`` works on its own copy, so the turn hands it a view of its variables
    (``MvuData.viewing``): the result is the one a full copy (``from_parts``) gives, and the
    turn's own trees are left as they were, whether the commands apply or are rejected."""
    import json

    from narrative_cli.state.mvu_data import MvuData
    from narrative_cli.state.mvu_update import update_variables

    stat = {"keeper": {"oil": [3, "litres"], "log": ["night 1"], "mood": "calm"}, "day": 1}
    meta = {"schema": {"type": "object", "properties": {}, "extensible": True},
            "display_data": {"day": 1}, "delta_data": {}}  # fmt: skip
    texts = [
        "_.set('keeper.oil', 3, 2);//burned\n_.add('day', 1);",
        "_.insert('keeper.log', 'night 2');\n_.set('keeper.missing', 1, 2);",
        "_.set('day', 1, 'not a number');\n_.delete('keeper.mood');",
    ]
    for text in texts:
        before = json.dumps([stat, meta])
        viewed = update_variables(text, MvuData.viewing(stat, meta), lang="en")
        copied = update_variables(text, MvuData.from_parts(stat, meta), lang="en")
        assert json.dumps([stat, meta]) == before  # the turn's own trees: unchanged
        assert viewed.data == copied.data
        assert (viewed.applied, viewed.rejected) == (copied.applied, copied.rejected)
        stat, meta = viewed.data.stat_data, viewed.data.to_dict()
    assert MvuData.viewing(stat, meta).copy() == MvuData.from_parts(stat, meta)


# -- session nine ------------------------------------------------------------------------------


def test_an_update_copies_only_what_it_changes_and_shares_nothing_with_its_input() -> None:
    """``update_variables`` no longer copies the caller's display and delta trees (the run
    makes its own) nor the variables once more to compare: what it gives is still independent
    of what it was given (changing the result changes nothing of the input), ``modified`` is
    False for commands that leave the values as they were, and the display and delta trees
    are the run's, not the caller's (a ``set`` to the same value is shown and recorded as
    MVU does, and modifies nothing)."""
    import json

    from narrative_cli.state.mvu_data import MvuData
    from narrative_cli.state.mvu_update import update_variables

    stat = {"keeper": {"oil": [3, "litres"], "log": ["night 1"]}, "day": 1}
    meta = {"schema": {"type": "object", "properties": {}, "extensible": True},
            "display_data": {"old": "display"}, "delta_data": {"old": "delta"},
            "initialized_lorebooks": {"book": []}}  # fmt: skip
    given = json.dumps([stat, meta])
    same = update_variables("_.set('day', 1, 1);", MvuData.viewing(stat, meta), lang="en")
    assert not same.modified and same.data.delta_data == {"day": "1->1 "}  # as MVU records it
    assert same.data.display_data == {"keeper": {"oil": [3, "litres"], "log": ["night 1"]},
                                      "day": "1->1 "}  # fmt: skip
    changed = update_variables(
        "_.set('keeper.oil', 3, 2);_.insert('keeper.log', 'night 2');_.set('gone', 1, 2);",
        MvuData.viewing(stat, meta), lang="en",
    )
    assert changed.modified and changed.data.stat_data["keeper"]["oil"] == [2, "litres"]
    assert changed.data.delta_data["keeper"]["oil"] == "3->2 " and len(changed.rejected) == 1
    for result in (same, changed):
        data = result.data
        data.stat_data["keeper"]["log"].append("x")
        assert data.schema is not None
        data.schema["changed"] = True
        data.display_data["keeper"]["new"] = "x"
        data.initialized_lorebooks["book"].append("x")
    assert json.dumps([stat, meta]) == given


def test_whether_a_story_uses_mvu_is_answered_per_entry_list_as_before() -> None:
    """``Story.uses_mvu`` (asked three times a turn) is now kept with the entry list's routes:
    for every mix of [InitVar] entries (enabled or not), [mvu_update] entries (enabled or
    not) and plain ones, it answers what the rule read from the entries gives."""
    import itertools

    from narrative_cli.domain import LoreEntry
    from narrative_cli.lore.routed import routes_for
    from narrative_cli.lore.routing import MVU_UPDATE, is_initvar

    kinds = [("[InitVar] start", False), ("[initvar]", True), ("[mvu_update] rules", False),
             ("[mvu_update] rules", True), ("plain", False)]  # fmt: skip
    for size in range(3):
        for chosen in itertools.product(kinds, repeat=size):
            entries = [LoreEntry(uid=i, keys=["k"], content="c", comment=comment,
                                 disabled=disabled)
                       for i, (comment, disabled) in enumerate(chosen)]  # fmt: skip
            routes = routes_for(entries)
            updates = set(map(id, routes.enabled(MVU_UPDATE)))
            rule = any(is_initvar(e) or id(e) in updates for e in entries)
            assert routes.uses_mvu is rule
            assert routes_for(entries).uses_mvu is rule  # asked again: the kept answer


def test_a_turn_recorded_again_is_told_from_the_arrays_as_from_the_refs() -> None:
    """``CallIndex.add`` drops a turn's earlier recording when a once-a-turn agent's call with
    the same attempt and speaker comes again; it now reads that from its arrays instead of
    making the turn's refs: the same turns are kept as the rule over the refs keeps."""
    import random
    from pathlib import Path

    from narrative_cli.replay.call_index import CallIndex
    from narrative_cli.replay.recorded import CallRef

    rng = random.Random(5)
    agents, speakers = ["planning", "writing", "analysis"], ["", "Mira", "Ode"]
    for _ in range(40):
        index: CallIndex[CallRef] = CallIndex(CallRef)
        plain: dict[int, list[CallRef]] = {}
        for line in range(60):
            turn = rng.randint(1, 4)
            ref = CallRef(Path("calls.jsonl"), line * 10, line + 1, rng.choice(agents),
                          rng.randint(1, 2), rng.choice(speakers), 10)  # fmt: skip
            once = rng.random() < 0.7
            if once and any((c.agent, c.attempt, c.speaker) == (ref.agent, ref.attempt,
                                                                ref.speaker)
                            for c in plain.get(turn, [])):  # fmt: skip
                plain[turn] = []
            plain.setdefault(turn, []).append(ref)
            index.add(turn, ref, once_per_turn=once)
        assert dict(index) == plain


def test_the_tools_stage_builds_the_tool_context_and_state_only_for_tools_that_read_them() -> None:
    """The planner's calls decide what the tools stage makes: the tool context only for an
    llm tool (with the keys it declares taken now, and the dice lines the stage reads), the
    code tools' state only for code other than the dice tool; a call naming no tool runs
    nothing, and a call that is not a ``ToolCall`` may be anything."""
    from narrative_cli.agents.replies import ToolCall
    from narrative_cli.pipeline.stages import _read_by, _tool_kinds, declared, runs_code
    from narrative_cli.tools.definitions import DICE_TOOL, ToolDef, ToolSet

    dice = ToolDef(name=DICE_TOOL, type="code", trigger="planning")
    code = ToolDef(name="count", type="code", trigger="planning", code="return 1",
                   context=("user_input",))  # fmt: skip
    llm = ToolDef(name="oracle", type="llm", trigger="planning",
                  context=("state_summary", "known_context"))  # fmt: skip
    tools = ToolSet(tools=[dice, code, llm])
    calls = {"dice": ToolCall(DICE_TOOL), "code": ToolCall("count"),
             "llm": ToolCall("oracle"), "none": ToolCall("missing")}  # fmt: skip
    assert _tool_kinds([calls["dice"]], tools) == ([], False)
    assert _tool_kinds([calls["dice"], calls["code"]], tools) == ([], True)
    assert _tool_kinds([calls["llm"], calls["none"]], tools) == ([llm], False)
    assert _tool_kinds([calls["none"]], tools) == ([], False)
    assert _tool_kinds([calls["dice"], {"tool": "count"}], tools) == (None, True)
    assert not runs_code([dice, llm]) and runs_code([dice, code])
    assert declared([code, llm]) == {"user_input", "state_summary", "known_context"}
    assert _read_by([llm]) == {"dice_results", "state_summary", "known_context"}
    assert _read_by(None) is None


def test_a_tool_context_takes_declared_keys_now_and_the_others_when_read() -> None:
    """``tool_context(keys=…)`` takes the declared keys' texts when it is made (a concurrent
    stage may change them after) and makes the others only if read; without ``keys`` every
    key is taken when made, as before."""
    from narrative_cli.pipeline.turn import TurnState

    texts = {"state": "hp 1", "known": '{"npcs":["Mira"]}'}
    state = TurnState._taken("state_summary", {"state_summary"}, lambda: texts["state"])
    known = TurnState._taken("known_context", {"state_summary"}, lambda: texts["known"])
    every = TurnState._taken("known_context", None, lambda: texts["known"])
    texts.update(state="hp 0", known='{"npcs":["Ode"]}')
    assert state() == "hp 1"  # declared: taken when made
    assert known() == '{"npcs":["Ode"]}'  # not declared: made when read
    assert every() == '{"npcs":["Mira"]}'  # every key: taken when made


def test_the_lines_of_past_turns_kept_are_the_lines_made_anew() -> None:
    """``<recent_turns>`` and the writer's chat lines take each past turn's lines from a memo
    kept by the turn's value: over windows sliding through a story (turns told again as new
    objects, a turn's text rewritten under the same number, a turn without user message,
    both languages), every block is the one made with the memo emptied first."""
    from narrative_cli.agents.templates import label

    def made_anew(turns: list[HistoryTurn], lang: str) -> str:
        rendered = []
        for turn in turns:
            lines = [label(lang, "turn.user", n=turn.number, text=turn.user)] if turn.user else []
            lines.append(label(lang, "turn.ai", n=turn.number, text=turn.narrative))
            rendered.append("\n".join(lines))
        return "\n\n".join(rendered)

    rng = random.Random(17)
    story = [HistoryTurn(0, "", "greeting")]
    for number in range(1, 300):
        if rng.random() < 0.1:  # an older turn rewritten under its number
            at = rng.randrange(len(story))
            story[at] = HistoryTurn(story[at].number, story[at].user, story[at].narrative + "!")
        story.append(HistoryTurn(number, rng.choice(["", f"u{number}"]), f"n{number}"))
        size = rng.randint(1, 8)
        window = [HistoryTurn(t.number, t.user, t.narrative) if rng.random() < 0.2 else t
                  for t in story[-size:]]  # fmt: skip
        lang = rng.choice(["en", "zh"])
        block = parts.recent_turns(window, lang)
        assert block.text == made_anew(window, lang)
        if rng.random() < 0.05:
            parts._TURN_LINES.clear()


def test_a_rejected_set_or_add_is_undone_from_its_first_key_as_from_a_whole_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``set`` or ``add`` keeps a copy of its first key's value only, to undo itself when
    rejected (a missing path, a text on a number, a value nested past the limit, a date);
    random command lists give the same variables, schema, display, delta and records as
    undoing from a copy of the whole tree and schema, as every command did before."""
    from narrative_cli.state import mvu_update
    from narrative_cli.state.mvu_data import MvuData
    from narrative_cli.state.mvu_update import update_variables

    def whole(self: object, kind: str, path: str) -> object:
        run: Any = self
        snapshot = json_copy(run.data.stat_data), json_copy(run.data.schema)

        def restore() -> None:
            run.data.stat_data, run.data.schema = snapshot

        return restore

    bomb = "[" * 200 + "]" * 200
    commands = [
        "_.set('hero.hp', 10, 4);", "_.set('hero.hp[0]', 4, 'many');", "_.add('hero.gold', 5);",
        "_.add('hero.name', 1);", "_.set('missing.key', 1, 2);", "_.set('new', 1, 2);",
        f"_.set('hero.bag', [], {bomb});", "_.add('day', 'x');", "_.set('a.b', 1, {\"c\": 1});",
        "_.set('hero.bag[1]', 1, 'lamp');", "_.add('date', 86400000);",
        "_.insert('hero.bag', 'rope');", "_.delete('hero.gold');", "_.set('', 1, 2);",
        "_.set('hero', {}, {\"hp\": [3, 'hit points']});", "_.add('hero.hp', 2);",
    ]  # fmt: skip
    rng = random.Random(23)
    for _ in range(150):
        stat = {"hero": {"hp": [10, "hit points"], "gold": 3, "name": "Ada", "bag": ["map"]},
                "day": 1, "date": "2026-01-01T00:00:00.000Z", "a": 1}  # fmt: skip
        meta = {"schema": {"type": "object", "properties": {}, "extensible": True}}
        text = "\n".join(rng.choice(commands) for _ in range(rng.randint(1, 6)))
        fast = update_variables(text, MvuData.viewing(stat, meta), lang="en")
        with monkeypatch.context() as patched:
            patched.setattr(mvu_update._Run, "_undo", whole)
            slow = update_variables(text, MvuData.viewing(stat, meta), lang="en")
        assert json.dumps(fast.data.__dict__) == json.dumps(slow.data.__dict__)
        assert (fast.applied, fast.rejected, fast.modified) == (
            slow.applied, slow.rejected, slow.modified)


def test_lore_settings_kept_per_config_are_the_settings_read_anew() -> None:
    """The lore stage's settings are kept by the ``repr`` of the ``lore:`` config's items:
    configs that differ only in a value's type (1, 1.0, True, "1") or order still give what
    reading each anew gives, and a bad value is still refused every time."""
    from narrative_cli.errors import ConfigError
    from narrative_cli.lore.settings import LoreSettings
    from narrative_cli.pipeline import lore_budget

    configs: list[dict[str, Any]] = [
        {}, {"depth": 3}, {"depth": 3.0}, {"world_info_depth": 3}, {"recursive": "off"},
        {"recursive": False}, {"recursive": "1"}, {"depth": 3, "budget": 10},
        {"budget": 10, "depth": 3}, {"depth": None}, {"max_context": 4096},
    ]  # fmt: skip
    for _ in range(3):
        for config in configs:
            key = repr(tuple(config.items()))
            assert lore_budget._settings(key, config) == LoreSettings.from_dict(config)
            room = lore_budget._with_room(lore_budget._settings(key, config), 999)
            assert room.max_context == 999 and room.depth == LoreSettings.from_dict(config).depth
    for bad in ({"depth": -1}, {"recursive": "maybe"}, {"depth": True}):
        for _ in range(2):
            with pytest.raises(ConfigError):
                lore_budget._settings(repr(tuple(bad.items())), bad)


def test_the_character_block_kept_is_the_block_made_anew() -> None:
    """``<character>`` is kept by the language, whether examples are shown, and the card's
    texts it shows: cards that differ in any of them (or only in a text it does not show)
    give the block made with the memo emptied first."""
    from narrative_cli.domain import Card

    rng = random.Random(29)
    texts = ["", " ", "Edda keeps the lamp.", "{{char}} waits", "<START>\nA: hi\nB: ho"]
    cards = [Card(name=rng.choice(["Edda", " ", "艾达"]), description=rng.choice(texts),
                  personality=rng.choice(texts), scenario=rng.choice(texts),
                  mes_example=rng.choice(texts), first_mes=rng.choice(texts))
             for _ in range(5)]  # fmt: skip
    for _ in range(400):
        card = rng.choice(cards)  # the same texts again, in a card made anew or not
        if rng.random() < 0.5:
            card = Card(name=card.name, description=card.description,
                        personality=card.personality, scenario=card.scenario,
                        mes_example=card.mes_example, first_mes=rng.choice(texts))  # fmt: skip
        inputs = PromptInputs(card, lang=rng.choice(["en", "zh"]))
        examples = rng.random() < 0.5
        kept = parts.character(inputs, examples=examples)  # from the memo after a while
        assert kept == parts._character(card, inputs.lang, examples)
    assert len(parts._CHARACTERS) <= 8
