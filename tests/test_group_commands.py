"""/next NAME, /mute NAME and /unmute NAME on a group (#19): name matching, one-line messages
in the story's language, and a new group back (the old one unchanged)."""

from __future__ import annotations

import random

from narrative_cli.domain import Card
from narrative_cli.group.commands import find_member, mute, next_speaker, unmute
from narrative_cli.group.model import Group, GroupMember
from narrative_cli.group.speakers import SpeakerTurn, choose_speakers


def member(name: str, key: str) -> GroupMember:
    return GroupMember(key=key, card=Card(name=name), talkativeness=1.0)


PARTY = Group(
    name="party",
    members=(member("Alice", "alice.png"), member("Alan", "alan_v2.png"),
             member("露米埃尔", "lumi.png")),
    strategy="list",
)


def test_a_member_is_found_by_name_file_prefix_or_part_of_the_name() -> None:
    for typed in ("Alice", "  alice ", "ALICE", "alice.png", "alice"):
        assert find_member(PARTY, typed) == PARTY.members[0], typed
    assert find_member(PARTY, "alan_v2") == PARTY.members[1]
    assert find_member(PARTY, "露米") == PARTY.members[2]
    assert find_member(PARTY, "埃尔") == PARTY.members[2]
    assert find_member(PARTY, "ice") == PARTY.members[0]


def test_an_unknown_or_ambiguous_name_is_one_line_listing_the_members() -> None:
    unknown = find_member(PARTY, "Bob")
    assert unknown == "no member named 'Bob'; members: Alice, Alan, 露米埃尔"
    ambiguous = find_member(PARTY, "al")
    assert ambiguous == "'al' could be Alice, Alan; give the full name"
    assert find_member(PARTY, " ") == "give a member's name; members: Alice, Alan, 露米埃尔"
    assert find_member(PARTY, "Bob", "zh") == "没有名叫 'Bob' 的成员；成员：Alice, Alan, 露米埃尔"
    outcome = mute(PARTY, "Bob")
    assert not outcome.ok and outcome.group is PARTY and "\n" not in outcome.message


def test_mute_and_unmute_change_who_speaks() -> None:
    muted = mute(PARTY, "alice")
    assert muted.ok and muted.message == "Alice is muted: no strategy will choose them"
    assert muted.group.muted == {"alice.png"} and PARTY.muted == frozenset()
    chosen = choose_speakers(muted.group, SpeakerTurn(user_text="hi"), random.Random(1))
    assert [m.name for m in chosen] == ["Alan", "露米埃尔"]
    again = mute(muted.group, "Alice")
    assert again.group is muted.group and again.message == "Alice is already muted"
    back = unmute(muted.group, "ALICE")
    assert back.group.muted == frozenset() and back.message == "Alice is no longer muted"
    assert unmute(back.group, "Alice").message == "Alice is not muted"
    assert unmute(PARTY, "露米埃尔", "zh").message == "露米埃尔 没有被静音"


def test_muting_the_last_member_says_nobody_will_answer() -> None:
    group = mute(mute(PARTY, "Alice").group, "Alan").group
    last = mute(group, "露米埃尔", "zh")
    assert last.group.active() == ()
    assert last.message == "露米埃尔 已静音；所有成员都已静音：在 /unmute 或 /next 之前没有人会回应"
    assert mute(group, "lumi").message.startswith("露米埃尔 is muted; every member is now muted")


def test_next_forces_that_member_for_one_turn_even_when_muted() -> None:
    chosen = next_speaker(PARTY, "lumi")
    assert chosen.ok and chosen.forced == "lumi.png" and chosen.group is PARTY
    assert chosen.message == "露米埃尔 speaks next"
    muted = mute(PARTY, "Alan").group
    forced = next_speaker(muted, "alan", "zh")
    assert forced.message == "下一位发言：Alan（已静音，仅此一次）"
    turn = SpeakerTurn(user_text="hi", forced=forced.forced)
    assert [m.name for m in choose_speakers(muted, turn, random.Random(0))] == ["Alan"]
    assert next_speaker(PARTY, "Zed").forced is None
