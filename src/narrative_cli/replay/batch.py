"""``narrative replay`` as a whole: read the logs, replay them, write the report, diff two.

``run_replay(request, view)`` and ``run_diff(a, b, view)`` do the work and return the exit
code (1 when any log failed: prompt drift, a backend that gave up; else 0). What is shown,
and how, is the ``ReplayView``'s business (``ui.replay_view.RichReplayView``; ``cli`` builds
it and hands it in), so this module draws nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from narrative_cli.errors import EXIT_FAILURE, EXIT_OK
from narrative_cli.held import check_target
from narrative_cli.play.options import PlayOptions
from narrative_cli.replay.collector import replay_pace
from narrative_cli.replay.diff import ReportDiff, diff_reports
from narrative_cli.replay.logs import ReplayLog, read_logs
from narrative_cli.replay.report import build_report, load_prices, read_report, write_report
from narrative_cli.replay.runner import ProgressFn, ReplayOptions, replay_logs


@dataclass
class ReplayRequest:
    """What ``narrative replay`` was asked to do."""

    logs: list[str]
    options: PlayOptions
    responses: str | None = None
    jobs: int = 1
    rpm: float | None = None
    report: str | None = None
    prices: Path | None = None
    force: bool = False  # --force: the report may overwrite an existing file


class ReplayView(Protocol):
    """Where a replay shows its progress, its summary and a report diff."""

    def progress(self, logs: Sequence[ReplayLog]) -> AbstractContextManager[ProgressFn]:
        """A progress listener for the run over ``logs`` (open while they replay)."""
        ...

    def summary(self, report: Mapping[str, Any]) -> None:
        """The per-log figures, totals, failures and log warnings of a finished run."""
        ...

    def diff(self, diff: ReportDiff, name_a: str, name_b: str) -> None:
        """What changed between two reports."""
        ...


def run_replay(request: ReplayRequest, view: ReplayView) -> int:
    """Replay the logs with progress, write the report, show the summary; the exit code."""
    prices = load_prices(request.prices) if request.prices else None
    if request.report:  # refuse a bad --report before the replay, not after it
        check_target(request.report, force=request.force, kind="report")
    with replay_pace():  # the collector's passes skip the objects made before the run
        logs = read_logs(request.logs)
        options = ReplayOptions(request.options, request.responses, request.jobs, request.rpm)
        with view.progress(logs) as progress:
            run = replay_logs(logs, options, progress)
        report = build_report(run, prices, turns=bool(request.report))  # the screen needs none
    if request.report:
        write_report(report, request.report, force=request.force)
    view.summary(report)
    return EXIT_FAILURE if run.failed else EXIT_OK


def run_diff(a: Path, b: Path, view: ReplayView, *, prices: Path | None = None) -> int:
    """Compare two replay reports and show what changed."""
    table = load_prices(prices) if prices else None
    view.diff(diff_reports(read_report(a), read_report(b), table), str(a), str(b))
    return EXIT_OK
