"""What a played story was started with: the flags of ``narrative run`` (architecture §2).

``PlayOptions`` carries the card and everything played with it, the backend choice and the
session flags. Two views of it matter:

- ``overrides()``: the settings overrides for ``config.load_settings`` (flags win over
  ``NARRATIVE_*`` variables and ``config.yaml``);
- ``session_settings()``: what the session row keeps so ``--resume`` can rebuild the same
  story: file paths made absolute, the backend choice by name. Never an API key: only the
  *name* of the variable that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from narrative_cli.credentials import REDACTED
from narrative_cli.errors import ConfigError

BACKEND_FLAGS = ("profile", "provider", "base_url", "model", "api_key_env")
STORED_KEYS = ("lorebooks", "preset", "persona", "user_name", "lang", "mode", "st_data",
               "members", "group", *BACKEND_FLAGS)


@dataclass
class PlayOptions:
    """The card, its companions, the backend flags and the session flags of one run."""

    card: str = ""
    lorebooks: list[str] = field(default_factory=list)
    preset: str | None = None
    persona: str | None = None
    user_name: str | None = None
    profile: str | None = None
    provider: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    trace: str | None = None
    seed: int | None = None
    mode: str | None = None
    lang: str | None = None
    session: str | None = None
    resume: str | None = None
    continue_last: bool = False  # -c / --continue: the last played session (of this card)
    greeting: int | None = None
    st_data: str | None = None  # a SillyTavern user data folder (load.st_data)
    catch_up: bool | None = None  # an imported chat: --catch-up / --no-catch-up (None: ask)
    members: list[str] = field(default_factory=list)  # a group scene's other cards (issue 19)
    group: str | None = None  # --group FILE: a SillyTavern group file (issue 19)

    def overrides(self) -> dict[str, Any]:
        """Settings overrides for ``load_settings`` (only the flags that were given)."""
        values: dict[str, Any] = {name: getattr(self, name) for name in BACKEND_FLAGS}
        values.update(mode=self.mode, lang=self.lang, seed=self.seed)
        return {key: value for key, value in values.items() if value is not None}

    def session_settings(self) -> dict[str, Any]:
        """What the session keeps to resume the same story later (paths absolute, no keys)."""
        data: dict[str, Any] = {
            "lorebooks": [_absolute(path) for path in self.lorebooks],
            "preset": _absolute(self.preset) if self.preset else None,
            "persona": _persona_ref(self.persona),
            "st_data": _absolute(self.st_data) if self.st_data else None,
            "members": [_absolute(path) for path in self.members],
            "group": _absolute(self.group) if self.group else None,
        }
        for name in ("user_name", "lang", "mode", *BACKEND_FLAGS):
            data[name] = getattr(self, name)
        return {key: value for key, value in data.items() if value not in (None, [])}

    def merged_with_session(self, stored: dict[str, Any], card_path: str) -> PlayOptions:
        """These flags over what a resumed session was started with (flags win)."""
        known = {f.name for f in fields(PlayOptions)}
        base = {key: value for key, value in stored.items() if key in STORED_KEYS and key in known}
        given = {name: getattr(self, name) for name in STORED_KEYS}
        given = {key: value for key, value in given.items() if value not in (None, [])}
        if "base_url" not in given and REDACTED in str(base.get("base_url") or ""):
            raise ConfigError(
                "this session was started with a key inside --base-url, and keys are not stored",
                hint="pass --base-url again, or keep the key in the variable --api-key-env names",
            )
        merged = replace(self, card=self.card or card_path, **{**base, **given})
        merged.lorebooks = list(merged.lorebooks or [])
        merged.members = list(merged.members or [])
        return merged


def _absolute(path: str) -> str:
    return str(Path(path).expanduser().resolve())


def _persona_ref(persona: str | None) -> str | None:
    """A persona file as an absolute path; a persona given as text stays text."""
    if persona is None:
        return None
    candidate = Path(persona).expanduser()
    try:
        return str(candidate.resolve()) if candidate.is_file() else persona
    except OSError:
        return persona
