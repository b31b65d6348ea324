"""Long stories at a flat cost (issue 17 item 4): what a turn now extends from the last turn's
work, instead of rebuilding from the whole story, gives what a rebuild gives, whatever the
story did in between (next turns, undo, regenerate, new folds, edited lines)."""

from __future__ import annotations

import json
import random
from bisect import bisect_right
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.context import parts
from narrative_cli.context.inputs import HistoryTurn, PromptInputs, SummaryEntry
from narrative_cli.context.text_search import Document
from narrative_cli.domain import Card
from narrative_cli.pipeline import search_recall
from narrative_cli.state.chapters import ARC, CHAPTER, Chapter, plan_fold, visible_chapters
from narrative_cli.state.summaries import SummaryStore
from narrative_cli.store.sessions import SessionStore
from tests.store_support import pack_afresh


def _history(turns: int, edited: int | None = None) -> list[HistoryTurn]:
    return [
        HistoryTurn(n, f"input {n}", f"story {n}" + (" (regenerated)" if n == edited else ""))
        for n in range(turns + 1)
    ]


def _store(turns: int, folds: list[Chapter]) -> SummaryStore:
    store = SummaryStore("en")
    for n in range(1, turns + 1):
        store = store.add(n, [f"line {n}"] + ([f"second line {n}"] if n % 7 == 0 else []))
    for fold in folds:
        store = store.with_chapter(fold)
    return store


def _afresh(history: list[HistoryTurn], store: SummaryStore) -> list[tuple[str, int, str, str]]:
    """The documents built with nothing to extend."""
    kept = dict(search_recall._LAST)
    search_recall._LAST.clear()
    try:
        return _as_rows(search_recall.documents(history, store))
    finally:
        search_recall._LAST.clear()
        search_recall._LAST.update(kept)


def _as_rows(docs: list[Document]) -> list[tuple[str, int, str, str]]:
    return [(d.key, d.turn, d.kind, d.text) for d in docs]


def test_search_documents_extended_turn_by_turn_are_the_story_s_documents() -> None:
    folds = [Chapter(1, 20, CHAPTER, "the first weeks", 25)]
    steps = [
        (_history(30), _store(30, [])),
        (_history(31), _store(31, [])),  # a next turn
        (_history(32), _store(32, folds)),  # a next turn that folded
        (_history(30), _store(30, folds)),  # undo two turns
        (_history(30, edited=30), _store(30, folds)),  # regenerate the last one
        (_history(31), _store(31, [*folds, Chapter(1, 28, ARC, "the arc", 32)])),
        (_history(5), _store(5, [])),  # another story entirely
    ]
    for history, store in steps:
        extended = _as_rows(search_recall.documents(history, store))
        assert sorted(extended) == sorted(_afresh(history, store))  # in any order
        assert len({key for key, *_ in extended}) == len(extended)


def test_two_lines_of_one_turn_keep_their_places_when_the_turn_gets_a_third() -> None:
    store = _store(14, [])
    search_recall.documents(_history(14), store)
    grown = store.add(14, ["third line 14"])
    keys = [d.key for d in search_recall.documents(_history(14), grown) if d.turn == 14]
    assert keys == ["turn:14", "summary:14:0", "summary:14:1", "summary:14:2"]


def _shown_by_rule(docs: list[Document], shown: list[Chapter], first: int) -> set[str]:
    """The writer's shown documents, one document at a time (the rule, written plainly)."""
    spans = [(c.first, c.last) for c in shown]
    fold_keys = {f"chapter:{c.first}-{c.last}:{c.level}:{c.shown_from}" for c in shown}
    keys = set()
    for doc in docs:
        if (doc.turn >= first and doc.kind != "chapter") or doc.key in fold_keys:
            keys.add(doc.key)
        elif doc.kind == "summary" and not any(a <= doc.turn <= b for a, b in spans):
            keys.add(doc.key)
    return keys


def test_what_the_writer_already_sees_is_left_out_of_the_search_exactly() -> None:
    rng = random.Random(17)
    for _ in range(40):
        turns = rng.randint(5, 120)
        folds, start = [], 1
        while start < turns - 5 and rng.random() < 0.8:
            end = rng.randint(start + 1, turns - 3)
            folds.append(Chapter(start, end, CHAPTER, f"chapter {start}", end + 1))
            start = end + rng.randint(1, 4)
        if len(folds) >= 2 and rng.random() < 0.5:
            folds.append(Chapter(folds[0].first, folds[1].last, ARC, "an arc", turns))
        store = _store(turns, folds)
        made = search_recall.story_documents(_history(turns), store)
        first = rng.randint(1, turns + 1)
        shown = visible_chapters(store.chapters)
        expected = _shown_by_rule(made.all, shown, first)
        assert search_recall.shown_before(made, shown, first) == expected


