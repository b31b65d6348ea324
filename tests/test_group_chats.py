"""SillyTavern group chats (#19): imported from a data folder built like SillyTavern 1.18's into
a real session database, continued, and exported back with the same structure (speaker name,
card and avatar on each reply, is_user, the header line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from narrative_cli.cli.app import app
from narrative_cli.domain_chat import Chat, ChatMessage
from narrative_cli.errors import GroupError
from narrative_cli.group.speakers import turn_from_chat
from narrative_cli.group.st_groups import load_st_group
from narrative_cli.load.chats import load_chat
from narrative_cli.store import SessionStore
from narrative_cli.store.chat_import import fresh_snapshots
from narrative_cli.store.export import NAMESPACE, export_jsonl
from narrative_cli.store.group_import import (
    GroupSource,
    import_group_chat,
    import_group_chat_file,
    scene_text,
)
from tests.group_data import CHAT_ID, GROUP_ID, chat_lines, install_group, write_chat

ADDED_BY_EXPORT = {"swipes", "swipe_id", "swipe_info"}  # SillyTavern adds them on every reply


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    opened = SessionStore(tmp_path / "sessions.db")
    yield opened  # type: ignore[misc]
    opened.close()


def group_path(root: Path) -> Path:
    return root / "groups" / f"{GROUP_ID}.json"


def read_lines(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    assert not text.endswith("\n")
    return [json.loads(line) for line in text.split("\n")]


def without_ours(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != NAMESPACE}


def assert_same_structure(original: list[dict[str, Any]], exported: list[dict[str, Any]]) -> None:
    """Every line and field of the original is in the export, unchanged; replies may gain the
    swipe fields SillyTavern itself gives every reply; our data rides under narrative_cli."""
    assert len(exported) == len(original)
    head, *messages = exported
    assert without_ours(head["chat_metadata"]) == original[0]["chat_metadata"]
    assert (head["user_name"], head["character_name"]) == ("unused", "unused")
    for before, after in zip(original[1:], messages, strict=True):
        for key, value in before.items():
            got = after[key]
            if key == "extra":
                got = without_ours(got)
            if key == "swipe_info":  # our export names gen_started/_finished even when unknown
                got = [{k: v for k, v in i.items() if v is not None or not k.startswith("gen_")}
                       | {"extra": without_ours(i["extra"])} for i in got]
            assert got == value, (before["mes"], key)
        assert set(after) - set(before) <= ADDED_BY_EXPORT, before["mes"]


def test_a_group_chat_imports_one_turn_per_round(store: SessionStore, tmp_path: Path) -> None:
    root = install_group(tmp_path)
    result = import_group_chat_file(store, group_path(root), st_data=root, seed=5)
    assert (result.last_turn, result.swipes, result.warnings) == (2, 4, [])
    info = store.session(result.session_id)
    assert (info.name, info.character_name, info.user_name) == ("Tea Party", "Tea Party", "You")
    assert info.settings == {"group": str(group_path(root).resolve()),
                             "st_data": str(root.resolve())}
    assert info.card_path == str((root / "characters" / "alice.png").resolve())
    assert info.card_hash.startswith("sha256:") and info.seed == 5
    assert info.chat_metadata["scenario"] == "A rainy afternoon."
    turns = list(store.iter_turns(result.session_id))
    assert [t.record["user_input"] for t in turns] == [None, "Hello, Alice and Bob!", "露米?"]
    assert [[(s["name"], s["key"], s["text"]) for s in t.record["speakers"]] for t in turns] == [
        [("Alice", "alice.png", "Alice pours tea."), ("Bob", "bob.png", "Bob waves.")],
        [("Alice", "alice.png", "Alice smiles."), ("Bob", "bob.png", "Bob grins.")],
        [("露米埃尔", "露米.png", "露米埃尔点点头。")],
    ]
    assert turns[1].record["narrative"] == "Alice: Alice smiles.\n\nBob: Bob grins."
    assert (len(turns[2].swipes), turns[2].swipe_id) == (2, 1)  # the last reply's swipes
    assert turns[2].swipes[0].record["speakers"][0]["text"] == "露米埃尔摇摇头。"
    assert store.resume(result.session_id).snapshot == fresh_snapshots(5)(2)


def test_a_group_chat_exports_back_with_the_same_structure(
    store: SessionStore, tmp_path: Path
) -> None:
    root = install_group(tmp_path)
    source = root / "group chats" / f"{CHAT_ID}.jsonl"
    session = import_group_chat_file(store, group_path(root), source).session_id
    out = tmp_path / "again.jsonl"
    assert export_jsonl(store, session, out) == 7
    assert_same_structure(read_lines(source), read_lines(out))
    again = load_chat(out)  # and SillyTavern's speaker logic reads it as before
    group = load_st_group(group_path(root))
    before = load_chat(source).messages
    assert turn_from_chat(group, again.messages) == turn_from_chat(group, before)


def round_record(number: int, said: str, *replies: tuple[str, str], **more: Any) -> dict[str, Any]:
    speakers = [{"name": name, "key": f"{name.lower()}.png", "text": text}
                for name, text in replies]
    narrative = "\n\n".join(f"{name}: {text}" for name, text in replies)
    return {"number": number, "user_input": said, "narrative": narrative, "speakers": speakers,
            **more}


def test_a_group_session_played_on_exports_speakers_as_sillytavern_does(
    store: SessionStore, tmp_path: Path
) -> None:
    root = install_group(tmp_path)
    session = import_group_chat_file(store, group_path(root), seed=1).session_id
    snapshot = store.resume(session).snapshot
    store.commit_turn(session, round_record(3, "Bob, tea?", ("Bob", "Bob sips."),
                                            ("Alice", "Alice sighs.")), snapshot)
    store.add_swipe(session, 3, round_record(3, "Bob, tea?", ("Bob", "Bob sips."),
                                          ("Alice", "Alice laughs."),
                                          post_outputs={"status": "[tea: 2]"}), snapshot,
                    select=True)
    out = tmp_path / "played.jsonl"
    export_jsonl(store, session, out)
    *_, user, bob, alice = read_lines(out)
    assert (user["is_user"], user["mes"]) == (True, "Bob, tea?")
    assert (bob["name"], bob["original_avatar"], bob["force_avatar"]) == (
        "Bob", "bob.png", "/thumbnail?type=avatar&file=bob.png")
    assert (alice["name"], alice["is_user"], alice["original_avatar"]) == (
        "Alice", False, "alice.png")
    assert alice["mes"] == "Alice laughs.\n\n[tea: 2]"  # the chosen swipe, tool output after
    assert alice["swipes"] == ["Alice sighs.", "Alice laughs.\n\n[tea: 2]"]
    assert alice["swipe_id"] == 1 and "swipes" not in bob


def test_a_reimported_export_continues_with_its_state_and_speakers(
    store: SessionStore, tmp_path: Path
) -> None:
    root = install_group(tmp_path)
    session = import_group_chat_file(store, group_path(root), seed=3).session_id
    state = {**store.resume(session).snapshot, "marker": "after turn 3"}
    store.commit_turn(session, round_record(3, "hi", ("Bob", "Bob bows."),
                                            post_outputs={"status": "[ok]"}, plan={"x": 1}),
                      state)
    out = tmp_path / "ours.jsonl"
    export_jsonl(store, session, out)
    back = import_group_chat_file(store, group_path(root), out)
    assert back.restored_state and back.warnings == []
    assert store.session(back.session_id).seed == 3
    resumed = store.resume(back.session_id)
    assert resumed.snapshot["marker"] == "after turn 3"
    assert resumed.record["speakers"] == [{"name": "Bob", "key": "bob.png", "text": "Bob bows."}]
    assert resumed.record["plan"] == {"x": 1}  # our own record came back whole


def test_several_player_messages_in_a_row_stay_several(store: SessionStore,
                                                        tmp_path: Path) -> None:
    """Manual order: nobody answered the first message, so the player wrote another."""
    root = install_group(tmp_path)
    lines = chat_lines()
    nudge = {**lines[3], "mes": "Anyone?", "send_date": "2026-05-03T10:01:30.000Z"}
    lines.insert(4, nudge)
    source = write_chat(tmp_path / "manual.jsonl", lines)
    session = import_group_chat_file(store, group_path(root), source).session_id
    turn = list(store.iter_turns(session))[1]
    assert turn.record["user_input"] == "Hello, Alice and Bob!\nAnyone?"
    out = tmp_path / "manual-out.jsonl"
    export_jsonl(store, session, out)
    assert_same_structure(lines, read_lines(out))


def test_an_old_group_chat_without_a_header_imports(store: SessionStore, tmp_path: Path) -> None:
    root = install_group(tmp_path)
    lines = chat_lines()[1:]  # before 1.18 the metadata lived in the group file
    for line in lines:
        line.pop("original_avatar", None)  # and older still: no original_avatar
    source = write_chat(tmp_path / "old.jsonl", lines)
    result = import_group_chat_file(store, group_path(root), source)
    speakers = [s["key"] for t in store.iter_turns(result.session_id)
                for s in t.record["speakers"]]
    assert speakers == ["alice.png", "bob.png", "alice.png", "bob.png", "露米.png"]  # by name
    out = tmp_path / "old-out.jsonl"
    export_jsonl(store, result.session_id, out)
    header, *messages = read_lines(out)
    assert header["user_name"] == "unused" and "chat_metadata" in header
    assert [m["original_avatar"] for m in messages if not m["is_user"]] == [
        "alice.png", "bob.png", "alice.png", "bob.png", "露米.png"]


def test_messages_by_someone_outside_the_group_are_reported(store: SessionStore,
                                                            tmp_path: Path) -> None:
    root = install_group(tmp_path)
    group = load_st_group(group_path(root))
    chat = Chat(messages=[
        ChatMessage("Alice", False, "Hi.", raw={"original_avatar": "alice.png"}),
        ChatMessage("You", True, "Who is there?"),
        ChatMessage("Dave", False, "Me.", raw={"original_avatar": "dave.png"}),
        ChatMessage("Eve", False, "And me."),
        ChatMessage("You", True, "Hello?"),
    ])
    result = import_group_chat(store, chat, GroupSource(group, "g.json"), name="x",
                               snapshot_for=fresh_snapshots(1))
    assert result.warnings == [
        "1 user message(s) after the last reply were not imported",
        "1 message(s) by Dave (dave.png), who is not a member of the group 'Tea Party'",
        "1 message(s) by Eve (no card), who is not a member of the group 'Tea Party'",
    ]
    turn = store.resume(result.session_id)
    assert [s["key"] for s in turn.record["speakers"]] == ["dave.png", ""]


def test_a_group_whose_chat_cannot_be_found_is_one_line(store: SessionStore,
                                                        tmp_path: Path) -> None:
    root = install_group(tmp_path, chat_id="1999")
    with pytest.raises(GroupError) as caught:
        import_group_chat_file(store, group_path(root))
    message = caught.value.message
    assert message == (f"{group_path(root)}: the group's chat "
                       f"{root / 'group chats' / '1999.jsonl'} does not exist")
    assert store.list_sessions() == []


# -- narrative sessions import --group -------------------------------------------------------


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_the_cli_imports_a_group_chat_by_group_name_and_exports_it(tmp_path: Path) -> None:
    root = install_group(tmp_path)
    done = cli("sessions", "import", "--group", "tea party", "--st-data", str(root))
    assert done.exit_code == 0, done.output
    assert "Imported session 1 (Tea Party): turns 0..2, 4 swipes, fresh state" in done.output
    out = tmp_path / "out.jsonl"
    exported = cli("sessions", "export", "1", str(out))
    assert exported.exit_code == 0, exported.output
    source = root / "group chats" / f"{CHAT_ID}.jsonl"
    assert_same_structure(read_lines(source), read_lines(out))
    by_file = cli("sessions", "import", str(source), "--group", str(group_path(root)),
                  "--name", "again")
    assert by_file.exit_code == 0, by_file.output
    assert "Imported session 2 (again)" in by_file.output


def test_the_cli_refuses_bad_group_input_in_one_line(tmp_path: Path) -> None:
    root = install_group(tmp_path, members=["alice.png", "carol.png"])
    cases = {
        ("--group", "Tea Party", "--st-data", str(root)):
            f"error: {group_path(root)}: member card 'carol.png' not found in",
        ("--group", "Picnic", "--st-data", str(root)):
            f"error: {root / 'groups'}: no group named 'Picnic' (groups: Tea Party)",
        ("--group", "Picnic"): "error: --group Picnic: no such group file",
        ("--card", "x.png", "--group", "Picnic"):
            "error: sessions import: give --card CARD for a chat or --group GROUP",
        ("--card", "x.png"): "error: sessions import: give the chat FILE to import with --card",
    }
    for args, expected in cases.items():
        done = cli("sessions", "import", *args)
        assert done.exit_code == 2, (args, done.output)
        assert done.output.startswith(expected), (args, done.output)
        assert "Traceback" not in done.output
    (root / "groups" / f"{GROUP_ID}.json").write_text('{"members": [', encoding="utf-8")
    broken = cli("sessions", "import", "--group", str(group_path(root)))
    assert broken.exit_code == 2
    assert broken.output.splitlines()[0] == (
        f"error: {group_path(root)}: invalid JSON in the group file (line 1, column 14: "
        "Expecting value)")


def test_a_rounds_story_is_labelled_as_the_scene_pipeline_labels_it() -> None:
    speakers = [{"name": "温岚", "text": "嗯。"}, {"name": "Pip", "text": "Hm."}]
    assert scene_text(speakers, "zh") == "温岚：嗯。\n\nPip：Hm."
    assert scene_text(speakers, "en") == "温岚: 嗯。\n\nPip: Hm."
