"""Inclusion groups (compat §3.7): at most one entry of a group activates per pass.

Applied to the entries newly activated in one pass, in this order: a sticky member holds its
group; members on cooldown or delay drop out; group scoring keeps only the best-scoring members;
a group that already has an active entry from an earlier pass admits no more; a member with
``groupOverride`` wins by highest ``order``; otherwise a weighted roll on the session RNG picks
the winner. An entry can belong to several groups (``group`` is comma-separated).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from narrative_cli.domain import LoreEntry
from narrative_cli.lore.index import Prepared, split_groups


@dataclass
class GroupContext:
    """What the group filter needs to know about the scan."""

    sticky: set[str]  # timed keys of sticky-active entries
    cooldown: set[str]
    delayed: set[str]
    earlier: Iterable[LoreEntry]  # entries activated in earlier passes
    use_scoring: bool  # the global setting
    score: Callable[[Prepared], int]
    rng: random.Random


def filter_groups(new: list[Prepared], ctx: GroupContext) -> list[tuple[Prepared, str]]:
    """Remove group losers from ``new`` (in place); return each loser with the reason."""
    grouped: dict[str, list[Prepared]] = {}
    for item in new:
        for label in item.groups:
            grouped.setdefault(label, []).append(item)
    removed: dict[int, tuple[Prepared, str]] = {}

    def remove(item: Prepared, reason: str) -> None:
        if item.rank not in removed:
            removed[item.rank] = (item, reason)

    held = _timed(grouped, ctx, remove)
    _scoring(grouped, ctx, held, remove)
    # Every label of an earlier entry holds its group (SillyTavern compares the whole
    # ``group`` string, so an entry in two groups holds neither: docs/lore-fidelity.md).
    earlier_groups = {label for entry in ctx.earlier for label in split_groups(entry.group)}
    for label, members in grouped.items():
        if label in held:
            continue
        if label in earlier_groups:
            for item in members:
                remove(item, f"group '{label}' already has an entry from an earlier step")
            continue
        if len(members) > 1:
            _pick_winner(label, members, ctx.rng, remove)
    new[:] = [item for item in new if item.rank not in removed]
    return list(removed.values())


def _timed(
    grouped: dict[str, list[Prepared]],
    ctx: GroupContext,
    remove: Callable[[Prepared, str], None],
) -> set[str]:
    """Sticky members hold their group; cooldown/delay members drop out. Returns held labels."""
    held: set[str] = set()
    for label, members in grouped.items():
        sticky = [item for item in members if item.key in ctx.sticky]
        if sticky:
            held.add(label)
            for item in members:
                if item.key not in ctx.sticky:
                    remove(item, f"group '{label}': sticky entry {sticky[0].entry.uid} holds it")
        for item in members:
            if item.key in ctx.cooldown:
                remove(item, f"group '{label}': on cooldown")
            elif item.key in ctx.delayed:
                remove(item, f"group '{label}': delayed")
    return held


def _scoring(
    grouped: dict[str, list[Prepared]],
    ctx: GroupContext,
    held: set[str],
    remove: Callable[[Prepared, str], None],
) -> None:
    """Members that use scoring and match fewer keys than the best member drop out."""
    for label, members in grouped.items():
        if label in held:
            continue
        if not ctx.use_scoring and not any(item.entry.use_group_scoring for item in members):
            continue
        scores = [ctx.score(item) for item in members]
        best = max(scores)
        kept: list[Prepared] = []
        for item, score in zip(members, scores, strict=True):
            scored = item.entry.use_group_scoring
            scored = ctx.use_scoring if scored is None else scored
            if scored and score < best:
                remove(item, f"group '{label}': matched {score} keys, another member {best}")
            else:
                kept.append(item)
        members[:] = kept


def _pick_winner(
    label: str,
    members: list[Prepared],
    rng: random.Random,
    remove: Callable[[Prepared, str], None],
) -> None:
    prios = sorted(
        (item for item in members if item.entry.group_override),
        key=lambda item: -float(item.entry.order or 0),
    )
    if prios:
        winner = prios[0]
        reason = f"group '{label}': entry {winner.entry.uid} has priority (groupOverride)"
    else:
        weights = [_weight(item.entry) for item in members]
        roll = rng.random() * sum(weights)
        cumulative = 0.0
        found: Prepared | None = None
        for item, weight in zip(members, weights, strict=True):
            cumulative += weight
            if roll <= cumulative:
                found = item
                break
        if found is None:
            return
        winner = found
        reason = f"group '{label}': entry {winner.entry.uid} won the weighted roll"
    for item in members:
        if item is not winner:
            remove(item, reason)


def _weight(entry: LoreEntry) -> float:
    return float(entry.group_weight if entry.group_weight is not None else 100)
