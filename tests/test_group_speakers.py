"""Who speaks in a group scene (#19): SillyTavern's natural, list, pooled and manual orders,
muting, self-responses and /next, each deterministic for a seed."""

from __future__ import annotations

import random
from dataclasses import replace

from narrative_cli.domain import Card
from narrative_cli.domain_chat import ChatMessage
from narrative_cli.group.model import Group, GroupMember, Strategy
from narrative_cli.group.speakers import (
    SpeakerTurn,
    choose_speakers,
    mentioned,
    turn_from_chat,
    turn_from_records,
    words,
)


def member(name: str, talk: float = 0.0, key: str | None = None) -> GroupMember:
    return GroupMember(key=key or f"{name.lower()}.png", card=Card(name=name), talkativeness=talk)


def group(*members: GroupMember, strategy: Strategy = "natural", **fields: object) -> Group:
    return replace(Group(name="party", members=members, strategy=strategy), **fields)


def names(chosen: list[GroupMember]) -> list[str]:
    return [m.name for m in chosen]


def speak(g: Group, seed: int = 1, **turn: object) -> list[str]:
    return names(choose_speakers(g, SpeakerTurn(**turn), random.Random(seed)))  # type: ignore[arg-type]


ALICE, BOB, CAROL = member("Alice"), member("Bob"), member("Carol")


# -- natural order ---------------------------------------------------------------------------


def test_natural_two_mentions_answer_in_the_order_the_player_names_them() -> None:
    g = group(ALICE, BOB, CAROL)
    for seed in range(20):
        assert speak(g, seed, user_text="Bob, pass the tea to Alice.") == ["Bob", "Alice"]
        assert speak(g, seed, user_text="alice? BOB!") == ["Alice", "Bob"]


def test_natural_mentions_match_whole_words_as_sillytavern_does() -> None:
    g = group(member("Alice"), member("Mary Sue"), member("Bob"))
    assert names(mentioned(g.members, "Alicia waves; Sue's cup is empty")) == ["Mary Sue"]
    assert names(mentioned(g.members, "Alice's hat")) == ["Alice"]
    assert names(mentioned(g.members, "Bobby")) == []
    assert words("Mary-Sue o'Neil 露米") == ["mary", "sue", "o", "neil"]


def test_natural_one_word_names_only_the_first_member_with_that_word() -> None:
    smith, doe = member("John Smith"), member("John Doe")
    g = group(smith, doe)
    assert names(mentioned(g.members, "John?")) == ["John Smith"]
    assert names(mentioned(g.members, "John, and you Doe")) == ["John Smith", "John Doe"]


def test_natural_chinese_names_are_found_in_the_text() -> None:
    lumi, yue = member("露米埃尔", key="lumi.png"), member("月影", key="yue.png")
    g = group(lumi, yue, ALICE)
    assert speak(g, user_text="月影，你看露米埃尔在做什么？") == ["月影", "露米埃尔"]
    assert speak(g, user_text="Alice 和 月影") == ["Alice", "月影"]


def test_natural_talkativeness_one_always_speaks_and_zero_never_by_roll() -> None:
    chatty, shy, quiet = member("Chatty", 1.0), member("Shy", 0.0), member("Quiet", 0.0)
    g = group(shy, chatty, quiet)
    for seed in range(50):
        assert speak(g, seed, user_text="hello") == ["Chatty"]


def test_natural_mention_comes_before_talkative_members() -> None:
    g = group(member("Chatty", 1.0), member("Shy", 0.0))
    assert speak(g, 3, user_text="Shy, are you there?") == ["Shy", "Chatty"]


def test_natural_nobody_rolls_then_one_random_talkative_member_answers() -> None:
    g = group(member("Mute", 0.0), member("Rare", 0.0001), member("Still", 0.0))
    picks = {tuple(speak(g, seed, user_text="hm")) for seed in range(60)}
    assert picks == {("Rare",)}


def test_natural_all_silent_members_still_give_one_random_speaker() -> None:
    g = group(member("A", 0.0), member("B", 0.0), member("C", 0.0))
    picks = [speak(g, seed, user_text="hm") for seed in range(60)]
    assert all(len(p) == 1 for p in picks)
    assert {p[0] for p in picks} == {"A", "B", "C"}


