"""Who speaks next in a group scene: SillyTavern's activation strategies.

Read from SillyTavern 1.18's ``public/scripts/group-chats.js`` (``generateGroupWrapper`` and
the ``activate*`` functions), step for step, with every ``Math.random()`` drawn from the
session's seeded ``random.Random`` in the same order, so a seed gives the same speakers:

- **natural** (0): members named in the text (the player's message, or the last message when
  the player sent nothing), in the order the text names them; then every member whose
  talkativeness beats a roll, in shuffled order; if nobody yet, one random member (among the
  talkative ones if there are any). The last speaker does not answer itself unless the group
  allows self-responses, and only when the player sent nothing.
- **list** (1): every member, in list order.
- **pooled** (3): one member who has not spoken since the player's last message (everyone has
  not, when the player just spoke); if all have, anyone but the last speaker.
- **manual** (2): nobody answers the player; a turn without player text lets one random
  member speak (SillyTavern's "send an empty message" in manual mode).

Muted members are never chosen by a strategy; ``/next NAME`` (``SpeakerTurn.forced``) makes
that member speak even when muted, as SillyTavern's "speak" button does.

Names are matched as SillyTavern does, word by word with ASCII word characters (JavaScript's
``\\b\\w+\\b`` without the ``u`` flag). That finds no word in a name written in Chinese, so a
member whose name has no ASCII word is named when its whole name appears in the text (the
one place we differ; SillyTavern never activates such a member by mention).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from narrative_cli.domain_chat import ChatMessage
from narrative_cli.group.model import Group, GroupMember

_WORD = re.compile(r"\b\w+\b", re.ASCII)  # SillyTavern's extractAllWords, without the u flag
NARRATOR = "narrator"  # extra.type of SillyTavern's narrator messages (/sys)


@dataclass(frozen=True)
class SpeakerTurn:
    """What the choice may look at: the player's text and who spoke before.

    ``last_speaker`` is the member key of the last message when a member wrote it (None when
    it was the player's or there is none). ``since_player`` lists the members who spoke since
    the player's last message (pooled order reads it; it is ignored when ``user_text`` is not
    empty, as the player has just spoken). ``last_text`` is the last message's text: natural
    order looks for names in it when the player sent nothing.
    """

    user_text: str = ""
    last_speaker: str | None = None  # member key
    history_speakers: tuple[str, ...] = ()  # member keys, oldest first
    forced: str | None = None  # member key from /next
    since_player: tuple[str, ...] = ()  # member keys, oldest first
    last_text: str = ""


def choose_speakers(group: Group, turn: SpeakerTurn, rng: random.Random) -> list[GroupMember]:
    """The members who answer this turn, in order (empty: nobody answers)."""
    if turn.forced is not None:
        forced = group.member(turn.forced)
        return [forced] if forced is not None else []
    members = list(group.active())
    player_spoke = turn.user_text != ""
    if group.strategy == "list":
        return members
    if group.strategy == "pooled":
        return pooled_order(members, turn, player_spoke, rng)
    if group.strategy == "manual":
        return [] if player_spoke else shuffle(members, rng)[:1]
    text = turn.user_text if player_spoke else turn.last_text
    banned = None if player_spoke or group.allow_self_responses else turn.last_speaker
    return natural_order(members, text, banned, rng)


def natural_order(
    members: Sequence[GroupMember], text: str, banned: str | None, rng: random.Random
) -> list[GroupMember]:
    """SillyTavern's ``activateNaturalOrder``: mentions, talkativeness rolls, a random pick."""
    allowed = [m for m in members if m.key != banned]
    chosen = mentioned(allowed, text)
    chatty: list[GroupMember] = []
    for member in shuffle(list(members), rng):
        if member.key == banned:
            continue
        if member.talkativeness >= rng.random():
            chosen.append(member)
        if member.talkativeness > 0:
            chatty.append(member)
    pool = chatty or list(members)  # SillyTavern's fallback pool keeps the banned speaker
    if not chosen and pool:
        chosen.append(pool[_index(rng, len(pool))])
    return _unique(chosen)


