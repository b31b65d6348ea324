"""A group scene's opening and the lore each member brings.

SillyTavern opens a new group chat with each unmuted member's greeting, in list order. Here the
greeting is one turn 0 holding each greeting under its speaker's name (the shape every group
turn's story has), with that member's macros (``{{char}}`` is the member). Greeting N is a
member's alternate greeting N-1 when it has one, its first message otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

from narrative_cli.agents.templates import label
from narrative_cli.context.macros import env_for, expand
from narrative_cli.domain import LoreEntry
from narrative_cli.domain_chat import Persona
from narrative_cli.group.model import Group


def scene_greeting(group: Group, persona: Persona, lang: str, index: int = 0) -> str:
    """Every unmuted member's greeting, under its name, in list order."""
    texts = []
    for member in group.active():
        greetings = member.card.greetings
        chosen = greetings[index] if 0 <= index < len(greetings) else member.card.first_mes
        text = expand(chosen, env_for(member.card, persona, lang=lang)).strip()
        if text:
            texts.append(label(lang, "group.scene_turn", name=member.name, text=text))
    return "\n\n".join(texts)


def lore_owners(group: Group, entries: Sequence[LoreEntry]) -> dict[int, str]:
    """id(entry) → member key for the entries of each member's own book that the story uses
    (a world file given to everyone has no owner; the writers of all members see it)."""
    used = set(map(id, entries))
    owners: dict[int, str] = {}
    for member in group.members:
        book = member.card.character_book
        for entry in book.entries if book is not None else ():
            if id(entry) in used:
                owners.setdefault(id(entry), member.key)
    return owners
