"""A SillyTavern group chat (``group chats/<chat id>.jsonl``) into the store as a group session.

A group session keeps one turn per round, as the scene pipeline plays it: the player's
message(s), then every member's reply in order, in the record's ``speakers`` (``{"name",
"key", "text"}``, ``key`` being the member's card file) and, for the prompts, in its
``narrative`` (each reply under its speaker's name). Turn 0 holds the greetings before the
player's first message. A round's swipes are its last reply's swipes (SillyTavern swipes only
the last message; ``/regen`` redoes only the last speaker). A reply's speaker is its
``original_avatar``, else the member of its name (chats older than that field).

The session is what ``narrative run --group FILE`` would have made: the first member's card,
``settings`` ``{"group": FILE, "st_data": DIR}``, so it resumes as a group. Every field of
the file rides along under ``imported`` and ``export.export_jsonl`` writes the chat back with
the same structure (docs/groups.md).
"""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from narrative_cli.domain_chat import Chat, ChatMessage
from narrative_cli.errors import ChatFileError, ConfigError, GroupError
from narrative_cli.group.model import Group
from narrative_cli.group.st_groups import chat_path, data_folder, group_reference, load_st_group
from narrative_cli.store.chat_import import (
    ImportResult,
    SnapshotFactory,
    as_dict,
    attach_snapshots,
    content_hash,
    fresh_snapshots,
    message_fields,
    our_record,
    our_state,
    strip_ours,
)
from narrative_cli.store.export import NAMESPACE, message_text
from narrative_cli.store.models import Json, NewSession, SwipeData, TurnData
from narrative_cli.store.sessions import SessionStore

SCENE_TURN = {"en": "{name}: {text}", "zh": "{name}：{text}"}  # the pipeline's group.scene_turn


@dataclass
class _Round:
    users: list[ChatMessage] = field(default_factory=list)
    replies: list[ChatMessage] = field(default_factory=list)


@dataclass(frozen=True)
class GroupSource:
    """Where a group session comes from: its group file, the group and the data folder."""

    group: Group
    group_path: str
    st_data: str | None = None


def scene_text(speakers: list[Json], lang: str) -> str:
    """A round's story for the prompts: each reply under its speaker's name, as the scene
    pipeline writes it (its ``group.scene_turn`` label when the templates have one)."""
    from narrative_cli.agents.templates import labels

    code = "zh" if lang == "zh" else "en"
    form = labels(code).get("group.scene_turn", SCENE_TURN[code])
    return "\n\n".join(form.format(name=s["name"], text=s["text"]) for s in speakers)


def import_group_chat(
    store: SessionStore,
    chat: Chat,
    source: GroupSource,
    *,
    name: str,
    snapshot_for: SnapshotFactory,
    seed: int | None = None,
    lang: str = "en",
) -> ImportResult:
    """Store the group chat ``chat`` as a new group session."""
    warnings: list[str] = []
    rounds = _rounds(chat, warnings)
    strangers: Counter[str] = Counter()
    turns = [_turn(n, r, source.group, lang, strangers) for n, r in enumerate(rounds)]
    ours = our_state(chat, len(turns) - 1, warnings)
    attach_snapshots(turns, ours, snapshot_for)
    warnings.extend(f"{count} message(s) by {who}, who is not a member of the group "
                    f"{source.group.name!r}" for who, count in strangers.items())
    lead = source.group.members[0].card
    settings: Json = {"group": source.group_path}
    if source.st_data:
        settings["st_data"] = source.st_data
    spec = NewSession(
        name=name,
        card_path=str(Path(lead.path).resolve()) if lead.path else "",
        card_hash=_card_hash(lead.path),
        settings=settings,
        seed=seed,
        character_name=source.group.name,
        user_name=next((m.name for r in rounds for m in r.users if m.name), "") or "User",
        chat_metadata={k: v for k, v in chat.chat_metadata.items() if k != NAMESPACE},
    )
    session_id = store.restore_session(spec, turns)
    swipes = sum(len(turn.swipes) for turn in turns)
    return ImportResult(session_id, len(turns) - 1, swipes, "snapshot" in ours, warnings)


def _rounds(chat: Chat, warnings: list[str]) -> list[_Round]:
    """Greetings, then each run of player messages with the replies after it."""
    visible = [m for m in chat.messages if not m.is_system]
    if len(visible) < len(chat.messages):
        warnings.append(f"{len(chat.messages) - len(visible)} hidden (system) message(s) were "
                        "left out")
    if not visible:
        raise ChatFileError(f"{chat.path or 'the chat'}: no messages to import")
    rounds = [_Round()]
    for message in visible:
        if message.is_user and rounds[-1].replies or message.is_user and len(rounds) == 1:
            rounds.append(_Round())
        (rounds[-1].users if message.is_user else rounds[-1].replies).append(message)
    if not rounds[-1].replies and len(rounds) > 1:
        left = rounds.pop()
        warnings.append(f"{len(left.users)} user message(s) after the last reply were not "
                        "imported")
    return rounds


