"""SillyTavern chat export and import, and the full JSON dump."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.domain_chat import Chat, ChatMessage
from narrative_cli.errors import ChatFileError, SnapshotMissing
from narrative_cli.load.chats import load_chat, write_chat
from narrative_cli.store import SessionStore
from narrative_cli.store.chat_import import ImportResult, import_chat
from narrative_cli.store.export import NAMESPACE, export_json, export_jsonl

from .conftest import fixture_file

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
HUMANIZED = re.compile(r"^\d{4}-\d\d-\d\d@\d\dh\d\dm\d\ds\d{3}ms$")


def record(number: int, text: str, **extra: Any) -> dict[str, Any]:
    return {"number": number, "user_input": f"第{number}轮输入", "narrative": text, **extra}


def snapshot(number: int, hp: int) -> dict[str, Any]:
    return {"turn": number, "state": {"hp": hp}, "summaries": {"entries": ["x"] * number}}


def fresh(number: int) -> dict[str, Any]:
    return {"turn": number, "state": {}, "summaries": {"entries": []}}


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    opened = SessionStore(tmp_path / "sessions.db")
    yield opened  # type: ignore[misc]
    opened.close()


def played(store: SessionStore) -> int:
    """Greeting, two turns; turn 2 regenerated once (swipe 1 selected)."""
    session = store.create_session(
        "雨夜",
        card_path="/cards/rain.png",
        card_hash="sha256:r",
        snapshot=snapshot(0, 10),
        greeting={"narrative": "雨下个不停。"},
        character_name="梅布尔",
        user_name="琉阡",
        seed=9,
        settings={"pipeline": {"recent_turns_for_writing": 3}},
    )
    store.commit_turn(session, record(1, "她点了点头。"), snapshot(1, 9))
    store.commit_turn(
        session, record(2, "门开了。", post_outputs={"status": "[HP 8]"}), snapshot(2, 8)
    )
    store.replace_turn(session, 2, record(2, "门没有开。"), snapshot(2, 7))
    return session


def read_lines(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    assert not text.endswith("\n")  # SillyTavern joins lines with \n, no final newline
    return [json.loads(line) for line in text.split("\n")]


def import_file(
    store: SessionStore, path: Path, name: str = "imported", card_hash: str = "sha256:r"
) -> ImportResult:
    return import_chat(
        store,
        load_chat(path),
        name=name,
        card_path="/cards/rain.png",
        card_hash=card_hash,
        snapshot_for=fresh,
    )


def test_export_writes_a_chat_sillytavern_opens(store: SessionStore, tmp_path: Path) -> None:
    session = played(store)
    path = tmp_path / "雨夜.jsonl"
    assert export_jsonl(store, session, path) == 5
    header, *messages = read_lines(path)
    assert header["user_name"] == "琉阡" and header["character_name"] == "梅布尔"
    assert HUMANIZED.match(header["create_date"])
    ours = header["chat_metadata"][NAMESPACE]
    assert ours["turn"] == 2 and ours["snapshot"] == snapshot(2, 7)
    assert ours["session"]["card_hash"] == "sha256:r" and ours["session"]["seed"] == 9

    assert [(m["name"], m["is_user"]) for m in messages] == [
        ("梅布尔", False),
        ("琉阡", True),
        ("梅布尔", False),
        ("琉阡", True),
        ("梅布尔", False),
    ]
    for message in messages:
        assert message["is_system"] is False and ISO.match(message["send_date"])
    last = messages[-1]
    assert last["swipes"] == ["门开了。\n\n[HP 8]", "门没有开。"]
    assert last["swipe_id"] == 1 and last["mes"] == "门没有开。"
    assert len(last["swipe_info"]) == 2
    assert last["swipe_info"][0]["extra"][NAMESPACE]["record"]["narrative"] == "门开了。"
    assert messages[3]["mes"] == "第2轮输入"

    chat = load_chat(path)  # our own loader agrees
    assert (chat.user_name, chat.character_name, len(chat.messages)) == ("琉阡", "梅布尔", 5)


def test_an_exported_chat_imports_and_continues_from_the_same_state(
    store: SessionStore, tmp_path: Path
) -> None:
    original = played(store)
    path = tmp_path / "out.jsonl"
    export_jsonl(store, original, path)
    result = import_file(store, path)
    assert (result.last_turn, result.swipes, result.restored_state) == (2, 4, True)
    assert result.warnings == []
    copy = result.session_id
    before = [t.record for t in store.turns(original)]
    after = [{k: v for k, v in t.record.items() if k != "imported"} for t in store.turns(copy)]
    assert after == before
    assert store.resume(copy).snapshot == snapshot(2, 7)
    assert store.resume(copy).swipe_id == 1
    assert store.session(copy).seed == 9
    assert store.session(copy).settings == {"pipeline": {"recent_turns_for_writing": 3}}
    with pytest.raises(SnapshotMissing, match="imported without narrative-cli state"):
        store.snapshot(copy, 1)
    store.commit_turn(copy, record(3, "继续。"), snapshot(3, 6))
    assert store.resume(copy).number == 3
    other = import_file(store, path, card_hash="sha256:other")
    assert other.warnings == [
        "the chat was exported from a session played with a different card file"
    ]


def test_edits_made_in_sillytavern_survive_a_round_trip(
    store: SessionStore, tmp_path: Path
) -> None:
    path = tmp_path / "out.jsonl"
    export_jsonl(store, played(store), path)
    chat = load_chat(path)
    chat.messages[-1].mes = chat.messages[-1].swipes[1] = "门被风吹开了。"
    write_chat(chat, path)
    copy = import_file(store, path).session_id
    assert store.resume(copy).record["narrative"] == "门被风吹开了。"
    assert store.resume(copy).snapshot == snapshot(2, 7)


def test_a_chat_continued_in_sillytavern_imports_with_fresh_state(
    store: SessionStore, tmp_path: Path
) -> None:
    path = tmp_path / "out.jsonl"
    export_jsonl(store, played(store), path)
    chat = load_chat(path)
    chat.messages += [
        ChatMessage("琉阡", True, "再敲一次"),
        ChatMessage("梅布尔", False, "没人回答。"),
    ]
    write_chat(chat, path)
    result = import_file(store, path)
    assert not result.restored_state
    assert any("state is for turn 2" in w and "ends at turn 3" in w for w in result.warnings)
    assert store.resume(result.session_id).snapshot == fresh(3)
    assert store.snapshot(result.session_id, 1) == fresh(1)


@pytest.mark.fixtures
def test_import_of_a_real_chinese_chat_keeps_greeting_swipes_and_turns(
    store: SessionStore,
) -> None:
    path = fixture_file("chats/zh-plague-apartment.jsonl")
    original = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")]
    result = import_file(store, path, name="疫病公寓")
    assert (result.last_turn, result.swipes, result.warnings) == (1, 4, [])
    info = store.session(result.session_id)
    assert (info.user_name, info.character_name, info.greeting_index) == ("琉阡", "疫病公寓", 0)
    assert info.chat_metadata["world_info"] == "Chat_Book_2025_04_22_18h00m52s"
    turns = list(store.iter_turns(result.session_id))
    greeting = turns[0]
    assert len(greeting.swipes) == 3
    assert greeting.record["narrative"] == original[1]["mes"] != original[1]["swipes"][0]
    assert greeting.swipes[2].record["narrative"] == original[1]["swipes"][2]
    assert turns[1].record["user_input"] == "开门"
    assert turns[1].record["narrative"] == original[3]["mes"]
    assert store.resume(result.session_id).snapshot == fresh(1)
    store.commit_turn(result.session_id, record(2, "继续"), fresh(2))


@pytest.mark.fixtures
def test_reexport_of_an_imported_chat_keeps_sillytavern_fields(
    store: SessionStore, tmp_path: Path
) -> None:
    source = fixture_file("chats/zh-plague-apartment.jsonl")
    original = [json.loads(line) for line in source.read_text(encoding="utf-8").split("\n")]
    session = import_file(store, source).session_id
    path = tmp_path / "again.jsonl"
    export_jsonl(store, session, path)
    header, greeting, user, reply = read_lines(path)
    for key in ("note_prompt", "variables", "timedWorldInfo", "world_info", "chat_id_hash"):
        assert header["chat_metadata"][key] == original[0]["chat_metadata"][key]
    assert (
        greeting["mes"] == original[1]["mes"]
        and greeting["swipes"][1:] == original[1]["swipes"][1:]
    )
    assert greeting["send_date"] == "April 22, 2025 6:00pm"
    assert user["force_avatar"] == original[2]["force_avatar"]
    assert user["extra"]["isSmallSys"] is False
    assert reply["extra"]["model"] == "gemini-2.5-pro-exp-03-25"
    assert reply["gen_started"] == original[3]["gen_started"]
    assert reply["dataTable"] == original[3]["dataTable"]


@pytest.mark.fixtures
def test_import_of_a_2023_tavernai_chat(store: SessionStore) -> None:
    path = fixture_file("chats/legacy-megumin-2023.jsonl")
    result = import_file(store, path)
    info = store.session(result.session_id)
    assert (result.last_turn, result.swipes, info.user_name, info.character_name) == (
        0,
        1,
        "You",
        "Megumin",
    )
    greeting = store.resume(result.session_id)
    assert greeting.record["narrative"].startswith("*It was day, the weather was sunny")
    assert greeting.snapshot == fresh(0)
    store.commit_turn(result.session_id, record(1, "Explosion!"), fresh(1))
    assert [t.number for t in store.turns(result.session_id)] == [0, 1]


def test_import_reports_what_it_left_out(store: SessionStore) -> None:
    chat = Chat(
        messages=[
            ChatMessage("Ann", True, "hello?"),
            ChatMessage("Bob", False, "Who is there?"),
            ChatMessage("System", False, "/hide note", is_system=True),
            ChatMessage("Bob", False, "I will open the door.", swipes=["a", "b"], swipe_id=5),
            ChatMessage("Ann", True, "wait"),
        ]
    )
    result = import_chat(store, chat, name="n", card_path="c", card_hash="h", snapshot_for=fresh)
    assert result.last_turn == 2
    views = store.turns(result.session_id)
    assert views[0].record["narrative"] == ""  # the chat began with the user
    assert (views[1].record["user_input"], views[1].record["narrative"]) == (
        "hello?",
        "Who is there?",
    )
    assert (views[2].record["user_input"], views[2].record["narrative"]) == (
        "",
        "I will open the door.",
    )
    assert any("1 hidden" in w for w in result.warnings)
    assert any("swipe_id 5 is out of range" in w for w in result.warnings)
    assert any("after the last reply were not imported ('wait')" in w for w in result.warnings)
    with pytest.raises(ChatFileError, match="no messages"):
        import_chat(store, Chat(), name="n", card_path="c", card_hash="h", snapshot_for=fresh)


def test_the_json_dump_holds_every_swipe_and_snapshot(store: SessionStore, tmp_path: Path) -> None:
    session = played(store)
    path = tmp_path / "dump.json"
    assert export_json(store, session, path) == 3
    dump = json.loads(path.read_text(encoding="utf-8"))
    assert dump["format"] == "narrative-cli-session" and dump["session"]["name"] == "雨夜"
    last = dump["turns"][2]
    assert last["swipe_id"] == 1
    assert [s["snapshot"] for s in last["swipes"]] == [snapshot(2, 8), snapshot(2, 7)]
    assert [t["swipes"][0]["snapshot"]["state"]["hp"] for t in dump["turns"]] == [10, 9, 8]


def test_exports_never_carry_api_keys(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(
        "k",
        card_path="c",
        card_hash="h",
        snapshot={"turn": 0, "backend": {"api_key": "sk-abcdefghijklmnopqrstuv"}},
        settings={"profiles": {"p": {"api_key": "sk-abcdefghijklmnopqrstuv"}}},
    )
    store.commit_turn(
        session,
        record(1, "ok", note="key sk-abcdefghijklmnopqrstuv"),
        {"turn": 1, "api_key": "sk-abcdefghijklmnopqrstuv"},
    )
    export_jsonl(store, session, tmp_path / "k.jsonl")
    export_json(store, session, tmp_path / "k.json")
    for name in ("k.jsonl", "k.json"):
        assert "sk-abcdefghijklmnopqrstuv" not in (tmp_path / name).read_text(encoding="utf-8")


def test_a_reply_keeps_its_own_extra_without_swipe_info_and_users_stay_apart(
    store: SessionStore, tmp_path: Path
) -> None:
    """#19: a reply with no swipe_info kept its extra only in swipe_info; two player messages
    in a row came back as one."""
    source = tmp_path / "plain.jsonl"
    lines = [
        {"user_name": "Ann", "character_name": "Mabel", "create_date": "x", "chat_metadata": {}},
        {"name": "Mabel", "is_user": False, "mes": "Hello.", "extra": {"model": "m1"}},
        {"name": "Ann", "is_user": True, "mes": "Hi.", "extra": {}},
        {"name": "Ann", "is_user": True, "mes": "Still there?", "extra": {"bias": "b"}},
        {"name": "Mabel", "is_user": False, "mes": "Yes.", "extra": {"model": "m2"}},
    ]
    source.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    session = import_file(store, source).session_id
    out = tmp_path / "out.jsonl"
    export_jsonl(store, session, out)
    _, greeting, first, second, reply = read_lines(out)
    assert greeting["extra"]["model"] == "m1" and reply["extra"]["model"] == "m2"
    assert (first["mes"], second["mes"], second["extra"]["bias"]) == ("Hi.", "Still there?", "b")
