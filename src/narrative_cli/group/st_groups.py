"""SillyTavern group files (``groups/<id>.json``), read and written as SillyTavern keeps them.

Read from SillyTavern 1.18 (``src/endpoints/groups.js`` ``/create`` and ``/edit``,
``public/scripts/group-chats.js``). A group file is one JSON object::

    {"id": "1714000000000", "name": "Tea party", "members": ["alice.png", "bob.png"],
     "avatar_url": ..., "allow_self_responses": false, "activation_strategy": 0,
     "generation_mode": 0, "disabled_members": ["bob.png"], "fav": false,
     "chat_id": "1714000000000", "chats": ["1714000000000"], "auto_mode_delay": 5,
     "generation_mode_join_prefix": "", "generation_mode_join_suffix": ""}

``members`` and ``disabled_members`` (the muted ones) are card file names in ``characters/``
(SillyTavern also accepts a card's name there); the codes are ``model.STRATEGY_CODES`` and
``model.GENERATION_CODES``. The chats are ``group chats/<chat id>.jsonl`` of the data folder,
``chat_id`` being the open one. The scenario override lives in that chat's header
(``chat_metadata.scenario``) since 1.18; older files kept it in the group file's own
``chat_metadata``, which is still read. Every field we do not model is kept in
``Group.extra`` and written back unchanged by :func:`st_group_json`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from narrative_cli.domain import Card
from narrative_cli.errors import BadInput, GroupError, Phrase, worded
from narrative_cli.group.loading import member_for
from narrative_cli.group.model import GENERATION_CODES, STRATEGY_CODES, Group, GroupMember
from narrative_cli.load import files
from narrative_cli.load.cards import load_card
from narrative_cli.load.fields import json_type
from narrative_cli.load.st_data import check_folder

GROUPS_DIR = "groups"
CHATS_DIR = "group chats"  # SillyTavern's directories.groupChats
MODELLED = frozenset({
    "id", "name", "members", "disabled_members", "activation_strategy", "generation_mode",
    "allow_self_responses", "generation_mode_join_prefix", "generation_mode_join_suffix",
})
# The order SillyTavern's /create writes the fields in (unknown fields follow).
FIELD_ORDER = (
    "id", "name", "members", "avatar_url", "allow_self_responses", "activation_strategy",
    "generation_mode", "disabled_members", "fav", "chat_id", "chats", "auto_mode_delay",
    "generation_mode_join_prefix", "generation_mode_join_suffix",
)
_CARD_SUFFIXES = (".png", ".json", ".charx", ".yaml", ".yml")


def load_st_group(path: str | Path, *, characters: Path | None = None) -> Group:
    """The group of a SillyTavern group file, its members' cards loaded.

    Members are looked up in ``characters`` (the ``characters/`` folder of ``--st-data``),
    else next to the group file: the data folder's ``characters/`` when the file sits in its
    ``groups/``, then the group file's own folder.
    """
    where = Path(path)
    data = _group_object(where)
    members = _members(data, where, _card_folders(where, characters))
    strategy = _code(data, "activation_strategy", STRATEGY_CODES, where)
    mode = _code(data, "generation_mode", GENERATION_CODES, where)
    disabled = _strings(data, "disabled_members", where)
    return Group(
        name=_text(data, "name", where) or where.stem,
        members=members,
        muted=frozenset(disabled),
        strategy=strategy,
        generation_mode=mode,
        allow_self_responses=bool(data.get("allow_self_responses")),
        scenario_override=_scenario(data, where, characters),
        join_prefix=_text(data, "generation_mode_join_prefix", where),
        join_suffix=_text(data, "generation_mode_join_suffix", where),
        group_id=_id(data),
        extra={k: v for k, v in data.items() if k not in MODELLED},
        muted_order=tuple(disabled),
    )


def find_st_group(st_data: str | Path, name: str) -> Path:
    """The group file of ``st_data/groups/`` called ``name`` (its name, id or file name)."""
    folder = Path(st_data).expanduser() / GROUPS_DIR
    if not folder.is_dir():
        raise worded(GroupError, "stgroup.no_folder", root=st_data, folder=GROUPS_DIR)
    wanted = name.strip().casefold()
    found: list[Path] = []
    names: list[str] = []
    for file in sorted(folder.glob("*.json")):
        label = _peek_name(file)
        names.append(label or file.stem)
        if wanted in (file.stem.casefold(), file.name.casefold(), label.casefold()):
            found.append(file)
    if len(found) == 1:
        return found[0]
    if found:
        listed = ", ".join(p.name for p in found)
        raise worded(GroupError, "stgroup.ambiguous", where=folder, count=len(found),
                     name=repr(name), files=listed)
    known = ", ".join(sorted(names, key=str.casefold)) or Phrase("stgroup.none")
    raise worded(GroupError, "stgroup.unknown", where=folder, name=repr(name), known=known)


def group_reference(ref: str, st_data: str | Path | None) -> tuple[Path, Path | None]:
    """``--group FILE|NAME`` (with ``--st-data DIR``): the group file and the characters
    folder to read its members from (None: next to the group file)."""
    characters = Path(st_data).expanduser() / "characters" if st_data is not None else None
    if files.is_existing_file(ref):
        return Path(ref), characters
    if st_data is None:
        raise worded(GroupError, "stgroup.no_file", ("stgroup.no_file_hint", {}), ref=ref)
    check_folder(st_data)
    return find_st_group(st_data, ref), characters


def st_group_json(group: Group, *, new_id: str | None = None) -> dict[str, Any]:
    """The group as SillyTavern's ``groups/<id>.json`` object: what was read, with our changes.

    A group that was never a SillyTavern file (``narrative run a.png b.png``) gets what
    SillyTavern's ``/create`` gives a new one: an id (``new_id``, else the time in ms), one
    chat of that id, and the defaults.
    """
    ident = group.group_id or new_id or str(int(time.time() * 1000))
    known: dict[str, Any] = {
        "id": ident,
        "name": group.name,
        "members": [m.key for m in group.members],
        "allow_self_responses": group.allow_self_responses,
        "activation_strategy": _code_of(STRATEGY_CODES, group.strategy),
        "generation_mode": _code_of(GENERATION_CODES, group.generation_mode),
        "disabled_members": _disabled(group),
        "generation_mode_join_prefix": group.join_prefix,
        "generation_mode_join_suffix": group.join_suffix,
    }
    extra = dict(group.extra)
    if not group.group_id:
        extra = {"chat_id": ident, "chats": [ident], "auto_mode_delay": 5, **extra}
    _set_legacy_scenario(extra, group.scenario_override)
    ordered = {k: known.get(k, extra.get(k)) for k in FIELD_ORDER if k in known or k in extra}
    ordered.update({k: v for k, v in extra.items() if k not in ordered})
    return ordered


def write_st_group(group: Group, path: str | Path, *, force: bool = False) -> None:
    """Write ``group`` as SillyTavern does (``JSON.stringify(group, null, 4)``)."""
    text = json.dumps(st_group_json(group), ensure_ascii=False, indent=4)
    files.write_text(path, text, error=GroupError, kind="group", force=force)


def data_folder(group_path: Path, characters: Path | None = None) -> Path | None:
    """The SillyTavern data folder a group file belongs to, if it is in one."""
    if characters is not None:
        return characters.parent
    parent = group_path.resolve().parent
    return parent.parent if parent.name == GROUPS_DIR else None


def chat_path(root: Path, chat_id: str) -> Path:
    """Where SillyTavern keeps the group chat ``chat_id``: ``group chats/<id>.jsonl``."""
    return root / CHATS_DIR / f"{chat_id}.jsonl"


def chat_ids(group: Group) -> list[str]:
    """The group's chats (``chats``), the open one (``chat_id``) first."""
    current = group.extra.get("chat_id")
    listed = group.extra.get("chats")
    ids = [str(current)] if isinstance(current, (str, int)) and str(current) else []
    if isinstance(listed, list):
        ids += [str(c) for c in listed if isinstance(c, (str, int)) and str(c) not in ids]
    return ids


