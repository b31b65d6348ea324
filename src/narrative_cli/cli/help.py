"""How ``--help`` reads: commands grouped by what a player and an author do, plain metavars
(``FILE``, ``N``) instead of Typer's ``<list[Path]>``, and one example per command.

Help is rendered by Typer's plain (Click) formatter, not by Rich: Rich costs about half a
second of start-up, more than everything else ``narrative --help`` loads. So the panels that
Typer draws only with Rich (``rich_help_panel``) are drawn here as plain sections.

Help speaks the user's language (issue 18): ``--lang zh|en`` anywhere on the command line,
else the locale (``i18n.help_lang``). The words of the layout come from the catalogs, the
help texts from ``i18n/cli_zh.py`` (English paragraph → Chinese), looked up only for ``zh``.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from narrative_cli.cli.params import install
from narrative_cli.i18n import help_lang, t

PLAY = "Play"
AUTHOR = "Author"
SETUP = "Sessions & setup"
PANELS = (PLAY, AUTHOR, SETUP)
LANG_KEY = "narrative.help_lang"


def help_language(ctx: Any) -> str:
    """The language of this help screen: set from the arguments when the root parsed them."""
    lang = ctx.meta.get(LANG_KEY)
    return str(lang) if lang else help_lang(())


def translated(text: str | None, lang: str) -> str:
    """``text`` (a help text: paragraphs) in ``lang``; a paragraph without a translation
    stays as written."""
    if not text:
        return ""
    clean = inspect.cleandoc(text).partition("\f")[0]
    if lang != "zh":
        return clean
    from narrative_cli.i18n.cli_zh import HELP

    return "\n\n".join(HELP.get(" ".join(p.split()), p) for p in clean.split("\n\n"))


def _record_help(help_text: str, base: str | None, lang: str) -> str:
    """An option's help column with its text translated and ``[default: x]`` /
    ``[required]`` in ``lang``."""
    if lang != "zh":
        return help_text
    if base and base in help_text:
        help_text = help_text.replace(base, translated(base, lang), 1)
    default, required = t("cli.default", lang), t("cli.required", lang)
    help_text = help_text.replace("[default: ", f"[{default}: ")
    return help_text.replace("[required]", required).replace("; required]", f"; {required[1:]}")


class _Localized:
    """Usage line, help text and epilog in the help language (a mixin of both classes)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if LANG_KEY not in ctx.meta:  # the root sees every argument: --lang wherever it is
            ctx.meta[LANG_KEY] = help_lang(args)
        install(self.get_params(ctx))  # type: ignore[attr-defined]  # no Pydantic: cli/params.py
        result: list[str] = super().parse_args(ctx, args)  # type: ignore[misc]
        return result

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        pieces = self.collect_usage_pieces(ctx)  # type: ignore[attr-defined]
        prefix = t("cli.usage", help_language(ctx))
        formatter.write_usage(ctx.command_path, " ".join(pieces), prefix=prefix)

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        text = translated(getattr(self, "help", None), help_language(ctx))
        if text:
            formatter.write_paragraph()
            with formatter.indentation():
                formatter.write_text(text)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        epilog = getattr(self, "epilog", None)
        if not epilog:
            return
        text = inspect.cleandoc(epilog)
        lang = help_language(ctx)
        head, sep, rest = text.partition("\n")
        if head in ("Example:", "Examples:"):
            head = t("cli.example" if head == "Example:" else "cli.examples", lang)
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(head + sep + rest)


def example(*lines: str) -> str:
    """A help epilog showing ``lines`` verbatim (``\\b`` keeps Click from re-wrapping them)."""
    label = "Example:" if len(lines) == 1 else "Examples:"
    return label + "\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


class NarrativeCommand(_Localized, TyperCommand):
    """A command whose arguments show as ``CARD  help`` rather than ``CARD <path>  help``."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        lang = help_language(ctx)
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                arguments.append(_argument_record(param, lang))
            elif (record := param.get_help_record(ctx)) is not None:
                base = getattr(param, "help", None)
                options.append((record[0], _record_help(record[1], base, lang)))
        titled = ((t("cli.arguments", lang), arguments), (t("cli.options", lang), options))
        for title, rows in titled:
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _argument_record(param: TyperArgument, lang: str = "en") -> tuple[str, str]:
    name = param.metavar or (param.name or "").upper()
    if param.nargs != 1:
        name += "..."
    help_text = translated(param.help, lang)
    required = t("cli.required", lang)
    if param.required:
        help_text = f"{help_text}  {required}" if help_text else required
    return name, help_text


class NarrativeGroup(_Localized, TyperGroup):
    """A command group whose ``--help`` lists its commands under their panels, in order."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        lang = help_language(ctx)
        rows = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                rows.append((record[0], _record_help(record[1], getattr(param, "help", None),
                                                     lang)))  # fmt: skip
        if rows:
            with formatter.section(t("cli.options", lang)):
                formatter.write_dl(rows)
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        lang = help_language(ctx)
        sections: dict[str, list[tuple[str, str]]] = {}
        listed = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        shown = [(name, cmd) for name, cmd in listed if cmd is not None and not cmd.hidden]
        if not shown:
            return
        for name, cmd in shown:  # the whole first sentence, wrapped rather than cut with "..."
            panel = getattr(cmd, "rich_help_panel", None) or "Commands"
            sections.setdefault(panel, []).append((name, _short_help(cmd, lang)))
        for panel in sorted(sections, key=_panel_order):
            with formatter.section(t(f"cli.panel.{panel}", lang) if panel in PANELS
                                   else t("cli.commands", lang)):  # fmt: skip
                formatter.write_dl(sections[panel])


def _short_help(cmd: Any, lang: str) -> str:
    """A command's line in its group's list: the first sentence of its help."""
    if lang != "zh":
        return str(cmd.get_short_help_str(limit=200))
    first = translated(cmd.help, lang).split("\n\n")[0]
    head, mark, _ = first.partition("。")
    return " ".join((head + mark).split())


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
