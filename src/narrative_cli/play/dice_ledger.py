"""The session's roll ledger behind ``/dice``: every roll the engine made, turn by turn.

The rolls live in the turn records (each ``roll_dice`` result's data is the roll's JSON), so
the ledger follows the story's line: a regenerated turn shows the rolls of the chosen swipe,
an undone turn's rolls are gone, and an exported session carries the same rolls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from narrative_cli.play.controller import PlaySession


def ledger_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``{"turn": N, "roll": data}`` for every successful dice result of the records."""
    rows: list[dict[str, Any]] = []
    for record in records:
        number = record.get("number")
        for result in record.get("tool_results") or []:
            data = result.get("data") if isinstance(result, Mapping) else None
            if result.get("kind") == "dice" and result.get("ok") and isinstance(data, Mapping):
                rows.append({"turn": number, "roll": dict(data)})
    return rows


def session_rolls(play: PlaySession) -> list[dict[str, Any]]:
    """The ledger of the session's current line of turns."""
    return ledger_rows(view.record for view in play.store.turns(play.session_id))