def _summary_by_rule(entries: list[SummaryEntry], shown: list[Chapter], first: int) -> list[str]:
    starts, ends = [c.first for c in shown], [c.last for c in shown]

    def folded(turn: int) -> bool:
        at = bisect_right(starts, turn) - 1
        return at >= 0 and turn <= ends[at]

    items = [(c.first, c.labelled("en")) for c in shown if c.last < first]
    items += [(e.turn, e.text) for e in entries if e.turn < first and not folded(e.turn)]
    items.sort(key=lambda item: item[0])
    return [line for _, line in items]


def test_the_summary_block_shows_the_lines_between_the_folds_as_before() -> None:
    rng = random.Random(3)
    for _ in range(40):
        turns = rng.randint(3, 90)
        entries = [SummaryEntry(n, f"[Turn {n}] line {n}") for n in range(1, turns + 1)]
        folds, start = [], rng.randint(1, 3)
        while start < turns and (not folds or rng.random() < 0.7):
            end = rng.randint(start, turns)
            folds.append(Chapter(start, end, CHAPTER, f"chapter {start}", 1))
            start = end + rng.randint(1, 5)
        if rng.random() < 0.3:
            rng.shuffle(entries)  # not in turn order: taken one by one
        first = rng.randint(1, turns + 1)
        inputs = PromptInputs(Card(name="c"), turn=first, summaries=entries, chapters=folds)
        window = [HistoryTurn(first, "", "")]
        block = parts.story_summary(inputs, window)
        shown = visible_chapters(folds, first)
        assert block.text.split("\n") == _summary_by_rule(entries, shown, first) or (
            block.text == "" and _summary_by_rule(entries, shown, first) == []
        )


def test_a_new_fold_or_a_fold_coming_into_view_changes_what_is_shown() -> None:
    chapter = Chapter(1, 10, CHAPTER, "first", 12)
    arc = Chapter(1, 30, ARC, "arc", 40)
    assert visible_chapters([chapter]) == [chapter]
    assert visible_chapters([chapter, arc]) == [arc]  # the same chapter, now covered
    assert visible_chapters([chapter, arc], shown_by=39) == [chapter]  # the arc not yet shown
    assert visible_chapters([chapter, arc], shown_by=40) == [arc]


def test_a_fold_takes_the_oldest_loose_lines_as_before() -> None:
    store = SummaryStore("en")
    for n in range(1, 200):
        store = store.add(n, f"Night {n}: the fog, the lamp, the log, and a long line of text.")
    folds = [Chapter(1, 40, CHAPTER, "first", 45), Chapter(50, 60, CHAPTER, "gap", 65)]
    fold = plan_fold(store.labelled_entries, folds, 150, 600, "en")
    assert fold is not None and fold.level == CHAPTER
    loose = [line for t, line in store.labelled_entries
             if t < 150 and not (1 <= t <= 40 or 50 <= t <= 60)]
    assert list(fold.lines) == loose[: len(fold.lines)]
    assert fold.first == 41  # the gap between the folds comes first


def test_summary_lines_added_at_the_end_or_in_the_middle_are_the_rebuilt_store() -> None:
    store = SummaryStore("en")
    for n in range(1, 30):
        store = store.add(n, f"line {n}")
    store = store.add(29, ["[Turn 29] second", "line 29"])  # a label fixed, a repeat dropped
    store = store.add(12, "inserted at 12")
    rebuilt = SummaryStore.from_dict({"lang": "en", "entries": store.to_dict()["entries"]})
    assert rebuilt.labelled_entries == store.labelled_entries
    assert store.to_dict()["entries"][-2:] == [{"turn": 29, "text": "line 29"},
                                               {"turn": 29, "text": "second"}]
    assert store.lines(turn=29) == ["[Turn 29] line 29", "[Turn 29] second"]
    assert store.lines(turn=12) == ["[Turn 12] line 12", "[Turn 12] inserted at 12"]
    assert store.lines(turn=40) == []


