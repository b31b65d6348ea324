"""How ``--help`` reads: commands grouped by what a player and an author do, plain metavars
(``FILE``, ``N``), and one example per command.

Help is rendered by Click's plain formatter, not by Rich: Rich costs about half a second of
start-up, more than everything else ``narrative --help`` loads. The panels (``panel=``) are
drawn here as plain sections. The screens are the ones the CLI showed when it was built on
Typer (tests save them): an option's ``[default: x]``, a required argument as ``{CARD}`` in
the usage line, commands listed in the order they were added.

Help speaks the user's language (issue 18): ``--lang zh|en`` anywhere on the command line,
else the locale (``i18n.help_lang``). The words of the layout come from the catalogs, the
help texts from ``i18n/cli_zh.py`` (English paragraph → Chinese), looked up only for ``zh``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, TypeVar, cast

import click
from click.formatting import join_options

from narrative_cli.i18n import help_lang, t

PLAY = "Play"
AUTHOR = "Author"
SETUP = "Sessions & setup"
PANELS = (PLAY, AUTHOR, SETUP)
LANG_KEY = "narrative.help_lang"
F = TypeVar("F", bound=Callable[..., Any])
ARGS_KEY = "narrative.args"  # the root's arguments, as typed (cli/completion.py reads them)


def escaped(value: str) -> str:
    """``value`` with terminal control characters shown as ``\\x1b`` (usage errors quote
    what the user typed)."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda found: f"\\x{ord(found[0]):02x}", value)


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
            ctx.meta[ARGS_KEY] = list(args)
        allowed, ctx.allow_extra_args = ctx.allow_extra_args, True  # we word the error
        try:
            rest: list[str] = super().parse_args(ctx, args)  # type: ignore[misc]
        finally:
            ctx.allow_extra_args = allowed
        if rest and not allowed and not ctx.resilient_parsing:  # worded as it always was
            ctx.fail(f"Got unexpected extra argument(s) ({' '.join(map(escaped, rest))})")
        return rest

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        pieces = self.collect_usage_pieces(ctx)  # type: ignore[attr-defined]
        prefix = t("cli.usage", help_language(ctx))
        formatter.write_usage(ctx.command_path, " ".join(pieces), prefix=prefix)

    def format_arguments(self, ctx: Any, formatter: Any) -> None:
        """Nothing: ``format_options`` lists the arguments, in our layout."""

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


class NarrativeArgument(click.Argument):
    """An argument with a help text (Click's have none), shown ``{CARD}`` in the usage line
    when required and ``[TEXT]`` when not."""

    def __init__(self, param_decls: Sequence[str], help: str | None = None, **attrs: Any):
        super().__init__(param_decls, **attrs)
        self.help = help

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        name = self.metavar or (self.name or "").upper()
        name = f"{{{name}}}" if self.required else f"[{name}]"
        return [name + ("..." if self.nargs != 1 else "")]

    def get_error_hint(self, ctx: click.Context | None) -> str:
        return f"'{self.metavar or self.name}'"


class NarrativeOption(click.Option):
    """An option whose help column ends in ``[default: x]`` (when the default is a value),
    ``[x>=1]`` for a bound and ``[required]``."""

    def __init__(self, param_decls: Sequence[str], show_default: bool = True, **attrs: Any):
        super().__init__(param_decls, show_default=show_default, **attrs)
        self.has_default = attrs.get("default") is not None  # else nothing to show

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if self.hidden:
            return None
        names = [self._names(self.opts)]
        if self.secondary_opts:
            names.append(self._names(self.secondary_opts))
        extra = [text for text in (self._default_text(ctx), self._bound_text()) if text]
        if self.required:
            extra.append("required")
        help_text = self.help or ""
        if extra:
            shown = "[" + "; ".join(extra) + "]"
            help_text = f"{help_text}  {shown}" if help_text else shown
        return " / ".join(names), help_text

    def get_error_hint(self, ctx: click.Context | None) -> str:
        return " / ".join(f"'{name}'" for name in self.opts or [self.metavar or self.name])

    def _names(self, opts: list[str]) -> str:
        joined = join_options(opts)[0]  # "-l, --lorebook"
        if self.is_flag or self.count:
            return joined
        return f"{joined} {self.metavar or self.type.name.upper()}"

    def _default_text(self, ctx: click.Context) -> str:
        default = self.get_default(ctx, call=False) if self.has_default else None
        if default is None or not self.show_default or callable(default):
            return ""
        shown = self._shown(default)
        return f"default: {shown}" if shown else ""

    def _shown(self, default: Any) -> str:
        if isinstance(default, (list, tuple)):
            parts = [self._shown(item) for item in default]
            return ", ".join(parts) if any(parts) else ""
        if isinstance(default, Enum):
            return str(default.value)
        if self.is_bool_flag and self.secondary_opts:  # --catch-up/--no-catch-up: the word
            return (self.opts if default else self.secondary_opts)[0].lstrip("-/")
        if self.is_bool_flag and not default:
            return ""
        return str(default)

    def _bound_text(self) -> str:
        if self.count:  # -v counts from 0: nothing to say
            return ""
        low = getattr(self.type, "min", None)
        return f"x>={low}" if low is not None else ""


