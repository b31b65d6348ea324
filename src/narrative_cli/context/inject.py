"""In-chat injections: text placed into the chat history at a depth and role (compat §5.3.5).

SillyTavern's ``populationInjectionPrompts`` walks the depths from 0 up. At each depth, the
prompts are grouped by ``injection_order``; inside a group each role's texts are joined with a
newline into one message, and extension texts of the same depth and role (the character's
note, the Author's Note) are appended in the order-100 group. Observable result, which is what
:func:`inject` reproduces: depth 0 is after the last message, depth ``d`` before the ``d``-th
message from the end (beyond the history: at its top); a higher ``injection_order`` lands
later; within one order the messages run assistant, user, system.
"""

from __future__ import annotations

from dataclasses import dataclass

from narrative_cli.domain_chat import Message, Role

MAX_DEPTH = 10000
EXTENSION_ORDER = 100  # extension prompts join the prompt manager's order-100 group
_ROLES: tuple[Role, ...] = ("system", "user", "assistant")


@dataclass(frozen=True)
class Injection:
    """One text to place in the chat. ``extension``: appended after the preset's text."""

    text: str
    depth: int
    role: Role = "system"
    order: int = 100
    extension: bool = False


def inject(chat: list[Message], injections: list[Injection]) -> list[Message]:
    """``chat`` (oldest first) with the injections placed; the original Message objects are
    kept, so a caller can find its own messages by identity."""
    wanted = [i for i in injections if i.text.strip() and 0 <= i.depth <= MAX_DEPTH]
    newest_first = list(reversed(chat))
    inserted = 0
    for depth in sorted({i.depth for i in wanted}):
        here = [i for i in wanted if i.depth == depth]
        messages = _depth_messages(here)
        index = depth + inserted
        newest_first[index:index] = messages
        inserted += len(messages)
    return list(reversed(newest_first))


def _depth_messages(here: list[Injection]) -> list[Message]:
    """Newest-first messages of one depth: orders high to low, roles system, user, assistant."""
    orders = sorted({i.order for i in here if not i.extension} | (
        {EXTENSION_ORDER} if any(i.extension for i in here) else set()), reverse=True)
    out: list[Message] = []
    for order in orders:
        for role in _ROLES:
            own = [i.text for i in here if not i.extension and i.order == order and i.role == role]
            ext = [i.text for i in here if i.extension and order == EXTENSION_ORDER
                   and i.role == role]
            texts = [t.strip() for t in ("\n".join(own), "\n".join(ext)) if t.strip()]
            if texts:
                out.append(Message(role, "\n".join(texts)))
    return out
