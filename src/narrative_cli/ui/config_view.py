"""``narrative config show``: the settings in effect, as YAML (or JSON)."""

from __future__ import annotations

import json
from typing import Any

import yaml

from narrative_cli.ui.safe import safe_json


def render_settings(summary: dict[str, Any], *, as_json: bool = False) -> None:
    """Print the settings summary; it holds key *status* lines only, never key values."""
    if as_json:
        print(safe_json(json.dumps(summary, ensure_ascii=False, indent=2)))
        return
    print(yaml.safe_dump(summary, sort_keys=False, allow_unicode=True, width=100).rstrip())
