"""``narrative replay`` on screen: progress per log and overall, the summary, the report diff.

``RichReplayView`` is the ``replay.batch.ReplayView`` that ``cli`` hands to ``run_replay`` /
``run_diff`` (the orchestration lives in ``replay.batch``). Progress goes to stderr: live bars
on a terminal (one per running log, one overall), one line per finished log elsewhere. The
summary table goes to stdout, failures to stderr as ``error:`` lines.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from narrative_cli.i18n import t
from narrative_cli.replay.diff import LogDiff, ReportDiff, delta
from narrative_cli.replay.logs import ReplayLog
from narrative_cli.replay.runner import Progress
from narrative_cli.ui.console import Consoles, is_terminal, make_consoles, safe_markup

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

STATUS_STYLE = {"done": "ok", "skipped": "dim", "failed": "error", "cancelled": "warn"}
PREVIEW = 70


class RichReplayView:
    """``replay.batch.ReplayView`` on a pair of Rich consoles."""

    def __init__(self, consoles: Consoles, lang: str = "en") -> None:
        self.consoles = consoles
        self.lang = lang

    @classmethod
    def create(cls, *, no_color: bool = False, lang: str = "en") -> RichReplayView:
        return cls(make_consoles(no_color), lang)

    def progress(self, logs: Sequence[ReplayLog]) -> ReplayProgress:
        return ReplayProgress(self.consoles, logs, self.lang)

    def summary(self, report: Mapping[str, Any]) -> None:
        render_summary(report, self.consoles, self.lang)

    def diff(self, diff: ReportDiff, name_a: str, name_b: str) -> None:
        render_diff(diff, self.consoles, name_a, name_b, self.lang)


# -- progress -------------------------------------------------------------------------------


class ReplayProgress:
    """A progress listener: Rich bars on a terminal, plain lines elsewhere (thread-safe)."""

    def __init__(self, consoles: Consoles, logs: Sequence[ReplayLog], lang: str = "en") -> None:
        self.console = consoles.err
        self.lang = lang
        self.total = sum(len(log.turns) for log in logs)
        self.live = consoles.live and is_terminal(consoles.err.file)
        self._lock = threading.Lock()
        self._bars: RichProgress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._done: dict[str, int] = {}
        self._overall: TaskID | None = None

    def __enter__(self) -> ReplayProgress:
        if self.live:
            # Imported here: the bars (rich.progress, rich.live) exist only on a terminal; a
            # replay whose output goes to a file or pipe does not pay for them at start-up.
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bars = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._bars.start()
            self._overall = self._bars.add_task(t("replay.all_logs", self.lang), total=self.total)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bars is not None:
            self._bars.stop()

    def __call__(self, event: Progress) -> None:
        with self._lock:
            before = self._done.get(event.label, 0)
            self._done[event.label] = event.done
            if self._bars is not None:
                self._update_bars(event, event.done - before)
            elif event.kind not in ("start", "turn"):
                self.console.print(_finished_line(event, self.lang), highlight=False)

    def _update_bars(self, event: Progress, advanced: int) -> None:
        bars = self._bars
        assert bars is not None and self._overall is not None
        if event.label not in self._tasks:
            label = safe_markup(event.label)
            self._tasks[event.label] = bars.add_task(label, total=event.total, completed=0)
        task = self._tasks[event.label]
        bars.update(task, completed=event.done)
        bars.update(self._overall, advance=max(advanced, 0))
        if event.kind not in ("start", "turn"):
            bars.update(task, visible=False)
            bars.console.print(_finished_line(event, self.lang), highlight=False)


def _finished_line(event: Progress, lang: str = "en") -> str:
    style = STATUS_STYLE.get(event.kind, "")
    word = f"[{style}]{event.kind:<9}[/{style}]" if style else f"{event.kind:<9}"
    return f"{word} {safe_markup(event.label)} " + t("replay.turns_done", lang, done=event.done,
                                                       total=event.total)


# -- summary --------------------------------------------------------------------------------


def render_summary(report: Mapping[str, Any], consoles: Consoles, lang: str = "en") -> None:
    """The per-log table with a totals row, then failures and log warnings on stderr."""
    priced = report["totals"].get("cost") is not None
    table = _table(t("replay.title", lang))
    columns = ["log", "status", "turns", "calls", "prompt", "output", "cached", "time"]
    for name in [*columns, "parse", "rejected", *(["cost"] if priced else [])]:
        table.add_column(t(f"replay.col_{name}", lang),
                         justify="left" if name in ("log", "status") else "right")
    for log in report["logs"]:
        table.add_row(*_summary_row(log, priced))
    totals = report["totals"]
    table.add_row(*_figures(t("replay.total", lang), "", f"{totals['turns']}", totals, priced),
                  style="title")
    consoles.out.print(table)
    _render_problems(report, consoles, lang)


def _summary_row(log: Mapping[str, Any], priced: bool) -> list[str]:
    status = str(log["status"])
    style = STATUS_STYLE.get(status, "")
    shown = f"[{style}]{status}[/{style}]" if style else status
    turns = f"{log['turns_done']}/{log['turns_total']}"
    return _figures(safe_markup(str(log["label"])), shown, turns, log["totals"], priced)


def _figures(
    name: str, status: str, turns: str, totals: Mapping[str, Any], priced: bool
) -> list[str]:
    row = [name, status, turns]
    for key in ("calls", "prompt_tokens", "completion_tokens", "cached_tokens"):
        row.append(f"{totals.get(key) or 0:,}")
    row.append(_latency(totals.get("latency_ms")))
    row += [str(totals.get("parse_failures") or 0), str(totals.get("rejected_events") or 0)]
    if priced:
        row.append(_money(totals.get("cost")))
    return row


def _render_problems(report: Mapping[str, Any], consoles: Consoles, lang: str = "en") -> None:
    hints: list[str] = []
    note_word, error_word = t("replay.note", lang), t("replay.error", lang)
    for log in report["logs"]:
        for note in log.get("log_warnings") or []:
            label = safe_markup(str(log["label"]))
            consoles.err.print(f"[warn]{note_word}[/warn]{label}: {safe_markup(note)}")
        if log.get("error"):
            consoles.err.print(f"[error]{error_word}[/error]{safe_markup(str(log['error']))}")
            if log.get("hint") and log["hint"] not in hints:
                hints.append(str(log["hint"]))
    for hint in hints:
        consoles.err.print(t("replay.hint", lang) + safe_markup(hint))


# -- diff -----------------------------------------------------------------------------------


def render_diff(diff: ReportDiff, consoles: Consoles, name_a: str, name_b: str,
                lang: str = "en") -> None:
    """Totals with deltas, then each log's status, state, summary and rejection changes."""
    out = consoles.out
    out.print(f"[title]{t('replay.diff', lang)}[/title]  A = {safe_markup(name_a)}   "
              f"B = {safe_markup(name_b)}")
    for note in diff.notes:
        out.print(f"[dim]{t('replay.note', lang)}{safe_markup(t(note, lang))}[/dim]")
    out.print(_metrics_table(t("replay.totals", lang), diff.totals, lang))
    if diff.logs:
        out.print(_logs_table(diff.logs, lang))
    for log in diff.logs:
        _render_log_changes(log, consoles, lang)
    changed = [log for log in diff.logs if log.changed]
    if changed:
        words = t("replay.changed", lang, changed=len(changed), logs=len(diff.logs))
        out.print(f"[warn]{words}[/warn]")
    else:
        out.print(f"[ok]{t('replay.unchanged', lang)}[/ok]")


