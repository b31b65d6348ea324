"""A session as a transcript a person reads: Markdown (``.md``) or plain text (``.txt``).

``/export md`` and ``/export txt`` write the chat as it was played: the greeting, then each
turn's line of the player and the character's reply (the selected swipe), the stored text
exactly as written (no state, no tool data, no keys: the store holds none). The machine
formats stay in ``store.export`` (``.jsonl`` SillyTavern chat, ``.json`` everything).
"""

from __future__ import annotations

from pathlib import Path

from narrative_cli.pipeline.story import PlayedTurn
from narrative_cli.store.sessions import SessionStore

FORMATS = ("md", "txt", "jsonl", "json")


def transcript(store: SessionStore, session_id: int, fmt: str) -> tuple[str, int]:
    """The transcript text in ``fmt`` (``md`` or ``txt``) and how many messages it holds."""
    info = store.session(session_id)
    char = info.character_name or "Character"
    user = info.user_name or "User"
    turns = [PlayedTurn.from_record(view.record) for view in store.turns(session_id)]
    markdown = fmt == "md"
    title = f"# {info.name}" if markdown else info.name
    dated = f"{char} · {info.created_at[:10]}"
    parts = [title, f"*{dated}*" if markdown else dated]
    count = 0
    for turn in turns:
        if turn.user_input:
            parts.append(_message(user, turn.user_input, markdown))
            count += 1
        if turn.narrative:
            parts.append(_message(char, turn.narrative, markdown))
            count += 1
    return "\n\n".join(parts) + "\n", count


def _message(name: str, text: str, markdown: bool) -> str:
    if markdown:
        return f"**{name}:**\n\n{text.strip()}"
    return f"{name}:\n{text.strip()}"


def write_transcript(
    store: SessionStore, session_id: int, fmt: str, target: Path, *, force: bool = False
) -> int:
    """Write the ``md``/``txt`` transcript to ``target`` (over an existing file only with
    ``force``); the number of messages written."""
    from narrative_cli.errors import ChatFileError
    from narrative_cli.load.files import write_text

    text, count = transcript(store, session_id, fmt)
    write_text(target, text, error=ChatFileError, kind="transcript", force=force)
    return count
