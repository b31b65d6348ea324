"""The Click root: global options, command groups, and the only error → exit-code mapping."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from narrative_cli import __version__
from narrative_cli.cli import completion
from narrative_cli.cli.collector import collector_on
from narrative_cli.cli.errors import options as error_options
from narrative_cli.cli.errors import report_error
from narrative_cli.cli.help import NarrativeGroup, NarrativeOption
from narrative_cli.cli.usage import show_usage_error
from narrative_cli.errors import EXIT_INTERRUPTED, EXIT_USAGE, NarrativeError, PipelineInterrupt

# Each module defines ``register(root)`` and adds its commands or sub-group. The modules import
# only Click at module level (their work is imported inside the command bodies), so that
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
# Commands that play stories: their backends and libraries may log from the start, so logging
# is set up before they run; the others set it up when something first logs (``logs.py``).
STORY_COMMANDS = frozenset({"run", "replay"})


class RootGroup(NarrativeGroup):
    """The ``narrative`` group. Its ``main`` (what the console script and ``CliRunner`` call)
    answers shell completion, then runs the command: a usage error is shown as Click shows it
    (``Usage: …`` then ``Error: …``), exit 2; Ctrl-C exits 130 without a word; end of input
    and an abort say ``Aborted!``, exit 1."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        args = list(sys.argv[1:] if args is None else args)
        prog_name = prog_name or program_name()
        completion.answer(self, prog_name)
        try:
            try:
                with self.make_context(prog_name, args, **extra) as ctx:
                    result = self.invoke(ctx)
                    if not standalone_mode:
                        return result
                    ctx.exit()
            except EOFError as error:
                click.echo(file=sys.stderr)
                raise click.Abort() from error
            except KeyboardInterrupt as error:
                raise click.exceptions.Exit(EXIT_INTERRUPTED) from error
            except click.ClickException as error:
                if not standalone_mode:
                    raise
                show_usage_error(error)
                sys.exit(error.exit_code)
        except click.exceptions.Exit as done:
            if standalone_mode:
                sys.exit(done.exit_code)
            return done.exit_code
        except click.Abort:
            if not standalone_mode:
                raise
            click.echo("Aborted!", err=True)
            sys.exit(1)


def program_name() -> str:
    """``narrative`` as the user typed it: the script's name, or ``python -m narrative_cli``."""
    path = sys.argv[0] if sys.argv and sys.argv[0] else "narrative"
    package = getattr(sys.modules.get("__main__"), "__package__", None)
    if not package:
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"narrative-cli {__version__}")
        raise click.exceptions.Exit()


def root(verbose: int, debug: bool) -> None:
    """Play and author SillyTavern-style stories in a terminal."""
    error_options["debug"] = debug
    story = click.get_current_context().invoked_subcommand in STORY_COMMANDS
    if not story:  # a story command turns it on once it has imported the pipeline
        collector_on()
    from narrative_cli import logs

    logs.configure(verbose)  # set up when something first logs: most commands never do
    if story:
        logs.ensure()


def _new_app() -> RootGroup:
    params: list[click.Parameter] = [
        NarrativeOption(["--version"], is_flag=True, default=False, expose_value=False,
                        is_eager=True, callback=_version, help="Show the version."),
        NarrativeOption(["-v", "--verbose"], count=True, default=0,
                        help="More logs (-vv: debug)."),
        NarrativeOption(["--debug"], is_flag=True, default=False,
                        help="Show tracebacks on errors."),
        *completion.options(),
    ]  # fmt: skip
    return RootGroup(
        "narrative",
        help="Play and author SillyTavern-style stories in a terminal.",
        params=params,
        callback=root,
    )


def build_app(commands: tuple[str, ...] = tuple(COMMAND_MODULES)) -> RootGroup:
    """The root group with ``commands`` registered (their modules are light: see above)."""
    built = _new_app()
    for command in commands:
        importlib.import_module(COMMAND_MODULES[command]).register(built)
    return built


def __getattr__(name: str) -> RootGroup:
    """``app`` (every command: for help, completion and tests) is built on first use, so
    that running one command does not build the fifteen others."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    built = globals()["app"] = build_app()
    return built


def app_for(argv: list[str]) -> RootGroup:
    """Only the command ``argv`` names, when it names one: importing the modules of the
    commands not run would cost start-up for nothing. The whole app for anything else (help,
    completion, a mistyped command)."""
    words = [word for word in argv if word not in ROOT_FLAGS]
    if not words or words[0] not in COMMAND_MODULES or "_NARRATIVE_COMPLETE" in os.environ:
        return build_app()
    return build_app((words[0],))


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the app and map errors to exit codes."""
    try:
        # Without standalone mode, a usage error is raised to us and ``Exit`` returns its code.
        args = sys.argv[1:] if argv is None else argv
        code = app_for(args).main(args=args, standalone_mode=False)
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
    except click.Abort:
        sys.stderr.write("aborted\n")
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:  # usage errors: unknown option, missing argument, …
        show_usage_error(exc)
        sys.exit(EXIT_USAGE)
    except Exception as exc:
        if error_options["debug"]:
            raise
        from narrative_cli.credentials import scrub_text
        from narrative_cli.ui.safe import safe_text

        detail = safe_text(scrub_text(f"{type(exc).__name__}: {exc}"))
        sys.stderr.write(f"error: internal error: {detail}\n")
        sys.stderr.write("hint: run again with --debug for the traceback and report it\n")
        sys.exit(1)
