"""Loading a story for play: settings from the flags, the card and its files, their hashes.

A session remembers the content hash of its card and lorebooks; when a resumed session finds
them changed, it says so (and plays on with the files as they are now).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from narrative_cli.config import Settings, load_settings
from narrative_cli.domain import Card
from narrative_cli.errors import BadInput, CardError, LorebookError
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
    if not options.card:
        raise BadInput("no card given: narrative run CARD")
    settings = load_settings(options.overrides())
    story = open_story(
        card or options.card,
        lorebooks=options.lorebooks,
        preset=options.preset,
        persona=options.persona,
        settings=settings,
        greeting_index=greeting_index,
        seed=options.seed if options.seed is not None else seed,
        lang=options.lang or "auto",
        user_name=options.user_name,
    )
    return story, settings


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
