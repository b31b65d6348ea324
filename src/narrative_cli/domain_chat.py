"""Plain data of chats, prompts and presets: ``Message`` (one LLM request message),
SillyTavern's ``Chat`` and ``ChatMessage``, a chat's ``AuthorsNote``, ``Preset`` and
``PresetPrompt``, ``Persona``, and ``Role``.

``narrative_cli.domain`` names them too (loaded on first use, PEP 562): they live apart from
the card and its lore so that a command reading only a card (``inspect``, ``lore test``)
never builds these classes. Like ``domain``, they hold no behaviour beyond small derived
properties, and they do no I/O; this module imports nothing of the package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]

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
