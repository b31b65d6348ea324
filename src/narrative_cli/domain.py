"""Plain data shared by every stage: cards, lore entries, chat messages, prompt messages.

These are the contracts between the packages. Loaders produce them, the lore engine and the
context router read them, the store persists them. They hold no behaviour beyond small
derived properties, and they do no I/O.

Lore entries follow SillyTavern's *world file* semantics (compat §2): a field that was absent
in the file stays ``None`` where SillyTavern treats "absent" differently from the template
default (``selective``, ``use_probability``, ``position``, ``order``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]

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


AN_POSITIONS = {"after_main": 0, "chat": 1, "before_main": 2}  # SillyTavern's extension types
_AN_ROLES: tuple[Role, ...] = ("system", "user", "assistant")  # note_role 0, 1, 2


@dataclass(frozen=True)
class AuthorsNote:
    """SillyTavern's Author's Note of a chat (``chat_metadata.note_*``).

    ``position``: 1 in the chat at ``depth`` with ``role`` (SillyTavern's default), 0 right
    after the main prompt, 2 right before it. ``interval``: sent on turns where the number of
    the player's messages is a multiple of it (1: every turn; 0: never).
    """

    text: str = ""
    interval: int = 1
    position: int = 1
    depth: int = 4
    role: Role = "system"

    def active(self, user_messages: int) -> bool:
        """Whether the note is sent when the chat holds ``user_messages`` player messages."""
        if not self.text.strip() or self.interval <= 0:
            return False
        return self.interval == 1 or (user_messages > 0 and user_messages % self.interval == 0)

    @classmethod
    def from_metadata(cls, meta: dict[str, Any], default: AuthorsNote | None = None
                      ) -> AuthorsNote:
        """The note of a chat's metadata; missing keys come from ``default`` (the config's)."""
        base = default or cls()

        def number(key: str, fallback: int) -> int:
            value = meta.get(key)
            return int(value) if isinstance(value, (int, float)) and not isinstance(
                value, bool) else fallback

        role = meta.get("note_role")
        text = meta.get("note_prompt")
        return cls(
            text=text if isinstance(text, str) else base.text,
            interval=number("note_interval", base.interval),
            position=number("note_position", base.position),
            depth=number("note_depth", base.depth),
            role=_AN_ROLES[role] if isinstance(role, int) and 0 <= role < 3 else base.role,
        )

    def to_metadata(self) -> dict[str, Any]:
        return {"note_prompt": self.text, "note_interval": self.interval,
                "note_position": self.position, "note_depth": self.depth,
                "note_role": _AN_ROLES.index(self.role)}


@dataclass
class Message:
    """One message of an LLM request. ``name``: the speaker SillyTavern sends with example
    dialogue (``example_user`` / ``example_assistant``); empty for most messages."""

    role: Role
    content: str
    name: str = ""

    def to_dict(self) -> dict[str, str]:
        if self.name:
            return {"role": self.role, "content": self.content, "name": self.name}
        return {"role": self.role, "content": self.content}


@dataclass
class ChatMessage:
    """One message of a SillyTavern chat (compat §4)."""

    name: str
    is_user: bool
    mes: str
    is_system: bool = False
    send_date: str | int | float | None = None
    swipes: list[str] = field(default_factory=list)
    swipe_id: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)  # every other field, kept for export


@dataclass
class Chat:
    """A SillyTavern chat: header metadata plus messages."""

    user_name: str = "User"
    character_name: str = ""
    create_date: str | int | None = None
    chat_metadata: dict[str, Any] = field(default_factory=dict)
    messages: list[ChatMessage] = field(default_factory=list)
    header: dict[str, Any] = field(default_factory=dict)  # the raw header line
    skipped_lines: int = 0
    path: str = ""
    problems: list[str] = field(default_factory=list)  # "line 4: …" per skipped line


@dataclass
class PresetPrompt:
    identifier: str
    name: str = ""
    role: Role = "system"
    content: str = ""
    system_prompt: bool = False
    marker: bool = False
    enabled: bool = True
    injection_position: int = 0  # 0 relative, 1 in-chat
    injection_depth: int = 4
    injection_order: int = 100
    forbid_overrides: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Preset:
    """A SillyTavern Chat Completion preset: the prompts in character 100001's order."""

    name: str = ""
    prompts: list[PresetPrompt] = field(default_factory=list)  # in prompt_order order
    samplers: dict[str, Any] = field(default_factory=dict)  # temperature, top_p, …
    extra: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    def enabled_prompts(self) -> list[PresetPrompt]:
        return [p for p in self.prompts if p.enabled]


@dataclass
class Persona:
    name: str = "User"
    description: str = ""