def test_the_text_index_follows_the_story_when_only_changes_are_written(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    try:
        session = store.create_session("s", card_path="c", card_hash="", snapshot={})
        index = store.text_index(session)
        docs = [Document(f"turn:{n}", n, "turn", f"lantern night {n}") for n in range(1, 40)]
        index.sync(docs)
        docs = docs + [Document("turn:40", 40, "turn", "the drowned bell rings")]
        index.sync(docs)
        assert index.matches("drowned") == [("turn:40", 40)]
        docs = docs[:-2] + [Document("turn:39", 39, "turn", "a quiet night, regenerated")]
        index.sync(docs)  # undo one turn, regenerate the one before
        assert index.matches("drowned") == []
        assert index.matches("regenerated") == [("turn:39", 39)]
        assert index.matches("lantern night 39") == []
        docs = [Document(d.key, d.turn, d.kind, d.text) for d in docs]  # equal, not the same
        index.sync(docs)
        assert len(index) == 39
        reopened = store.text_index(session)  # what the database holds
        assert reopened.matches("regenerated") == [("turn:39", 39)]
        assert len(reopened) == 39
    finally:
        store.close()


def test_a_snapshot_with_shared_summary_lines_is_stored_byte_for_byte_as_before() -> None:
    """The summary lines a store hands out again are not encoded again; what is written is
    what encoding the whole snapshot writes (also after an undo and on another story)."""
    from narrative_cli.store import blobs, chunks

    def plain(value: object) -> object:  # the same snapshot, every list a plain copy
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return [plain(v) for v in value] if isinstance(value, list) else value

    def from_scratch(value: object) -> blobs.Packed:
        kept = dict(chunks.LISTS)
        chunks.LISTS.clear()
        try:
            return blobs.pack(plain(value))
        finally:
            chunks.LISTS.clear()
            chunks.LISTS.update(kept)

    store = SummaryStore("en")
    stores = []
    for n in range(1, 400):
        store = store.add(n, f"Night {n}: the fog rolls in over the causeway, the lamp is lit.")
        store.to_dict()  # each turn's snapshot, as a story writes it
        stores.append(store)
    reused = 0
    for step in [*stores[300:310], stores[250], stores[398], _store(380, [])]:
        snapshot = {"turn": 1, "summaries": step.to_dict()}
        entries = snapshot["summaries"]["entries"]
        reused += chunks.shared_prefix(entries, ("summaries", "entries")) is not None
        packed = blobs.pack(snapshot)
        expected = from_scratch(snapshot)
        assert packed.root == expected.root and packed.blobs == expected.blobs
        assert blobs.unpack(packed.root, packed.blobs) == plain(snapshot)
    assert reused == 10  # the nine next turns, and the jump forward from turn 251 to 399


def test_old_turns_are_reused_until_one_holds_a_template_which_renders_every_turn() -> None:
    """Turns deeper than every script's range are the last list's very objects, up to the
    first one whose script output holds a template: that one is rendered again each turn,
    with that turn's values, as a full pass renders it."""
    from collections.abc import Sequence

    from narrative_cli.domain import RegexScript
    from narrative_cli.pipeline.records import PlayedTurn
    from narrative_cli.regex import prompt as regex_prompt
    from narrative_cli.regex.scripts import RegexScripts
    from narrative_cli.tools.templates import TemplateJob

    def scripts() -> RegexScripts:
        return RegexScripts(
            [RegexScript("hp", "/HP/g", "<%= hp %>", placement=[2], prompt_only=True),
             RegexScript("fog", "/fog/g", "FOG", placement=[2], prompt_only=True, max_depth=2)],
            target="prompt",
        )

    value = ["10"]

    def render(jobs: Sequence[TemplateJob]) -> list[str | None]:
        return [value[0] for _ in jobs]

    kept = scripts()
    played = [PlayedTurn(0, None, "The lamp is lit.")]
    played += [PlayedTurn(n, f"input {n}", f"fog {n}" + (" HP" if n == 6 else ""))
               for n in range(1, 9)]
    first = regex_prompt.prompt_history(list(played), kept, render)
    assert first[6].narrative == "fog 6 10" and first[8].narrative == "FOG 8"
    for n in range(9, 13):
        value[0] = str(n * 10)
        played.append(PlayedTurn(n, f"input {n}", f"fog {n}"))
        again = regex_prompt.prompt_history(list(played), kept, render)
        assert all(a is b for a, b in zip(again[:5], first[:5], strict=True))
        assert again[6].narrative == f"fog 6 {n * 10}"
        full = regex_prompt.prompt_history(list(played), scripts(), render)  # nothing kept
        assert again == full


def test_a_sliding_event_log_is_stored_byte_for_byte_as_encoding_it_whole_gives() -> None:
    """The event log keeps its last 200 records; each record's JSON is made once and taken
    again every turn (#17, session five). What is written is what encoding the whole state
    writes, turn after turn as the log slides, and a record changed after ``to_dict`` gave it
    is written as it is now."""
    from narrative_cli.state.game import Clock, EventRecord, GameState
    from narrative_cli.store import blobs


    game = GameState.initial("en")
    for n in range(1, 231):
        event = {"location": f"灯室 {n}", "note": "fog " * (n % 7)}
        game.event_log.append(EventRecord("move", event, n % 3 != 0, Clock(1, n % 24), turn=n))
        game.event_log = game.event_log[-200:]
        if n % 10 and n not in (199, 200, 201):
            continue
        snapshot = {"turn": n, "state": game.to_dict()}
        packed = blobs.pack(snapshot)
        expected = pack_afresh(snapshot)
        assert packed.root == expected.root and packed.blobs == expected.blobs
    changed = game.to_dict()
    changed["event_log"][5]["accepted"] = "maybe"
    changed["event_log"][6]["time"]["hour"] = 99
    packed = blobs.pack({"state": changed})
    back = blobs.unpack(packed.root, packed.blobs)["state"]["event_log"]
    assert back[5]["accepted"] == "maybe" and back[6]["time"]["hour"] == 99


def test_a_code_tool_s_state_shows_the_event_log_as_the_snapshot_holds_it() -> None:
    """Code tools read the records' own JSON objects (#17, session five): the same JSON as
    the copies a snapshot takes, notes and times included."""
    from narrative_cli.state.game import Clock, EventRecord, GameState

    game = GameState.initial("zh")
    for n in range(1, 6):
        notes = ("灯油不足",) if n % 2 else ()
        game.event_log.append(
            EventRecord("add_item", {"item": f"灯芯{n}"}, n != 3, Clock(2, n), "", notes, n)
        )
    shared, copied = game.to_dict(shared=True), game.to_dict()
    assert json.dumps(shared, ensure_ascii=False) == json.dumps(copied, ensure_ascii=False)
    assert shared["event_log"][0]["notes"] == ["灯油不足"] and "notes" not in shared["event_log"][1]


def test_an_event_record_changed_after_to_dict_gave_it_does_not_change_the_record() -> None:
    from narrative_cli.state.game import Clock, EventRecord

    record = EventRecord("move", {"location": "灯室"}, True, Clock(1, 3), turn=4)
    first = record.to_dict()
    assert record.to_dict() is first  # unchanged: the same object again
    first["accepted"] = False
    again = record.to_dict()
    assert again is not first and again["accepted"] is True
    assert EventRecord.from_dict(first).accepted is False and EventRecord.from_dict(again) is record


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(accepted=False),
        lambda d: d.__ior__({"accepted": False}),
        lambda d: d.pop("reason", None) or d.pop("turn"),
        lambda d: d.popitem(),
        lambda d: d.setdefault("reason", "new"),
        lambda d: d.__delitem__("type"),
        lambda d: d.clear(),
        lambda d: d["time"].update(hour=9),
        lambda d: d["notes"].append("later"),
        lambda d: d.update(d.pop("type") and {"type": "move"}),  # same content, new key order
        lambda d: d["time"].__setitem__("hour", 9),
        lambda d: d["time"].pop("minute"),
        lambda d: d["time"].__ior__({"day": 3}),
        lambda d: d["notes"].__iadd__(["later"]),
        lambda d: d["notes"].__setitem__(0, "m"),
        lambda d: d["notes"].insert(0, "first"),
        lambda d: d["notes"].clear(),
    ],
)
def test_any_change_to_an_event_record_s_object_is_noticed(change: Any) -> None:
    """#17 session six: changes are noted as they happen instead of comparing the whole
    object; whatever way a reader changes it, the record's JSON is not reused for it."""
    import copy

    from narrative_cli.state.game import Clock, EventRecord

    record = EventRecord("move", {"location": "灯室"}, True, Clock(1, 3), "", ("n",), turn=4)
    given = record.to_dict()
    assert given.known_json() == record.json_bytes()
    copied = copy.deepcopy(given)
    assert copied == given and copied.known_json() is None  # a copy is not the record's
    change(given)
    assert given.known_json() is None and record.to_dict() is not given
    assert EventRecord.from_dict(given) is not record