# -- reading ---------------------------------------------------------------------------------


def _group_object(where: Path) -> dict[str, Any]:
    data = files.read_json(where, limit=files.MAX_JSON_BYTES, error=GroupError, kind="group")
    if not isinstance(data, dict) or "members" not in data:
        raise worded(GroupError, "stgroup.not_group", where=where)
    return data


def _card_folders(where: Path, characters: Path | None) -> list[Path]:
    if characters is not None:
        return [characters]
    root = data_folder(where)
    folders = [root / "characters"] if root is not None else []
    return [*folders, where.resolve().parent]


def _members(data: dict[str, Any], where: Path, folders: Sequence[Path]) -> tuple[
        GroupMember, ...]:
    keys = list(dict.fromkeys(_strings(data, "members", where)))
    if not keys:
        raise worded(GroupError, "stgroup.no_members", where=where)
    cards = {key: _card_file(key, folders) for key in keys}
    missing = [key for key, file in cards.items() if file is None]
    if missing:
        places = " or ".join(str(f) for f in folders)
        named = ", ".join(repr(k) for k in missing)
        raise worded(GroupError, "stgroup.member_missing", ("stgroup.member_missing_hint", {}),
                     where=where, named=named, places=places)
    return tuple(_member(key, file, where) for key, file in cards.items() if file is not None)


