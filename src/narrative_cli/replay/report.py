"""``--report FILE.json``: what a replay did, per log and per turn, as plain JSON.

Top level: ``format`` (``narrative-replay-report``), ``version``, ``card``, ``card_hash``,
``settings_hash``, ``responses``, ``prices``, ``totals`` and ``logs``. Each log has its
``status`` (``done``, ``skipped``: finished by an earlier run, ``failed`` with ``error`` and
``error_kind``, e.g. ``ReplayMismatch`` for prompt drift, ``cancelled``), its ``session_id``
in the store, ``totals``, per-agent usage (``agents``), its ``turns`` and its
``final_state`` (game state, MVU variables, summary lines). Each turn has its ``input``,
``mode``, ``calls``, ``failed_calls``, ``prompt_tokens``, ``completion_tokens``,
``cached_tokens``, ``latency_ms``, ``parse_failures``, ``rejected_events`` (each with its
reason), ``warnings``, its ``summary`` entries and the ``state`` text after it. Totals add
``cost`` when a price table was given.

Parse failures count the JSON replies (plan, analysis, MVU patches) that did not parse: each
corrective retry is one, and a reply still unusable after it is another.

Prices (``--prices FILE``, YAML or JSON) are per million tokens, by agent name, ``*`` for
every other agent: ``{"*": {"prompt": 0.27, "cached": 0.07, "completion": 1.1}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from narrative_cli.agents.table import json_agents
from narrative_cli.errors import BadInput
from narrative_cli.load import files
from narrative_cli.pipeline.accounting import AgentUsage, Price, TurnAccount, estimate_cost
from narrative_cli.pipeline.records import TurnRecord
from narrative_cli.replay.records import StoredRecords
from narrative_cli.replay.runner import LogOutcome, ReplayRun
from narrative_cli.state.engine import EventRecord
from narrative_cli.state.summaries import SummaryStore

REPORT_FORMAT = "narrative-replay-report"
REPORT_VERSION = 1
JSON_AGENTS = json_agents()
USAGE_KEYS = (
    "calls",
    "failed_calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "latency_ms",
)
Prices = Mapping[str, Price]


def build_report(
    run: ReplayRun, prices: Prices | None = None, *, turns: bool = True
) -> dict[str, Any]:
    """The report of a replay run (see the module doc for its keys). ``turns=False``: each
    log without its ``turns`` list, the rest the same (totals included): what the summary on
    screen reads when no ``--report`` file is written. A 2,000-turn log's turn entries held
    4 MB at the end of its replay, only to be dropped (#17, session seven)."""
    logs = [log_report(outcome, prices, turns=turns) for outcome in run.outcomes]
    return {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "card": run.card,
        "card_hash": run.card_hash,
        "settings_hash": run.settings_hash,
        "responses": run.responses,
        "prices": {name: vars(price) for name, price in prices.items()} if prices else None,
        "totals": _run_totals(logs),
        "logs": logs,
    }


def log_report(
    outcome: LogOutcome, prices: Prices | None = None, *, turns: bool = True
) -> dict[str, Any]:
    """One log: status, totals, per-agent usage, turns (unless ``turns=False``: see
    ``build_report``) and final state."""
    entries: list[dict[str, Any]] = []
    agents: dict[str, AgentUsage] = {}  # one pass: the records are read from the store as it goes
    summed = _TurnTotals()
    records = outcome.records
    if isinstance(records, StoredRecords):
        records = records.only(REPORT_FIELDS)
    for record in records:
        entry = turn_report(record, prices)
        summed.add(entry)
        if turns:
            entries.append(entry)
        _add_usage(agents, record)
    totals = summed.totals()
    totals["cost"] = estimate_cost(agents, prices) if prices else None
    report = {
        "log": outcome.log.path,
        "label": outcome.log.label,
        "kind": outcome.log.kind,
        "status": outcome.status,
        "error": outcome.error,
        "error_kind": outcome.error_kind,
        "hint": outcome.hint,
        "session_id": outcome.session_id,
        "seed": outcome.seed,
        "turns_total": len(outcome.log.turns),
        "turns_done": summed.count,
        "played_now": outcome.played,
        "seconds": round(outcome.seconds, 3),
        "log_warnings": list(outcome.log.warnings),
        "totals": totals,
        "agents": {name: usage.to_dict() for name, usage in agents.items()},
        "turns": entries,
        "final_state": final_state(outcome.final),
    }
    if not turns:
        del report["turns"]
    return report


class _TurnTotals:
    """A log's totals, added up turn entry by turn entry as they are made (in turn order, as
    a sum over the list of entries adds them), so the entries need not be kept."""

    KEYS = (*USAGE_KEYS, "parse_failures")

    def __init__(self) -> None:
        self.count = 0
        self.sums: dict[str, Any] = dict.fromkeys(self.KEYS, 0)
        self.rejected = self.warnings = 0

    def add(self, entry: Mapping[str, Any]) -> None:
        self.count += 1
        for key in self.KEYS:
            self.sums[key] += entry.get(key) or 0
        self.rejected += len(entry["rejected_events"])
        self.warnings += len(entry["warnings"])

    def totals(self) -> dict[str, Any]:
        found = {key: _rounded(value) for key, value in self.sums.items()}
        found["rejected_events"] = self.rejected
        found["warnings"] = self.warnings
        return found


# The fields of a turn record that ``turn_report`` and ``_add_usage`` read.
REPORT_FIELDS = frozenset(
    ("user_input", "mode", "usage", "warnings", "events_rejected", "summary_entries",
     "state_text", "narrative")
)  # fmt: skip


def turn_report(record: TurnRecord, prices: Prices | None = None) -> dict[str, Any]:
    """One turn from its stored record (reads only ``REPORT_FIELDS`` and its number)."""
    account = record.usage
    total = account.total()
    warnings = list(record.warnings)
    entry: dict[str, Any] = {
        "turn": record.number,
        "input": record.user_input,
        "mode": record.mode,
        **{key: _rounded(getattr(total, key)) for key in USAGE_KEYS},
        "estimated": total.estimated,
        "parse_failures": parse_failures(account, warnings),
        "rejected_events": [_rejected(e) for e in record.events_rejected],
        "warnings": warnings,
        "summary": list(record.summary_entries),
        "state": record.state_text,
        "narrative_chars": len(record.narrative),
    }
    if prices:
        entry["cost"] = estimate_cost(account.agents, prices)
    return entry


def parse_failures(account: TurnAccount, warnings: list[str]) -> int:
    """JSON replies that did not parse: corrective retries plus replies unusable after one."""
    retries = 0
    for agent in JSON_AGENTS:
        usage = account.agents.get(agent)
        if usage is not None:
            retries += max(0, usage.calls - usage.failed_calls - 1)
    unusable = sum(1 for w in warnings if "unusable" in w or "no usable" in w)
    return retries + unusable


def final_state(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The state a log ended in: turn, game state, MVU variables, summary lines."""
    if not snapshot:
        return {}
    summaries = snapshot.get("summaries") or {}
    lang = str(summaries.get("lang") or "en") if isinstance(summaries, dict) else "en"
    return {
        "turn": snapshot.get("turn"),
        "state": snapshot.get("state") or {},
        "mvu": snapshot.get("mvu"),
        "summaries": SummaryStore.from_dict(summaries, lang).lines(),
    }


def write_report(report: Mapping[str, Any], path: str | Path, *, force: bool = False) -> None:
    """Write the report as indented UTF-8 JSON (atomically; an existing file needs ``force``)."""
    text = json.dumps(report, ensure_ascii=False, indent=1)
    files.write_text(path, text + "\n", error=BadInput, kind="report", force=force)


def read_report(path: str | Path) -> dict[str, Any]:
    """A report written by ``--report``; BadInput names the file when it is not one."""
    data = files.read_json(path, limit=files.MAX_CHAT_BYTES, error=BadInput, kind="report")
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise BadInput(f"{path}: not a replay report (written by narrative replay --report)")
    if not isinstance(data.get("logs"), list):
        raise BadInput(f"{path}: the replay report has no 'logs' list")
    return data


def load_prices(path: str | Path) -> dict[str, Price]:
    """A price table file: agent (or ``*``) → prompt / cached / completion per million."""
    import yaml  # only a price table needs it: not imported by every replay

    text = files.read_text(path, limit=files.MAX_TEXT_BYTES, error=BadInput, kind="price table")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadInput(
            f"{path}: the price table is not YAML or JSON ({type(exc).__name__})"
        ) from None
    if not isinstance(data, dict) or not data:
        raise BadInput(f"{path}: the price table should map agent names (or '*') to prices")
    return {str(name): _price(value, f"{path}: {name}") for name, value in data.items()}


def _price(value: Any, where: str) -> Price:
    if not isinstance(value, dict):
        raise BadInput(f"{where}: expected prompt, cached and completion prices per million")
    unknown = set(value) - {"prompt", "cached", "completion"}
    if unknown:
        raise BadInput(f"{where}: unknown key {sorted(unknown)[0]!r} (prompt, cached, completion)")
    try:
        numbers = {key: float(number) for key, number in value.items()}
    except (TypeError, ValueError):
        raise BadInput(f"{where}: prices must be numbers") from None
    if any(number < 0 for number in numbers.values()):
        raise BadInput(f"{where}: prices cannot be negative")
    return Price(**numbers)


def agents_of(log: Mapping[str, Any]) -> dict[str, AgentUsage]:
    """A report log's per-agent usage, as accounting objects (for re-pricing in a diff)."""
    raw = log.get("agents") or {}
    return {str(k): AgentUsage.from_dict(v) for k, v in raw.items() if isinstance(v, dict)}


def _add_usage(agents: dict[str, AgentUsage], record: TurnRecord) -> None:
    for name, usage in record.usage.agents.items():
        agents.setdefault(name, AgentUsage()).add(usage)


def _run_totals(logs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = (*USAGE_KEYS, "parse_failures", "rejected_events", "warnings")
    totals = _sum([log["totals"] for log in logs], keys)
    costs = [log["totals"]["cost"] for log in logs if log["totals"]["cost"] is not None]
    totals["cost"] = sum(costs) if costs else None
    totals["logs"] = len(logs)
    totals["turns"] = sum(log["turns_done"] for log in logs)
    totals["failed_logs"] = sum(1 for log in logs if log["status"] in ("failed", "cancelled"))
    return totals


def _sum(items: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: _rounded(sum(item.get(key) or 0 for item in items)) for key in keys}


def _rounded(value: Any) -> Any:
    return round(value, 1) if isinstance(value, float) else value


def _rejected(event: EventRecord) -> dict[str, Any]:
    """A rejected event as the report shows it (its stored form, without clock and turn)."""
    stored = event.to_dict()
    return {k: stored[k] for k in ("type", "event", "reason", "notes") if k in stored}
