"""``narrative lore lint``: what is wrong with a lorebook before anyone plays it.

Findings, each with a level: ``error`` (an entry that can never fire: no usable key, a regex
we cannot run, contradictory secondary logic), ``warning`` (a ``/…/`` key JavaScript would not
compile, so it is plain text; duplicates; constant entries past the token budget; keys that
whole-word matching never finds in the card's own Chinese text; fields SillyTavern would not
read), and per entry its token cost and whether it keeps a cached prompt prefix stable.
``lore lint`` exits 1 when there is an error, 0 otherwise (2: bad input).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.domain import (
    LOGIC_AND_ALL,
    LOGIC_AND_ANY,
    LOGIC_NOT_ALL,
    LOGIC_NOT_ANY,
    POSITION_AT_DEPTH,
    Card,
    Lorebook,
    LoreEntry,
)
from narrative_cli.i18n import t
from narrative_cli.lore.index import Prepared, build_index, sort_entries, st_decorators
from narrative_cli.lore.jsregex import TIME_LIMIT, nested_quantifier
from narrative_cli.lore.matcher import Key, find_word
from narrative_cli.lore.routed import routes_for
from narrative_cli.lore.routing import WORLDINFO3
from narrative_cli.lore.settings import LoreSettings
from narrative_cli.tokens import token_parts, tokens_of_parts

ERROR, WARNING = "error", "warning"
_KNOWN_LOGIC = (LOGIC_AND_ANY, LOGIC_NOT_ALL, LOGIC_NOT_ANY, LOGIC_AND_ALL)


@dataclass(frozen=True)
class Words:
    """A value of a finding that is itself a catalog message (e.g. "no title")."""

    key: str


@dataclass
class Finding:
    """One problem: ``key`` and ``values`` name a catalog message (``lint.find_*``), so the
    screen can show it in the card's language while ``--json`` keeps the English ``message``."""

    level: str
    entry: LoreEntry | None
    key: str
    values: dict[str, object] = field(default_factory=dict)

    @property
    def message(self) -> str:
        return self.text("en")

    def text(self, lang: str | None) -> str:
        values = {name: t(value.key, lang) if isinstance(value, Words) else value
                  for name, value in self.values.items()}  # fmt: skip
        return t(self.key, lang, **values)

    def line(self, lang: str | None = "en") -> str:
        """The finding as one line in ``lang``."""
        entry = self.entry
        where = (t("lint.where", lang, uid=entry.uid,
                   title=entry.comment or t("lint.no_title", lang)) if entry else "")
        return t("lint.error" if self.level == ERROR else "lint.warning", lang,
                 where=where, message=self.text(lang))


@dataclass
class Cost:
    entry: LoreEntry
    tokens: int
    route: str
    prefix: str  # stable (same each turn) | changes (comes and goes) | tail (re-read each turn) | -


@dataclass
class LintReport:
    findings: list[Finding] = field(default_factory=list)
    costs: list[Cost] = field(default_factory=list)
    budget: int = 0

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.level == ERROR)


def lint(entries: Sequence[LoreEntry], settings: LoreSettings, texts: Sequence[str] = ()
         ) -> LintReport:
    """Lint ``entries``; ``texts`` are the card's own texts (for the whole-word check)."""
    report = LintReport(budget=settings.budget)
    index = build_index(entries, settings)
    prepared = {id(item.entry): item for item in index.entries}
    corpus = "\n".join([*texts, *(e.content for e in entries)]).lower()
    routes = routes_for(entries)
    for entry in entries:
        if routes.is_formatting(entry):
            continue
        item = prepared.get(id(entry))
        if item is None:
            continue
        _shape(report, entry)
        _keys(report, item)
        if not entry.disabled:
            _never_fires(report, item)
            _whole_words(report, item, corpus)
        report.costs.append(_cost(entry, routes.route_of(entry).name))
    _duplicates(report, entries)
    _constant_budget(report, entries, settings)
    _uncached_constants(report)
    return report


def _shape(report: LintReport, entry: LoreEntry) -> None:
    for name in ("key", "keysecondary"):
        if name in entry.extra:
            report.findings.append(Finding(WARNING, entry, "lint.find_not_list",
                                           {"name": name, "value": repr(entry.extra[name])}))
    if "position" in entry.extra:
        report.findings.append(Finding(WARNING, entry, "lint.find_position",
                                       {"value": repr(entry.extra["position"])}))


