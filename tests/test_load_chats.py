"""SillyTavern chat files: both header variants, swipes, hidden messages, skipped lines, writing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from narrative_cli.domain import Card
from narrative_cli.domain_chat import ChatMessage
from narrative_cli.errors import ChatFileError
from narrative_cli.load import (
    chat_for_card,
    chat_to_jsonl,
    load_card,
    load_chat,
    parse_chat,
    prompt_messages,
    write_chat,
)

from .conftest import SAMPLES

HEADER_118 = {"chat_metadata": {"integrity": "abc", "variables": {"x": 1}, "my_ext": True},
              "user_name": "unused", "character_name": "unused"}
HEADER_112 = {"user_name": "Wren", "character_name": "Edda", "create_date": "2024-07-12@01h31m",
              "chat_metadata": {"note_prompt": "Be brief."}}
GREETING = {"name": "Edda", "is_user": False, "is_system": False, "send_date": 1720000000000,
            "mes": "Tea?", "extra": {}, "swipe_id": 1, "swipes": ["Hello.", "Tea?"],
            "swipe_info": [{}, {}]}
USER = {"name": "Wren", "is_user": True, "is_system": False, "send_date": "July 1, 2024 2:20pm",
        "mes": "Yes please.", "extra": {"reasoning": ""}, "force_avatar": "User Avatars/w.png"}
HIDDEN = {"name": "Narrator", "is_user": False, "is_system": True, "mes": "(note)",
          "extra": {"type": "narrator"}}


def jsonl(*lines: object) -> str:
    return "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)


def test_the_118_header_names_come_from_the_messages() -> None:
    chat = parse_chat(jsonl(HEADER_118, GREETING, USER), "c.jsonl")
    assert (chat.user_name, chat.character_name) == ("Wren", "Edda")
    assert chat.chat_metadata["variables"] == {"x": 1}
    greeting, user = chat.messages
    assert (greeting.mes, greeting.swipes, greeting.swipe_id) == ("Tea?", ["Hello.", "Tea?"], 1)
    assert greeting.raw == {"swipe_info": [{}, {}]} and greeting.send_date == 1720000000000
    assert user.raw == {"force_avatar": "User Avatars/w.png"}
    assert user.extra == {"reasoning": ""}


def test_the_112_header_is_read_as_it_is() -> None:
    chat = parse_chat(jsonl(HEADER_112, GREETING), "old.jsonl")
    assert (chat.user_name, chat.character_name, chat.create_date) == (
        "Wren", "Edda", "2024-07-12@01h31m")
    assert chat.chat_metadata == {"note_prompt": "Be brief."}


def test_hidden_messages_are_kept_but_left_out_of_prompts() -> None:
    chat = parse_chat(jsonl(HEADER_118, GREETING, HIDDEN, USER), "c.jsonl")
    assert [m.is_system for m in chat.messages] == [False, True, False]
    assert [m.mes for m in prompt_messages(chat)] == ["Tea?", "Yes please."]


def test_unparsable_lines_are_skipped_and_counted() -> None:
    text = jsonl(HEADER_118, GREETING, "{not json", "[1, 2]", {"name": "X", "mes": 5}, "", USER)
    chat = parse_chat(text + "\n", "c.jsonl")
    assert chat.skipped_lines == 3
    assert [m.mes for m in chat.messages] == ["Tea?", "Yes please."]


def test_a_file_without_header_still_reads_its_messages() -> None:
    chat = parse_chat(jsonl(GREETING, USER), "group.jsonl")
    assert chat.header == {} and len(chat.messages) == 2


def test_empty_and_garbage_files_are_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(ChatFileError, match=r"empty\.jsonl: not a SillyTavern chat \(it is empty"):
        load_chat(empty)
    with pytest.raises(ChatFileError, match="none of its 2 lines is a chat line"):
        parse_chat("hello\nworld", "notes.jsonl")


def test_round_trip_keeps_every_field_and_the_header_variant(tmp_path: Path) -> None:
    for header in (HEADER_118, HEADER_112):
        text = jsonl(header, GREETING, HIDDEN, USER)
        chat = parse_chat(text, "c.jsonl")
        path = tmp_path / "out.jsonl"
        write_chat(chat, path)
        written = path.read_text(encoding="utf-8")
        assert not written.endswith("\n") and '", "' not in written  # compact, like JSON.stringify
        lines = [json.loads(line) for line in written.split("\n")]
        assert lines[0] == header
        assert lines[1] == GREETING and lines[3] == USER
        assert lines[2] == {**HIDDEN}
        assert load_chat(path).messages == chat.messages


def test_writing_a_112_chat_as_118_and_back() -> None:
    chat = parse_chat(jsonl(HEADER_112, GREETING), "c.jsonl")
    as_118 = json.loads(chat_to_jsonl(chat, "1.18").split("\n")[0])
    assert as_118 == {"chat_metadata": {"note_prompt": "Be brief."}, "user_name": "unused",
                      "character_name": "unused", "create_date": "2024-07-12@01h31m"}
    new = parse_chat(jsonl(HEADER_118, USER), "c.jsonl")
    as_112 = json.loads(chat_to_jsonl(new, "1.12").split("\n")[0])
    assert (as_112["user_name"], as_112["character_name"]) == ("Wren", "")


def test_new_chat_greeting_carries_alternate_greetings_as_swipes() -> None:
    card = load_card(SAMPLES / "lantern-keeper.png")
    chat = chat_for_card(card, "Wren", send_date="2026-01-01T00:00:00.000Z")
    greeting = chat.messages[0]
    assert greeting.swipes == card.greetings and greeting.mes == card.first_mes
    assert len(greeting.raw["swipe_info"]) == 2
    written = json.loads(chat_to_jsonl(chat).split("\n")[1])
    assert written["swipe_id"] == 0 and written["swipes"][1] == card.alternate_greetings[0]
    plain = chat_for_card(Card(name="Solo", first_mes="Hi."))
    assert plain.messages == [ChatMessage(name="Solo", is_user=False, mes="Hi.")]


def test_sample_chat() -> None:
    chat = load_chat(SAMPLES / "sample-chat.jsonl")
    assert chat.header["user_name"] == "unused" and chat.skipped_lines == 0
    assert (chat.user_name, chat.character_name) == ("Wren", "Edda")
    assert len(chat.messages[0].swipes) == 2
    assert sum(m.is_user for m in chat.messages) == 3
    assert [m.name for m in chat.messages if m.is_system] == ["Narrator"]
    assert len(prompt_messages(chat)) == 7
    assert chat_to_jsonl(chat) == (SAMPLES / "sample-chat.jsonl").read_text(encoding="utf-8")


def test_written_chat_has_ordinary_file_rights_and_leaves_no_temporary_file(
    tmp_path: Path,
) -> None:
    chat = parse_chat(jsonl(HEADER_118, GREETING), "c.jsonl")
    target = tmp_path / "exports" / "chat.jsonl"
    write_chat(chat, target)
    plain = tmp_path / "plain.txt"
    plain.write_text("x", encoding="utf-8")
    assert target.stat().st_mode == plain.stat().st_mode
    assert [p.name for p in target.parent.iterdir()] == ["chat.jsonl"]
    write_chat(chat, target)  # overwriting works too
    assert load_chat(target).messages == chat.messages
