"""The lore stage of a turn: the one entry point the orchestrator calls.

``run_lore(entries, scan, ...)`` activates world info (``engine.activate``) over the planning
window, the user's input and the state summary, groups what fired into the prompt blocks
(``assemble.routed_lore``), and says which tool and ``[mvu_update]`` entries are switched on
this turn: constant ones always, the others when one of their keys occurs in the window or the
input. Their keys are compiled once, in the cached index (``index.LoreIndex.formatting_keys``),
not on every turn.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from narrative_cli.domain import LoreEntry
from narrative_cli.lore.assemble import RoutedLore, routed_lore
from narrative_cli.lore.engine import activate
from narrative_cli.lore.index import LoreIndex, formatting_keys, index_for
from narrative_cli.lore.matcher import key_matches
from narrative_cli.lore.results import ActivationResult, ScanContext
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.routing import MVU_UPDATE
from narrative_cli.lore.settings import LoreSettings
from narrative_cli.lore.timed import TimedEffects


@dataclass(frozen=True)
class LoreScan:
    """What one turn's lore stage reads besides the entries."""

    history: list[str]  # the planning window's messages, oldest first
    user_input: str
    extra_text: str  # the state summary: always in view
    turn: int
    settings: LoreSettings
    context: ScanContext
    clock: int | None = None  # SillyTavern's message clock for timed effects (None: from turn)


@dataclass
class LoreTurn:
    """The lore stage's result: activation, prompt blocks, and the switched-on rules."""

    result: ActivationResult
    routed: RoutedLore
    mvu_rules: list[str]  # the contents of the [mvu_update] entries switched on
    index: LoreIndex
    settings: LoreSettings
    scan_text: str  # the window and the input, which formatting keys are matched against

    def switched_on(self, keys: Sequence[str], constant: bool) -> bool:
        """Whether a tool (or any formatting entry) with these keys is active this turn."""
        return constant or _matches(self.index, self.settings, keys, self.scan_text)


def run_lore(
    entries: Sequence[LoreEntry],
    scan: LoreScan,
    *,
    rng: random.Random,
    timed: TimedEffects,
) -> LoreTurn:
    """Activate ``entries`` for one turn (``rng`` and ``timed`` are the turn's own)."""
    context = scan.context
    names = (context.user_name, context.char_name)
    index = index_for(
        entries, scan.settings, names, context.substitute, context.character_sources
    )
    result = activate(
        index,
        history=scan.history,
        user_input=scan.user_input,
        extra_text=scan.extra_text,
        settings=scan.settings,
        rng=rng,
        timed=timed,
        turn=scan.turn,
        context=context,
        clock=scan.clock,
    )
    text = "\n".join([*scan.history, scan.user_input])
    lore = LoreTurn(result, routed_lore(result), [], index, scan.settings, text)
    lore.mvu_rules = [e.content for e in index.mvu_updates if lore.switched_on(e.keys, e.constant)]
    return lore


def _matches(index: LoreIndex, settings: LoreSettings, keys: Sequence[str], text: str) -> bool:
    compiled = index.formatting_keys.get(tuple(keys))
    if compiled is None:  # keys of an entry outside this index
        compiled = formatting_keys(keys, settings)
    lowered = text.lower()
    return any(key_matches(key, text, lowered) for key in compiled)


def mvu_rules_for(entries: Sequence[LoreEntry], settings: LoreSettings, text: str) -> list[str]:
    """The ``[mvu_update]`` rules a stretch of ``text`` switches on, without a turn's scan:
    the enabled entries, constant ones always and keyed ones when a key matches ``text``, as
    ``run_lore`` switches them on (the catch-up reads old turns no lore scan ran over)."""
    lowered = text.lower()
    return [
        entry.content
        for entry in routes_for(entries).enabled(MVU_UPDATE)
        if entry.constant
        or any(key_matches(key, text, lowered) for key in formatting_keys(entry.keys, settings))
    ]