def test_natural_rolls_follow_talkativeness_and_the_seed() -> None:
    g = group(member("A", 0.5), member("B", 0.5), member("C", 0.5))
    runs = [speak(g, seed, user_text="hi") for seed in range(200)]
    assert runs == [speak(g, seed, user_text="hi") for seed in range(200)]  # deterministic
    assert len({tuple(r) for r in runs}) > 5  # orders and counts vary with the seed
    spoke = sum(len(r) for r in runs) / len(runs)
    assert 1.4 < spoke < 1.9  # 1.5 by rolls, plus a random pick when nobody rolled


def test_natural_last_speaker_does_not_answer_itself() -> None:
    g = group(member("Alice", 1.0), member("Bob", 0.0))
    turn = {"last_speaker": "alice.png", "last_text": "Alice laughs. Bob?"}
    for seed in range(30):
        assert speak(g, seed, **turn) == ["Bob"]


def test_natural_self_responses_when_the_group_allows_them() -> None:
    g = group(member("Alice", 1.0), member("Bob", 0.0), allow_self_responses=True)
    turn = {"last_speaker": "alice.png", "last_text": "Alice laughs. Bob?"}
    assert speak(g, 4, **turn) == ["Alice", "Bob"]


def test_natural_the_player_speaking_lifts_the_self_response_ban() -> None:
    g = group(member("Alice", 1.0), member("Bob", 0.0))
    turn = {"last_speaker": "alice.png", "last_text": "...", "user_text": "Go on, Alice."}
    assert speak(g, 2, **turn) == ["Alice"]


def test_natural_without_player_text_reads_the_last_message() -> None:
    g = group(ALICE, BOB, CAROL)
    turn = {"last_speaker": "alice.png", "last_text": "Carol, your turn."}
    assert speak(g, 9, **turn) == ["Carol"]


# -- muting, forcing -------------------------------------------------------------------------


def test_muted_members_are_never_chosen() -> None:
    g = group(member("Alice", 1.0), member("Bob", 1.0), muted=frozenset({"bob.png"}))
    for strategy in ("natural", "list", "pooled"):
        for seed in range(30):
            chosen = speak(replace(g, strategy=strategy), seed, user_text="Bob! Alice!")
            assert "Bob" not in chosen
            assert chosen


def test_all_muted_nobody_answers_but_next_still_forces() -> None:
    g = group(ALICE, BOB, muted=frozenset({"alice.png", "bob.png"}))
    for strategy in ("natural", "list", "pooled", "manual"):
        s = replace(g, strategy=strategy)
        assert speak(s, user_text="Alice?") == []
        assert speak(s) == []
        assert speak(s, user_text="hi", forced="bob.png") == ["Bob"]


def test_forced_by_name_or_key_and_unknown_gives_nobody() -> None:
    g = group(ALICE, BOB, CAROL)
    assert speak(g, user_text="Alice?", forced="Carol") == ["Carol"]
    assert speak(g, forced="carol.png") == ["Carol"]
    assert speak(g, forced="Dave") == []


# -- list, pooled, manual --------------------------------------------------------------------


def test_list_order_is_every_active_member_in_list_order() -> None:
    g = group(CAROL, ALICE, BOB, strategy="list", muted=frozenset({"alice.png"}))
    assert speak(g, user_text="Alice, Bob") == ["Carol", "Bob"]
    assert speak(g) == ["Carol", "Bob"]


def test_pooled_after_the_player_anyone_may_answer_one_at_a_time() -> None:
    g = group(ALICE, BOB, CAROL, strategy="pooled")
    turn = {"user_text": "hi", "since_player": ("alice.png", "bob.png")}
    picks = [speak(g, seed, **turn) for seed in range(60)]
    assert all(len(p) == 1 for p in picks)
    assert {p[0] for p in picks} == {"Alice", "Bob", "Carol"}


def test_pooled_without_player_text_picks_who_has_not_spoken() -> None:
    g = group(ALICE, BOB, CAROL, strategy="pooled")
    turn = {"since_player": ("alice.png", "bob.png"), "last_speaker": "bob.png"}
    assert {speak(g, seed, **turn)[0] for seed in range(30)} == {"Carol"}