def _keys(report: LintReport, item: Prepared) -> None:
    for key in [*item.primary, *(k for k in item.secondary if k is not None)]:
        if key.problem:
            report.findings.append(Finding(ERROR, item.entry, "lint.find_bad_key",
                                           {"problem": key.problem}))
        elif key.note:
            report.findings.append(Finding(WARNING, item.entry, "lint.find_as_written",
                                           {"text": key.note}))
        elif key.regex is not None and nested_quantifier(key.regex.source):
            report.findings.append(Finding(
                WARNING, item.entry, "lint.find_nested",
                {"regex": key.raw, "ms": f"{TIME_LIMIT * 1000:.0f}"}))


def _never_fires(report: LintReport, item: Prepared) -> None:
    entry = item.entry
    if entry.constant or "@@activate" in item.decorators:
        return
    if "@@dont_activate" in st_decorators(entry.decorators):
        report.findings.append(Finding(WARNING, entry, "lint.find_dont_activate"))
        return
    usable = [key for key in item.primary if not key.problem]
    if not usable:
        key = "lint.find_no_keys" if not entry.keys else "lint.find_no_usable_key"
        report.findings.append(Finding(ERROR, entry, key))
        return
    if not item.has_secondary:
        return
    logic = entry.selective_logic
    if logic not in _KNOWN_LOGIC:
        report.findings.append(Finding(ERROR, entry, "lint.find_bad_logic",
                                       {"logic": repr(logic)}))
        return
    primary = {_plain(key) for key in usable}
    secondary = {_plain(key) for key in item.secondary if key is not None}
    if logic == LOGIC_NOT_ANY and primary <= secondary:
        report.findings.append(Finding(ERROR, entry, "lint.find_not_any"))
    elif logic == LOGIC_NOT_ALL and len(primary) == 1 and secondary == primary:
        report.findings.append(Finding(ERROR, entry, "lint.find_not_all"))
    elif logic in (LOGIC_AND_ANY, LOGIC_AND_ALL) and not any(
        key is not None for key in item.secondary
    ):
        report.findings.append(Finding(ERROR, entry, "lint.find_empty_secondary"))


def _plain(key: Key) -> str:
    return key.raw if key.regex is not None else key.text


def _whole_words(report: LintReport, item: Prepared, corpus: str) -> None:
    for key in item.primary:
        if not key.whole_word or key.regex is not None or not key.text:
            continue
        needle = key.text.lower()
        count = corpus.count(needle)
        if count and not find_word(corpus, needle):
            at = corpus.find(needle)
            sample = corpus[max(0, at - 6): at + len(needle) + 6].replace("\n", " ")
            report.findings.append(Finding(
                WARNING, item.entry, "lint.find_glued",
                {"word": repr(key.raw), "count": count, "sample": sample}))


def _cost(entry: LoreEntry, route: str) -> Cost:
    tokens = tokens_of_parts(*token_parts(entry.content))
    if route in ("disabled", "unrouted"):
        prefix = "-"
    elif entry.constant and not (entry.sticky or entry.cooldown or entry.delay):
        # <worldinfo3> follows the story window (the design's order), which grows every
        # turn: a constant there is the same text, but no prefix cache reaches it
        prefix = "tail" if route == WORLDINFO3 else "stable"
    elif entry.position == POSITION_AT_DEPTH and entry.depth <= 4:
        prefix = "tail"
    else:
        prefix = "changes"
    return Cost(entry, tokens, route, prefix)


UNCACHED_TOKENS = 300  # constants after the story window past this many tokens: a warning


def _uncached_constants(report: LintReport) -> None:
    """Constant entries in ``<worldinfo3>``: planning and writing evaluate them again every
    turn. The design asks authors to keep that block lean and to put large constant text at
    ↑Char (``<worldinfo2>``, before the story window), where a prefix cache keeps it."""
    after = [c for c in report.costs if c.route == WORLDINFO3 and c.prefix == "tail"]
    tokens = sum(c.tokens for c in after)
    if tokens >= UNCACHED_TOKENS:
        uids = ", ".join(str(c.entry.uid) for c in after)
        report.findings.append(Finding(WARNING, None, "lint.find_uncached",
                                       {"uids": uids, "tokens": tokens}))


def _duplicates(report: LintReport, entries: Sequence[LoreEntry]) -> None:
    by_content: dict[str, list[LoreEntry]] = defaultdict(list)
    routes = routes_for(entries)
    for entry in entries:
        if entry.content.strip() and not routes.is_formatting(entry):
            by_content[entry.content.strip()].append(entry)
    for group in by_content.values():
        for twin in group[1:]:
            first = group[0]
            key = "lint.find_duplicate_in" if first.source != twin.source else "lint.find_duplicate"
            report.findings.append(Finding(WARNING, twin, key,
                                           {"uid": first.uid, "source": first.source,
                                            "title": first.comment or Words("lint.no_title")}))


