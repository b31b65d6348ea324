"""SillyTavern chat files (``.jsonl``, compat §4): reader and writer.

Line 1 is the header: ST 1.18 writes ``{"chat_metadata", "user_name": "unused",
"character_name": "unused"}``, ST ≤1.12 ``{"user_name", "character_name", "create_date",
"chat_metadata"}``. Every other line is one message. Like SillyTavern, lines that do not parse
are skipped; unlike it, we count them (``Chat.skipped_lines``) and say why, line by line
(``Chat.problems``, shown as warnings by import and replay). ``is_system`` messages are kept
and written back, but ``prompt_messages`` leaves them out. Fields we do not model are kept in
``ChatMessage.raw`` and the header's unknown keys in ``Chat.header``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from narrative_cli.domain import Card
from narrative_cli.domain_chat import Chat, ChatMessage
from narrative_cli.errors import BadInput, ChatFileError, worded
from narrative_cli.load import files
from narrative_cli.load.fields import Fields
from narrative_cli.safetext import MAX_JSON_DEPTH, clean_json, json_depth

MESSAGE_FIELDS = frozenset({"name", "is_user", "is_system", "send_date", "mes", "swipes",
                            "swipe_id", "extra"})
UNUSED = "unused"  # what ST 1.18 writes for the header's names
VARIANTS = ("1.18", "1.12")


def _is_header(obj: dict[str, Any]) -> bool:
    return "mes" not in obj and ("chat_metadata" in obj or "user_name" in obj
                                 or "character_name" in obj)


def parse_message(obj: dict[str, Any], where: str) -> ChatMessage:
    """One message line; raises ChatFileError when a field has the wrong type."""
    f = Fields(obj, where, ChatFileError)
    if not isinstance(obj.get("mes"), str):
        raise f.fail("mes", "field.text")
    send_date = obj.get("send_date")
    if not isinstance(send_date, (str, int, float)) or isinstance(send_date, bool):
        send_date = None
    return ChatMessage(
        name=f.text("name"), is_user=f.flag("is_user"), mes=obj["mes"],
        is_system=f.flag("is_system"), send_date=send_date, swipes=f.strings("swipes"),
        swipe_id=f.integer("swipe_id", 0), extra=f.mapping("extra"),
        raw={k: v for k, v in obj.items() if k not in MESSAGE_FIELDS},
    )


def _first_name(messages: list[ChatMessage], *, user: bool) -> str:
    for message in messages:
        if message.is_user == user and not message.is_system and message.name:
            return message.name
    return ""


def _header_name(header: dict[str, Any], key: str) -> str:
    value = header.get(key)
    return value if isinstance(value, str) and value != UNUSED else ""


def parse_chat(text: str, where: str) -> Chat:
    """A Chat from the text of a ``.jsonl`` file."""
    header: dict[str, Any] | None = None
    messages: list[ChatMessage] = []
    problems: list[str] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        obj = _line_json(line, number, where, problems)
        if obj is None:
            continue
        if not isinstance(obj, dict):
            problems.append(f"line {number}: not a JSON object")
        elif header is None and not messages and _is_header(obj):
            header = obj
        else:
            try:
                messages.append(parse_message(obj, f"{where}: line {number}"))
            except BadInput as exc:
                problems.append(f"line {number}: {exc.message.removeprefix(where + ': ')}")
    skipped = len(problems)
    if header is None and not messages:
        if skipped:
            raise worded(ChatFileError, "chat.not_chat_lines", where=where, count=skipped)
        raise worded(ChatFileError, "chat.not_chat_empty", where=where)
    header = header or {}
    metadata = header.get("chat_metadata")
    create_date = header.get("create_date")
    return Chat(
        user_name=_header_name(header, "user_name") or _first_name(messages, user=True) or "User",
        character_name=(_header_name(header, "character_name")
                         or _first_name(messages, user=False)),
        create_date=create_date if isinstance(create_date, (str, int)) else None,
        chat_metadata=metadata if isinstance(metadata, dict) else {},
        messages=messages, header=header, skipped_lines=skipped, path=where, problems=problems,
    )


def _line_json(line: str, number: int, where: str, problems: list[str]) -> Any:
    """One line's JSON, or None with the reason noted. A line nested deeper than any chat is
    refused for the whole file (exit 2), as the issue asks, instead of crashing later."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        problems.append(f"line {number}: not valid JSON ({exc.msg}, column {exc.colno})")
        return None
    except RecursionError:
        obj = None
        depth = MAX_JSON_DEPTH + 1
    else:
        depth = json_depth(obj)
    if depth > MAX_JSON_DEPTH:
        raise worded(ChatFileError, "chat.too_deep", where=where, number=number,
                     depth=MAX_JSON_DEPTH)
    return clean_json(obj)


