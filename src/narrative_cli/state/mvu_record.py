"""``PatchRecord``: one proposed MVU update and what became of it.

Its own small module so that applying a greeting's commands (``state.mvu_update``, run by
``inspect`` and at a session's start) does not import the state engine (``state.mvu`` and the
game state it reads); ``state.mvu`` re-exports it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from narrative_cli.safetext import finite_copy

__all__ = ["PatchRecord"]


@dataclass(frozen=True)
class PatchRecord:
    """One proposed op and what became of it (``reason`` when rejected, ``note`` if adjusted)."""

    patch: Any
    accepted: bool
    reason: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = {"patch": finite_copy(self.patch), "accepted": self.accepted, "reason": self.reason}
        return {key: value for key, value in {**data, "note": self.note}.items() if value != ""}

    @classmethod
    def from_dict(cls, data: object) -> PatchRecord:
        """A record saved by ``to_dict`` (in a stored turn record)."""
        record = data if isinstance(data, Mapping) else {}
        return cls(
            patch=copy.deepcopy(record.get("patch")),
            accepted=bool(record.get("accepted", False)),
            reason=str(record.get("reason") or ""),
            note=str(record.get("note") or ""),
        )
