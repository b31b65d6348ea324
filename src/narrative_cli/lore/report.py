"""``narrative lore test``: which entries a text activates, why, and where each goes.

The report is a JSON-ready dict whose keys are a contract: ``activated[]`` with ``uid``,
``comment``, ``route``, ``reason`` and ``rejected[]`` with ``uid``, ``comment``, ``reason``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from narrative_cli.domain import Card, Lorebook
from narrative_cli.load import select_lore
from narrative_cli.lore.engine import ActivationResult, LoreSettings, ScanContext, activate
from narrative_cli.rng import new_rng


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
) -> LoreTest:
    """Activate the card's lore (or the world files) for ``text`` as this turn's input."""
    selection = select_lore(card, worlds, source)
    result = activate(
        selection.entries,
        user_input=text,
        settings=LoreSettings.from_dict(lore),
        rng=new_rng(seed),
        context=ScanContext(user_name=user_name, char_name=card.name),
    )
    return LoreTest(result, [*selection.skipped, *result.problems])


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
