"""What the model is sent, after the card's prompt-side regex scripts (SillyTavern's order).

SillyTavern rewrites each chat message as it builds a prompt: scripts with ``promptOnly`` or
with neither only-flag run on it, depth permitting, where depth counts messages back from the
newest (the user's input of the turn being generated is 0, the reply before it 1, …). World-
info entries go through placement-5 scripts (an at-depth entry with its depth).

One rule goes beyond SillyTavern: MVU's status placeholder ``<StatusPlaceHolderImpl/>`` and
any ``<UpdateVariable>``/``<JSONPatch>`` block left in a message are removed from prompts even
when the card has no script for them (and the placeholder from the card's example dialogues,
whose update blocks stay: they show the model the format the card asks for). Both are
bookkeeping for the screen and for MVU; a card whose author forgot the prompt-side script
would otherwise teach the model to copy them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from narrative_cli.context.inputs import HistoryTurn
from narrative_cli.domain import Card, LoreEntry
from narrative_cli.regex.scripts import AI_OUTPUT, USER_INPUT, RegexScripts
from narrative_cli.regex.templated import Renderer
from narrative_cli.state.mvu_commands import strip_update_blocks

AT_DEPTH = 4  # a lore entry's position "at depth"
_PLACEHOLDER = re.compile(r"[ \t]*<StatusPlaceHolderImpl\s*/?>[ \t]*\n?", re.IGNORECASE)


class _Played(Protocol):
    @property
    def number(self) -> int: ...
    @property
    def user_input(self) -> str | None: ...
    @property
    def narrative(self) -> str: ...


def prompt_text(text: str) -> str:
    """``text`` without the MVU placeholder and update blocks (see the module's docstring)."""
    if "<" not in text:
        return text
    return _PLACEHOLDER.sub("", strip_update_blocks(text))


def prompt_card(card: Card) -> Card:
    """The card with the MVU placeholder out of its example dialogues (``mes_example``): real
    MVU cards show a whole reply there, placeholder included, and SillyTavern runs no regex
    script on examples, so the author's prompt-side script never removes it."""
    if "<" not in card.mes_example or not _PLACEHOLDER.search(card.mes_example):
        return card
    return replace(card, mes_example=_PLACEHOLDER.sub("", card.mes_example))


def prompt_history(
    played: Sequence[_Played], scripts: RegexScripts, render: Renderer | None = None
) -> list[HistoryTurn]:
    """The finished turns as the model is sent them, oldest first (one sandbox call; one more
    when a replacement wrote templates, rendered by ``render``)."""
    items: list[tuple[str, int, int | None]] = []
    depth = 0  # this turn's input
    for turn in reversed(played):
        depth += 1
        items.append((turn.narrative, AI_OUTPUT, depth))
        if turn.user_input:
            depth += 1
        items.append((turn.user_input or "", USER_INPUT, depth))
    texts = iter(scripts.apply_many(items, render))
    turns = []
    for turn in reversed(played):
        narrative, user = prompt_text(next(texts)), prompt_text(next(texts))
        turns.append(HistoryTurn(turn.number, user, narrative))
    turns.reverse()
    return turns


def prompt_input(text: str, scripts: RegexScripts, render: Renderer | None = None) -> str:
    """This turn's input as the model is sent it (depth 0)."""
    return prompt_text(scripts.user_input(text, 0, render))


def lore_text(entry: LoreEntry, scripts: RegexScripts, render: Renderer | None = None) -> str:
    """A lore entry's content after the world-info scripts."""
    depth = entry.depth if entry.position == AT_DEPTH else None
    return scripts.world_info(entry.content, depth, render)
