"""A SillyTavern chat (``.jsonl``) into the store as a new session that can be continued.

Turns: the first character message is the greeting (turn 0, its swipes kept); after that,
each character message is one turn, with the user messages before it as that turn's input
(several are joined by newlines; none gives an empty input). Hidden messages
(``is_system``) are left out, and user messages after the last reply are not a turn; both
are reported as warnings. The text shown in SillyTavern (``mes``) is the selected swipe's
text, even where an edit left ``swipes[swipe_id]`` behind.

State: a chat from SillyTavern carries no narrative-cli state, so every imported turn gets a
fresh snapshot from the caller (``snapshot_for(n)``: nothing tracked yet, as of turn n). A
chat that narrative-cli exported itself carries the snapshot of its last turn, which is
restored to that turn; its earlier turns have no snapshot (undoing past the import point
raises SnapshotMissing rather than inventing state).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from narrative_cli.domain_chat import Chat, ChatMessage
from narrative_cli.errors import CardError, ChatFileError
from narrative_cli.store.export import NAMESPACE, message_text
from narrative_cli.store.models import Json, LoreRef, NewSession, SwipeData, TurnData
from narrative_cli.store.sessions import SessionStore

SnapshotFactory = Callable[[int], Json]
_PLACEHOLDER_NAMES = frozenset({"", "unused"})


@dataclass
class ImportResult:
    """What an import created, and what it could not carry over."""

    session_id: int
    last_turn: int
    swipes: int
    restored_state: bool
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Draft:
    users: list[ChatMessage]
    reply: ChatMessage | None


def import_chat(
    store: SessionStore,
    chat: Chat,
    *,
    name: str,
    card_path: str,
    card_hash: str,
    snapshot_for: SnapshotFactory,
    lore: Sequence[LoreRef] = (),
    settings: Json | None = None,
    seed: int | None = None,
) -> ImportResult:
    """Store ``chat`` as a new session; return its id, size and the warnings to show."""
    warnings: list[str] = []
    drafts = _drafts(chat, warnings)
    turns = [_turn(number, draft, warnings) for number, draft in enumerate(drafts)]
    ours = our_state(chat, len(turns) - 1, warnings)
    attach_snapshots(turns, ours, snapshot_for)
    header = as_dict(ours.get("session"))
    if header.get("card_hash") and header.get("card_hash") != card_hash:
        warnings.append("the chat was exported from a session played with a different card file")
    spec = NewSession(
        name=name,
        card_path=card_path,
        card_hash=card_hash,
        lore=tuple(lore),
        settings=dict(settings if settings is not None else header.get("settings") or {}),
        seed=seed if seed is not None else _int_or_none(header.get("seed")),
        greeting_index=turns[0].swipe_id,
        character_name=_character_name(chat, drafts),
        user_name=_user_name(chat, drafts),
        chat_metadata={k: v for k, v in chat.chat_metadata.items() if k != NAMESPACE},
    )
    session_id = store.restore_session(spec, turns)
    swipes = sum(len(turn.swipes) for turn in turns)
    return ImportResult(session_id, len(turns) - 1, swipes, "snapshot" in ours, warnings)


def _drafts(chat: Chat, warnings: list[str]) -> list[_Draft]:
    visible = [m for m in chat.messages if not m.is_system]
    hidden = len(chat.messages) - len(visible)
    if hidden:
        warnings.append(f"{hidden} hidden (system) message(s) were left out")
    if not visible:
        raise ChatFileError(f"{chat.path or 'the chat'}: no messages to import")
    greeting = None if visible[0].is_user else visible.pop(0)
    drafts = [_Draft([], greeting)]
    pending: list[ChatMessage] = []
    for message in visible:
        if message.is_user:
            pending.append(message)
        else:
            drafts.append(_Draft(pending, message))
            pending = []
    if pending:
        preview = _preview(pending[-1].mes)
        warnings.append(
            f"{len(pending)} user message(s) after the last reply were not imported ({preview})"
        )
    return drafts


def _turn(number: int, draft: _Draft, warnings: list[str]) -> TurnData:
    user_input = "\n".join(m.mes for m in draft.users) if number else None
    user_fields = message_fields(draft.users[0]) if draft.users else {}
    if draft.reply is None:
        record: Json = {"number": 0, "user_input": None, "narrative": "", "imported": {}}
        return TurnData(number, [SwipeData(record, None)])
    texts, selected = _swipe_texts(draft.reply, number, warnings)
    reply_fields = message_fields(draft.reply)
    infos = reply_fields.pop("swipe_info", None)
    swipes = []
    for index, text in enumerate(texts):
        info = infos[index] if isinstance(infos, list) and index < len(infos) else None
        ours = our_record(draft.reply, info, index == selected)
        imported: Json = {"user": user_fields, "reply": reply_fields,
                          "swipe_info": strip_ours(info)}
        if len(draft.users) > 1:  # each user message, to write them back one by one
            imported["users"] = [{**message_fields(m), "mes": m.mes} for m in draft.users]
        record = _record(number, user_input, text, ours, imported)
        swipes.append(SwipeData(record, None))
    return TurnData(number, swipes, selected)


def _record(
    number: int, user_input: str | None, text: str, ours: Json | None, imported: Json
) -> Json:
    if ours is None:
        record: Json = {"number": number, "user_input": user_input, "imported": imported}
        return {**record, **_narrative(text)}
    record = {**ours, "number": number, "imported": imported}
    if message_text(ours) != text:  # edited in SillyTavern after the export
        record.update(post_outputs={}, **_narrative(text))
    if number and user_input is not None and ours.get("user_input") != user_input:
        record["user_input"] = user_input
    return record


def _narrative(text: str) -> Json:
    """A message's story text and its MVU update block, kept apart as a played turn keeps them."""
    from narrative_cli.state.mvu_commands import strip_update_blocks, update_blocks

    block = update_blocks(text)
    return {"narrative": strip_update_blocks(text), **({"mvu_block": block} if block else {})}


