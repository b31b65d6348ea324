"""A SillyTavern user data folder (``--st-data DIR``), read the way SillyTavern finds things.

The folder is ``data/<user>/`` of an install (``default-user`` for most people):
``characters/`` (cards), ``worlds/`` (world files, named by world name), ``OpenAI Settings/``
(presets), ``chats/``, ``groups/`` and ``settings.json``. From it:

- :func:`characters` lists the cards (name, file, linked world);
- :func:`find_character` resolves ``narrative run NAME`` by the card's name or file name;
- :func:`world_path` finds a world by name, for a card's linked world (``data.extensions.world``)
  and the globally selected worlds (``world_info_settings.world_info.globalSelect``);
- :func:`lore_settings` gives the ``world_info_*`` settings of ``settings.json``;
- :func:`preset_path` finds a preset of ``OpenAI Settings/`` by name, and
  :func:`selected_preset` names the one selected in ``settings.json``;
- :func:`global_regex` reads the global regex scripts (``extension_settings.regex``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from narrative_cli.domain import Card, RegexScript
from narrative_cli.errors import BadInput, CardError, ConfigError, worded
from narrative_cli.load import files
from narrative_cli.load.cards import load_card
from narrative_cli.load.lorebooks import linked_world
from narrative_cli.load.regex import parse_regex_scripts

CARD_SUFFIXES = (".png", ".json", ".charx", ".yaml", ".yml")


@dataclass(frozen=True)
class CharacterRef:
    """A card of the folder: its name, file and the world it links ("" for none)."""

    name: str
    path: Path
    world: str
    world_found: bool


def check_folder(root: str | Path) -> Path:
    """The folder, refused with one line when it is not a SillyTavern data folder."""
    path = Path(root).expanduser()
    if not path.is_dir():
        raise worded(ConfigError, "stdata.not_folder", root=root)
    if not (path / "characters").is_dir():
        raise worded(ConfigError, "stdata.no_characters", root=root)
    return path


def card_files(root: Path) -> list[Path]:
    folder = root / "characters"
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in
                  CARD_SUFFIXES)


def characters(root: Path) -> tuple[list[CharacterRef], list[str]]:
    """Every readable card of ``characters/``, sorted by name, and one note per bad file."""
    refs: list[CharacterRef] = []
    problems: list[str] = []
    for path in card_files(root):
        try:
            card = load_card(path)
        except BadInput as error:
            problems.append(error.message)
            continue
        world = linked_world(card)
        refs.append(CharacterRef(card.name or path.stem, path, world,
                                 bool(world) and world_path(root, world) is not None))
    return sorted(refs, key=lambda r: (r.name.lower(), r.path.name)), problems


def find_character(root: Path, name: str) -> Path:
    """The card called ``name`` (card name or file name, case-insensitive)."""
    wanted = name.strip().lower()
    by_file = [p for p in card_files(root) if wanted in (p.name.lower(), p.stem.lower())]
    if len(by_file) == 1:
        return by_file[0]
    refs, _ = characters(root)
    by_name = [r.path for r in refs if r.name.lower() == wanted]
    if len(by_name) == 1:
        return by_name[0]
    if by_name:
        files_ = ", ".join(p.name for p in by_name)
        raise worded(CardError, "stdata.card_ambiguous", where=f"{root}/characters",
                     count=len(by_name), name=repr(name), files=files_)
    raise worded(CardError, "stdata.no_card", ("stdata.no_card_hint", {}),
                 where=f"{root}/characters", name=repr(name))


def world_path(root: Path, name: str) -> Path | None:
    """``worlds/<name>.json`` when it exists (SillyTavern names world files by world name)."""
    path = root / "worlds" / f"{name}.json"
    return path if path.is_file() else None


def preset_path(root: Path, name: str) -> Path | None:
    """``OpenAI Settings/<name>.json`` when it exists."""
    path = root / "OpenAI Settings" / f"{name}.json"
    return path if path.is_file() else None


def selected_preset(data: dict[str, Any]) -> str:
    """The Chat Completion preset selected in ``settings.json`` ("" for none)."""
    oai = data.get("oai_settings")
    name = oai.get("preset_settings_openai") if isinstance(oai, dict) else None
    return name.strip() if isinstance(name, str) else ""


def settings(root: Path) -> dict[str, Any]:
    """``settings.json`` (an empty dict when the folder has none)."""
    path = root / "settings.json"
    if not path.is_file():
        return {}
    value = files.read_json(path, limit=files.MAX_JSON_BYTES, error=ConfigError,
                            kind="SillyTavern settings")
    return value if isinstance(value, dict) else {}


def _world_info(data: dict[str, Any]) -> dict[str, Any]:
    block = data.get("world_info_settings")
    return block if isinstance(block, dict) else {}


def lore_settings(data: dict[str, Any]) -> dict[str, Any]:
    """The ``world_info_*`` settings (for ``LoreSettings.from_dict``)."""
    return {k: v for k, v in _world_info(data).items() if k.startswith("world_info_")}


def global_worlds(data: dict[str, Any]) -> list[str]:
    """The globally selected world names."""
    info = _world_info(data).get("world_info")
    chosen = info.get("globalSelect") if isinstance(info, dict) else None
    return [n for n in chosen if isinstance(n, str) and n.strip()] if isinstance(
        chosen, list) else []


def worlds_for(root: Path, card: Card, data: dict[str, Any]) -> tuple[list[Path], list[str]]:
    """The card's linked world and the global worlds, as files; a note for each one missing."""
    names = [linked_world(card)] if linked_world(card) else []
    names += [n for n in global_worlds(data) if n not in names]
    found: list[Path] = []
    missing: list[str] = []
    for name in names:
        path = world_path(root, name)
        if path is None:
            missing.append(f"lore: the world {name!r} is not in {root / 'worlds'}")
        else:
            found.append(path)
    return found, missing


def global_regex(data: dict[str, Any], where: str = "settings.json") -> tuple[
        list[RegexScript], list[str]]:
    """The global regex scripts (``extension_settings.regex``), in SillyTavern's order, and one
    note per script that cannot be read (named, never dropped in silence)."""
    block = data.get("extension_settings")
    raw = block.get("regex") if isinstance(block, dict) else None
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"regex: {where}: extension_settings.regex is not a list; no global "
                    "scripts are used"]
    scripts: list[RegexScript] = []
    notes: list[str] = []
    for index, item in enumerate(raw):
        try:
            scripts += parse_regex_scripts([item], f"{where}: extension_settings.regex[{index}]")
        except BadInput as error:
            notes.append(f"regex: {error.message}; this global script is not used")
    return scripts, notes