def test_the_event_log_as_json_and_back_is_what_each_record_gives_every_turn() -> None:
    """#17, session seven: the log's JSON objects and the records read back are remembered
    for the very same records and objects (``state.slide``); over random turns (a record
    added, the oldest dropped, a log cut or rebuilt, a given object changed, plain dicts read)
    they must be what converting each record one by one gives."""
    from narrative_cli.state.game import Clock, EventRecord, GameState, StoredEvent

    rng = random.Random(11)
    game = GameState.initial("en")
    for step in range(400):
        roll = rng.random()
        record = EventRecord("move", {"n": step}, step % 3 != 0, Clock(1, step % 24), turn=step)
        if roll < 0.7:
            game.event_log = [*game.event_log, record][-200:]
        elif roll < 0.8:
            game.event_log = game.event_log[rng.randrange(1, 20) :]
        elif roll < 0.85:
            game.event_log = list(reversed(game.event_log))
        shared, given = game.to_dict(shared=True), game.to_dict()
        pairs = list(zip(shared["event_log"], given["event_log"], game.event_log, strict=True))
        assert all(a is r._json() for a, _, r in pairs)
        assert given["event_log"] == [r.to_dict() for r in game.event_log]
        assert all(b is r.to_dict() for _, b, r in pairs)
        if given["event_log"] and rng.random() < 0.2:
            changed = rng.choice(given["event_log"])
            changed["accepted"] = "changed"
        if given["event_log"] and rng.random() < 0.1:
            place = rng.randrange(len(given["event_log"]))
            given["event_log"][place] = json.loads(json.dumps(given["event_log"][place]))
        expected = [EventRecord.from_dict(item) for item in given["event_log"]]
        back = GameState.from_dict(given)
        assert back.event_log == expected
        read = zip(back.event_log, expected, given["event_log"], strict=True)
        assert all(a is b for a, b, item in read if isinstance(item, StoredEvent) and
                   item.unchanged())  # fmt: skip
        game = back if rng.random() < 0.7 else game
        assert [r.to_dict() for r in game.event_log] == game.to_dict()["event_log"]
    state = game.to_dict()
    state["event_log"][-1] = plain = json.loads(json.dumps(state["event_log"][-1]))
    plain["accepted"] = False
    assert GameState.from_dict(state).event_log[-1].accepted is False
    plain["accepted"] = "read again"  # a plain object is read anew each time
    assert GameState.from_dict(state).event_log[-1].accepted is True


