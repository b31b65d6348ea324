"""How ``--help`` reads: commands grouped by what a player and an author do, plain metavars
(``FILE``, ``N``) instead of Typer's ``<list[Path]>``, and one example per command.

Help is rendered by Typer's plain (Click) formatter, not by Rich: Rich costs about half a
second of start-up, more than everything else ``narrative --help`` loads. So the panels that
Typer draws only with Rich (``rich_help_panel``) are drawn here as plain sections.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

PLAY = "Play"
AUTHOR = "Author"
SETUP = "Sessions & setup"
PANELS = (PLAY, AUTHOR, SETUP)


def example(*lines: str) -> str:
    """A help epilog showing ``lines`` verbatim (``\\b`` keeps Click from re-wrapping them)."""
    label = "Example:" if len(lines) == 1 else "Examples:"
    return label + "\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


class NarrativeCommand(TyperCommand):
    """A command whose arguments show as ``CARD  help`` rather than ``CARD <path>  help``."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                arguments.append(_argument_record(param))
            elif (record := param.get_help_record(ctx)) is not None:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _argument_record(param: TyperArgument) -> tuple[str, str]:
    name = param.metavar or (param.name or "").upper()
    if param.nargs != 1:
        name += "..."
    help_text = param.help or ""
    if param.required:
        help_text = f"{help_text}  [required]" if help_text else "[required]"
    return name, help_text


class NarrativeGroup(TyperGroup):
    """A command group whose ``--help`` lists its commands under their panels, in order."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        listed = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        shown = [(name, cmd) for name, cmd in listed if cmd is not None and not cmd.hidden]
        if not shown:
            return
        for name, cmd in shown:  # the whole first sentence, wrapped rather than cut with "..."
            panel = getattr(cmd, "rich_help_panel", None) or "Commands"
            sections.setdefault(panel, []).append((name, cmd.get_short_help_str(limit=200)))
        for panel in sorted(sections, key=_panel_order):
            with formatter.section(panel):
                formatter.write_dl(sections[panel])


def _panel_order(panel: str) -> int:
    return PANELS.index(panel) if panel in PANELS else len(PANELS)


def group(name: str, help_text: str) -> typer.Typer:
    """A sub-command group (``lore``, ``sessions`` …) that formats help like the root."""
    return typer.Typer(
        name=name,
        help=help_text,
        no_args_is_help=True,
        cls=NarrativeGroup,
        rich_markup_mode=None,
        add_completion=False,
    )
