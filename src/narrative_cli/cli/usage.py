"""How a usage error reads: Click's layout (``Usage: …``, ``Try '… --help' for help.``, then
``Error: …``) with the wording the CLI had on Typer, so that scripts and users see what they
saw before (``No such option: --x``, not Click's ``No such option '--x'.``)."""

from __future__ import annotations

import click

from narrative_cli.cli.help import escaped


def show_usage_error(error: click.ClickException) -> None:
    """Print ``error``; a group called without a command prints its help, on stdout."""
    if isinstance(error, click.exceptions.NoArgsIsHelpError):
        click.echo(error.format_message())
        return
    if isinstance(error, click.exceptions.NoSuchOption):
        error = _no_such_option(error)
    error.show()


def _no_such_option(error: click.exceptions.NoSuchOption) -> click.UsageError:
    message = f"No such option: {escaped(error.option_name)}"
    if error.possibilities:
        message += f" (Possible options: {', '.join(sorted(error.possibilities))})"
    return click.UsageError(message, error.ctx)
