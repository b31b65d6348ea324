"""Loading a story for play: settings from the flags, the card and its files, their hashes.

A session remembers the content hash of its card and lorebooks; when a resumed session finds
them changed, it says so (and plays on with the files as they are now).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from narrative_cli.config import Settings, load_settings
from narrative_cli.domain import Card, RegexScript
from narrative_cli.errors import BadInput, CardError, LorebookError, worded
from narrative_cli.group.model import Group
from narrative_cli.load import st_data
from narrative_cli.pipeline.accounting import SessionAccount
from narrative_cli.pipeline.story import Story, TurnRecord, open_story
from narrative_cli.play.options import PlayOptions
from narrative_cli.store.models import LoreRef, SessionInfo
from narrative_cli.store.sessions import SessionStore


def load_story(
    options: PlayOptions, greeting_index: int, seed: int | None = None, card: Card | None = None
) -> tuple[Story, Settings]:
    """The story and settings that ``options`` describe (BadInput names a bad file or flag).

    ``card``: the card of ``options.card`` when the caller has already loaded it.
    """
    group = scene_group(options)
    if not options.card and group is None:
        raise worded(BadInput, "usage.no_card")
    settings = load_settings(options.overrides())
    notes: list[str] = []
    regex: list[RegexScript] = []
    if options.st_data:
        options, notes = with_st_data(options)
        root = st_data.check_folder(options.st_data or "")
        data = st_data.settings(root)
        settings.lore = {**st_data.lore_settings(data), **settings.lore}
        regex, regex_notes = st_data.global_regex(data, str(root / "settings.json"))
        notes += regex_notes
    story = open_story(
        card or options.card,
        lorebooks=options.lorebooks,
        preset=options.preset or settings.pipeline.preset or None,
        persona=options.persona,
        settings=settings,
        greeting_index=greeting_index,
        seed=options.seed if options.seed is not None else seed,
        lang=options.lang or "auto",
        user_name=options.user_name,
        regex=regex,
        group=group,
    )
    story.problems += notes
    return story, settings


def scene_group(options: PlayOptions) -> Group | None:
    """The group scene ``options`` name: ``--group FILE``, or several cards (issue 19)."""
    if options.group:
        return _st_group(options.group, options.st_data)
    if not options.members:
        return None
    from narrative_cli.group.loading import group_from_cards

    paths = [options.card, *options.members]
    names = [Path(p).name for p in paths]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise worded(BadInput, "usage.card_twice", where=twice[0])
    return group_from_cards(paths)


def _st_group(ref: str, st_data_folder: str | None) -> Group:
    """``--group FILE|NAME`` (``group.st_groups``): a file, or a group of the ``--st-data``
    folder by name; members from its ``characters/``, else beside the group file."""
    from narrative_cli.group.st_groups import group_reference, load_st_group

    path, characters = group_reference(ref, st_data_folder)
    return load_st_group(path, characters=characters)


def with_config_preset(options: PlayOptions) -> PlayOptions:
    """``options`` with the config's ``pipeline.preset`` when ``--preset`` was not given, so
    the session remembers it like a flag."""
    if options.preset:
        return options
    configured = load_settings(options.overrides()).pipeline.preset
    return replace(options, preset=configured) if configured else options


def with_st_card(options: PlayOptions) -> PlayOptions:
    """``options`` with a card NAME resolved in the ``--st-data`` folder (a file stays)."""
    from narrative_cli.load.files import is_existing_file

    if not options.st_data or not options.card or is_existing_file(options.card):
        return options
    root = st_data.check_folder(options.st_data)
    return replace(options, card=str(st_data.find_character(root, options.card)))


def with_st_data(options: PlayOptions) -> tuple[PlayOptions, list[str]]:
    """``options`` with the card resolved in the SillyTavern folder (a NAME that is not a
    file) and its linked world and the global worlds added from ``worlds/``; notes name the
    worlds that are missing. Worlds already given are not added twice."""
    if not options.st_data:
        return options, []
    from narrative_cli.load import load_card

    root = st_data.check_folder(options.st_data)
    card_path = with_st_card(options).card
    if not card_path:
        return options, []
    card = load_card(card_path)
    data = st_data.settings(root)
    worlds, notes = st_data.worlds_for(root, card, data)
    given = {Path(p).expanduser().resolve() for p in options.lorebooks}
    extra = [str(p) for p in worlds if p.resolve() not in given]
    preset, preset_notes = _st_preset(root, options.preset, data)
    changed = replace(options, card=card_path, lorebooks=[*options.lorebooks, *extra],
                      preset=preset)
    return changed, notes + preset_notes


def _st_preset(root: Path, given: str | None, data: dict[str, Any]) -> tuple[str | None, list[str]]:
    """``--preset NAME`` from ``OpenAI Settings/``; without ``--preset``, the preset selected in
    SillyTavern's settings.json, said in a note (SillyTavern would use it too)."""
    from narrative_cli.errors import PresetError
    from narrative_cli.load.files import is_existing_file

    if given and is_existing_file(given):
        return given, []
    if given:
        found = st_data.preset_path(root, given)
        if found is None:
            raise PresetError(f"--preset {given}: no such file, and no preset of that name in "
                              f"{root / 'OpenAI Settings'}")
        return str(found), []
    name = st_data.selected_preset(data)
    found = st_data.preset_path(root, name) if name else None
    if found is None:
        return None, [f"preset: {name!r}, selected in settings.json, is not in OpenAI Settings/; "
                      "no preset is used"] if name else []
    return str(found), [f"preset: {name!r}, the one selected in SillyTavern's settings.json "
                        "(--preset chooses another)"]


