"""The Typer root: global options, command groups, and the only error → exit-code mapping."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated

import typer
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
COMMAND_MODULES = {
    "run": "narrative_cli.cli.run",
    "cards": "narrative_cli.cli.cards",
    "replay": "narrative_cli.cli.replay",
    "inspect": "narrative_cli.cli.inspect",
    "lore": "narrative_cli.cli.lore",
    "trace": "narrative_cli.cli.trace",
    "sessions": "narrative_cli.cli.sessions",
    "config": "narrative_cli.cli.config",
    "roll": "narrative_cli.cli.roll",
}
ROOT_FLAGS = ("-v", "-vv", "-vvv", "--verbose", "--debug")  # root options that take no value


def _new_app() -> typer.Typer:
    return typer.Typer(
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


def build_app(commands: tuple[str, ...] = tuple(COMMAND_MODULES)) -> typer.Typer:
    """The root app with ``commands`` registered (their modules are light: see above)."""
    built = _new_app()
    built.callback()(root)
    for command in commands:
        importlib.import_module(COMMAND_MODULES[command]).register(built)
    return built


def __getattr__(name: str) -> typer.Typer:
    """``app`` (every command: for help, completion and tests) is built on first use, so
    that running one command does not build the fifteen others."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    built = globals()["app"] = build_app()
    return built


def app_for(argv: list[str]) -> typer.Typer:
    """Only the command ``argv`` names, when it names one: Typer builds the options of every
    registered command at each start, which costs the fifteen commands not run a good part of
    the start-up. The whole app for anything else (help, completion, a mistyped command)."""
    words = [word for word in argv if word not in ROOT_FLAGS]
    if not words or words[0] not in COMMAND_MODULES or "_NARRATIVE_COMPLETE" in os.environ:
        return build_app()
    return build_app((words[0],))


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app and map errors to exit codes."""
    try:
        # Without standalone mode, Typer returns (not raises) the code of `typer.Exit`.
        args = sys.argv[1:] if argv is None else argv
        code = app_for(args)(args=args, standalone_mode=False)
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
        _show_usage_error(exc)
        sys.exit(EXIT_USAGE)
    except Exception as exc:
        if error_options["debug"]:
            raise
        from narrative_cli.ui.safe import safe_text

        detail = safe_text(scrub_text(f"{type(exc).__name__}: {exc}"))
        sys.stderr.write(f"error: internal error: {detail}\n")
        sys.stderr.write("hint: run again with --debug for the traceback and report it\n")
        sys.exit(1)


def _show_usage_error(exc: TyperException) -> None:
    """Print a usage error the way Click formats it (``Usage: …`` then ``Error: …``).

    Typer's public API has only ``TyperException`` (its Click classes live in the private
    ``typer._click``); the Click subclasses add ``show()``. A group called without a command
    raises ``NoArgsIsHelpError``, whose message is the help: that goes to stdout.
    """
    if type(exc).__name__ == "NoArgsIsHelpError":
        typer.echo(exc.format_message())  # the help, on stdout
        return
    show = getattr(exc, "show", None)
    if callable(show):
        show()
