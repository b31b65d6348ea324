"""``narrative trace show DIR [--turn N]``: what every model call of a trace was sent."""

from __future__ import annotations

from pathlib import Path

import click

from narrative_cli.cli.help import AUTHOR, argument, command, group, option
from narrative_cli.cli.types import PATH, WHOLE_NUMBER

trace_group = group("trace", "Read traces written with --trace DIR.", AUTHOR)


def register(root: click.Group) -> None:
    """Add the ``trace`` command group to the root group."""
    root.add_command(trace_group)


@command(
    "show",
    "narrative run card.png --trace out/ && narrative trace show out/ --turn 3",
    parent=trace_group,
)
@argument("directory", type=PATH, metavar="DIR", help="A --trace directory.")
@option("--turn", "turn", type=WHOLE_NUMBER, metavar="N", help="Only this turn.")
@option("--no-color", "no_color", is_flag=True, default=False, help="Plain output.")
def trace_show(directory: Path, turn: int | None, no_color: bool) -> None:
    """Per turn and agent: the prompt block by block, the cached prefix, and the usage."""
    from narrative_cli.play.trace_report import read_trace, trace_reports
    from narrative_cli.ui.console import make_consoles
    from narrative_cli.ui.trace_view import print_trace

    reports = trace_reports(read_trace(directory), turn)
    print_trace(reports, str(directory), make_consoles(no_color).out)