def _metrics_table(title: str, metrics: Mapping[str, tuple[Any, Any]],
                   lang: str = "en") -> Table:
    table = _table(title)
    for name in ("metric", "A", "B", "Δ"):
        header = t("replay.col_metric", lang) if name == "metric" else name
        table.add_column(header, justify="left" if name == "metric" else "right")
    for key, (a, b) in metrics.items():
        if a is None and b is None:
            continue
        label = t(f"replay.metric_{key}", lang)
        table.add_row(label, _value(key, a), _value(key, b), _delta(key, a, b))
    return table


def _logs_table(logs: Sequence[LogDiff], lang: str = "en") -> Table:
    table = _table(t("replay.per_log", lang))
    for name in ("log", "status"):
        table.add_column(t(f"replay.col_{name}", lang), justify="left")
    for name in ("calls", "prompt", "output", "cached", "cost"):
        table.add_column("Δ " + t(f"replay.col_{name}", lang), justify="right")
    table.add_column(t("replay.col_state_delta", lang), justify="right")
    for log in logs:
        status = f"{log.status_a or '—'}→{log.status_b or '—'}"
        cells = [
            _delta(key, *log.metrics.get(key, (None, None)))
            for key in ("calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cost")
        ]
        table.add_row(safe_markup(log.label), status, *cells, str(len(log.state)))
    return table


