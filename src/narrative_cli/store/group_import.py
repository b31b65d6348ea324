"""A SillyTavern group chat (``group chats/<chat id>.jsonl``) into the store, and back out.

The chat is imported as a single chat is (``chat_import.py``: the user messages before a reply
are that turn's input), one turn per character message: the members' greetings are turns 0,
1, …, and after the player speaks each member's reply is a turn of its own, the ones after the
first with no player text (the next speaker of the same round). Each such turn's record keeps
its speaker, ``{"key": <card file>, "name": <name>}``, read from the message's
``original_avatar`` (or its name, for chats older than that field). The session is named after
the group and points at the group file (``card_path``, with its content hash).

``export.export_jsonl`` writes a session whose replies have speakers as SillyTavern's group
chat: the 1.18 header, the speaker's name, ``original_avatar`` and ``force_avatar`` on each
reply, and no empty player message between the speakers of one round.
"""

from __future__ import annotations

import secrets
from collections import Counter
from pathlib import Path

from narrative_cli.domain import Chat, ChatMessage
from narrative_cli.errors import ConfigError, GroupError
from narrative_cli.group.model import Group
from narrative_cli.group.st_groups import chat_path, data_folder, group_reference, load_st_group
from narrative_cli.store.chat_import import (
    ImportResult,
    SnapshotFactory,
    content_hash,
    fresh_snapshots,
    import_chat,
)
from narrative_cli.store.export import NAMESPACE
from narrative_cli.store.models import Json
from narrative_cli.store.sessions import SessionStore


def import_group_chat(
    store: SessionStore,
    chat: Chat,
    group: Group,
    *,
    name: str,
    group_path: str,
    group_hash: str,
    snapshot_for: SnapshotFactory,
    seed: int | None = None,
) -> ImportResult:
    """Store the group chat ``chat`` of ``group`` as a new session."""
    strangers: Counter[str] = Counter()

    def speaker_of(message: ChatMessage) -> Json:
        speaker = message_speaker(group, message)
        if group.member(speaker["key"]) is None:
            strangers[f"{message.name or '?'} ({speaker['key'] or 'no card'})"] += 1
        return speaker

    result = import_chat(
        store, chat, name=name, card_path=group_path, card_hash=group_hash,
        snapshot_for=snapshot_for, seed=seed, speaker_of=speaker_of, character_name=group.name,
    )
    result.warnings.extend(
        f"{count} message(s) by {who}, who is not a member of the group {group.name!r}"
        for who, count in strangers.items()
    )
    return result


def message_speaker(group: Group, message: ChatMessage) -> Json:
    """Who wrote a group chat message: its ``original_avatar``, else the member of its name."""
    avatar = message.raw.get("original_avatar")
    if isinstance(avatar, str) and avatar:
        return {"key": avatar, "name": message.name}
    member = group.member(message.name) if message.name else None
    return {"key": member.key if member is not None else "", "name": message.name}


def group_chat_file(group_path: str | Path, group: Group, characters: Path | None = None) -> Path:
    """The group's open chat (``chat_id``) in the data folder the group file belongs to."""
    root = data_folder(Path(group_path), characters)
    current = group.extra.get("chat_id")
    if root is None or not isinstance(current, (str, int)) or not str(current):
        raise GroupError(f"{group_path}: cannot tell where the group's chat is",
                         hint="give the chat file, or the data folder with --st-data")
    path = chat_path(root, str(current))
    if not path.is_file():
        raise GroupError(f"{group_path}: the group's chat {path} does not exist")
    return path


def import_group_chat_file(
    store: SessionStore,
    group_path: str | Path,
    chat_path_: str | Path | None = None,
    *,
    characters: Path | None = None,
    name: str | None = None,
    seed: int | None = None,
) -> ImportResult:
    """Import a SillyTavern group chat (by default the group's open one) as a new session."""
    from narrative_cli.load.chats import load_chat
    from narrative_cli.load.files import MAX_JSON_BYTES, read_bytes

    group = load_st_group(group_path, characters=characters)
    source = Path(chat_path_) if chat_path_ is not None else group_chat_file(
        group_path, group, characters)
    data = read_bytes(group_path, limit=MAX_JSON_BYTES, error=GroupError, kind="group")
    chat = load_chat(source)
    if seed is None:
        seed = _stored_seed(chat)
    if seed is None:
        seed = secrets.randbelow(2**31)
    result = import_group_chat(
        store, chat, group, name=name or group.name, group_path=str(Path(group_path).resolve()),
        group_hash=content_hash(data), snapshot_for=fresh_snapshots(seed), seed=seed,
    )
    result.warnings[:0] = [f"{source}: {problem}; skipped" for problem in chat.problems]
    return result


def _stored_seed(chat: Chat) -> int | None:
    """The seed of the session a narrative-cli export came from."""
    ours = chat.chat_metadata.get(NAMESPACE)
    session = ours.get("session") if isinstance(ours, dict) else None
    seed = session.get("seed") if isinstance(session, dict) else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def import_any(
    store: SessionStore,
    file: Path | None,
    *,
    card: Path | None,
    group: str | None,
    st_data: Path | None,
    name: str | None,
    seed: int | None,
) -> ImportResult:
    """``narrative sessions import``: a chat with ``--card``, or a group's chat with ``--group``."""
    from narrative_cli.store.chat_import import import_chat_file

    if (card is None) == (group is None):
        raise ConfigError("sessions import: give --card CARD for a chat or --group GROUP for a "
                          "group chat (one of them)")
    if group is not None:
        path, characters = group_reference(group, st_data)
        return import_group_chat_file(store, path, file, characters=characters, name=name,
                                      seed=seed)
    if st_data is not None:
        raise ConfigError("sessions import: --st-data is only read with --group")
    if file is None or card is None:
        raise ConfigError("sessions import: give the chat FILE to import with --card")
    return import_chat_file(store, file, card, name=name, seed=seed)
