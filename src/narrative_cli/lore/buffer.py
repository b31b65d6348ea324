"""The text a lore scan looks at (compat §3.3), kept as segments so each is scanned once.

SillyTavern's scan text for an entry is ``\\x01`` + the newest D messages joined with
``"\\n\\x01"``, then (same joiner) the extra sources the entry opts into (persona description,
character description, …), the injected texts (here: the state summary), and the recursion
buffer (contents of entries activated in earlier passes), except in a min-activations pass.
D is the entry's ``scanDepth``, else the global depth plus the min-activations skew; D ≤ 0
means the entry sees nothing at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from narrative_cli.lore.matcher import ProbeIndex
from narrative_cli.lore.settings import MAX_SCAN_DEPTH

MARKER = "\x01"
JOINER = "\n" + MARKER

# The order SillyTavern appends opted-in sources (LoreEntry.match_sources names).
SOURCE_ORDER = (
    "persona_description",
    "character_description",
    "character_personality",
    "character_depth_prompt",
    "scenario",
    "creator_notes",
)


class ScanBuffer:
    """Messages (newest first), sources, injected texts and the growing recursion buffer."""

    def __init__(
        self,
        messages: Sequence[str],
        *,
        sources: dict[str, str] | None = None,
        injects: Sequence[str] = (),
        depth: int | None = None,
    ) -> None:
        self.messages = [text.strip() for text in messages][:MAX_SCAN_DEPTH]
        self.sources = {name: text for name, text in (sources or {}).items() if text}
        self.injects = [text for text in injects if text]
        self.depth = MAX_SCAN_DEPTH if depth is None else depth
        self.skew = 0
        self.recursion: list[str] = []
        self._views: dict[tuple[int, tuple[str, ...], bool], tuple[str, str]] = {}

    def global_depth(self) -> int:
        return self.depth + self.skew

    def entry_depth(self, scan_depth: int | None) -> int:
        depth = scan_depth if scan_depth is not None else self.global_depth()
        return min(depth, MAX_SCAN_DEPTH)

    def add_recursion(self, text: str) -> None:
        self.recursion.append(text)
        self._views.clear()

    def advance(self) -> None:
        """Widen the global scan by one message (min activations)."""
        self.skew += 1
        self._views.clear()

    def segments(self, depth: int, sources: Sequence[str], with_recursion: bool) -> list[str]:
        """The pieces of the scan text for an entry, in SillyTavern's order."""
        if depth <= 0:
            return []
        pieces = list(self.messages[:depth])
        pieces.extend(
            self.sources[name] for name in SOURCE_ORDER if name in sources and name in self.sources
        )
        pieces.extend(self.injects)
        if with_recursion:
            pieces.extend(self.recursion)
        return pieces

    def view(
        self, scan_depth: int | None, sources: tuple[str, ...], with_recursion: bool
    ) -> tuple[str, str]:
        """The scan text for an entry and its lower-cased form (cached until the buffer grows)."""
        depth = self.entry_depth(scan_depth)
        cache_key = (depth, sources, with_recursion)
        cached = self._views.get(cache_key)
        if cached is None:
            pieces = self.segments(depth, sources, with_recursion)
            text = MARKER + JOINER.join(pieces) if pieces else ""
            cached = (text, text.lower())
            self._views[cache_key] = cached
        return cached

    def probes_seen(
        self,
        index: ProbeIndex,
        *,
        lower: bool,
        depth: int,
        sources: Sequence[str] = SOURCE_ORDER,
        with_recursion: bool = True,
    ) -> set[str]:
        """Indexed strings found in any segment up to ``depth`` (and every source if asked)."""
        return scan_pieces(index, self.segments(depth, sources, with_recursion), lower)


def scan_pieces(index: ProbeIndex, pieces: Sequence[str], lower: bool) -> set[str]:
    """Indexed strings found in any of ``pieces`` (lower-cased first when ``lower``)."""
    found: set[str] = set()
    if not len(index):
        return found
    scan = index.scan_lower if lower else index.scan
    for piece in pieces:
        found.update(scan(piece))
    return found