class NarrativeCommand(_Localized, click.Command):
    """A command whose arguments show as ``CARD  help`` rather than ``CARD <path>  help``."""

    def __init__(self, *args: Any, panel: str | None = None, **attrs: Any) -> None:
        if attrs.get("help"):
            attrs["help"] = inspect.cleandoc(attrs["help"])
        super().__init__(*args, **attrs)
        self.panel = panel

    def format_options(self, ctx: Any, formatter: Any) -> None:
        lang = help_language(ctx)
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if isinstance(param, click.Argument):
                arguments.append(_argument_record(param, lang))
            elif (record := param.get_help_record(ctx)) is not None:
                base = getattr(param, "help", None)
                options.append((record[0], _record_help(record[1], base, lang)))
        titled = ((t("cli.arguments", lang), arguments), (t("cli.options", lang), options))
        for title, rows in titled:
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _argument_record(param: click.Argument, lang: str = "en") -> tuple[str, str]:
    name = param.metavar or (param.name or "").upper()
    if param.nargs != 1:
        name += "..."
    help_text = translated(getattr(param, "help", None), lang)
    required = t("cli.required", lang)
    if param.required:
        help_text = f"{help_text}  {required}" if help_text else required
    return name, help_text


class NarrativeGroup(_Localized, click.Group):
    """A command group whose ``--help`` lists its commands under their panels, in the order
    they were added; a mistyped command gets "Did you mean ...?"."""

    def __init__(self, *args: Any, panel: str | None = None, **attrs: Any) -> None:
        attrs.setdefault("no_args_is_help", True)
        if attrs.get("help"):
            attrs["help"] = inspect.cleandoc(attrs["help"])
        super().__init__(*args, **attrs)
        self.panel = panel

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as error:
            from difflib import get_close_matches

            matches = get_close_matches(args[0], list(self.commands)) if args else []
            if not matches:
                raise
            suggestions = ", ".join(repr(match) for match in matches)
            message = f"{error.message.rstrip('.')}. Did you mean {suggestions}?"
            raise click.UsageError(message, ctx) from None

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
            panel = getattr(cmd, "panel", None) or "Commands"
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


def group(name: str, help_text: str, panel: str) -> NarrativeGroup:
    """A sub-command group (``lore``, ``sessions`` …) that formats help like the root."""
    return NarrativeGroup(name, help=help_text, panel=panel)


def option(*decls: str, **attrs: Any) -> Callable[[F], F]:
    """``click.option`` with our help column (see :class:`NarrativeOption`)."""
    return click.option(*decls, cls=NarrativeOption, **attrs)


def argument(name: str, **attrs: Any) -> Callable[[F], F]:
    """``click.argument`` with a help text (see :class:`NarrativeArgument`)."""
    return click.argument(name, cls=NarrativeArgument, **attrs)


def command(
    name: str, *examples: str, panel: str | None = None, parent: click.Group | None = None
) -> Callable[[Callable[..., Any]], NarrativeCommand]:
    """``@click.command(name)`` (``@parent.command`` for a group's) with our help formatting
    and its example(s)."""
    make = parent.command if parent is not None else click.command
    made = make(name, cls=NarrativeCommand, panel=panel, epilog=example(*examples))
    return cast(Callable[[Callable[..., Any]], NarrativeCommand], made)