def test_a_slide_makes_anew_only_what_it_has_not_made_for_the_very_same_objects() -> None:
    from narrative_cli.state.slide import Slide

    made: list[object] = []

    def make(item: object) -> tuple[object]:
        made.append(item)
        return (item,)

    slide: Slide[object, tuple[object]] = Slide()
    a, b, c, d = [1], [1], [2], [3]  # a and b are equal, not the same
    assert slide.map([a, b, c], make) == [(a,), (b,), (c,)] and made == [a, b, c]
    made.clear()
    assert slide.map([b, c, d], make) == [(b,), (c,), (d,)] and made == [d]
    made.clear()
    assert [x[0] for x in slide.map([a, c, d], make)] == [a, c, d]
    assert slide.map([a, c, d], make)[0][0] is a and made == [a, c, d]  # a is not b
    made.clear()
    assert slide.map([c, c, d], make) == [(c,), (c,), (d,)] and made == [c, d]


@pytest.mark.parametrize("writes", [0, 7])
def test_an_agent_s_usage_is_stored_as_all_its_fields_in_order(writes: int) -> None:
    """#17, session seven: ``AgentUsage.to_dict`` names its fields instead of ``asdict``;
    every field, in the dataclass's order, cache writes only when there were some."""
    from dataclasses import asdict

    from narrative_cli.pipeline.accounting import AgentUsage

    usage = AgentUsage(3, 1, 1200, 80, 64, 12.5, True, writes)
    expected = {k: v for k, v in asdict(usage).items() if k != "cache_write_tokens" or v}
    assert list(usage.to_dict().items()) == list(expected.items())
    assert AgentUsage.from_dict(usage.to_dict()) == usage