def load_chat(path: files.PathLike) -> Chat:
    """Read a SillyTavern ``.jsonl`` chat."""
    text = files.read_text(path, limit=files.MAX_CHAT_BYTES, error=ChatFileError, kind="chat")
    return parse_chat(text, os.fspath(path))


def message_dict(message: ChatMessage) -> dict[str, Any]:
    """One message as a SillyTavern chat line object."""
    out: dict[str, Any] = {"name": message.name, "is_user": message.is_user,
                           "is_system": message.is_system}
    if message.send_date is not None:
        out["send_date"] = message.send_date
    out["mes"] = message.mes
    out["extra"] = message.extra
    if message.swipes or message.swipe_id:
        out["swipe_id"] = message.swipe_id
        out["swipes"] = list(message.swipes)
    out.update({k: v for k, v in message.raw.items() if k not in out})
    return out


def chat_variant(chat: Chat) -> str:
    """The header shape a chat was read with: "1.18" (names "unused") or "1.12"."""
    if chat.header and chat.header.get("user_name") != UNUSED and "user_name" in chat.header:
        return "1.12"
    return "1.18"


def header_dict(chat: Chat, variant: str | None = None) -> dict[str, Any]:
    """The header line for ``variant`` (default: the chat's own), unknown keys kept."""
    variant = variant or chat_variant(chat)
    if variant not in VARIANTS:
        raise ValueError(f"unknown chat header variant {variant!r}")
    if variant == "1.18":
        out: dict[str, Any] = {"chat_metadata": chat.chat_metadata, "user_name": UNUSED,
                               "character_name": UNUSED}
    else:
        out = {"user_name": chat.user_name, "character_name": chat.character_name,
               "create_date": chat.create_date if chat.create_date is not None else "",
               "chat_metadata": chat.chat_metadata}
    out.update({k: v for k, v in chat.header.items() if k not in out})
    return out


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def chat_to_jsonl(chat: Chat, variant: str | None = None) -> str:
    """The chat as ``.jsonl`` text: header then messages, ``\\n``-joined, no final newline."""
    lines = [_line(header_dict(chat, variant)), *(_line(message_dict(m)) for m in chat.messages)]
    return "\n".join(lines)


def write_chat(
    chat: Chat, path: files.PathLike, variant: str | None = None, *, force: bool = True
) -> None:
    """Write the chat as a SillyTavern ``.jsonl`` file (atomically; an existing file only
    with ``force``, the open session database never)."""
    text = chat_to_jsonl(chat, variant)
    files.write_text(path, text, error=ChatFileError, kind="chat", force=force)


def prompt_messages(chat: Chat) -> list[ChatMessage]:
    """The messages a prompt may show: everything except ``is_system`` (hidden) messages."""
    return [m for m in chat.messages if not m.is_system]


def chat_for_card(card: Card, user_name: str = "User",
                  send_date: str | int | None = None) -> Chat:
    """A new chat holding the card's greeting; alternate greetings become swipes (compat §4.3)."""
    greetings = [g for g in card.greetings if g] if card.alternate_greetings else [card.first_mes]
    first = ChatMessage(name=card.name, is_user=False, mes=greetings[0] if greetings else "",
                        send_date=send_date)
    if card.alternate_greetings:
        first.swipes = greetings
        first.raw["swipe_info"] = [{"send_date": send_date, "extra": {}} for _ in greetings]
    return Chat(user_name=user_name, character_name=card.name, messages=[first])
