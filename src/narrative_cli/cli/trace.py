"""``narrative trace show DIR [--turn N]``: what every model call of a trace was sent."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from narrative_cli.cli.help import AUTHOR, NarrativeCommand, example, group

trace_app = group("trace", "Read traces written with --trace DIR.")


def register(app: typer.Typer) -> None:
    """Add the ``trace`` command group to the root app."""
    app.add_typer(trace_app, name="trace", rich_help_panel=AUTHOR)


@trace_app.command(
    "show",
    cls=NarrativeCommand,
    epilog=example("narrative run card.png --trace out/ && narrative trace show out/ --turn 3"),
)
def trace_show(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="A --trace directory.")],
    turn: Annotated[int | None, typer.Option("--turn", metavar="N", help="Only this turn.")] = None,
    no_color: Annotated[bool, typer.Option("--no-color", help="Plain output.")] = False,
) -> None:
    """Per turn and agent: the prompt block by block, the cached prefix, and the usage."""
    from narrative_cli.play.trace_report import read_trace, trace_reports
    from narrative_cli.ui.console import make_consoles
    from narrative_cli.ui.trace_view import print_trace

    reports = trace_reports(read_trace(directory), turn)
    print_trace(reports, str(directory), make_consoles(no_color).out)