def test_pooled_when_everyone_spoke_anyone_but_the_last_speaker() -> None:
    g = group(ALICE, BOB, CAROL, strategy="pooled")
    turn = {"since_player": ("alice.png", "bob.png", "carol.png"), "last_speaker": "carol.png"}
    assert {speak(g, seed, **turn)[0] for seed in range(60)} == {"Alice", "Bob"}
    alone = group(ALICE, strategy="pooled")
    assert speak(alone, since_player=("alice.png",), last_speaker="alice.png") == ["Alice"]


def test_manual_nobody_answers_the_player() -> None:
    g = group(ALICE, BOB, strategy="manual")
    for seed in range(20):
        assert speak(g, seed, user_text="Alice, Bob, anyone?") == []


def test_manual_an_empty_turn_lets_one_random_unmuted_member_speak() -> None:
    g = group(ALICE, BOB, CAROL, strategy="manual", muted=frozenset({"carol.png"}))
    picks = [speak(g, seed) for seed in range(60)]
    assert all(len(p) == 1 for p in picks)
    assert {p[0] for p in picks} == {"Alice", "Bob"}


def test_same_seed_same_speakers_for_every_strategy() -> None:
    g = group(member("A", 0.3), member("B", 0.6), member("C", 0.9))
    for strategy in ("natural", "list", "pooled", "manual"):
        s = replace(g, strategy=strategy)
        first = [speak(s, seed) for seed in range(40)]
        assert first == [speak(s, seed) for seed in range(40)]


# -- reading a SillyTavern chat --------------------------------------------------------------


def message(name: str, text: str, *, user: bool = False, avatar: str | None = None,
            system: bool = False) -> ChatMessage:
    raw = {"original_avatar": avatar} if avatar else {}
    return ChatMessage(name=name, is_user=user, mes=text, is_system=system, raw=raw)


def test_turn_from_a_group_chat_knows_who_spoke_since_the_player() -> None:
    g = group(ALICE, BOB, CAROL, strategy="pooled")
    chat = [
        message("Alice", "Hello.", avatar="alice.png"),
        message("You", "Hi all.", user=True),
        message("Bob", "Hey.", avatar="bob.png"),
        message("Carol", "Yo.", avatar=None),  # an old message: matched by name
        message("System", "hidden", system=True),
    ]
    turn = turn_from_chat(g, chat)
    assert turn.since_player == ("bob.png", "carol.png")
    assert turn.history_speakers == ("alice.png", "bob.png", "carol.png")
    assert turn.last_speaker is None and turn.last_text == ""
    assert speak(g, 5, since_player=turn.since_player) == ["Alice"]
    after = turn_from_chat(g, chat[:4], user_text="")
    assert after.last_speaker == "carol.png" and after.last_text == "Yo."


def test_turn_from_a_group_sessions_records() -> None:
    g = group(ALICE, BOB, CAROL, strategy="pooled")
    records = [
        {"number": 0, "user_input": None, "speakers": [
            {"key": "alice.png", "name": "Alice", "text": "Hi."},
            {"key": "bob.png", "name": "Bob", "text": "Yo."}]},
        {"number": 1, "user_input": "Tea?", "speakers": [
            {"key": "carol.png", "name": "Carol", "text": "Yes."},
            {"key": "bob.png", "name": "Bob", "text": "Alice, sit."}]},
    ]
    turn = turn_from_records(g, records)
    assert turn.since_player == ("carol.png", "bob.png")
    assert (turn.last_speaker, turn.last_text) == ("bob.png", "Alice, sit.")
    assert turn.history_speakers == ("alice.png", "bob.png", "carol.png", "bob.png")
    assert speak(g, 1, since_player=turn.since_player) == ["Alice"]
    natural = group(member("Alice", 0.0), member("Bob", 1.0))
    assert names(choose_speakers(natural, turn_from_records(natural, records),
                                 random.Random(3))) == ["Alice"]  # named, and Bob just spoke
    after_player = turn_from_records(g, [*records, {"number": 2, "user_input": "And?"}])
    assert after_player.since_player == () and after_player.last_speaker is None
