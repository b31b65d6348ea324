"""Sessions out of the store: a SillyTavern chat (``.jsonl``) and a full JSON dump.

The chat is what SillyTavern opens (compat §4): a header with ``user_name``,
``character_name``, ``create_date`` and ``chat_metadata``, then the greeting and one user
message and one character message per turn, swipes included. narrative-cli's own data rides
along under the ``narrative_cli`` key: in ``chat_metadata`` the session (card hash, lore,
settings, seed) and the snapshot of the last turn, so an import can continue exactly where
the export ended; in each message's ``extra`` (and each ``swipe_info`` entry) the turn record.

The JSON dump holds everything: every turn, every swipe, every snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

from narrative_cli.credentials import scrub
from narrative_cli.domain_chat import Chat, ChatMessage
from narrative_cli.errors import ChatFileError, SnapshotMissing
from narrative_cli.store.catch_up import state as catch_up_state
from narrative_cli.store.models import Json, SessionInfo, SwipeData, TurnData
from narrative_cli.store.sessions import SessionStore

NAMESPACE = "narrative_cli"
FORMAT_VERSION = 1
DUMP_FORMAT = "narrative-cli-session"


def session_to_chat(
    store: SessionStore, session_id: int, usage: Mapping[str, Any] | None = None
) -> Chat:
    """A session as a SillyTavern chat, our state kept under ``chat_metadata.narrative_cli``
    (with ``usage``, the session's tokens and money, when given)."""
    info = store.session(session_id)
    names = _Names(user=info.user_name or "User", character=_character(info))
    messages: list[ChatMessage] = []
    for turn in store.iter_turns(session_id):
        messages.extend(_turn_messages(turn, names))
    ours = _namespace(store, info)
    if usage is not None:
        ours = {**ours, "usage": dict(usage)}
    metadata = {**info.chat_metadata, NAMESPACE: ours}
    return Chat(
        user_name=names.user,
        character_name=names.character,
        create_date=humanized_date(info.created_at),
        chat_metadata=scrub(metadata),
        messages=messages,
    )


def export_jsonl(
    store: SessionStore, session_id: int, path: str | Path, *, force: bool = False,
    usage: Mapping[str, Any] | None = None,
) -> int:  # fmt: skip
    """Write a session as a SillyTavern ``.jsonl`` chat; return the number of messages.

    Never over the open database; over an existing file only with ``force``.
    """
    from narrative_cli.load.chats import write_chat

    chat = session_to_chat(store, session_id, usage)
    # The header: names and create_date for a chat with one character; a group chat's header
    # is SillyTavern 1.18's (chat_metadata, names "unused"), the only one its group loader has.
    variant = "1.18" if is_group_chat(chat) else "1.12"
    write_chat(chat, path, variant=variant, force=force)
    return len(chat.messages)


def is_group_chat(chat: Chat) -> bool:
    """True for a group chat: SillyTavern marks each group reply with its speaker's card."""
    return any("original_avatar" in m.raw for m in chat.messages if not m.is_user)


def session_dump(
    store: SessionStore, session_id: int, usage: Mapping[str, Any] | None = None
) -> Json:
    """Everything about a session as one JSON object: header, turns, swipes, snapshots (and
    ``usage``, the session's tokens and money, when given)."""
    info = store.session(session_id)
    data: Json = {
        "format": DUMP_FORMAT,
        "version": FORMAT_VERSION,
        "session": session_header(info),
        "turns": [_dump_turn(t) for t in store.iter_turns(session_id, snapshots=True)],
    }
    progress = catch_up_state(store, session_id)
    if progress is not None:  # an imported chat's catch-up: how far it read (a replay repeats it)
        data["catch_up"] = {"through": progress.through, "last_turn": progress.last_turn,
                            "status": progress.status}
    if usage is not None:
        data["usage"] = dict(usage)
    dump: Json = scrub(data)
    return dump


def export_json(
    store: SessionStore, session_id: int, path: str | Path, *, force: bool = False,
    usage: Mapping[str, Any] | None = None,
) -> int:  # fmt: skip
    """Write the full JSON dump of a session; return the number of turns written (never over
    the open database; over an existing file only with ``force``)."""
    from narrative_cli.load.files import write_text

    dump = session_dump(store, session_id, usage)
    text = json.dumps(dump, ensure_ascii=False, indent=1)
    write_text(path, text + "\n", error=ChatFileError, kind="session dump", force=force)
    return len(dump["turns"])


def session_header(info: SessionInfo) -> Json:
    """The session's own fields, as exports carry them."""
    return {
        "id": info.id,
        "name": info.name,
        "card_path": info.card_path,
        "card_hash": info.card_hash,
        "character_name": info.character_name,
        "user_name": info.user_name,
        "lore": [{"path": ref.path, "hash": ref.hash} for ref in info.lore],
        "settings": info.settings,
        "seed": info.seed,
        "greeting_index": info.greeting_index,
        "created_at": info.created_at,
        "parent_id": info.parent_id,
        "parent_turn": info.parent_turn,
    }


def message_text(record: Json) -> str:
    """The message text of a turn: its narrative, the MVU update block it carried (as
    SillyTavern keeps it in the message), then any post-pipeline tool outputs."""
    parts = [str(record.get("narrative") or ""), str(record.get("mvu_block") or "")]
    outputs = record.get("post_outputs")
    if isinstance(outputs, dict):
        parts.extend(str(text) for text in outputs.values() if str(text or "").strip())
    return "\n\n".join(part for part in parts if part)


def st_date(stamp: str | None) -> str:
    """An ISO timestamp as SillyTavern's ``send_date`` (``toISOString``: UTC, ms, ``Z``)."""
    moment = _parse(stamp)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def humanized_date(stamp: str | None) -> str:
    """An ISO timestamp as SillyTavern's humanized ``create_date`` (``2025-04-22@18h00m52s``)."""
    moment = _parse(stamp).astimezone()
    return moment.strftime("%Y-%m-%d@%Hh%Mm%Ss") + f"{moment.microsecond // 1000:03d}ms"


class _Names:
    def __init__(self, user: str, character: str) -> None:
        self.user = user
        self.character = character


def _character(info: SessionInfo) -> str:
    return info.character_name or Path(info.card_path).stem or "Character"


def _namespace(store: SessionStore, info: SessionInfo) -> Json:
    data: Json = {"version": FORMAT_VERSION, "session": session_header(info)}
    try:
        state = store.resume(info.id)
    except SnapshotMissing:
        data["turn"] = info.last_turn
        return data
    data["turn"] = state.number
    data["snapshot"] = state.snapshot
    return data


def _turn_messages(turn: TurnData, names: _Names) -> list[ChatMessage]:
    record = turn.record
    imported = _dict(record.get("imported"))
    messages: list[ChatMessage] = []
    user_input = record.get("user_input")
    speakers = _speakers(record)
    # A group round without player text (an empty send) has no player message.
    if turn.number > 0 and (user_input or not (imported or speakers)):
        messages.extend(_user_messages(turn, str(user_input or ""), names, imported))
    if speakers:
        messages.extend(_round_messages(turn, speakers, imported))
    elif turn.number > 0 or any(message_text(s.record) for s in turn.swipes):
        messages.append(_reply_message(turn, names, imported))
    return messages


def _user_messages(turn: TurnData, text: str, names: _Names, imported: Json) -> list[ChatMessage]:
    """The player's message of a turn; several when the imported chat had several in a row
    (a group in manual order) and the text was not changed since."""
    several = imported.get("users")
    if isinstance(several, list) and "\n".join(str(_dict(u).get("mes")) for u in several) == text:
        return [_user_message(turn, str(_dict(u).get("mes")), names, {"user": u})
                for u in several]
    return [_user_message(turn, text, names, imported)]


def _user_message(turn: TurnData, text: str, names: _Names, imported: Json) -> ChatMessage:
    original = _dict(imported.get("user"))
    extra = {**_dict(original.get("extra")), NAMESPACE: {"turn": turn.number}}
    raw = {k: v for k, v in original.items() if k not in _MESSAGE_FIELDS}
    return ChatMessage(
        name=str(original.get("name") or names.user),
        is_user=True,
        mes=text,
        send_date=original.get("send_date") or st_date(turn.created_at),
        extra=extra,
        raw=raw,
    )


def _reply_message(turn: TurnData, names: _Names, imported: Json) -> ChatMessage:
    original = _dict(imported.get("reply"))
    date = original.get("send_date")
    infos = [_swipe_info(turn.number, i, swipe, date) for i, swipe in enumerate(turn.swipes)]
    selected = infos[turn.swipe_id]
    raw = {k: v for k, v in original.items() if k not in _MESSAGE_FIELDS}
    raw["swipe_info"] = infos
    extra = dict(selected["extra"])
    if not _dict(imported.get("swipe_info")):  # no swipe_info in the file: the message's own
        extra = {**_dict(original.get("extra")), **extra}
    return ChatMessage(
        name=str(original.get("name") or names.character),
        is_user=False,
        mes=message_text(turn.record),
        send_date=selected["send_date"],
        swipes=[message_text(s.record) for s in turn.swipes],
        swipe_id=turn.swipe_id,
        extra=extra,
        raw=raw,
    )


def _speakers(record: Json) -> list[Json]:
    """A group round's replies (``{"name", "key", "text"}``), empty for a one-card turn."""
    speakers = record.get("speakers")
    return [_dict(s) for s in speakers] if isinstance(speakers, list) else []


def _round_messages(turn: TurnData, speakers: list[Json], imported: Json) -> list[ChatMessage]:
    """A group round as SillyTavern's group chat has it: one message per reply, each with its
    speaker's name and card; the last carries the round's swipes (and tool outputs)."""
    originals = imported.get("replies")
    originals = originals if isinstance(originals, list) else []
    messages = []
    for index, speaker in enumerate(speakers[:-1]):
        original = _dict(originals[index]) if index < len(originals) else {}
        messages.append(_speaker_message(turn, speaker, original, str(speaker.get("text") or "")))
    original = _dict(originals[len(speakers) - 1]) if len(originals) >= len(speakers) else {}
    last = _speaker_message(turn, speakers[-1], original, _round_text(turn.record))
    date = original.get("send_date")
    infos = [_swipe_info(turn.number, i, swipe, date) for i, swipe in enumerate(turn.swipes)]
    last.swipes = [_round_text(s.record) for s in turn.swipes]
    last.swipe_id = turn.swipe_id
    last.send_date = infos[turn.swipe_id]["send_date"]
    last.raw["swipe_info"] = infos
    if _dict(imported.get("swipe_info")):
        last.extra = dict(infos[turn.swipe_id]["extra"])
    else:  # no swipe_info in the file: the message's own extra
        last.extra = {**last.extra, **infos[turn.swipe_id]["extra"]}
    return messages + [last]


def _round_text(record: Json) -> str:
    """The last reply's text of a round, with the turn's tool outputs after it."""
    speakers = _speakers(record)
    return message_text({**record, "narrative": str(speakers[-1].get("text") or "")})


def _speaker_message(turn: TurnData, speaker: Json, original: Json, text: str) -> ChatMessage:
    key = str(speaker.get("key") or "")
    raw = {k: v for k, v in original.items() if k not in _MESSAGE_FIELDS}
    if key:  # SillyTavern's fields for the speaker's card
        raw.setdefault("force_avatar", "/thumbnail?type=avatar&file=" + quote(key, safe="!~*'()"))
        raw.setdefault("original_avatar", key)
    same = original.get("mes") == text and isinstance(original.get("swipes"), list)
    if same and "swipe_info" in original:
        raw["swipe_info"] = original["swipe_info"]
    return ChatMessage(
        name=str(speaker.get("name") or original.get("name") or ""),
        is_user=False,
        mes=text,
        send_date=original.get("send_date") or st_date(turn.created_at),
        swipes=[str(t) for t in original["swipes"]] if same else [],
        swipe_id=int(original.get("swipe_id") or 0) if same else 0,
        extra=_dict(original.get("extra")),
        raw=raw,
    )


def _swipe_info(number: int, index: int, swipe: SwipeData, date: Any) -> Json:
    """A ``swipe_info`` entry; its ``extra`` carries the swipe's record (minus import notes)."""
    original = _dict(_dict(swipe.record.get("imported")).get("swipe_info"))
    record = {k: v for k, v in swipe.record.items() if k != "imported"}
    ours = {"turn": number, "swipe": index, "record": record}
    return {
        **original,
        "send_date": original.get("send_date") or date or st_date(swipe.created_at),
        "gen_started": original.get("gen_started"),
        "gen_finished": original.get("gen_finished"),
        "extra": {**_dict(original.get("extra")), NAMESPACE: ours},
    }


def _dump_turn(turn: TurnData) -> Json:
    return {
        "number": turn.number,
        "swipe_id": turn.swipe_id,
        "created_at": turn.created_at,
        "swipes": [
            {"record": s.record, "snapshot": s.snapshot, "created_at": s.created_at}
            for s in turn.swipes
        ],
    }


_MESSAGE_FIELDS = frozenset(
    {
        "name",
        "is_user",
        "is_system",
        "send_date",
        "mes",
        "swipes",
        "swipe_id",
        "swipe_info",
        "extra",
    }
)


def _dict(value: Any) -> Json:
    return dict(value) if isinstance(value, dict) else {}


def _parse(stamp: str | None) -> datetime:
    try:
        moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        moment = datetime(1970, 1, 1, tzinfo=timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)
