"""``narrative replay --diff A.json B.json``: what changed between two replay reports.

Logs are matched by label (then by path). For each log: its status on both sides, the final
state fields that differ (nested keys as dotted paths: ``state.location``,
``mvu.keeper.lamp_oil``), the turns whose summary entries differ, the turns whose rejected
events differ, and the deltas of every total (calls, tokens, latency, parse failures,
rejected events, cost). Costs come from the reports, or from ``prices`` applied to both
reports' per-agent usage when given. This is the regression loop of prompt and world-book
authors: replay the same logs before and after an edit, then diff the two reports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.pipeline.accounting import estimate_cost
from narrative_cli.replay.report import Prices, agents_of

METRICS = (
    "turns_done",
    "calls",
    "failed_calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "latency_ms",
    "parse_failures",
    "rejected_events",
    "warnings",
    "cost",
)


@dataclass(frozen=True)
class Change:
    """One value that differs: where, and its value on each side (None: absent)."""

    path: str
    a: Any
    b: Any


@dataclass
class LogDiff:
    """How one log's replay differs between report A and report B."""

    label: str
    status_a: str | None
    status_b: str | None
    state: list[Change] = field(default_factory=list)
    summaries: list[Change] = field(default_factory=list)  # path: the turn number
    rejected: list[Change] = field(default_factory=list)  # path: the turn number
    metrics: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """True when the story came out differently (status, state, summaries, rejections)."""
        moved = _outcome(self.status_a) != _outcome(self.status_b)
        return bool(moved or self.state or self.summaries or self.rejected)


@dataclass
class ReportDiff:
    """Every log's differences and the deltas of the run totals."""

    logs: list[LogDiff]
    totals: dict[str, tuple[Any, Any]]
    notes: list[str] = field(default_factory=list)  # catalog keys (replay.note_*)

    @property
    def changed(self) -> bool:
        return any(log.changed for log in self.logs)


def diff_reports(
    a: Mapping[str, Any], b: Mapping[str, Any], prices: Prices | None = None
) -> ReportDiff:
    """Compare two reports (``read_report`` dicts)."""
    logs_a, logs_b = _by_label(a), _by_label(b)
    labels = list(dict.fromkeys([*logs_a, *logs_b]))
    logs = [_log_diff(label, logs_a.get(label), logs_b.get(label), prices) for label in labels]
    totals = {key: (_total(a, key, prices), _total(b, key, prices)) for key in METRICS}
    totals["turns_done"] = (_run_turns(a), _run_turns(b))
    return ReportDiff(logs=logs, totals=totals, notes=_notes(a, b))


def _log_diff(
    label: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, prices: Prices | None
) -> LogDiff:
    diff = LogDiff(label, _status(a), _status(b))
    if a is None or b is None:
        return diff
    final_a, final_b = a.get("final_state") or {}, b.get("final_state") or {}
    for key in ("state", "mvu"):
        diff.state.extend(changes(final_a.get(key), final_b.get(key), key))
    diff.summaries = _per_turn(a, b, "summary")
    diff.rejected = _per_turn(a, b, "rejected_events")
    diff.metrics = {key: (_metric(a, key, prices), _metric(b, key, prices)) for key in METRICS}
    return diff


def changes(a: Any, b: Any, path: str = "") -> list[Change]:
    """Differences between two JSON values; mappings are walked key by key."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        found: list[Change] = []
        for key in list(dict.fromkeys([*a, *b])):
            where = f"{path}.{key}" if path else str(key)
            if key not in a:
                found.append(Change(where, None, b[key]))
            elif key not in b:
                found.append(Change(where, a[key], None))
            else:
                found.extend(changes(a[key], b[key], where))
        return found
    return [] if _canonical(a) == _canonical(b) else [Change(path, a, b)]


def delta(a: Any, b: Any) -> float | None:
    """``b - a`` for two numbers (None when either is missing)."""
    if isinstance(a, int | float) and isinstance(b, int | float):
        return b - a
    return None


def _per_turn(a: Mapping[str, Any], b: Mapping[str, Any], key: str) -> list[Change]:
    turns_a = {t.get("turn"): t.get(key) for t in a.get("turns") or []}
    turns_b = {t.get("turn"): t.get(key) for t in b.get("turns") or []}
    found = []
    for turn in sorted({*turns_a, *turns_b}, key=lambda n: n if isinstance(n, int) else -1):
        old, new = turns_a.get(turn), turns_b.get(turn)
        if _canonical(old) != _canonical(new):
            found.append(Change(str(turn), old, new))
    return found


def _metric(log: Mapping[str, Any], key: str, prices: Prices | None) -> Any:
    if key == "cost" and prices:
        return estimate_cost(agents_of(log), prices)
    if key == "turns_done":
        return log.get("turns_done")
    return (log.get("totals") or {}).get(key)


def _total(report: Mapping[str, Any], key: str, prices: Prices | None) -> Any:
    if key == "cost" and prices:
        return sum(estimate_cost(agents_of(log), prices) for log in report.get("logs") or [])
    return (report.get("totals") or {}).get(key)


def _run_turns(report: Mapping[str, Any]) -> Any:
    return (report.get("totals") or {}).get("turns")


def _by_label(report: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for log in report.get("logs") or []:
        if isinstance(log, Mapping):
            found[str(log.get("label") or log.get("log") or len(found))] = log
    return found


def _status(log: Mapping[str, Any] | None) -> str | None:
    return None if log is None else str(log.get("status") or "")


def _notes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Catalog keys (``i18n``) of what differs besides the story: the view words them."""
    notes = []
    if a.get("card_hash") != b.get("card_hash"):
        notes.append("replay.note_card")
    if a.get("settings_hash") != b.get("settings_hash"):
        notes.append("replay.note_settings")
    return notes


def _outcome(status: str | None) -> str | None:
    """``skipped`` (finished by an earlier run) counts as ``done``."""
    return "done" if status == "skipped" else status


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