def _swipe_texts(message: ChatMessage, number: int, warnings: list[str]) -> tuple[list[str], int]:
    texts = [str(s) for s in message.swipes] if message.swipes else [message.mes]
    selected = message.swipe_id if isinstance(message.swipe_id, int) else 0
    if not 0 <= selected < len(texts):
        warnings.append(f"turn {number}: swipe_id {selected} is out of range; using swipe 0")
        selected = 0
    texts[selected] = message.mes  # what SillyTavern shows wins over a stale swipe
    return texts, selected


def our_record(message: ChatMessage, info: Any, selected: bool) -> Json | None:
    """The turn record narrative-cli left on a message it exported (None: none)."""
    for extra in (as_dict(info).get("extra"), message.extra if selected else None):
        ours = as_dict(as_dict(extra).get(NAMESPACE)).get("record")
        if isinstance(ours, dict):
            return ours
    return None


def our_state(chat: Chat, last_turn: int, warnings: list[str]) -> Json:
    ours: Json = as_dict(chat.chat_metadata.get(NAMESPACE))
    if "snapshot" not in ours:
        return ours
    if ours.get("turn") != last_turn or not isinstance(ours.get("snapshot"), dict):
        warnings.append(
            f"the chat's narrative-cli state is for turn {ours.get('turn')}, but the chat now"
            f" ends at turn {last_turn}; the imported session starts with fresh state"
        )
        return {k: v for k, v in ours.items() if k != "snapshot"}
    return ours


def attach_snapshots(turns: list[TurnData], ours: Json, snapshot_for: SnapshotFactory) -> None:
    restored = ours.get("snapshot")
    for turn in turns:
        if isinstance(restored, dict):
            snapshot = restored if turn.number == len(turns) - 1 else None
        else:
            snapshot = snapshot_for(turn.number)
        for swipe in turn.swipes:
            swipe.snapshot = snapshot


def message_fields(message: ChatMessage) -> Json:
    """A message's fields other than its text, without narrative-cli's own data."""
    fields: Json = {
        "name": message.name,
        "is_user": message.is_user,
        "is_system": message.is_system,
        "send_date": message.send_date,
        "extra": {k: v for k, v in message.extra.items() if k != NAMESPACE},
    }
    fields.update({k: v for k, v in message.raw.items() if k not in ("mes", "swipes", "swipe_id")})
    return fields


def strip_ours(info: Any) -> Json | None:
    """A ``swipe_info`` entry without narrative-cli's own data."""
    if not isinstance(info, dict):
        return None
    extra = {k: v for k, v in as_dict(info.get("extra")).items() if k != NAMESPACE}
    return {**info, "extra": extra}


def _character_name(chat: Chat, drafts: list[_Draft]) -> str:
    reply = next((d.reply for d in drafts if d.reply is not None), None)
    if reply is not None and reply.name:
        return reply.name
    return "" if chat.character_name in _PLACEHOLDER_NAMES else chat.character_name


def _user_name(chat: Chat, drafts: list[_Draft]) -> str:
    user = next((m for d in drafts for m in d.users), None)
    if user is not None and user.name:
        return user.name
    return "User" if chat.user_name in _PLACEHOLDER_NAMES else chat.user_name


def _preview(text: str, limit: int = 40) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def as_dict(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def content_hash(data: bytes) -> str:
    """The content hash sessions record for cards and lorebooks (``sha256:`` + hex)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def fresh_snapshots(seed: int, lang: str = "en") -> SnapshotFactory:
    """Snapshots with nothing tracked yet (the pipeline's turn-0 snapshot, in the card's
    language: a Chinese card's state starts at 起点, not Start) dated turn n."""
    from narrative_cli.pipeline.story import initial_snapshot

    base = initial_snapshot(seed, lang)
    return lambda number: replace(base, turn=number).to_dict()


def import_chat_file(
    store: SessionStore,
    chat_path: str | Path,
    card_path: str | Path,
    *,
    name: str | None = None,
    seed: int | None = None,
) -> ImportResult:
    """Import a SillyTavern ``.jsonl`` chat played with ``card_path`` as a new session."""
    from narrative_cli.load.cards import parse_card_bytes
    from narrative_cli.load.chats import load_chat
    from narrative_cli.load.files import MAX_CARD_BYTES, read_bytes
    from narrative_cli.load.language import card_language

    data = read_bytes(card_path, limit=MAX_CARD_BYTES, error=CardError, kind="card")
    card = parse_card_bytes(data, str(card_path), Path(card_path).suffix)
    chat = load_chat(chat_path)
    header = as_dict(as_dict(chat.chat_metadata.get(NAMESPACE)).get("session"))
    if seed is None:
        seed = _int_or_none(header.get("seed"))
    if seed is None:
        seed = secrets.randbelow(2**31)
    result = import_chat(
        store,
        chat,
        name=name or Path(chat_path).stem,
        card_path=str(Path(card_path).resolve()),
        card_hash=content_hash(data),
        snapshot_for=fresh_snapshots(seed, card_language(card)),
        seed=seed,
    )
    result.warnings[:0] = [f"{chat_path}: {problem}; skipped" for problem in chat.problems]
    character = store.session(result.session_id).character_name
    if character and card.name and character != card.name:
        result.warnings.append(f"the chat is with {character!r} but the card is {card.name!r}")
    return result