def mentioned(members: Sequence[GroupMember], text: str) -> list[GroupMember]:
    """The members ``text`` names, in the order it names them (each word names at most one
    member: the first in list order whose name has that word)."""
    hits: list[tuple[int, GroupMember]] = []
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        member = next((m for m in members if word in words(m.name)), None)
        if member is not None:
            hits.append((match.start(), member))
    folded = text.casefold()
    for member in members:
        name = member.name.strip().casefold()
        if name and not words(member.name) and name in folded:
            hits.append((folded.index(name), member))
    hits.sort(key=lambda hit: hit[0])  # stable: equal offsets keep the order found
    return _unique([member for _, member in hits])


def words(text: str) -> list[str]:
    """SillyTavern's ``extractAllWords``: ASCII words, lower-cased."""
    return [match.group(0).lower() for match in _WORD.finditer(text)]


def pooled_order(
    members: Sequence[GroupMember], turn: SpeakerTurn, player_spoke: bool, rng: random.Random
) -> list[GroupMember]:
    """SillyTavern's ``activatePooledOrder``: one member who has not spoken since the player."""
    spoken = set() if player_spoke else set(turn.since_player)
    waiting = [m for m in members if m.key not in spoken]
    if waiting:
        return [waiting[_index(rng, len(waiting))]]
    last = turn.last_speaker if len(members) > 1 else None
    pool = [m for m in members if m.key != last] if last else list(members)
    index = _index(rng, len(pool))  # drawn even for an empty pool, as SillyTavern does
    return [pool[index]] if pool else []


def shuffle(items: list[GroupMember], rng: random.Random) -> list[GroupMember]:
    """SillyTavern's ``shuffle`` (Fisher-Yates from the end), in place, one draw per item."""
    index = len(items)
    while index:
        pick = _index(rng, index)
        index -= 1
        items[index], items[pick] = items[pick], items[index]
    return items


def turn_from_chat(
    group: Group, messages: Sequence[ChatMessage], user_text: str = "", forced: str | None = None
) -> SpeakerTurn:
    """The :class:`SpeakerTurn` after a SillyTavern group chat's ``messages``.

    A message's speaker is its ``original_avatar`` (what SillyTavern writes on each group
    reply), else the member of that name; hidden (``is_system``) and narrator messages are
    nobody's, as in SillyTavern.
    """
    spoken = [_speaker(group, m) for m in messages]
    since: list[str] = []
    for message, key in zip(reversed(messages), reversed(spoken), strict=True):
        if message.is_user:
            break
        if key is not None:
            since.append(key)
    last = messages[-1] if messages else None
    return SpeakerTurn(
        user_text=user_text,
        last_speaker=spoken[-1] if spoken else None,
        history_speakers=tuple(key for key in spoken if key is not None),
        forced=forced,
        since_player=tuple(reversed(since)),
        last_text=last.mes if last is not None and not last.is_system else "",
    )


def turn_from_records(
    group: Group,
    records: Sequence[Mapping[str, Any]],
    user_text: str = "",
    forced: str | None = None,
) -> SpeakerTurn:
    """The :class:`SpeakerTurn` after a group session's turn records, oldest first.

    A group session stores one turn per round (docs/groups.md): the player's ``user_input``
    (empty for a send without text), then ``speakers``, each ``{"name", "key", "text"}``.
    """
    messages: list[ChatMessage] = []
    for record in records:
        said = record.get("user_input")
        if isinstance(said, str) and said:
            messages.append(ChatMessage(name="", is_user=True, mes=said))
        speakers = record.get("speakers")
        for speaker in speakers if isinstance(speakers, list) else ():
            if isinstance(speaker, Mapping):
                key = speaker.get("key")
                messages.append(ChatMessage(
                    name=str(speaker.get("name") or ""), is_user=False,
                    mes=str(speaker.get("text") or ""),
                    raw={"original_avatar": key} if isinstance(key, str) and key else {}))
    return turn_from_chat(group, messages, user_text, forced)


def _speaker(group: Group, message: ChatMessage) -> str | None:
    if message.is_user or message.is_system or message.extra.get("type") == NARRATOR:
        return None
    avatar = message.raw.get("original_avatar")
    if isinstance(avatar, str) and avatar:
        return avatar
    member = group.member(message.name) if message.name else None
    return member.key if member is not None else None


def _index(rng: random.Random, size: int) -> int:
    """``Math.floor(Math.random() * size)``."""
    return int(rng.random() * size)


def _unique(members: list[GroupMember]) -> list[GroupMember]:
    seen: set[str] = set()
    out: list[GroupMember] = []
    for member in members:
        if member.key not in seen:
            seen.add(member.key)
            out.append(member)
    return out
