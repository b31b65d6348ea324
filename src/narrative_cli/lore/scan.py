"""The scan loop of one activation (compat §3.5): passes, probability, budget, recursion.

Each pass finds the entries that can activate, sorts sticky ones first, applies inclusion
groups, then walks them: probability roll (skipped for sticky entries and 100 %), then the
token budget (the recursion text so far plus this pass's text; ``ignoreBudget`` entries pass).
The next pass is a recursion step when recursion is on, the budget held and some new entry may
feed recursion; a min-activations pass widens the scan by one message; remaining
``delayUntilRecursion`` levels open one by one. ``max_recursion_steps`` caps the passes.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from typing import Protocol

from narrative_cli.lore.buffer import SOURCE_ORDER, ScanBuffer, scan_pieces
from narrative_cli.lore.groups import GroupContext, filter_groups
from narrative_cli.lore.index import LoreIndex, Prepared
from narrative_cli.lore.settings import LoreSettings
from narrative_cli.lore.timed import ActiveEffects
from narrative_cli.tokens import token_parts, tokens_of_parts


class ScanState(enum.Enum):
    NONE = 0
    INITIAL = 1
    RECURSION = 2
    MIN_ACTIVATIONS = 3


class ScanRules(Protocol):
    """The per-entry decisions the scan loop asks for (``engine.Rules`` makes them)."""

    substitute: Callable[[str], str]

    def reset_views(self) -> None: ...

    def trigger(self, item: Prepared, state: ScanState, sticky: bool) -> tuple[str | None, str]: ...

    def gate(
        self, item: Prepared, state: ScanState, level: int, effects: tuple[bool, bool, bool]
    ) -> str | None: ...

    def score(self, item: Prepared, state: ScanState) -> int: ...


class Scan:
    """One activation: ``activated`` maps rank → (reason, step) in activation order."""

    def __init__(
        self,
        index: LoreIndex,
        buffer: ScanBuffer,
        settings: LoreSettings,
        rules: ScanRules,
        rng: random.Random,
        effects: ActiveEffects,
        delayed: set[str],
    ) -> None:
        self.index = index
        self.buffer = buffer
        self.settings = settings
        self.rules = rules
        self.rng = rng
        self.effects = effects
        self.delayed = delayed
        self.activated: dict[int, tuple[str, int]] = {}
        self.rejected: dict[int, str] = {}
        self.failed: set[int] = set()
        self.tokens = 0
        self.steps = 0
        self.overflowed = False
        self._contents: dict[int, str] = {}
        self._scanned_recursion = 0

    def run(self) -> None:
        """Run passes until nothing new activates (or a limit stops the scan)."""
        levels = list(self.index.levels)
        level = levels.pop(0) if levels else 0
        state = ScanState.INITIAL
        recursion_parts = (0, 0)  # token_parts of every recursion text so far, each + "\n"
        limit = self.settings.max_recursion_steps
        last = ScanState.NONE
        while state is not ScanState.NONE and not (limit and self.steps >= limit):
            self.steps += 1
            self.rules.reset_views()
            # A recursion pass after an initial or recursion pass only adds text.
            fresh = state is not ScanState.RECURSION or last is ScanState.MIN_ACTIVATIONS
            last = state
            found = self._search(state, level, fresh)
            admitted = self._admit(found, state, tokens_of_parts(*recursion_parts))
            state, level = self._next_state(state, admitted, levels, level)
            if state is not ScanState.NONE:
                text = "\n".join(
                    self._content(item) for item in admitted if not item.entry.prevent_recursion
                )
                if text:
                    self.buffer.add_recursion(text)
                    cjk, other = token_parts(text + "\n")
                    recursion_parts = (recursion_parts[0] + cjk, recursion_parts[1] + other)

    def _candidates(self, state: ScanState, fresh: bool) -> list[int]:
        """Ranks worth a detailed look: always-evaluated, sticky, and key prefilter hits.

        A pass that is not ``fresh`` only adds recursion text to what the last pass saw, so it
        looks at keys found in the new text and at entries rejected before (their gates may
        open: recursion levels, secondary keys).
        """
        ranks = set(self.index.always)
        ranks.update(
            self.index.rank_of[key] for key in self.effects.sticky if key in self.index.rank_of
        )
        if fresh:
            depth = max(self.buffer.entry_depth(None), self.index.max_scan_depth)
            with_recursion = state is not ScanState.MIN_ACTIVATIONS
            pieces = self.buffer.segments(depth, SOURCE_ORDER, with_recursion)
        else:
            ranks.update(self.rejected)
            ranks.update(self.index.spanning)
            pieces = self.buffer.recursion[self._scanned_recursion :]
        self._scanned_recursion = len(self.buffer.recursion)
        by_probe = self.index.by_probe
        for lower in (True, False):
            for probe in scan_pieces(self.index.probes, pieces, lower):
                ranks.update(by_probe.get((lower, probe), ()))
        return sorted(ranks)

    def _search(self, state: ScanState, level: int, fresh: bool) -> list[tuple[Prepared, str]]:
        found: list[tuple[Prepared, str]] = []
        for rank in self._candidates(state, fresh):
            if rank in self.activated or rank in self.failed:
                continue
            item = self.index.entries[rank]
            sticky = item.key in self.effects.sticky
            reason, rejection = self.rules.trigger(item, state, sticky)
            if reason is None:
                if rejection:
                    self.rejected[rank] = rejection
                continue
            timing = (sticky, item.key in self.effects.cooldown, item.key in self.delayed)
            gate = self.rules.gate(item, state, level, timing)
            if gate is not None:
                self.rejected[rank] = gate
                continue
            found.append((item, self._describe(reason, state)))
        return found

    def _describe(self, reason: str, state: ScanState) -> str:
        if state is ScanState.RECURSION:
            return f"{reason} (recursion step {self.steps})"
        if state is ScanState.MIN_ACTIVATIONS:
            return f"{reason} (scan widened to {self.buffer.global_depth()} messages)"
        return reason

    def _admit(
        self, found: list[tuple[Prepared, str]], state: ScanState, recursion_tokens: int
    ) -> list[Prepared]:
        """Groups, probability and budget for this pass's entries; returns those activated."""
        reasons = {item.rank: reason for item, reason in found}
        sticky = self.effects.sticky
        new = sorted((item for item, _ in found), key=lambda it: (it.key not in sticky, it.rank))
        groups = GroupContext(
            sticky=sticky,
            cooldown=self.effects.cooldown,
            delayed=self.delayed,
            earlier=[self.index.entries[rank].entry for rank in self.activated],
            use_scoring=self.settings.use_group_scoring,
            score=lambda item: self.rules.score(item, state),
            rng=self.rng,
        )
        for item, why in filter_groups(new, groups):
            if not (why.endswith("earlier step") and item.rank in self.rejected):
                self.rejected[item.rank] = why  # keep why it lost the group in the first place
        budget = self.settings.budget
        cjk = other = 0  # token_parts of this pass's text: SillyTavern counts it joined
        admitted: list[Prepared] = []
        for item in new:
            entry = item.entry
            if self.overflowed and not entry.ignore_budget:
                self.rejected[item.rank] = f"budget: the {budget}-token budget is used up"
                continue
            if not self._roll(item):
                continue
            parts = token_parts(self._content(item) + "\n")
            tokens = tokens_of_parts(*parts)
            cjk, other = cjk + parts[0], other + parts[1]
            pass_tokens = tokens_of_parts(cjk, other)
            if not entry.ignore_budget and recursion_tokens + pass_tokens >= budget:
                self.overflowed = True
                total = recursion_tokens + pass_tokens
                self.rejected[item.rank] = f"budget: would reach {total} of {budget} tokens"
                continue
            self.activated[item.rank] = (reasons[item.rank], self.steps)
            self.rejected.pop(item.rank, None)
            self.tokens += tokens
            admitted.append(item)
        return admitted

    def _roll(self, item: Prepared) -> bool:
        entry = item.entry
        if not entry.use_probability or entry.probability == 100:
            return True
        if item.key in self.effects.sticky:
            return True
        roll = self.rng.random() * 100
        if roll <= entry.probability:
            return True
        self.failed.add(item.rank)
        self.rejected[item.rank] = f"probability: rolled {roll:.1f}, needed ≤ {entry.probability:g}"
        return False

    def _content(self, item: Prepared) -> str:
        content = self._contents.get(item.rank)
        if content is None:
            content = self.rules.substitute(item.entry.content)
            self._contents[item.rank] = content
        return content

    def _next_state(
        self, state: ScanState, admitted: list[Prepared], levels: list[int], level: int
    ) -> tuple[ScanState, int]:
        settings = self.settings
        feeds = any(not item.entry.prevent_recursion for item in admitted)
        nxt = ScanState.NONE
        if settings.recursive and not self.overflowed:
            if feeds or (state is ScanState.MIN_ACTIVATIONS and self.buffer.recursion):
                nxt = ScanState.RECURSION
        wanting = settings.min_activations > 0 and len(self.activated) < settings.min_activations
        if nxt is ScanState.NONE and not self.overflowed and wanting:
            depth = self.buffer.global_depth()
            cap = settings.min_activations_depth_max
            if not ((cap > 0 and depth > cap) or depth > len(self.buffer.messages)):
                nxt = ScanState.MIN_ACTIVATIONS
                self.buffer.advance()
        if nxt is ScanState.NONE and levels:
            nxt = ScanState.RECURSION
            level = levels.pop(0)
        return nxt, level