def test_a_copied_event_record_s_object_is_not_the_record_s() -> None:
    """#17 session seven: the ``time`` and ``notes`` tell their object when they change; a
    copy of the object or of its parts (copy, deepcopy, pickle) is nobody's, and changing one
    leaves the original the record's."""
    import copy
    import pickle

    from narrative_cli.state.game import Clock, EventRecord

    record = EventRecord("move", {"location": "灯室"}, True, Clock(1, 3), "", ("n",), turn=4)
    given = record.to_dict()
    for copied in (copy.copy(given), copy.deepcopy(given), pickle.loads(pickle.dumps(given))):
        assert copied == given and copied.known_json() is None
        back = EventRecord.from_dict(copied)
        assert back == record and back is not record
    time, notes = copy.deepcopy(given["time"]), pickle.loads(pickle.dumps(given["notes"]))
    time["hour"], notes[0] = 7, "m"
    assert record.to_dict() is given and given.known_json() == record.json_bytes()
    held = given["time"]
    held["hour"] = 8  # the object's own time, however it is reached
    assert given.known_json() is None and record.to_dict() is not given
    assert record.to_dict()["time"]["hour"] == 3


def test_the_summary_block_without_folds_is_the_entries_before_the_window_every_turn() -> None:
    """#17 session six: the entries' stripped texts are remembered and extended turn by turn;
    the block stays the entries before the window's first turn, whatever happened to the list
    (a line more, a line rewritten in place, an undo, entries out of order)."""
    rng = random.Random(6)
    entries: list[SummaryEntry] = []
    for step in range(120):
        roll = rng.random()
        if roll < 0.6 or not entries:
            entries = [*entries, SummaryEntry(step, f"  [Turn {step}] line {step} " if step % 5
                                              else "   ")]  # fmt: skip
        elif roll < 0.7:
            entries[rng.randrange(len(entries))] = SummaryEntry(step, f"rewritten {step}")
        elif roll < 0.8:
            entries = entries[:-1]
        elif roll < 0.85:
            rng.shuffle(entries)
        first = rng.randint(0, step + 2)
        inputs = PromptInputs(Card(name="c"), turn=first, summaries=entries)
        for window in ([HistoryTurn(first, "", "")], None):
            cut = first if window else None
            lines = [e.text.strip() for e in entries if cut is None or e.turn < cut]
            block = parts.story_summary(inputs, window)
            assert block.text == "\n".join(line for line in lines if line), step


def _fields(made: search_recall.StoryDocuments) -> dict[str, Any]:
    return {
        "all": sorted(_as_rows(made.all)),
        "turns": _as_rows(made.turns),
        "turn_numbers": list(made.turn_numbers),
        "summaries": _as_rows(made.summaries),
        "summary_turns": list(made.summary_turns),
        "chapters": _as_rows(made.chapters),
        "chapter_keys": sorted(made.chapter_keys.values()),
    }


def test_a_story_s_documents_extended_in_place_are_the_documents_made_afresh() -> None:
    """One story played turn by turn with its very objects (the next turn extends the last
    turn's lists in place), with lines, second lines, folds, undo and regenerate between."""
    rng = random.Random(8)
    history = [HistoryTurn(0, "", "The lamp room is cold tonight.")]
    store = SummaryStore("en")
    before: list[Document] = []
    kept_as_it_was: list[Document] = []
    last: search_recall.StoryDocuments | None = None
    in_place = 0
    for step in range(1, 260):
        event = rng.random()
        number = history[-1].number + 1
        if event < 0.08 and len(history) > 3:  # undo two turns
            history = history[:-2]
            store = store.drop_from(history[-1].number + 1)
        elif event < 0.14 and len(history) > 1:  # regenerate the last turn
            last = history[-1].number
            history = [*history[:-1], HistoryTurn(last, f"input {last}", f"again {step}")]
            store = store.replace(last, [f"redone {step}"])
        else:  # the next turn, the same objects before it
            history = [*history, HistoryTurn(number, f"input {number}", f" story {number} ")]
            store = store.add(number, [f"line {number}"] * (1 + (rng.random() < 0.2)) + (
                [f"second line {number}"] if rng.random() < 0.2 else []))
            if number % 17 == 0:
                start = store.chapters[-1].last + 1 if store.chapters else 1
                store = store.with_chapter(Chapter(start, number - 3, CHAPTER, "a fold", number))
        made = search_recall.story_documents(history, store)
        in_place += made is last
        rows = _fields(made)
        kept = dict(search_recall._LAST)
        search_recall._LAST.clear()
        try:
            assert rows == _fields(search_recall.story_documents(history, store)), step
        finally:
            search_recall._LAST.clear()
            search_recall._LAST.update(kept)
        for doc in made.turns:
            turn = next(t for t in history if t.number == doc.turn)
            assert doc.text == f"{turn.user}\n{turn.narrative}".strip()
        listed = search_recall.documents(history, store)
        assert listed == made.all and listed is not made.all
        assert before == kept_as_it_was  # a list handed out earlier is not changed later
        before, kept_as_it_was = listed, list(listed)
        last = search_recall.story_documents(history, store)
    assert in_place > 150  # most turns extended the last turn's lists


