"""World-info activation as SillyTavern 1.18 does it (compat §3), for one turn.

``activate`` scans the window's messages, the current input (so a key typed this turn fires
this turn), the state summary and the recursion buffer; applies constant, sticky, decorator,
key and secondary-key rules, inclusion groups, probability rolls on the session RNG, the token
budget, recursion with delay levels, minimum activations and timed effects. It is pure: the
caller's ``TimedEffects`` and RNG state come in, and a new ``TimedEffects`` goes out.

Only entries whose keys occur in the text are examined in detail (a probe index finds them),
so a pass over thousands of entries costs about as much as scanning the text once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from narrative_cli.domain import (
    LOGIC_AND_ALL,
    LOGIC_AND_ANY,
    LOGIC_NOT_ALL,
    LOGIC_NOT_ANY,
    LoreEntry,
)
from narrative_cli.lore.assemble import RoutedLore, routed_lore
from narrative_cli.lore.buffer import ScanBuffer, scan_pieces
from narrative_cli.lore.index import LoreIndex, Prepared, index_for
from narrative_cli.lore.jskeys import RegexTimeout
from narrative_cli.lore.matcher import Key, find_word, key_matches, substitute_names
from narrative_cli.lore.results import Activation, ActivationResult, Rejection, ScanContext
from narrative_cli.lore.scan import Scan, ScanState
from narrative_cli.lore.settings import LoreSettings
from narrative_cli.lore.timed import (
    TimedEffects,
    check_effects,
    clock_for_turn,
    delay_active,
    start_effects,
)
from narrative_cli.rng import new_rng

if TYPE_CHECKING:
    from narrative_cli.domain_chat import ChatMessage

__all__ = [
    "Activation",
    "ActivationResult",
    "LoreSettings",
    "Rejection",
    "RoutedLore",
    "ScanContext",
    "TimedEffects",
    "activate",
    "routed_lore",
]

_View = tuple[str, str, set[str], set[str]]  # text, lower-cased, probes seen (lower, exact)
_LOGIC_NAMES = {
    LOGIC_AND_ANY: "AND ANY",
    LOGIC_NOT_ALL: "NOT ALL",
    LOGIC_NOT_ANY: "NOT ANY",
    LOGIC_AND_ALL: "AND ALL",
}


def activate(
    entries: Sequence[LoreEntry] | LoreIndex,
    *,
    history: Sequence[str | ChatMessage] = (),
    user_input: str = "",
    extra_text: str = "",
    settings: LoreSettings | None = None,
    rng: random.Random | None = None,
    timed: TimedEffects | None = None,
    turn: int = 1,
    context: ScanContext | None = None,
    clock: int | None = None,
) -> ActivationResult:
    """Which entries activate this turn.

    ``history`` is the window's messages, oldest first (plain strings are scanned as given;
    ``ChatMessage`` gets ``"Name: "`` when ``include_names``); ``user_input`` is scanned as the
    newest message; ``extra_text`` (the state summary) is always in view. ``turn`` (1-based)
    drives sticky/cooldown/delay on SillyTavern's message clock.
    """
    settings = settings or LoreSettings()
    context = context or ScanContext()
    names = (context.user_name, context.char_name)
    index = (
        entries
        if isinstance(entries, LoreIndex)
        else index_for(entries, settings, names, context.substitute, context.character_sources)
    )
    messages = scan_messages(history, user_input, settings.include_names, context.user_name)
    buffer = ScanBuffer(
        messages, sources=context.sources, injects=[extra_text], depth=settings.depth
    )
    clock = clock_for_turn(turn) if clock is None else clock
    timed = (timed or TimedEffects()).copy()
    effects = check_effects(timed, index.by_key, clock)
    delayed = {item.key for item in index.delayable if delay_active(item.entry, clock)}
    substitute = context.substitute or _names_substitute(names)
    rules = Rules(index, buffer, settings, context, substitute)
    scan = Scan(index, buffer, settings, rules, rng or new_rng(None), effects, delayed)
    scan.run()
    start_effects(timed, [index.entries[rank].entry for rank in scan.activated], clock)
    return ActivationResult(
        activated=_in_prompt_order(index, scan),
        rejected=[
            Rejection(index.entries[rank].entry, reason)
            for rank, reason in sorted(scan.rejected.items())
            if rank not in scan.activated
        ],
        timed=timed,
        problems=[*index.problems, *rules.timeouts],
        timeouts=list(rules.timeouts),
        budget=settings.budget,
        tokens=scan.tokens,
        steps=scan.steps,
    )


def scan_messages(
    history: Sequence[str | ChatMessage], user_input: str, include_names: bool, user_name: str
) -> list[str]:
    """The messages to scan, newest first (hidden system messages left out)."""
    texts: list[str] = []
    if history:  # a chat's types load with a chat (``lore test`` of one text needs none)
        from narrative_cli.domain_chat import ChatMessage
    for item in history:
        if isinstance(item, ChatMessage):
            if item.is_system:
                continue
            texts.append(f"{item.name}: {item.mes}" if include_names and item.name else item.mes)
        else:
            texts.append(str(item))
    if user_input.strip():
        named = include_names and user_name
        texts.append(f"{user_name}: {user_input}" if named else user_input)
    return texts[::-1]


def _names_substitute(names: tuple[str, str]) -> Callable[[str], str]:
    return lambda text: substitute_names(text, names[0], names[1])


def _in_prompt_order(index: LoreIndex, scan: Scan) -> list[Activation]:
    """SillyTavern sorts by order descending, then prepends: ascending order, ties reversed."""
    items = [index.entries[rank] for rank in scan.activated]
    items.sort(key=lambda item: -float(item.entry.order or 0))
    return [
        Activation(
            item.entry,
            item.route,
            scan.activated[item.rank][0],
            scan.activated[item.rank][1],
            item.index,
        )
        for item in reversed(items)
    ]


class Rules:
    """The per-entry decisions of one scan: gates, triggers, secondary logic, group scores."""

    def __init__(
        self,
        index: LoreIndex,
        buffer: ScanBuffer,
        settings: LoreSettings,
        context: ScanContext,
        substitute: Callable[[str], str],
    ) -> None:
        self.index = index
        self.buffer = buffer
        self.settings = settings
        self.context = context
        self.substitute = substitute
        self._seen: dict[tuple[int | None, tuple[str, ...], bool], _View] = {}
        self.timeouts: list[str] = []  # regex keys that ran out of time in this scan

    def reset_views(self) -> None:
        """Forget cached views (the buffer grew)."""
        self._seen.clear()

    def gate(
        self, item: Prepared, state: ScanState, level: int, effects: tuple[bool, bool, bool]
    ) -> str | None:
        """Why the entry may not activate in this pass (None: it may)."""
        entry = item.entry
        sticky, cooldown, delayed = effects
        if entry.disabled:
            return "disabled"
        if entry.triggers and self.context.generation not in entry.triggers:
            return f"only for {', '.join(entry.triggers)} generations"
        filtered = self._character_filter(entry)
        if filtered:
            return filtered
        if delayed:
            return f"delay: needs {entry.delay} messages in the chat"
        if cooldown and not sticky:
            return "cooldown"
        if entry.delay_until_recursion and not sticky:
            if state is not ScanState.RECURSION:
                return "delayUntilRecursion: only in recursion steps"
            if item.delay_level > level:
                return f"delayUntilRecursion: level {item.delay_level}, now at level {level}"
        if (
            state is ScanState.RECURSION
            and self.settings.recursive
            and entry.exclude_recursion
            and not sticky
        ):
            return "excludeRecursion: recursion cannot activate it"
        return None

    def _character_filter(self, entry: LoreEntry) -> str | None:
        rule = entry.character_filter or {}
        exclude = bool(rule.get("isExclude"))
        names = rule.get("names") or []
        if names:
            included = (self.context.character or self.context.char_name) in names
            if included == exclude:
                return "character filter"
        tags = rule.get("tags") or []
        if tags and self.context.character_tags is not None:
            included = any(tag in tags for tag in self.context.character_tags)
            if included == exclude:
                return "character filter (tags)"
        return None

    def trigger(self, item: Prepared, state: ScanState, sticky: bool) -> tuple[str | None, str]:
        """``(reason, "")`` to activate, ``(None, why not)``, or ``(None, "")`` for no match."""
        entry = item.entry
        decorators = item.decorators
        if "@@activate" in decorators:
            return "@@activate", ""
        if "@@dont_activate" in decorators:
            return None, "@@dont_activate"
        if entry.constant:
            return "constant", ""
        if sticky:
            return "sticky", ""
        view = self._view(item, state)
        primary = next((key for key in item.primary if self._matches(item, key, view)), None)
        if primary is None:
            return None, ""
        found = f'key "{primary.text if primary.regex is None else primary.raw}"'
        if not item.has_secondary:
            return found, ""
        return self._secondary(item, view, found)

    def _secondary(self, item: Prepared, view: _View, found: str) -> tuple[str | None, str]:
        logic = item.entry.selective_logic
        hits = [key is not None and self._matches(item, key, view) for key in item.secondary]
        name = _LOGIC_NAMES.get(logic, f"logic {logic}")
        matched = [item.entry.secondary_keys[i] for i, hit in enumerate(hits) if hit]
        if logic == LOGIC_AND_ANY and any(hits):
            return f'{found} + secondary "{matched[0]}"', ""
        if logic == LOGIC_NOT_ALL and not all(hits):
            return f"{found} + not all secondary keys ({name})", ""
        if logic == LOGIC_NOT_ANY and not any(hits):
            return f"{found} + no secondary key ({name})", ""
        if logic == LOGIC_AND_ALL and all(hits):
            return f"{found} + all secondary keys ({name})", ""
        if logic not in _LOGIC_NAMES:
            return None, f"{found}, but selectiveLogic {logic} is unknown"
        detail = f"matched: {', '.join(matched)}" if matched else "none matched"
        return None, f"{found}, but secondary keys fail {name} ({detail})"

    def score(self, item: Prepared, state: ScanState) -> int:
        """SillyTavern's group score: matching raw primary keys, plus secondary ones."""
        if not item.entry.keys:
            return 0
        text, lowered = self._view(item, state)[:2]

        def hit(key: Key | None) -> bool:
            if key is None or self._slow(key):
                return False
            try:
                return key_matches(key, text, lowered)
            except RegexTimeout as exc:
                self._timed_out(item, key, exc)
                return False

        primary = sum(1 for key in item.raw_primary if hit(key))
        secondary = sum(1 for key in item.raw_secondary if hit(key))
        if item.entry.secondary_keys:
            if item.entry.selective_logic == LOGIC_AND_ANY:
                return primary + secondary
            if item.entry.selective_logic == LOGIC_AND_ALL:
                complete = secondary == len(item.entry.secondary_keys)
                return primary + secondary if complete else primary
        return primary

    def _view(self, item: Prepared, state: ScanState) -> _View:
        """Scan text, its lower-cased form, and the probes seen in it (lower, exact)."""
        with_recursion = state is not ScanState.MIN_ACTIVATIONS
        cache_key = (item.entry.scan_depth, item.sources, with_recursion)
        view = self._seen.get(cache_key)
        if view is None:
            buffer = self.buffer
            text, lowered = buffer.view(item.entry.scan_depth, item.sources, with_recursion)
            pieces = buffer.segments(
                buffer.entry_depth(item.entry.scan_depth), item.sources, with_recursion
            )
            view = (
                text,
                lowered,
                scan_pieces(self.index.probes, pieces, True),
                scan_pieces(self.index.probes, pieces, False),
            )
            self._seen[cache_key] = view
        return view

    def _slow(self, key: Key) -> bool:
        slow = self.index.slow
        return bool(slow) and key.regex is not None and key.regex.key in slow

    def _timed_out(self, item: Prepared, key: Key, exc: RegexTimeout) -> None:
        """Report a regex that ran out of time with its entry; skip it for the session."""
        if key.regex is not None:
            self.index.slow.add(key.regex.key)
        entry = item.entry
        self.timeouts.append(f"entry {entry.uid} ({entry.comment or 'no title'}): {exc}")

    def _matches(self, item: Prepared, key: Key, view: _View) -> bool:
        if self._slow(key):
            return False
        try:
            return self._match(key, view)
        except RegexTimeout as exc:
            self._timed_out(item, key, exc)
            return False

    @staticmethod
    def _match(key: Key, view: _View) -> bool:
        text, lowered, seen_lower, seen = view
        if key.problem:
            return False
        probes = key.probes
        if probes and not all(
            probe in (seen_lower if key.probe_lower else seen) for probe in probes
        ):
            return False
        if key.regex is not None:
            choices = key.choices  # none of them anywhere in the text: it cannot match
            if choices and not any(choice in seen for choice in choices):
                return False
            return key.regex.search(text)
        if key.whole_word:
            return find_word(lowered if key.lower else text, key.text)
        return bool(probes) or key.text in (lowered if key.lower else text)