def _member(key: str, file: Path, where: Path) -> GroupMember:
    try:
        card = load_card(file)
    except BadInput as error:
        detail = Phrase(*error.words) if error.words else error.message
        raise worded(GroupError, "stgroup.member_bad", where=where, field=repr(key),
                     detail=detail) from None
    return member_for(card, key)


def _card_file(key: str, folders: Sequence[Path]) -> Path | None:
    """The card a member entry names: a file of that name, else (as SillyTavern allows) the
    card whose name it is."""
    if "/" in key or "\\" in key or key in (".", ".."):
        return None  # a member is a file name inside the folder, never a path out of it
    for folder in folders:
        if (folder / key).is_file():
            return folder / key
    for folder in folders:
        named = [p for p in _cards_in(folder) if _card_name(p) == key]
        if named:
            return named[0]
    return None


def _cards_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in
                  _CARD_SUFFIXES)


def _card_name(path: Path) -> str:
    try:
        card: Card = load_card(path)
    except BadInput:
        return ""
    return card.name


def _code(data: dict[str, Any], key: str, codes: dict[int, Any], where: Path) -> Any:
    """A strategy or mode code: a number (or its digits, as SillyTavern's ``Number()`` reads
    them); absent means 0, as in SillyTavern."""
    raw = data.get(key)
    if raw is None or raw == "":
        return codes[0]
    number = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if isinstance(raw, str) and raw.strip().isascii() and raw.strip().isdigit():
        number = int(raw.strip())
    if isinstance(raw, float) and raw.is_integer():
        number = int(raw)
    if number not in codes:
        known = ", ".join(f"{c} {name}" for c, name in codes.items())
        raise worded(GroupError, "stgroup.not_code", where=where, field=key, raw=repr(raw),
                     known=known)
    return codes[number]


def _code_of(codes: dict[int, Any], name: str) -> int:
    return next(code for code, value in codes.items() if value == name)


def _strings(data: dict[str, Any], key: str, where: Path) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise worded(GroupError, "stgroup.not_file_list", where=where, field=key)
    return list(value)


def _text(data: dict[str, Any], key: str, where: Path) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise worded(GroupError, "stgroup.not_text", where=where, field=key, got=json_type(value))
    return value


def _id(data: dict[str, Any]) -> str:
    value = data.get("id")
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""


def _peek_name(file: Path) -> str:
    try:
        data = files.read_json(file, limit=files.MAX_JSON_BYTES, error=GroupError, kind="group")
    except GroupError:
        return ""
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else ""


def _scenario(data: dict[str, Any], where: Path, characters: Path | None) -> str:
    """The scenario override: the open chat's header (1.18), else the group file's own
    ``chat_metadata`` (before 1.18)."""
    legacy = data.get("chat_metadata")
    fallback = legacy.get("scenario") if isinstance(legacy, dict) else None
    root = data_folder(where, characters)
    current = data.get("chat_id")
    if root is not None and isinstance(current, (str, int)) and str(current):
        header = chat_header(chat_path(root, str(current)))
        metadata = header.get("chat_metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("scenario"), str):
            return str(metadata["scenario"])
    return fallback if isinstance(fallback, str) else ""


def chat_header(path: Path) -> dict[str, Any]:
    """The header line of a group chat (``{}`` when the file is absent or has none: group
    chats written before 1.18 start with a message)."""
    try:
        with path.open("rb") as stream:
            first = stream.readline(files.MAX_JSON_BYTES)
    except OSError:
        return {}
    try:
        value = json.loads(first.decode("utf-8", errors="replace"))
    except (json.JSONDecodeError, RecursionError):
        return {}
    return value if isinstance(value, dict) and "chat_metadata" in value else {}


# -- writing ---------------------------------------------------------------------------------


def _disabled(group: Group) -> list[str]:
    """Muted keys in the order the file listed them, newly muted ones after (SillyTavern
    appends when a member is disabled)."""
    kept = [k for k in group.muted_order if k in group.muted]
    added = [m.key for m in group.members if m.key in group.muted and m.key not in kept]
    stale = sorted(k for k in group.muted if k not in kept and k not in added)
    return [*kept, *added, *stale]


def _set_legacy_scenario(extra: dict[str, Any], scenario: str) -> None:
    """A file from before 1.18 keeps its scenario override in its own ``chat_metadata``."""
    legacy = extra.get("chat_metadata")
    if isinstance(legacy, dict) and "scenario" in legacy:
        extra["chat_metadata"] = {**legacy, "scenario": scenario}
