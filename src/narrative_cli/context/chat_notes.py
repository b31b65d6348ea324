"""The Author's Note and the character's note in a writer's request built without a preset.

SillyTavern puts both notes into the chat: the chat's Author's Note (``chat_metadata.note_*``,
position "in chat") and the card's ``depth_prompt`` at their depth and role, the Author's Note
first when both share a depth and role (one message, joined by a newline: the order-100 group
of ``context.inject``); an Author's Note "before main" or "after main" is its own message
beside the system prompt. Without a preset our writer sends the chat as ``<recent_turns>``
inside its user message, so the notes split that message where they fall: the turns before a
note stay in a ``<recent_turns>`` block, the note is a message of its own role, and the rest
of the chat continues in a new user message (depth 0: after ``<user_input>``; depth ``d``: with
``d`` chat messages after it, the player's input of this turn being the newest; beyond the
window: before it). Each history line (``[轮N] 用户: …`` / ``[轮N] AI: …``) is one message.
"""

from __future__ import annotations

from collections.abc import Sequence

from narrative_cli.context.blocks import Block, plain, tagged
from narrative_cli.context.inject import Injection, inject
from narrative_cli.context.inputs import HistoryTurn, PromptInputs
from narrative_cli.context.parts import turn_lines
from narrative_cli.domain_chat import Message, Role

NOTE_BLOCKS = ("authors_note", "character_note")
Part = tuple[Role, list[Block]]


def injections(inputs: PromptInputs) -> tuple[list[Injection], list[Part], list[Part]]:
    """This turn's in-chat notes, and the messages before and after the system prompt."""
    found: list[Injection] = []
    before: list[Part] = []
    after: list[Part] = []
    note = inputs.authors_note
    if note is not None and note.active(inputs.turn):
        text = note.text.strip()
        if note.position == 2:
            before.append((note.role, [plain("authors_note", text)]))
        elif note.position == 0:
            after.append((note.role, [plain("authors_note", text)]))
        else:
            found.append(Injection(text, max(note.depth, 0), note.role, extension=True))
    depth = inputs.card.depth_prompt
    if depth is not None and depth.prompt.strip():
        found.append(Injection(depth.prompt.strip(), max(depth.depth, 0), depth.role,
                               extension=True))  # fmt: skip
    return found, before, after


def with_notes(
    system: list[Block],
    user: list[Block],
    turns: Sequence[HistoryTurn],
    inputs: PromptInputs,
    found: tuple[list[Injection], list[Part], list[Part]],
) -> list[Part]:
    """The writer's messages with the notes ``found`` (``injections``, some note at least)
    in the chat. A ``recent_turns`` block of ``user`` only marks where the chat goes: its
    lines are made here, one message each."""
    notes, before, after = found
    depth = inputs.card.depth_prompt
    own = depth.prompt.strip() if depth is not None else ""
    lines = _lines(turns, inputs.lang)
    player = Message("user", "")
    chat = [message for message, _ in lines] + [player]
    placed = inject(chat, notes)
    numbers = {id(message): number for message, number in lines}
    parts: list[Part] = [*before, ("system", system), *after]
    current: list[Block] = []
    for block in user:
        if block.name in NOTE_BLOCKS:
            continue
        if block.name == "recent_turns":
            history = placed[: placed.index(player)]
            current = _chat(history, numbers, parts, current, own)
            continue
        current.append(block)
        if block.name == "user_input":
            for message in placed[placed.index(player) + 1 :]:
                parts.append(("user", current))
                parts.append((message.role, [_note_block(message, own)]))
                current = []
    parts.append(("user", current))
    return parts


def _lines(turns: Sequence[HistoryTurn], lang: str) -> list[tuple[Message, int]]:
    """Each history line as a message, with its turn number (one per line, as the chat)."""
    out: list[tuple[Message, int]] = []
    for turn in turns:
        user, ai = turn_lines(turn, lang)
        if user is not None:
            out.append((Message("user", user), turn.number))
        out.append((Message("assistant", ai), turn.number))
    return out


def _chat(
    history: list[Message],
    numbers: dict[int, int],
    parts: list[Part],
    current: list[Block],
    character_note: str,
) -> list[Block]:
    """``<recent_turns>`` pieces with the notes between them; returns the open user blocks."""
    piece: list[Message] = []
    for message in history + [Message("user", "")]:  # the sentinel closes the last piece
        if id(message) in numbers:
            piece.append(message)
            continue
        if piece:
            current.append(tagged("recent_turns", _render(piece, numbers), stable=True))
            piece = []
        if message.content:
            parts.append(("user", current))
            parts.append((message.role, [_note_block(message, character_note)]))
            current = []
    return current


def _render(piece: list[Message], numbers: dict[int, int]) -> str:
    """Lines of one turn on consecutive lines, turns apart by a blank line (``recent_turns``)."""
    text = ""
    for index, message in enumerate(piece):
        if index:
            same = numbers[id(message)] == numbers[id(piece[index - 1])]
            text += "\n" if same else "\n\n"
        text += message.content
    return text


def _note_block(message: Message, character_note: str) -> Block:
    """A note's message as a block named for its source (both notes joined: the first)."""
    name = "character_note" if message.content == character_note else "authors_note"
    return plain(name, message.content)
