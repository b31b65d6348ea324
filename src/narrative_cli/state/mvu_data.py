"""MagVarUpdate's per-message variables (``MvuData``), what applying a message's commands made
of them (``UpdateResult``), and the quick test whether a message holds any (``may_update``).

They live apart from the update engine (``state.mvu_update``: the command parser, the paths,
the rules) so that a message with no command, such as most greetings, costs none of it: the
MVU set-up at the greeting (``state.mvu_init``) and ``inspect`` read ``may_update`` first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative_cli.safetext import json_copy

if TYPE_CHECKING:
    from narrative_cli.state.mvu_commands import MvuCommand
    from narrative_cli.state.mvu_record import PatchRecord

__all__ = ["MvuData", "UpdateResult", "may_update", "unchanged"]


@dataclass
class MvuData:
    """MagVarUpdate's per-message variables (``stat_data`` is the tree cards read)."""

    stat_data: dict[str, Any] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    display_data: dict[str, Any] = field(default_factory=dict)
    delta_data: dict[str, Any] = field(default_factory=dict)
    initialized_lorebooks: dict[str, Any] = field(default_factory=dict)

    def copy(self) -> MvuData:
        """An independent copy (the variables are JSON data: ``json_copy``, not ``deepcopy``,
        which was a tenth of a replayed turn; #17)."""
        return MvuData(
            json_copy(self.stat_data),
            json_copy(self.schema),
            json_copy(self.display_data),
            json_copy(self.delta_data),
            json_copy(self.initialized_lorebooks),
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything but ``stat_data`` (which a snapshot keeps under ``mvu``)."""
        return {
            "schema": self.schema,
            "display_data": self.display_data,
            "delta_data": self.delta_data,
            "initialized_lorebooks": self.initialized_lorebooks,
        }

    @classmethod
    def from_parts(cls, stat_data: dict[str, Any] | None, meta: dict[str, Any] | None) -> MvuData:
        """Rebuild from a snapshot's ``mvu`` tree and its ``mvu_data`` companion."""
        return cls.viewing(stat_data, meta).copy()

    @classmethod
    def viewing(cls, stat_data: dict[str, Any] | None, meta: dict[str, Any] | None) -> MvuData:
        """``from_parts`` without its deep copies: the parts themselves, for a reader that
        changes nothing (``update_variables`` works on its own ``copy``, which is then the
        same as the copy of ``from_parts``): the whole tree copied twice per update was 0.5%
        of a replayed turn (#17, session eight)."""
        meta = meta or {}
        return cls(
            stat_data=dict(stat_data or {}),
            schema=meta.get("schema"),
            display_data=dict(meta.get("display_data") or {}),
            delta_data=dict(meta.get("delta_data") or {}),
            initialized_lorebooks=dict(meta.get("initialized_lorebooks") or {}),
        )


@dataclass
class UpdateResult:
    """The variables after a message, and each command applied or rejected (with its reason)."""

    data: MvuData
    applied: list[PatchRecord]
    rejected: list[PatchRecord]
    modified: bool
    commands: list[MvuCommand] = field(default_factory=list)


def may_update(text: str) -> bool:
    """False when ``text`` (macros already filled in) holds no update command for
    ``state.mvu_commands`` to read: every one is a ``_.name(`` call or sits in a
    ``<JSONPatch>``/``<json_patch>`` block. True is only a maybe."""
    return "_." in text or "<json" in text.lower()


def unchanged(data: MvuData) -> UpdateResult:
    """What ``mvu_update.update_variables`` makes of ``data`` for a text with no command:
    a copy, its ``display_data`` the variables as they are and ``delta_data`` empty."""
    work = data.copy()
    work.display_data = json_copy(work.stat_data)
    work.delta_data = {}
    return UpdateResult(work, [], [], False, [])