def test_the_summary_block_with_folds_follows_a_story_turn_by_turn() -> None:
    """The entries' turns are remembered per story and extended in place (#17): the block with
    folds stays the lines between the folds, whatever the list did (a line more, a rewritten
    line, an undo, entries out of order), and another story's list in between changes nothing."""
    rng = random.Random(9)
    entries: list[SummaryEntry] = []
    other = [SummaryEntry(n, f"[Turn {n}] other {n}") for n in range(1, 30)]
    for step in range(1, 200):
        roll = rng.random()
        if roll < 0.7 or not entries:
            entries = [*entries, SummaryEntry(step, f"[Turn {step}] line {step}")]
        elif roll < 0.8:
            at = rng.randrange(len(entries))
            entries = [*entries[:at], SummaryEntry(entries[at].turn, f"rewritten {step}"),
                       *entries[at + 1 :]]  # fmt: skip
        elif roll < 0.9:
            entries = entries[:-2]
        elif roll < 0.93:
            entries = rng.sample(entries, len(entries))
        else:
            entries = sorted(entries, key=lambda e: e.turn)
        last = max((e.turn for e in entries), default=1)
        folds = [Chapter(1, max(1, last // 3), CHAPTER, "first", 1)]
        if last > 12:
            folds.append(Chapter(last // 3 + 2, last // 2, CHAPTER, "second", 1))
        first = rng.randint(1, last + 1)
        for listed in (entries, other):
            inputs = PromptInputs(Card(name="c"), turn=first, summaries=listed, chapters=folds)
            block = parts.story_summary(inputs, [HistoryTurn(first, "", "")])
            expected = _summary_by_rule(listed, visible_chapters(folds, first), first)
            assert block.text == "\n".join(expected), step


def test_an_event_record_and_its_object_are_freed_without_the_collector() -> None:
    """#17: a record, its object and the object's ``time`` and ``notes`` make no reference
    cycle, so records sliding out of the log are freed at once, not at the next full
    collection (whose interval grows with the story); the object is still the record's while
    something holds it, and a new equal one once nothing does."""
    import gc
    import weakref

    from narrative_cli.state.game import Clock, EventRecord

    record = EventRecord("move", {"location": "灯室"}, True, Clock(1, 3), "", ("n",), turn=4)
    given = record.to_dict()
    assert record.to_dict() is given and given["notes"] == ["n"]
    del given
    again = record.to_dict()  # nothing held the last one: a new one, the record's
    assert EventRecord.from_dict(again) is record and again.known_json() == record.json_bytes()
    dead = weakref.ref(record), weakref.ref(again)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del record, again
        assert all(ref() is None for ref in dead)
    finally:
        if was_enabled:
            gc.enable()


def test_a_turn_that_keeps_its_regex_renderer_is_freed_without_the_collector() -> None:
    """#17: the turn keeps its renderer of regex-written templates (``TurnState.regex_render``)
    and the renderer refers to the turn weakly, so a finished turn, with all its prompts, is
    freed at once, not at the next full collection (whose interval grows with the story)."""
    import gc
    import weakref

    from narrative_cli.pipeline.regex_templates import turn_renderer

    class Turn:  # what the renderer is given: any turn-like object
        render: Any = None

    turn = Turn()
    turn.render = turn_renderer(turn)  # type: ignore[arg-type]
    dead = weakref.ref(turn)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del turn
        assert dead() is None
    finally:
        if was_enabled:
            gc.enable()