def _render_log_changes(log: LogDiff, consoles: Consoles, lang: str = "en") -> None:
    out = consoles.out
    if log.status_a is None or log.status_b is None:
        side = "B" if log.status_a is None else "A"
        out.print(f"[title]{safe_markup(log.label)}[/title]"
                  + t("replay.only_in", lang, side=side))
        return
    if not log.changed:
        return
    out.print(f"[title]{safe_markup(log.label)}[/title]")
    if log.status_a != log.status_b:
        out.print(t("replay.status_change", lang, before=log.status_a, after=log.status_b))
    for change in log.state:
        out.print(t("replay.state_change", lang, path=safe_markup(change.path),
                    before=_show(change.a), after=_show(change.b)))
    none = t("replay.none", lang)
    for change in log.summaries:
        out.print(t("replay.summary_change", lang, turn=change.path))
        out.print(f"    A: {_show(_joined(change.a, none))}")
        out.print(f"    B: {_show(_joined(change.b, none))}")
    for change in log.rejected:
        out.print(t("replay.rejected_change", lang, turn=change.path))
        out.print(f"    A: {_show(_reasons(change.a, none))}")
        out.print(f"    B: {_show(_reasons(change.b, none))}")


def _value(key: str, value: Any) -> str:
    if value is None:
        return "—"
    if key == "cost":
        return _money(value)
    if key == "latency_ms":
        return _latency(value)
    return f"{value:,}" if isinstance(value, int | float) else safe_markup(str(value))


def _delta(key: str, a: Any, b: Any) -> str:
    change = delta(a, b)
    if change is None:
        return "—"
    if not change:
        return "0"
    if key == "cost":
        text = f"{change:+.4f}"
    elif key == "latency_ms":
        text = ("+" if change > 0 else "-") + _latency(abs(change))
    else:
        text = f"{change:+,}"
    if isinstance(a, int | float) and a:
        text += f" ({change / a:+.0%})"
    return text


def _table(title: str) -> Table:
    return Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
        padding=(0, 1, 0, 0),
    )  # fmt: skip


def _latency(ms: Any) -> str:
    value = float(ms or 0)
    return f"{value:,.0f} ms" if value < 1000 else f"{value / 1000:,.1f} s"


def _money(value: Any) -> str:
    return "—" if value is None else f"{float(value):.4f}"


def _joined(lines: Any, none: str = "(none)") -> str:
    if not lines:
        return none
    return " / ".join(str(line) for line in lines) if isinstance(lines, list) else str(lines)


def _reasons(events: Any, none: str = "(none)") -> str:
    if not events:
        return none
    if not isinstance(events, list):
        return str(events)
    return "; ".join(f"{e.get('type', '?')}: {e.get('reason', '')}" for e in events)


def _show(value: Any) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return safe_markup(text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…")
