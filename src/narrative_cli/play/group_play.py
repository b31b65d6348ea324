"""A group scene in play (issue 19): the roster, /next, /mute and /unmute on a PlaySession.

The commands themselves are ``group.commands`` (pure functions on a ``Group``); this module
applies their outcome to the session. Muting changes the story's group in memory and is kept
with the session (chat metadata ``narrative_group_muted``: member keys), so a resumed session
mutes the same members; each turn's snapshot also records who was muted when it was played.
``/next NAME`` names the member who answers the next turn (once; it wins over the planner and
the strategy, and a muted member may be named: only that once).

Messages come in the story's language (the ``group.*`` keys of the ``i18n`` catalogs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from narrative_cli.errors import BadInput
from narrative_cli.group import commands
from narrative_cli.group.model import Group
from narrative_cli.group.scene_state import MUTED_KEY, SceneState
from narrative_cli.i18n import t
from narrative_cli.play.controller import PlaySession


def say(lang: str, key: str, **values: Any) -> str:
    """A group message (``group.<key>`` in the ``i18n`` catalogs) in the story's language."""
    return t(f"group.{key}", lang, **values)


def group_of(play: PlaySession, command: str) -> Group:
    """The story's group; BadInput when the story is a single card."""
    group = play.story.group
    if group is None:
        raise BadInput(say(play.story.lang, "no_group", command=command))
    return group


def set_next(play: PlaySession, args: list[str]) -> str:
    """``/next NAME``: that member answers the next turn (``group.commands.next_speaker``)."""
    group = group_of(play, "/next")
    outcome = commands.next_speaker(group, " ".join(args), play.story.lang)
    if not outcome.ok:
        raise BadInput(outcome.message)
    play.next_speaker = outcome.forced
    return outcome.message


def set_muted(play: PlaySession, args: list[str], muted: bool) -> str:
    """``/mute NAME`` / ``/unmute NAME`` (``group.commands``), kept with the session."""
    group = group_of(play, "/mute" if muted else "/unmute")
    change = commands.mute if muted else commands.unmute
    outcome = change(group, " ".join(args), play.story.lang)
    if not outcome.ok:
        raise BadInput(outcome.message)
    if outcome.group.muted != group.muted:
        play.story.group = outcome.group
        metadata = dict(play.store.session(play.session_id).chat_metadata)
        metadata[MUTED_KEY] = sorted(outcome.group.muted)
        play.store.set_chat_metadata(play.session_id, metadata)
    return outcome.message


@dataclass(frozen=True)
class Roster:
    """What ``/group`` shows: a row per member (name, key, status) and the group's rules."""

    rows: tuple[tuple[str, str, str], ...]
    facts: tuple[tuple[str, str], ...]


def roster(play: PlaySession) -> Roster:
    """The members with who is muted, who answers next and who spoke last; the rules."""
    group, lang = group_of(play, "/group"), play.story.lang
    scene = SceneState.from_dict(play.story.snapshot.group, group)
    last = scene.spoken[-1] if scene.spoken else None
    rows = []
    for member in group.members:
        status = ("status_muted" if member.key in group.muted
                  else "status_next" if member.key == play.next_speaker
                  else "status_last" if member.key == last else "")
        rows.append((member.name, member.key, say(lang, status) if status else ""))
    scenario = "override" if group.scenario_override.strip() else "own"
    facts = (
        (say(lang, "strategy"), group.strategy),
        (say(lang, "mode"), group.generation_mode),
        (say(lang, "scenario"), say(lang, scenario)),
        *((name, ledger_line(ledger, lang)) for name, ledger in scene.ledgers.items()),
    )
    return Roster(tuple(rows), facts)


def ledger_line(ledger: Mapping[str, Any], lang: str) -> str:
    """One member's own state: ``→ Wren -5 · course_hidden = true · 2 events``."""
    relations = ledger.get("relationships") or {}
    flags = ledger.get("flags") or {}
    parts = [f"→ {npc} {value:+d}" for npc, value in relations.items() if isinstance(value, int)]
    parts += [f"{flag} = {json.dumps(value, ensure_ascii=False)}" for flag, value in flags.items()]
    parts.append(say(lang, "events", count=int(ledger.get("events") or 0)))
    return " · ".join(parts)
