"""The lore engine's activation and rejection reasons in the reader's language.

The engine writes its reasons in English (``key "fog" + secondary "harbor"``, ``budget:
would reach 900 of 800 tokens``): they are stored in traces and ``lore test --json`` and must
stay as they are. ``reason_words`` rewrites one for the screen, piece by piece, through the
message catalogs (``lore.reason_*``); English goes through the same templates and comes out
unchanged, and a reason no rule knows is shown as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from narrative_cli.i18n import t


class Rules:
    """(pattern, catalog key) pairs for :func:`rewrite`, each pattern compiled when a text
    first reaches it: a screen of reasons tries the first dozen rules or so, and compiling
    all of them at import cost ``lore test`` about 5 ms of CPU."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self._pairs = tuple(pairs)
        self._compiled: list[re.Pattern[str] | None] = [None] * len(self._pairs)

    def __iter__(self) -> Iterator[tuple[re.Pattern[str], str]]:
        for index, (pattern, key) in enumerate(self._pairs):
            compiled = self._compiled[index]
            if compiled is None:
                compiled = self._compiled[index] = re.compile(pattern, re.DOTALL)
            yield compiled, key


def compile_rules(pairs: Iterable[tuple[str, str]]) -> Rules:
    """(pattern, catalog key) pairs for :func:`rewrite` (compiled as they are first tried)."""
    return Rules(pairs)


def rewrite(text: str, rules: Rules, lang: str | None, logic: bool = False) -> str:
    """``text`` through the first rule whose pattern matches it whole, in ``lang``; an
    ``inner`` group is rewritten in turn (and a ``logic`` group named, with ``logic``); text
    no rule knows comes back as written."""
    for pattern, key in rules:
        found = pattern.fullmatch(text)
        if found is not None:
            values = found.groupdict()
            if "inner" in values:
                values["inner"] = rewrite(values["inner"], rules, lang, logic)
            if logic and "logic" in values:
                values["logic"] = _logic(values["logic"], lang)
            return t(key, lang, **values)
    return text

_KEY = r'key ".*"'
_LOGIC = r"(?P<logic>AND ANY|NOT ALL|NOT ANY|AND ALL|logic -?\d+)"
_GROUP = r"group '(?P<label>.*)'"

# (pattern, catalog key); ``inner`` groups are reasons themselves, rewritten in turn.
_RULES = compile_rules(
    (
        (r"(?P<inner>.+) \(recursion step (?P<step>\d+)\)", "lore.reason_recursion_step"),
        (r"(?P<inner>.+) \(scan widened to (?P<count>\d+) messages\)", "lore.reason_widened"),
        (rf'(?P<inner>{_KEY}) \+ secondary "(?P<word>.*)"', "lore.reason_secondary"),
        (rf"(?P<inner>{_KEY}) \+ not all secondary keys \({_LOGIC}\)", "lore.reason_not_all"),
        (rf"(?P<inner>{_KEY}) \+ no secondary key \({_LOGIC}\)", "lore.reason_no_secondary"),
        (rf"(?P<inner>{_KEY}) \+ all secondary keys \({_LOGIC}\)", "lore.reason_all_secondary"),
        (rf"(?P<inner>{_KEY}), but selectiveLogic (?P<number>-?\d+) is unknown",
         "lore.reason_unknown_logic"),
        (rf"(?P<inner>{_KEY}), but secondary keys fail {_LOGIC} \(none matched\)",
         "lore.reason_fail_none"),
        (rf"(?P<inner>{_KEY}), but secondary keys fail {_LOGIC} \(matched: (?P<matched>.*)\)",
         "lore.reason_fail_some"),
        (r'key "(?P<word>.*)"', "lore.reason_key"),
        (r"constant", "lore.reason_constant"),
        (r"sticky", "lore.reason_sticky"),
        (r"disabled", "lore.reason_disabled"),
        (r"cooldown", "lore.reason_cooldown"),
        (r"only for (?P<triggers>.+) generations", "lore.reason_triggers"),
        (r"delay: needs (?P<count>\d+) messages in the chat", "lore.reason_delay"),
        (r"delayUntilRecursion: only in recursion steps", "lore.reason_until_recursion"),
        (r"delayUntilRecursion: level (?P<level>\d+), now at level (?P<now>\d+)",
         "lore.reason_recursion_level"),
        (r"excludeRecursion: recursion cannot activate it", "lore.reason_exclude_recursion"),
        (r"character filter", "lore.reason_character"),
        (r"character filter \(tags\)", "lore.reason_character_tags"),
        (rf"{_GROUP} already has an entry from an earlier step", "lore.reason_group_earlier"),
        (rf"{_GROUP}: sticky entry (?P<uid>\S+) holds it", "lore.reason_group_sticky"),
        (rf"{_GROUP}: on cooldown", "lore.reason_group_cooldown"),
        (rf"{_GROUP}: delayed", "lore.reason_group_delayed"),
        (rf"{_GROUP}: matched (?P<score>\d+) keys, another member (?P<best>\d+)",
         "lore.reason_group_score"),
        (rf"{_GROUP}: entry (?P<uid>\S+) has priority \(groupOverride\)",
         "lore.reason_group_override"),
        (rf"{_GROUP}: entry (?P<uid>\S+) won the weighted roll", "lore.reason_group_roll"),
        (r"budget: the (?P<budget>\d+)-token budget is used up", "lore.reason_budget_used"),
        (r"budget: would reach (?P<total>\d+) of (?P<budget>\d+) tokens",
         "lore.reason_budget_reach"),
        (r"probability: rolled (?P<roll>[\d.]+), needed ≤ (?P<needed>\S+)",
         "lore.reason_probability"),
    )
)

_LOGIC_KEYS = {"AND ANY": "lore.logic_and_any", "NOT ALL": "lore.logic_not_all",
               "NOT ANY": "lore.logic_not_any", "AND ALL": "lore.logic_and_all"}  # fmt: skip


def reason_words(reason: str, lang: str | None) -> str:
    """``reason`` as the engine wrote it, in ``lang`` (unchanged when no rule knows it)."""
    return rewrite(reason, _RULES, lang, logic=True)


def _logic(name: str, lang: str | None) -> str:
    key = _LOGIC_KEYS.get(name)
    return t(key, lang) if key else name
