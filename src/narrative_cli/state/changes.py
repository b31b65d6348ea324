"""What a turn changed, one line each: the MVU variables' difference, or the game state's.

The screen shows these lines after each turn; they are computed here, from two snapshots'
JSON (``GameState.to_dict`` and the MVU tree), so any front end shows the same changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from narrative_cli.state.engine import GameState, state_diff
from narrative_cli.state.mvu import mvu_diff


def state_changes(
    before_state: Mapping[str, Any],
    after_state: Mapping[str, Any],
    before_mvu: Mapping[str, Any] | None,
    after_mvu: Mapping[str, Any] | None,
    lang: str,
) -> list[str]:
    """The changes from one snapshot to the next: on a card with MVU variables those are the
    status (the built-in game state is not shown beside them), else the game state."""
    if after_mvu:
        return mvu_diff(before_mvu, after_mvu)
    lines = state_diff(GameState.from_dict(before_state), GameState.from_dict(after_state), lang)
    if after_mvu is not None:
        lines.extend(mvu_diff(before_mvu, after_mvu))
    return lines
