"""Plain data shared by every stage: cards, lore entries, chat messages, prompt messages.

These are the contracts between the packages. Loaders produce them, the lore engine and the
context router read them, the store persists them. They hold no behaviour beyond small
derived properties, and they do no I/O.

The card and its lore are defined here; chats, prompt messages, presets, personas, the
Author's Note and ``Role`` in ``domain_chat``: each class is built at import (a dataclass
writes and compiles its methods), and a command that reads only a card never needs those.

Lore entries follow SillyTavern's *world file* semantics (compat §2): a field that was absent
in the file stays ``None`` where SillyTavern treats "absent" differently from the template
default (``selective``, ``use_probability``, ``position``, ``order``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from narrative_cli.domain_chat import Role

# World-info positions (compat §2.4).
POSITION_BEFORE_CHAR = 0
POSITION_AFTER_CHAR = 1
POSITION_AN_TOP = 2
POSITION_AN_BOTTOM = 3
POSITION_AT_DEPTH = 4
POSITION_EM_TOP = 5
POSITION_EM_BOTTOM = 6
POSITION_OUTLET = 7

# selectiveLogic
LOGIC_AND_ANY = 0
LOGIC_NOT_ALL = 1
LOGIC_NOT_ANY = 2
LOGIC_AND_ALL = 3


@dataclass
class LoreEntry:
    """One world-info entry, in world-file terms (``key`` → ``keys`` and so on)."""

    uid: int | str
    keys: list[str] = field(default_factory=list)
    secondary_keys: list[str] = field(default_factory=list)
    comment: str = ""
    content: str = ""
    constant: bool = False
    selective: bool | None = None  # None: absent → secondary keys ignored
    selective_logic: int = LOGIC_AND_ANY
    order: float | None = None  # None: absent → unordered, keeps file order
    position: int | None = None  # None: absent → activates, inserted nowhere
    disabled: bool = False
    depth: int = 4
    role: int = 0  # 0 system, 1 user, 2 assistant (position 4 only)
    probability: float = 100
    use_probability: bool | None = None  # None: absent → never rolled
    scan_depth: int | None = None
    case_sensitive: bool | None = None
    match_whole_words: bool | None = None
    use_group_scoring: bool | None = None
    group: str = ""
    group_override: bool = False
    group_weight: float = 100
    exclude_recursion: bool = False
    prevent_recursion: bool = False
    delay_until_recursion: int = 0  # 0 off; true ≡ 1; N = recursion level
    sticky: int | None = None
    cooldown: int | None = None
    delay: int | None = None
    ignore_budget: bool = False
    outlet_name: str = ""
    triggers: list[str] = field(default_factory=list)
    character_filter: dict[str, Any] = field(default_factory=dict)
    automation_id: str = ""
    display_index: int | None = None
    vectorized: bool = False
    match_sources: list[str] = field(default_factory=list)  # e.g. "persona_description"
    decorators: list[str] = field(default_factory=list)  # V3 @@decorators stripped from content
    extensions: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # unknown fields, kept for export
    source: str = ""  # "card" or the world file name, for messages


@dataclass
class Lorebook:
    name: str = ""
    entries: list[LoreEntry] = field(default_factory=list)
    description: str = ""
    scan_depth: int | None = None
    token_budget: int | None = None
    recursive_scanning: bool | None = None
    extensions: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # path or "card:<name>"


@dataclass
class RegexScript:
    """A SillyTavern regex script (compat Appendix A), parsed and kept."""

    script_name: str
    find_regex: str
    replace_string: str = ""
    trim_strings: list[str] = field(default_factory=list)
    placement: list[int] = field(default_factory=list)
    disabled: bool = False
    markdown_only: bool = False
    prompt_only: bool = False
    run_on_edit: bool = False
    substitute_regex: int = 0
    min_depth: int | None = None
    max_depth: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class DepthPrompt:
    prompt: str = ""
    depth: int = 4
    role: Role = "system"


@dataclass
class Card:
    """A character card, normalized from V1/V2/V3 (compat §1). Unknown fields live in ``extra``."""

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_mes: str = ""
    mes_example: str = ""
    creator_notes: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    alternate_greetings: list[str] = field(default_factory=list)
    group_only_greetings: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    creator: str = ""
    character_version: str = ""
    nickname: str = ""
    creator_notes_multilingual: dict[str, str] = field(default_factory=dict)
    source_urls: list[str] = field(default_factory=list)
    creation_date: int | None = None
    modification_date: int | None = None
    assets: list[dict[str, Any]] = field(default_factory=list)
    extensions: dict[str, Any] = field(default_factory=dict)
    character_book: Lorebook | None = None
    spec: str = "chara_card_v2"  # chara_card_v1 | chara_card_v2 | chara_card_v3
    spec_version: str = "2.0"
    source: str = ""  # where it came from: "png:ccv3", "png:chara", "json", "charx"
    path: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # unknown data fields
    top_level: dict[str, Any] = field(default_factory=dict)  # unknown top-level fields
    raw_book: dict[str, Any] | None = None  # the embedded book as it was in the file
    data_keys: list[str] = field(
        default_factory=list
    )  # data keys in file order (export keeps them)

    @property
    def greetings(self) -> list[str]:
        """Greeting 0 is ``first_mes``; alternates follow."""
        return [self.first_mes, *self.alternate_greetings]

    @property
    def depth_prompt(self) -> DepthPrompt | None:
        raw = self.extensions.get("depth_prompt")
        if not isinstance(raw, dict) or not str(raw.get("prompt") or "").strip():
            return None
        roles: dict[Any, Role] = {"system": "system", "user": "user", "assistant": "assistant"}
        role = roles.get(raw.get("role"), "system")
        try:
            depth = int(raw.get("depth", 4))
        except (TypeError, ValueError):
            depth = 4
        return DepthPrompt(prompt=str(raw["prompt"]), depth=depth, role=role)
