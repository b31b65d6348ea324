"""The session's roll ledger behind ``/dice``: every roll the engine made, turn by turn.

The rolls live in the turn records (each ``roll_dice`` result's data is the roll's JSON), so
the ledger follows the story's line: a regenerated turn shows the rolls of the chosen swipe,
an undone turn's rolls are gone, and an exported session carries the same rolls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from narrative_cli.pipeline.story import TurnRecord
from narrative_cli.play.controller import PlaySession


def ledger_rows(records: Iterable[TurnRecord]) -> list[dict[str, Any]]:
    """``{"turn": N, "roll": data}`` for every successful dice result of the records."""
    rows: list[dict[str, Any]] = []
    for record in records:
        for result in record.tool_results:
            if result.kind == "dice" and result.ok and isinstance(result.data, Mapping):
                rows.append({"turn": record.number, "roll": dict(result.data)})
    return rows


def session_rolls(play: PlaySession) -> list[dict[str, Any]]:
    """The ledger of the session's current line of turns (turn 0, the greeting, rolls none)."""
    views = play.store.turns(play.session_id)
    return ledger_rows(TurnRecord.read(view.record) for view in views if view.number > 0)