def file_hash(path: str | Path, error: type[BadInput] = CardError, kind: str = "card") -> str:
    """The ``sha256:`` content hash a session records for a card or lorebook."""
    from narrative_cli.load.files import MAX_CARD_BYTES, read_bytes
    from narrative_cli.store.chat_import import content_hash

    return content_hash(read_bytes(path, limit=MAX_CARD_BYTES, error=error, kind=kind))


def lore_refs(lorebooks: list[str]) -> list[LoreRef]:
    """The path (absolute) and content hash of each lorebook."""
    return [
        LoreRef(str(Path(p).resolve()), file_hash(p, LorebookError, "lorebook")) for p in lorebooks
    ]


def card_path_of(story: Story) -> str:
    """The card's absolute path (what a resumed session loads again)."""
    return str(Path(story.card.path).resolve()) if story.card.path else ""


def named_session(store: SessionStore, options: PlayOptions) -> SessionInfo | None:
    """The one stored session named ``--session NAME`` and played with the same card, if any."""
    if not options.session or not options.card:
        return None
    card = str(Path(options.card).resolve())
    found = [s for s in store.list_sessions() if s.name == options.session and s.card_path == card]
    return found[0] if len(found) == 1 else None


def last_session(store: SessionStore, options: PlayOptions) -> SessionInfo:
    """The session played last (``narrative run -c``): of ``options.card`` when one is given."""
    from narrative_cli.errors import StoreError

    card = str(Path(options.card).resolve()) if options.card else None
    for info in store.list_sessions():  # most recently played first
        if card is None or info.card_path == card:
            return info
    where = f" with {options.card}" if card else ""
    raise StoreError(
        f"no session was played{where} yet: nothing to continue",
        hint="start one with narrative run CARD",
    )


def changed_files(info: SessionInfo, options: PlayOptions) -> list[str]:
    """Warnings for a resumed session whose card or lorebooks changed since it started."""
    notes = []
    if info.card_hash and _hash_or_none(options.card) != info.card_hash:
        notes.append(f"{options.card}: the card changed since this session started")
    for ref in info.lore:
        if isinstance(ref, LoreRef) and ref.hash and _hash_or_none(ref.path) != ref.hash:
            notes.append(f"{ref.path}: the lorebook changed since this session started")
    return notes


def _hash_or_none(path: str) -> str | None:
    try:
        return file_hash(path)
    except BadInput:
        return None


def stored_account(store: SessionStore, session_id: int) -> SessionAccount:
    """The usage of every stored reply of a session (regenerated swipes included)."""
    account = SessionAccount()
    last = 0
    for turn in store.iter_turns(session_id):
        last = turn.number
        for swipe in turn.swipes if turn.number else []:
            account.add_turn(TurnRecord.read(swipe.record).usage)
    account.turns = last
    return account


def default_name(story: Story) -> str:
    """A new session's name: the character and the local date and time."""
    return f"{story.card.name or 'story'} {datetime.now():%Y-%m-%d %H:%M}"