def _constant_budget(report: LintReport, entries: Sequence[LoreEntry],
                     settings: LoreSettings) -> None:
    """Constants in priority order, counted like SillyTavern: past the budget they drop."""
    cjk = other = 0
    for index in sort_entries(entries, settings.character_strategy):
        entry = entries[index]
        if not entry.constant or entry.disabled or entry.ignore_budget:
            continue
        if routes_for(entries).is_formatting(entry):
            continue
        parts = token_parts(entry.content + "\n")
        cjk, other = cjk + parts[0], other + parts[1]
        total = tokens_of_parts(cjk, other)
        if total >= settings.budget:
            report.findings.append(Finding(
                WARNING, entry, "lint.find_over_budget",
                {"total": total, "budget": settings.budget}))



def lint_card(card: Card, worlds: Sequence[Lorebook], lore: dict[str, Any] | None = None
              ) -> LintReport:
    """Lint the card's book and the world files with the configured lore settings."""
    entries = [*(card.character_book.entries if card.character_book else [])]
    for world in worlds:
        entries.extend(world.entries)
    texts = [card.description, card.personality, card.scenario, card.first_mes,
             *card.alternate_greetings, card.mes_example]
    return lint(entries, LoreSettings.from_dict(lore), texts)


def report_lines(report: LintReport, lang: str | None = "en",
                 width: int | None = None) -> list[str]:
    """The findings, then a cost table, then a one-line summary (headers in ``lang``).

    ``width``: the terminal's columns; a title longer than the room left goes on under its
    column instead of past the edge (a finding stays one line, as a compiler prints it)."""
    lines = [finding.line(lang) for finding in report.findings]
    if report.costs:
        lines.append("")
        head = [t(f"lint.col_{name}", lang) for name in ("uid", "tokens", "route", "prefix")]
        lines.append(f"{_pad(head[0], 6)} {_pad(head[1], 6)}  {_pad(head[2], 11, left=True)} "
                     f"{_pad(head[3], 8, left=True)} " + t("lint.col_title", lang))
        room = max(width - TITLE_AT, 12) if width else None
        for cost in report.costs:
            title, *more = _wrap(cost.entry.comment, room)
            lines.append(f"{cost.entry.uid!s:>6} {cost.tokens:>6}  {cost.route:<11} "
                         f"{cost.prefix:<8} {title}")
            lines += [" " * TITLE_AT + part for part in more]
    warnings = len(report.findings) - report.errors
    lines.append(t("lint.summary", lang, errors=report.errors, warnings=warnings,
                   entries=len(report.costs), budget=report.budget))
    return lines


TITLE_AT = 36  # the column where the cost table's title starts


def _cells(text: str) -> int:
    """Terminal cells of ``text`` (a CJK character takes two)."""
    from unicodedata import east_asian_width

    return sum(2 if east_asian_width(char) in "WF" else 1 for char in text)


def _pad(text: str, width: int, *, left: bool = False) -> str:
    """``text`` padded to ``width`` cells (right-aligned unless ``left``)."""
    fill = " " * max(width - _cells(text), 0)
    return text + fill if left else fill + text


def _wrap(text: str, room: int | None) -> list[str]:
    """``text`` in lines of at most ``room`` cells, broken between words (inside a word only
    when it alone is wider, as Chinese text is)."""
    if room is None or _cells(text) <= room:
        return [text]
    lines: list[str] = [""]
    for word in text.split(" "):
        joined = f"{lines[-1]} {word}" if lines[-1] else word
        if _cells(joined) <= room:
            lines[-1] = joined
            continue
        if lines[-1]:
            lines.append("")
        for char in word:
            if _cells(lines[-1] + char) > room:
                lines.append("")
            lines[-1] += char
    return lines


def report_json(report: LintReport) -> dict[str, Any]:
    return {
        "findings": [
            {"level": f.level, "uid": f.entry.uid if f.entry else None,
             "comment": f.entry.comment if f.entry else "", "message": f.message}
            for f in report.findings
        ],
        "entries": [
            {"uid": c.entry.uid, "comment": c.entry.comment, "tokens": c.tokens,
             "route": c.route, "prefix": c.prefix}
            for c in report.costs
        ],
        "budget": report.budget,
    }