def _turn(number: int, round_: _Round, group: Group, lang: str,
          strangers: Counter[str]) -> TurnData:
    user_input = "\n".join(m.mes for m in round_.users) if number else None
    users = [{**message_fields(m), "mes": m.mes} for m in round_.users]
    if not round_.replies:  # a chat that starts with the player: no greeting
        record: Json = {"number": 0, "user_input": None, "narrative": "", "imported": {}}
        return TurnData(number, [SwipeData(record, None)])
    speakers = [_speaker(group, m, strangers) for m in round_.replies]
    replies = [message_fields(m) for m in round_.replies]
    for reply, message in zip(replies[:-1], round_.replies[:-1], strict=True):
        reply.update(mes=message.mes, swipes=list(message.swipes), swipe_id=message.swipe_id)
    last = round_.replies[-1]
    infos = replies[-1].pop("swipe_info", None)
    texts = [str(s) for s in last.swipes] if last.swipes else [last.mes]
    selected = last.swipe_id if 0 <= last.swipe_id < len(texts) else 0
    texts[selected] = last.mes  # what SillyTavern shows wins over a stale swipe
    swipes = []
    for index, text in enumerate(texts):
        info = infos[index] if isinstance(infos, list) and index < len(infos) else None
        these = [*speakers[:-1], {**speakers[-1], "text": text}]
        imported = {"users": users, "replies": replies, "swipe_info": strip_ours(info)}
        ours = our_record(last, info, index == selected)
        swipes.append(SwipeData(_record(number, user_input, these, lang, ours, imported), None))
    return TurnData(number, swipes, selected)


def _record(number: int, user_input: str | None, speakers: list[Json], lang: str,
            ours: Json | None, imported: Json) -> Json:
    """A round's record: narrative-cli's own when the export carried it and nobody edited the
    replies in SillyTavern since, else a new one from the texts."""
    texts = [s["text"] for s in speakers]
    if ours is not None and _group_texts(ours) == texts:
        return {**ours, "number": number, "user_input": user_input, "imported": imported}
    return {"number": number, "user_input": user_input, "narrative": scene_text(speakers, lang),
            "speakers": speakers, "imported": imported}


def _group_texts(record: Json) -> list[str]:
    """The texts an exported round's messages carry (tool outputs after the last reply)."""
    speakers = [as_dict(s) for s in record.get("speakers") or []]
    texts = [str(s.get("text") or "") for s in speakers]
    if texts:
        texts[-1] = message_text({**record, "narrative": texts[-1]})
    return texts


def _speaker(group: Group, message: ChatMessage, strangers: Counter[str]) -> Json:
    avatar = message.raw.get("original_avatar")
    key = avatar if isinstance(avatar, str) and avatar else ""
    member = group.member(key) if key else (group.member(message.name) if message.name else None)
    if member is None:
        strangers[f"{message.name or '?'} ({key or 'no card'})"] += 1
    return {"name": message.name, "key": key or (member.key if member else ""),
            "text": message.mes}


def _card_hash(path: str) -> str:
    try:
        return content_hash(Path(path).read_bytes()) if path else ""
    except OSError:
        return ""


def group_chat_file(source: GroupSource) -> Path:
    """The group's open chat (``chat_id``) in the data folder the group file belongs to."""
    characters = Path(source.st_data) / "characters" if source.st_data else None
    root = data_folder(Path(source.group_path), characters)
    current = source.group.extra.get("chat_id")
    if root is None or not isinstance(current, (str, int)) or not str(current):
        raise GroupError(f"{source.group_path}: cannot tell where the group's chat is",
                         hint="give the chat file, or the data folder with --st-data")
    path = chat_path(root, str(current))
    if not path.is_file():
        raise GroupError(f"{source.group_path}: the group's chat {path} does not exist")
    return path


def import_group_chat_file(
    store: SessionStore,
    group_path: str | Path,
    chat_file: str | Path | None = None,
    *,
    st_data: str | Path | None = None,
    name: str | None = None,
    seed: int | None = None,
) -> ImportResult:
    """Import a SillyTavern group chat (by default the group's open one) as a new session."""
    from narrative_cli.load.chats import load_chat
    from narrative_cli.load.language import card_language

    root = str(Path(st_data).expanduser().resolve()) if st_data is not None else None
    characters = Path(root) / "characters" if root else None
    group = load_st_group(group_path, characters=characters)
    source = GroupSource(group, str(Path(group_path).resolve()), root)
    chat = load_chat(chat_file if chat_file is not None else group_chat_file(source))
    if seed is None:
        seed = _stored_seed(chat)
    if seed is None:
        seed = secrets.randbelow(2**31)
    result = import_group_chat(store, chat, source, name=name or group.name,
                               snapshot_for=fresh_snapshots(seed), seed=seed,
                               lang=card_language(group.members[0].card))
    result.warnings[:0] = [f"{chat.path}: {problem}; skipped" for problem in chat.problems]
    return result


def _stored_seed(chat: Chat) -> int | None:
    """The seed of the session a narrative-cli export came from."""
    session = as_dict(as_dict(chat.chat_metadata.get(NAMESPACE)).get("session"))
    seed = session.get("seed")
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
        path, _ = group_reference(group, st_data)
        return import_group_chat_file(store, path, file, st_data=st_data, name=name, seed=seed)
    if st_data is not None:
        raise ConfigError("sessions import: --st-data is only read with --group")
    if file is None or card is None:
        raise ConfigError("sessions import: give the chat FILE to import with --card")
    return import_chat_file(store, file, card, name=name, seed=seed)
