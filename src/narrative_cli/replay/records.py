"""A replayed log's turn records, read from the session store when they are asked for.

A replay used to end by loading every turn's record into memory for the outcome and the
report: 27 MB for a 2,000-turn log, most of the growth of a replay's peak memory with
length (#17). ``StoredRecords`` is the same sequence of ``TurnRecord``s, read from the store
in batches as it is iterated (or one turn when indexed), so a run holds none of them.

It reads turns 1 to ``turns``, the turns the log had when its replay ended: a session played
on afterwards does not change what the outcome reports.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

from narrative_cli.pipeline.story import TurnRecord
from narrative_cli.store.sessions import SessionStore

# Turns read per store query when iterating: 200 decoded records held 4 MB at once, on top of
# the story at the end of a replay (#17, session seven); 50 cost no more queries' time.
BATCH = 50


class StoredRecords(Sequence[TurnRecord]):
    """Turns 1..``turns`` of session ``session_id`` in the store at ``path``, as records."""

    def __init__(
        self, path: Path, session_id: int, turns: int, fields: frozenset[str] | None = None
    ) -> None:
        self.path = path
        self.session_id = session_id
        self.turns = turns
        self.fields = fields  # only these fields of each record are read (None: all)

    def only(self, fields: frozenset[str]) -> StoredRecords:
        """The same turns with only ``fields`` read (``TurnRecord.read``): a report that
        needs eight of a record's fields skips building the plan, tool results, lore
        hits and patches of every turn (#17, session seven)."""
        return StoredRecords(self.path, self.session_id, self.turns, fields)

    def __len__(self) -> int:
        return self.turns

    @overload
    def __getitem__(self, index: int) -> TurnRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[TurnRecord]: ...

    def __getitem__(self, index: int | slice) -> TurnRecord | list[TurnRecord]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self.turns)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._read(start + 1, stop) if stop > start else []
        position = index + self.turns if index < 0 else index
        if not 0 <= position < self.turns:
            raise IndexError(f"turn record {index} out of range ({self.turns} turns)")
        return self._read(position + 1, position + 1)[0]

    def __iter__(self) -> Iterator[TurnRecord]:
        with SessionStore(self.path) as store:  # one connection for every batch
            for first in range(1, self.turns + 1, BATCH):
                yield from self._read(first, min(first + BATCH - 1, self.turns), store)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return len(other) == self.turns and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a sequence compared by content

    def __repr__(self) -> str:
        return f"StoredRecords({str(self.path)!r}, session {self.session_id}, {self.turns} turns)"

    def _read(self, first: int, last: int, store: SessionStore | None = None) -> list[TurnRecord]:
        if store is None:
            with SessionStore(self.path) as opened:
                return self._read(first, last, opened)
        found = store.records(self.session_id, first, last)
        return [TurnRecord.read(record, self.fields) for record in found]
