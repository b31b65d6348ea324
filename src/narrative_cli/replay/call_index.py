"""Where each recorded call of a trace is, by turn, in compact arrays (#17 item 4).

``--responses`` indexes the whole trace before a replay starts (``replay.recorded``): for
every line, its file, offset, size and line number, and the agent, attempt and speaker that
pick it. Kept as one small object per line, that index was 2 MB for a 2,000-turn trace (10,000
calls: an object, its ints and its decoded strings each), the largest part of a replay's
memory that grows with the trace. Here a call is a few machine integers in shared arrays
(about 40 bytes), its agent and speaker an entry in one table of names; the ref objects
are made again when a turn's calls are asked for (a handful per turn).

``CallIndex`` is a read-only ``Mapping`` of turn to that turn's refs in recorded order, as
the plain ``{turn: [ref, ...]}`` it replaces was; ``add`` files one call.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, Generic, Protocol, TypeVar


class Ref(Protocol):
    """What the index keeps of a call (``replay.recorded.CallRef``)."""

    @property
    def file(self) -> Path: ...
    @property
    def offset(self) -> int: ...
    @property
    def line(self) -> int: ...
    @property
    def agent(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def speaker(self) -> str: ...
    @property
    def size(self) -> int: ...


R = TypeVar("R", bound=Ref)
# file, offset, line, agent, attempt, speaker, size
Make = Callable[[Path, int, int, str, int, str, int], R]


class CallIndex(Mapping[int, list[R]], Generic[R]):
    """Turn → the refs of its recorded calls, made by ``make`` from the arrays when asked."""

    def __init__(self, make: Make[R], turns: Mapping[int, Iterable[R]] | None = None) -> None:
        self._make = make
        self._files: list[Path] = []
        self._file_ids: dict[Path, int] = {}
        self._names: list[str] = []  # agents and speakers, each once
        self._name_ids: dict[str, int] = {}
        self._offsets = array("q")  # per call: where its line starts in its file
        self._lines = array("q")  # its line number (for messages)
        self._sizes = array("q")  # its line's bytes, newline included (0: not known)
        self._attempts = array("q")
        self._codes = array("i")  # per call, three: its file, agent and speaker
        self._turns: dict[int, array[int]] = {}  # turn → its calls' positions, in order
        for turn, refs in (turns or {}).items():
            for ref in refs:
                self._file(turn, ref)

    def add(self, turn: int, ref: R, *, once_per_turn: bool = False) -> None:
        """File ``ref`` under ``turn``, after its earlier calls. ``once_per_turn``: the agent
        is called once a turn, so an earlier call of the same agent, attempt and speaker
        means the turn was played again: its earlier recording is dropped."""
        if once_per_turn and self._filed(turn, ref):
            self._turns[turn] = array("i")
        self._file(turn, ref)

    def _filed(self, turn: int, ref: R) -> bool:
        """Is a call of ``ref``'s agent, attempt and speaker filed under ``turn`` already?
        Read from the arrays: making every earlier ref of the turn to compare them was most
        of the refs a replay made (#17, session nine)."""
        positions = self._turns.get(turn)
        agent, speaker = self._name_ids.get(ref.agent), self._name_ids.get(ref.speaker)
        if not positions or agent is None or speaker is None:
            return False
        codes, attempts = self._codes, self._attempts
        return any(
            codes[3 * p + 1] == agent and codes[3 * p + 2] == speaker
            and attempts[p] == ref.attempt
            for p in positions
        )

    def __getitem__(self, turn: int) -> list[R]:
        return [self._ref(position) for position in self._turns[turn]]

    def nth(self, turn: int, agent: str, index: int) -> R | None:
        """The ``index``-th (0-based) call of ``agent`` in ``turn``, None when there are
        fewer: only that ref is made (a replay asks once per call; making every ref of the
        turn each time was 1% of a replayed turn; #17, session eight)."""
        code = self._name_ids.get(agent)
        positions = self._turns.get(turn)
        if code is None or positions is None:
            return None
        codes = self._codes
        for position in positions:
            if codes[3 * position + 1] == code:
                if not index:
                    return self._ref(position)
                index -= 1
        return None

    def __iter__(self) -> Iterator[int]:
        return iter(self._turns)

    def __len__(self) -> int:
        return len(self._turns)

    def __repr__(self) -> str:
        calls = sum(len(positions) for positions in self._turns.values())
        return f"CallIndex({len(self._turns)} turns, {calls} calls)"

    def _file(self, turn: int, ref: R) -> None:
        positions = self._turns.get(turn)
        if positions is None:
            positions = self._turns[turn] = array("i")
        positions.append(len(self._offsets))
        self._offsets.append(ref.offset)
        self._lines.append(ref.line)
        self._sizes.append(ref.size)
        self._attempts.append(ref.attempt)
        file = self._file_ids.get(ref.file)
        if file is None:
            file = self._file_ids[ref.file] = len(self._files)
            self._files.append(ref.file)
        self._codes.extend((file, self._name(ref.agent), self._name(ref.speaker)))

    def _name(self, name: str) -> int:
        code = self._name_ids.get(name)
        if code is None:
            code = self._name_ids[name] = len(self._names)
            self._names.append(name)
        return code

    def _ref(self, position: int) -> R:
        file, agent, speaker = self._codes[3 * position : 3 * position + 3]
        return self._make(
            self._files[file],
            self._offsets[position],
            self._lines[position],
            self._names[agent],
            self._attempts[position],
            self._names[speaker],
            self._sizes[position],
        )


_CHUNK = 1 << 18  # as the trace reader's buffer: a larger one only raised the peak memory


def trace_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The file's lines, each with its newline (the last one may have none), as iterating
    the file gives them. Iterating a buffered file looks for each newline one byte at a time
    (indexing a 500-turn trace, 57 MB: 70 M instructions, 1.6% of a 120-turn replay; #17,
    session nine); ``bytes.find`` scans 256 KB at a time at memory speed. Only a line
    that runs past a chunk's end is joined across two."""
    rest = b""
    while chunk := handle.read(_CHUNK):
        start = 0
        if rest:
            end = chunk.find(b"\n")
            if end < 0:
                rest += chunk
                continue
            yield rest + chunk[: end + 1]
            rest, start = b"", end + 1
        while (end := chunk.find(b"\n", start)) >= 0:
            yield chunk[start : end + 1]
            start = end + 1
        rest = chunk[start:]
    if rest:
        yield rest
