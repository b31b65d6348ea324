"""``/next NAME``, ``/mute NAME`` and ``/unmute NAME`` on a group, as pure functions.

The REPL (``play/commands.py``) calls these and shows ``Outcome.message``; the group it gets
back replaces the session's (a ``Group`` is immutable). A name is matched leniently, as
SillyTavern's member commands search by name or avatar: the exact name or file name (with or
without its extension), case-insensitive, then a name that starts with what was typed, then
one that contains it. No match, or several, is a one-line message that lists the members.
Messages are in the story's language (``lang``: "zh" or "en"), from the ``group.*``
keys of the i18n catalogs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from narrative_cli.group.model import Group, GroupMember
from narrative_cli.i18n import t


@dataclass(frozen=True)
class Outcome:
    """What a command did: the group after it, the line to show, and whether it applied.

    ``forced`` is the member key ``/next`` chose (for ``SpeakerTurn.forced``).
    """

    group: Group
    message: str
    ok: bool
    forced: str | None = None


def next_speaker(group: Group, name: str, lang: str = "en") -> Outcome:
    """``/next NAME``: that member answers the next turn, muted or not."""
    found = find_member(group, name, lang)
    if isinstance(found, str):
        return Outcome(group, found, ok=False)
    key = "next_muted" if found.key in group.muted else "next"
    return Outcome(group, _say(lang, key, member=found.name), ok=True, forced=found.key)


def mute(group: Group, name: str, lang: str = "en") -> Outcome:
    """``/mute NAME``: strategies stop choosing that member."""
    found = find_member(group, name, lang)
    if isinstance(found, str):
        return Outcome(group, found, ok=False)
    if found.key in group.muted:
        return Outcome(group, _say(lang, "already_muted", member=found.name), ok=True)
    muted = group.with_muted(found.key, True)
    key = "muted" if muted.active() else "all_muted"
    return Outcome(muted, _say(lang, key, member=found.name), ok=True)


def unmute(group: Group, name: str, lang: str = "en") -> Outcome:
    """``/unmute NAME``: strategies may choose that member again."""
    found = find_member(group, name, lang)
    if isinstance(found, str):
        return Outcome(group, found, ok=False)
    if found.key not in group.muted:
        return Outcome(group, _say(lang, "not_muted", member=found.name), ok=True)
    return Outcome(group.with_muted(found.key, False), _say(lang, "unmuted", member=found.name),
                   ok=True)


def find_member(group: Group, name: str, lang: str = "en") -> GroupMember | str:
    """The member ``name`` means, or the message saying why there is none."""
    wanted = name.strip().casefold()
    members = _roster(group)
    if not wanted:
        return _say(lang, "no_name", members=members)
    exact = group.member(wanted) or next(
        (m for m in group.members if PurePath(m.key).stem.casefold() == wanted), None)
    if exact is not None:
        return exact
    for test in (str.startswith, str.__contains__):
        matches = [m for m in group.members if test(m.name.casefold(), wanted)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            listed = ", ".join(m.name for m in matches)
            return _say(lang, "ambiguous", name=name.strip(), matches=listed)
    return _say(lang, "unknown", name=name.strip(), members=members)


def _roster(group: Group) -> str:
    return ", ".join(m.name for m in group.members) or "-"


def _say(lang: str, key: str, **values: str) -> str:
    return t(f"group.{key}", lang, **values)
