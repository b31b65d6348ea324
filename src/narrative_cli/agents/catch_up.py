"""The catch_up agent's reply as a typed value (issue #17).

``catch_up`` reads a batch of an imported chat's old turns and answers, for each turn, what the
merged analysis would have answered after it (events and summary entries) plus the MVU
commands the turn implies. ``CatchUpReply.from_json`` reads the checked JSON once; like the
other replies it is lenient (a wrong-typed field reads as empty) and keeps each turn's
analysis as an ``Analysis``, so the state engine and the summary store take it exactly as
they take a played turn's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from narrative_cli.agents.replies import Analysis


@dataclass(frozen=True)
class CaughtUpTurn:
    """One old turn as the catch_up agent read it."""

    turn: int
    analysis: Analysis
    mvu_update: str = ""


@dataclass(frozen=True)
class CatchUpReply:
    """Every turn the reply covered, in the order given (duplicates: the first one wins)."""

    turns: tuple[CaughtUpTurn, ...] = ()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CatchUpReply:
        items = data.get("turns")
        seen: set[int] = set()
        turns = []
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, Mapping):
                continue
            number = item.get("turn")
            if not isinstance(number, int) or isinstance(number, bool) or number in seen:
                continue
            seen.add(number)
            update = item.get("mvu_update")
            turns.append(
                CaughtUpTurn(
                    number, Analysis.from_json(item), update if isinstance(update, str) else ""
                )
            )
        return cls(tuple(turns))

    def turn(self, number: int) -> CaughtUpTurn | None:
        """The reply's item for turn ``number`` (None: the model left it out)."""
        return next((t for t in self.turns if t.turn == number), None)
