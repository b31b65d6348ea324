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

import operator
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from narrative_cli.context.inputs import HistoryTurn
from narrative_cli.domain import Card, LoreEntry
from narrative_cli.regex.scripts import AI_OUTPUT, USER_INPUT, RegexScripts
from narrative_cli.regex.templated import Renderer, has_marks, render_marked
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
    """The finished turns as the model is sent them, oldest first (few sandbox calls; one
    more when a replacement wrote templates, rendered by ``render``).

    A message deeper than every script's depth bound comes out of the scripts the same at any
    later depth, so for the turns that were already that deep when the last list was built
    (same scripts, same earlier turns) the scripts' output is taken from it and only the newer
    turns go through the scripts (issue #17: a turn's cost stays flat however long the story).
    Templates the replacements wrote are rendered every time, with this turn's variables;
    the turns of the reused part whose output holds none are the very ``HistoryTurn``s of the
    last list (nothing to render, nothing to strip again: the rest of a turn's cost stays flat,
    and readers that keep something per past turn find it by identity)."""
    cached = _BUILT.get(id(scripts))
    reuse = 0
    if cached is not None and cached[0] is scripts and cached[1] == scripts.version:
        seen = cached[2]
        same = len(seen) <= len(played) and _same_prefix(seen, played)
        if same:  # each later turn adds at least one message of depth
            reuse = max(0, len(seen) - 1 - scripts.depth_horizon() - 1)
    new = _through_scripts(played[reuse:], scripts)
    marked_at = next((i // 2 for i, text in enumerate(new) if has_marks(text)), None)
    first_marked = reuse + (len(played) - reuse if marked_at is None else marked_at)
    plain = 0  # the first turns, reused as they are: no template marks up to there
    if cached is not None and reuse:
        plain = min(reuse, cached[5])
        if cached[5] < reuse:  # a mark in the reused part: still there
            first_marked = cached[5]
    # The last lists, cut back and extended in place when reused (#17: no list as long as the
    # story made and dropped every turn; they are this memo's own, handed out as copies).
    _BUILT.pop(id(scripts), None)  # filed again at the end (an error leaves none half made)
    raw: list[str] = cached[3] if cached is not None and reuse else []
    del raw[2 * reuse :]
    raw += new
    turns: list[HistoryTurn] = cached[4] if cached is not None and plain else []
    del turns[plain:]
    seen_now: list[Any] = cached[2] if cached is not None and reuse else []
    del seen_now[reuse:]  # the reused turns are the first ones of played (_same_prefix)
    seen_now += played[len(seen_now) :]
    if len(_BUILT) > 32:
        _BUILT.clear()
    texts = iter(render_marked(raw[2 * plain :], render or scripts._render))
    for turn in played[plain:]:
        narrative, user = prompt_text(next(texts)), prompt_text(next(texts))
        turns.append(HistoryTurn(turn.number, _same(user, turn.user_input or ""),
                                 _same(narrative, turn.narrative)))  # fmt: skip
    _BUILT[id(scripts)] = (scripts, scripts.version, seen_now, raw, turns, first_marked)
    return list(turns)


def _same(text: str, played: str) -> str:
    """``text``, or the played turn's own string when equal (scripts that changed nothing may
    still give a copy: the history holds the story's text once; #17)."""
    return played if text == played else text


def _same_prefix(seen: Sequence[Any], played: Sequence[Any]) -> bool:
    """Are the turns ``seen`` the first turns of ``played``, the very objects? (Identity in C
    without a copy, the usual case; else a list comparison, which tries identity first;
    equal-but-other objects count too, and give the same output.)"""
    if all(map(operator.is_, seen, played)):  # zip stops at the shorter: len(seen) first
        return True
    return list(seen) == list(played[: len(seen)])


# The scripts' output (before templates) of each turn's narrative and input, oldest first, the
# turns built from it, and the index of the first turn whose output holds template marks.
_BUILT: dict[
    int, tuple[RegexScripts, tuple[int, ...], list[Any], list[str], list[HistoryTurn], int]
] = {}


def _through_scripts(played: Sequence[_Played], scripts: RegexScripts) -> list[str]:
    """``played``, the newest turns, through the scripts: narrative, input, turn by turn."""
    items: list[tuple[str, int, int | None]] = []
    depth = 0  # this turn's input
    for turn in reversed(played):
        depth += 1
        items.append((turn.narrative, AI_OUTPUT, depth))
        if turn.user_input:
            depth += 1
        items.append((turn.user_input or "", USER_INPUT, depth))
    texts = scripts._apply_many(items)
    pairs = [(texts[i], texts[i + 1]) for i in range(0, len(texts), 2)]
    return [text for pair in reversed(pairs) for text in pair]


def prompt_input(text: str, scripts: RegexScripts, render: Renderer | None = None) -> str:
    """This turn's input as the model is sent it (depth 0)."""
    return prompt_text(scripts.user_input(text, 0, render))


def lore_text(entry: LoreEntry, scripts: RegexScripts, render: Renderer | None = None) -> str:
    """A lore entry's content after the world-info scripts."""
    depth = entry.depth if entry.position == AT_DEPTH else None
    return scripts.world_info(entry.content, depth, render)
