"""Shell completion: ``--install-completion`` and ``--show-completion`` on Click's own
completion (``_NARRATIVE_COMPLETE=bash_complete`` and so on; bash, zsh and fish).

The options and their messages are the ones the CLI had on Typer, and the script lands where
Typer put it (``~/.bash_completions/narrative.sh`` sourced from ``~/.bashrc``;
``~/.zfunc/_narrative`` with ``fpath``/``compinit`` in ``~/.zshrc``;
``~/.config/fish/completions/narrative.fish``). What differs (docs/internals.md): the script
is Click's (it asks ``_NARRATIVE_COMPLETE=bash_complete``, so a script installed by an older
narrative must be installed again); a shell named after the option (``--show-completion zsh``)
is used, else the parent process's when it is a shell, else ``$SHELL``'s (Typer asked the
whole process tree); PowerShell is not offered (Click has no PowerShell completion).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from narrative_cli.cli.help import ARGS_KEY

SHELLS = ("bash", "zsh", "fish")


def complete_var(prog_name: str) -> str:
    """The environment variable a completion script sets: ``_NARRATIVE_COMPLETE``."""
    return "_{}_COMPLETE".format(prog_name.replace("-", "_").upper())


def answer(cli: click.Command, prog_name: str) -> None:
    """When the shell asks for completions (the variable is set), print them and exit."""
    instruction = os.environ.get(complete_var(prog_name))
    if not instruction:
        return
    from click.shell_completion import shell_complete

    sys.exit(shell_complete(cli, {}, prog_name, complete_var(prog_name), instruction))


def _shell(ctx: click.Context, flag: str) -> str:
    """The shell named right after ``flag`` on the command line (``--show-completion zsh``),
    else the shell that started us, else ``$SHELL``'s."""
    args: list[str] = ctx.meta.get(ARGS_KEY, [])
    following = args[args.index(flag) + 1 : args.index(flag) + 2] if flag in args else []
    commands = getattr(ctx.command, "commands", {})
    if following and not following[0].startswith("-") and following[0] not in commands:
        return following[0]
    return _parent_shell() or os.path.basename(os.environ.get("SHELL", ""))


def _parent_shell() -> str:
    """The shell that started us, when it is one we complete for (Linux: /proc)."""
    try:
        name = Path(f"/proc/{os.getppid()}/comm").read_text().strip()
    except OSError:
        return ""
    return name if name in SHELLS else ""


def script(ctx: click.Context, shell: str) -> str:
    """Click's completion script for ``shell``."""
    from click.shell_completion import get_completion_class

    prog_name = ctx.find_root().info_name or "narrative"
    found = get_completion_class(shell) if shell in SHELLS else None
    if found is None:
        click.echo(f"Shell {shell} not supported.", err=True)
        raise click.exceptions.Exit(1)
    return found(ctx.find_root().command, {}, prog_name, complete_var(prog_name)).source()


def show(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """``--show-completion``: print the script, to copy it or customise the installation."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(script(ctx, _shell(ctx, "--show-completion")).strip())
    sys.exit(0)


def install(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """``--install-completion``: write the script where the shell reads it."""
    if not value or ctx.resilient_parsing:
        return
    shell = _shell(ctx, "--install-completion")
    if shell not in SHELLS:
        click.echo(f"Shell {shell} is not supported.")
        raise click.exceptions.Exit(1)
    text = script(ctx, shell).strip()
    prog_name = ctx.find_root().info_name or "narrative"
    path = {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](prog_name, text)
    click.secho(f"{shell} completion installed in {path}", fg="green")
    click.echo("Completion will take effect once you restart the terminal")
    sys.exit(0)


def _bash(prog_name: str, text: str) -> Path:
    path = Path.home() / ".bash_completions" / f"{prog_name}.sh"
    _add_lines(Path.home() / ".bashrc", [f"source '{path}'"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _zsh(prog_name: str, text: str) -> Path:
    rc = Path.home() / ".zshrc"
    content = rc.read_text() if rc.is_file() else ""
    lines = ["fpath+=~/.zfunc; autoload -Uz compinit; compinit"]
    if "zstyle" not in content:  # the user's own completion style stays
        lines.append("zstyle ':completion:*' menu select")
    _add_lines(rc, lines)
    path = Path.home() / ".zfunc" / f"_{prog_name}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _fish(prog_name: str, text: str) -> Path:
    path = Path.home() / ".config" / "fish" / "completions" / f"{prog_name}.fish"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


def _add_lines(rc: Path, lines: list[str]) -> None:
    """Append each of ``lines`` to the file ``rc`` unless it is there already."""
    content = rc.read_text() if rc.is_file() else ""
    missing = [line for line in lines if line not in content]
    if missing:
        rc.parent.mkdir(parents=True, exist_ok=True)
        rc.write_text(content.rstrip("\n") + "\n" + "\n".join(missing) + "\n")


def options() -> list[click.Option]:
    """The two root options, worded as they were under Typer."""
    return [
        click.Option(["--install-completion"], is_flag=True, default=None, expose_value=False,
                     is_eager=True, callback=install,
                     help="Install completion for the current shell."),
        click.Option(["--show-completion"], is_flag=True, default=None, expose_value=False,
                     is_eager=True, callback=show,
                     help="Show completion for the current shell, to copy it or customize the "
                     "installation."),
    ]  # fmt: skip
