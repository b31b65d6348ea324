"""The Typer root: global options, command groups, and the only error → exit-code mapping."""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.exceptions import TyperException

from narrative_cli import __version__
from narrative_cli.cli.errors import options as error_options
from narrative_cli.cli.errors import report_error
from narrative_cli.cli.help import NarrativeGroup
from narrative_cli.credentials import ScrubFilter, scrub_text
from narrative_cli.errors import EXIT_INTERRUPTED, EXIT_USAGE, NarrativeError, PipelineInterrupt

# Each module defines ``register(app)`` and adds its commands or sub-app. The modules import
# only Typer at module level (their work is imported inside the command bodies), so that
# ``narrative --help`` starts fast; tests/test_cli_help.py checks that.
COMMAND_MODULES = (
    "narrative_cli.cli.run",
    "narrative_cli.cli.replay",
    "narrative_cli.cli.inspect",
    "narrative_cli.cli.lore",
    "narrative_cli.cli.trace",
    "narrative_cli.cli.sessions",
    "narrative_cli.cli.config",
    "narrative_cli.cli.roll",
)

app = typer.Typer(
    name="narrative",
    help="Play and author SillyTavern-style stories in a terminal.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=NarrativeGroup,
    rich_markup_mode=None,  # Rich-drawn help costs half a second of start-up (cli/help.py)
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"narrative-cli {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    verbose: Annotated[
        int, typer.Option("-v", "--verbose", count=True, help="More logs (-vv: debug).")
    ] = 0,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    """Play and author SillyTavern-style stories in a terminal."""
    error_options["debug"] = debug
    import logging  # here, not at the top: ``narrative --help`` never needs it

    level = logging.WARNING - 10 * min(verbose, 2)
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ScrubFilter())  # no key reaches a log line (credentials.py)
    logging.basicConfig(
        level=level, format="%(levelname)s %(name)s: %(message)s", handlers=[handler]
    )


def _register_all() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # command group not built yet
                continue
            raise
        module.register(app)


_register_all()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app and map errors to exit codes."""
    try:
        # Without standalone mode, Typer returns (not raises) the code of `typer.Exit`.
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except NarrativeError as error:
        if error_options["debug"]:
            raise
        report_error(error)
        sys.exit(error.exit_code)
    except (KeyboardInterrupt, PipelineInterrupt):
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except typer.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(EXIT_INTERRUPTED)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except TyperException as exc:  # usage errors: unknown option, missing argument, …
        if not isinstance(exc, NoArgsIsHelpError) and isinstance(exc, ClickException):
            exc.show()  # help was already printed for NoArgsIsHelpError
        sys.exit(EXIT_USAGE)
    except Exception as exc:
        if error_options["debug"]:
            raise
        detail = scrub_text(f"{type(exc).__name__}: {exc}")
        sys.stderr.write(f"error: internal error: {detail}\n")
        sys.stderr.write("hint: run again with --debug for the traceback and report it\n")
        sys.exit(1)
