"""Global lore settings: SillyTavern's ``world_info_*`` values, new-user defaults (compat §3.1).

Defaults are those of the ``settings.json`` SillyTavern ships to a new user (scan depth 2,
recursive scanning and whole-word matching on, character lore first), with one choice of our own:

- ``depth`` (``world_info_depth``) is 2: the two newest messages, as in SillyTavern. ``None``
  scans every message the caller passes. Per-entry ``scanDepth`` always applies.
- ``max_context`` is the prompt size the budget percentage applies to; SillyTavern takes it
  from the connected model, which we do not know for remote profiles: 32,768 unless the
  ``lore:`` config sets it (docs/lore-fidelity.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from narrative_cli.errors import ConfigError

STRATEGY_EVENLY = 0
STRATEGY_CHARACTER_FIRST = 1
STRATEGY_GLOBAL_FIRST = 2
MAX_SCAN_DEPTH = 1000


@dataclass(frozen=True)
class LoreSettings:
    """How lore is scanned, budgeted and recursed."""

    depth: int | None = 2
    budget_percent: int = 25
    budget_cap: int = 0
    include_names: bool = True
    recursive: bool = True
    case_sensitive: bool = False
    match_whole_words: bool = True
    use_group_scoring: bool = False
    character_strategy: int = STRATEGY_CHARACTER_FIRST
    min_activations: int = 0
    min_activations_depth_max: int = 0
    max_recursion_steps: int = 0
    overflow_alert: bool = False
    max_context: int = 32768

    @property
    def budget(self) -> int:
        """The token budget: ``budget_percent`` of ``max_context`` (at least 1), capped."""
        percent = 25 if self.budget_percent > 100 else self.budget_percent
        budget = int(percent * self.max_context / 100 + 0.5) or 1  # JS Math.round
        if self.budget_cap > 0 and budget > self.budget_cap:
            budget = self.budget_cap
        return budget

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> LoreSettings:
        """Settings from config (``lore:``) or SillyTavern's ``world_info_settings``.

        Keys may carry the ``world_info_`` prefix (``world_info_depth``) or not (``depth``);
        ``world_info_budget`` is ``budget_percent``. Unknown keys are ignored.
        """
        values: dict[str, Any] = {}
        names = {item.name: item for item in fields(cls)}
        for raw_key, value in (data or {}).items():
            key = _ALIASES.get(str(raw_key), str(raw_key).removeprefix("world_info_"))
            if key in names:
                values[key] = _coerce(str(raw_key), value, names[key].type)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_ALIASES = {"world_info_budget": "budget_percent", "budget": "budget_percent"}


def _coerce(key: str, value: Any, kind: Any) -> Any:
    text = str(kind)
    if text == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "on", "off", "1", "0"):
            return value.lower() in ("true", "on", "1")
        raise ConfigError(f"lore setting {key}: expected true or false, got {value!r}")
    if value is None and "None" in text:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if isinstance(value, bool) or number < 0 or (isinstance(value, float) and value != number):
        raise ConfigError(f"lore setting {key}: expected a whole number ≥ 0, got {value!r}")
    if key.endswith("depth") and number > MAX_SCAN_DEPTH:
        number = MAX_SCAN_DEPTH
    return number
