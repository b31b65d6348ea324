"""Join mode: the cards of a group joined into the one card the writer sees.

SillyTavern's "Join character cards" generation modes (``group-chats.js``,
``getGroupCharacterCards``): each of description, personality, scenario and example messages
is collected from every member, trimmed, wrapped in the group's join prefix and suffix, and the
members' blocks are joined with a newline. In the prefix and suffix ``{{char}}`` is that
member's name and ``<FIELDNAME>`` the field's name (``Description``, ``Personality``,
``Scenario``, ``Example Messages``). ``join`` leaves muted members out except the one
speaking; ``join_disabled`` keeps them all. The group's scenario override replaces the joined
scenarios. Example messages that do not start with ``<START>`` get it, as SillyTavern does.
Depth prompts (character's notes) of every member are kept in join modes; swap mode sees
only the speaker's.

The joined card keeps the speaker's name, system prompt and post-history instructions: the
writer writes as the speaker while knowing everyone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from narrative_cli.domain import Card
from narrative_cli.group.model import Group, GroupMember

FIELDS: tuple[tuple[str, str], ...] = (
    ("description", "Description"),
    ("personality", "Personality"),
    ("scenario", "Scenario"),
    ("mes_example", "Example Messages"),
)
_CHAR = re.compile(r"\{\{char\}\}", re.IGNORECASE)
_FIELDNAME = re.compile(r"<FIELDNAME>", re.IGNORECASE)


def _wrap(template: str, field_name: str, member: str) -> str:
    """A join prefix or suffix for one member's field."""
    if not template:
        return ""
    return _CHAR.sub(lambda _: member, _FIELDNAME.sub(lambda _: field_name, template))


def _named(text: str, name: str) -> str:
    """``text`` with ``{{char}}`` as the member ``name`` (SillyTavern does so per member)."""
    return _CHAR.sub(lambda _: name, text)


def _example(text: str) -> str:
    return text if text.startswith("<START>") else f"<START>\n{text}"


def joined_members(group: Group, speaker: GroupMember) -> tuple[GroupMember, ...]:
    """The members whose cards are joined for ``speaker``'s reply, in list order."""
    if group.generation_mode == "join_disabled":
        return group.members
    return tuple(m for m in group.members if m.key not in group.muted or m.key == speaker.key)


def join_field(
    group: Group, speaker: GroupMember, attribute: str, field_name: str,
    prepare: Callable[[str], str] | None = None,
) -> str:
    """One field of the joined card: every joined member's text, prefixed and suffixed."""
    values = []
    for member in joined_members(group, speaker):
        text = str(getattr(member.card, attribute) or "").strip()
        if not text:
            continue
        if prepare is not None:
            text = prepare(text)
        prefix = _wrap(group.join_prefix, field_name, member.name)
        suffix = _wrap(group.join_suffix, field_name, member.name)
        body = _named(_FIELDNAME.sub(field_name, text), member.name)
        values.append(f"{prefix}{body.strip()}{suffix}")
    return "\n".join(values)


def joined_card(group: Group, speaker: GroupMember) -> Card:
    """The card the writer sees for ``speaker`` in a join mode (swap mode: the speaker's own)."""
    if group.generation_mode == "swap":
        return speaker.card
    joined = {
        attribute: join_field(group, speaker, attribute, name,
                              _example if attribute == "mes_example" else None)
        for attribute, name in FIELDS
    }
    scenario = group.scenario_override if group.scenario_override.strip() else joined["scenario"]
    extensions = dict(speaker.card.extensions)
    texts = []
    for member in joined_members(group, speaker):  # each note's {{char}} is its own member
        note = member.card.depth_prompt
        if note is not None and note.prompt.strip():
            texts.append(_named(note.prompt.strip(), member.name))
    if texts:
        depth = dict(extensions.get("depth_prompt") or {}) or {"depth": 4, "role": "system"}
        extensions["depth_prompt"] = {**depth, "prompt": "\n".join(texts)}
    return replace(
        speaker.card,
        description=joined["description"],
        personality=joined["personality"],
        scenario=scenario,
        mes_example=joined["mes_example"],
        extensions=extensions,
    )


def swap_card(group: Group, speaker: GroupMember) -> Card:
    """The speaker's own card, with the group's scenario override when it has one."""
    if group.scenario_override.strip():
        return replace(speaker.card, scenario=group.scenario_override)
    return speaker.card


def writer_card(group: Group, speaker: GroupMember) -> Card:
    """The card of ``speaker``'s writing call under the group's generation mode."""
    if group.generation_mode == "swap":
        return swap_card(group, speaker)
    return joined_card(group, speaker)
