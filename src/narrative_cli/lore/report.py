"""``narrative lore test``: which entries a text activates, why, and where each goes.

The report is a JSON-ready dict whose keys are a contract: ``activated[]`` with ``uid``,
``comment``, ``route``, ``reason`` and ``rejected[]`` with ``uid``, ``comment``, ``reason``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative_cli.domain import Card, Lorebook, LoreEntry
from narrative_cli.load import select_lore
from narrative_cli.lore.engine import (
    ActivationResult,
    LoreSettings,
    ScanContext,
    TimedEffects,
    activate,
)
from narrative_cli.rng import new_rng

if TYPE_CHECKING:
    from narrative_cli.domain_chat import ChatMessage


@dataclass
class LoreTest:
    """The activation of one text, with what the user should also know."""

    result: ActivationResult
    problems: list[str] = field(default_factory=list)


def lore_test(
    card: Card,
    worlds: list[Lorebook],
    text: str,
    *,
    lore: dict[str, Any] | None = None,
    source: str = "auto",
    seed: int = 0,
    user_name: str = "User",
    chat: Sequence[ChatMessage] | None = None,
) -> LoreTest:
    """Activate the card's lore (or the world files) for ``text`` as this turn's input.

    With ``chat`` (a SillyTavern chat's messages) the whole chat is scanned as SillyTavern
    would have scanned it (``scan_chat``), ``text`` (if any) as the newest message."""
    selection = select_lore(card, worlds, source)
    settings = LoreSettings.from_dict(lore)
    context = ScanContext(user_name=user_name, char_name=card.name)
    if chat is None:
        result = activate(
            selection.entries,
            user_input=text,
            settings=settings,
            rng=new_rng(seed),
            context=context,
        )
    else:
        result = scan_chat(selection.entries, chat, text, settings, context, seed)
    return LoreTest(result, [*selection.skipped, *result.problems])


def generation_points(messages: Sequence[ChatMessage]) -> list[int]:
    """The chat lengths at which SillyTavern scanned: after each user message (it then
    generated the reply), and the whole chat last."""
    points = [n for n in range(1, len(messages)) if messages[n - 1].is_user]
    return [*points, len(messages)] if messages else [0]


def scan_chat(
    entries: Sequence[LoreEntry],
    chat: Sequence[ChatMessage],
    text: str,
    settings: LoreSettings,
    context: ScanContext,
    seed: int = 0,
) -> ActivationResult:
    """The activation at the end of ``chat`` (``text``, if any, appended as the user's newest
    message), with sticky, cooldown and delay carried through every earlier generation on
    SillyTavern's clock (the number of messages)."""
    messages = [message for message in chat if not message.is_system]
    if text.strip():
        from narrative_cli.domain_chat import ChatMessage  # a chat's types: only with --chat

        messages.append(ChatMessage(name=context.user_name, is_user=True, mes=text))
    timed = TimedEffects()
    result: ActivationResult | None = None
    for length in generation_points(messages):
        result = activate(
            entries,
            history=messages[:length],
            settings=settings,
            rng=new_rng(seed),
            timed=timed,
            clock=length,
            context=context,
        )
        timed = result.timed
    assert result is not None
    return result


def report_dict(result: ActivationResult) -> dict[str, list[dict[str, Any]]]:
    """The ``lore test --json`` document."""
    return {
        "activated": [
            {
                "uid": item.entry.uid,
                "comment": item.entry.comment,
                "route": item.route,
                "reason": item.reason,
            }
            for item in result.activated
        ],
        "rejected": [
            {"uid": item.entry.uid, "comment": item.entry.comment, "reason": item.reason}
            for item in result.rejected
        ],
    }
