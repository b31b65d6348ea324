"""The Rich screen of a played story: what the slash-command dispatcher shows, and how.

``RichScreen`` implements ``play.commands.Screen`` (and ``play.launch.OpeningScreen``). The
story's displayed text goes through the card's display regex scripts (``regex.scripts``) and
HTML they produce is flattened for the terminal (``ui.html_text``); records and prompts keep
the raw text. What changed in a turn comes from ``play.reports.turn_changes``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from narrative_cli.i18n import t
from narrative_cli.pipeline.regex_templates import story_renderer
from narrative_cli.pipeline.story import TurnResult
from narrative_cli.play import reports
from narrative_cli.play.commands import TurnListener
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.group_play import Roster
from narrative_cli.regex.scripts import AI_OUTPUT, RegexScripts, scripts_for
from narrative_cli.regex.templated import Renderer
from narrative_cli.tools.dice import DiceRoll
from narrative_cli.ui import render
from narrative_cli.ui.console import Consoles
from narrative_cli.ui.html_text import terminal_html, terminal_text
from narrative_cli.ui.safe import safe_text
from narrative_cli.ui.status import TurnView
from narrative_cli.ui.status_panel import status_panel
from narrative_cli.ui.typeahead import TypeAhead

_PLACEHOLDER = re.compile(r"<StatusPlaceHolderImpl\s*/?>", re.IGNORECASE)
_SPOT = "\ue000status\ue000"  # where the native panel goes; no card script matches it


class RichScreen:
    """Shows turns, panels and messages of one PlaySession on a pair of consoles."""

    def __init__(
        self,
        consoles: Consoles,
        lang: str,
        display: RegexScripts | None = None,
        *,
        mvu: bool = False,
        templates: Renderer | None = None,
    ) -> None:
        self.consoles = consoles
        self.lang = lang
        self.display = display or RegexScripts()
        self.mvu = mvu  # the card keeps MVU variables: its status placeholder gets the panel
        self._prefix = ""
        self._tree: Mapping[str, Any] | None = None
        self._told_interactive = False
        self._told_unpriced: set[str] = set()
        self.templates = templates  # renders templates the display scripts write
        self._template_warnings: list[str] = []
        self.typeahead: TypeAhead | None = None  # keys typed during a turn: the next draft

    @classmethod
    def for_play(cls, play: PlaySession, consoles: Consoles) -> RichScreen:
        """A screen in the story's language with the card's display scripts."""
        story = play.story
        display = scripts_for(story.card, story.persona, story.lang,
                              global_scripts=story.global_regex)
        screen = cls(consoles, story.lang, display, mvu=story.uses_mvu)
        screen.templates = story_renderer(lambda: play.story, screen._template_warnings.append)
        screen._tree = story.snapshot.mvu  # what the first turn's changes are measured from
        return screen

    def story(
        self,
        text: str,
        tree: Mapping[str, Any] | None = None,
        before: Mapping[str, Any] | None = None,
    ) -> RenderableType:
        """The model's text as displayed, with the native status panel where the card puts its
        status bar (``<StatusPlaceHolderImpl/>``) when there are variables to show."""
        spot = bool(tree) and _PLACEHOLDER.search(text) is not None
        if spot:
            text = _PLACEHOLDER.sub(_SPOT, text)
        shown = self.display.ai_output(text, 0, self.templates)
        items: list[RenderableType] = []
        for index, part in enumerate(shown.split(_SPOT) if spot else [shown]):
            if index and tree:
                items.append(status_panel(tree, before, self.lang))
            html = terminal_html(_PLACEHOLDER.sub("", part))
            if html.text.strip():
                items.append(render.story_text(html.text.strip(), styled=self.consoles.color))
            if html.interactive and not self._told_interactive:
                self._told_interactive = True
                items.append(Text(t("label.not_here", self.lang), style="dim"))
        if self._template_warnings:
            items.append(render.warning_lines(self._template_warnings))
            self._template_warnings.clear()
        return Group(*items)

    # -- text as displayed -------------------------------------------------------------------

    def shown(self, text: str, depth: int = 0) -> str:
        """The model's text as the author meant it to be displayed."""
        return terminal_text(self.display.ai_output(text, depth, self.templates))

    def shown_input(self, text: str, depth: int = 1) -> str:
        """The user's text as displayed (placement 1 scripts)."""
        return terminal_text(self.display.user_input(text, depth, self.templates))

    def print(self, renderable: RenderableType = "") -> None:
        self.consoles.out.print(renderable)

    # -- turns -------------------------------------------------------------------------------

    @contextmanager
    def turn(self, prefix: str = "") -> Iterator[TurnListener]:
        """The live view of a running turn; ``prefix`` (a reply being continued) shows first."""
        hold = self.display.applies_to(AI_OUTPUT)
        self._prefix = prefix
        if prefix:
            self.print(render.story_text(self.shown(prefix), styled=self.consoles.color))
        quiet = self.typeahead.hold() if self.typeahead is not None else nullcontext()
        with quiet, TurnView(self.consoles, self.lang, hold=hold) as view:
            yield view

    def show_turn(
        self, play: PlaySession, result: TurnResult, view: TurnListener, *, summary: bool
    ) -> None:
        """Everything after the streamed story: outputs, state diff, summary, warnings, footer."""
        new_text = _after_prefix(result.narrative, self._prefix)
        before, self._tree = self._tree, result.snapshot.mvu
        if not view.printed_story:
            self.print(self.story(new_text, self._tree, before))
        elif not result.speakers and _streamed(view).strip() not in new_text:
            self.print(Text(t("label.kept_after_cleanup", self.lang), style="dim"))
            self.print(self.story(new_text, self._tree, before))
        elif self._tree and _PLACEHOLDER.search(new_text):  # streamed as it came: panel after
            self.print(status_panel(self._tree, before, self.lang))
        self._after(reports.turn_changes(play, result), result, summary)
        unseen = [w for w in result.warnings if w not in view.shown_warnings]
        if unseen:
            self.print(render.warning_lines(unseen))
        cost, unpriced = reports.turn_cost(play, result)
        writes = play.account.total().cache_write_tokens > 0  # a provider billing writes
        self.print(render.footer(result.usage.total(), self.lang, view.elapsed, cost=cost,
                                 cache_io=writes))  # fmt: skip
        new = [model for model in unpriced if model not in self._told_unpriced]
        if new:  # said once per model: its turns show tokens only
            self._told_unpriced.update(new)
            self.info(reports.unpriced_note(new, self.lang))

    def _after(self, changes: list[str], result: TurnResult, summary: bool) -> None:
        self._revealed(result)
        outputs = {tool: self.shown(text) for tool, text in result.post_outputs.items()}
        panel = render.outputs_panel(outputs, self.lang)
        if panel is not None:
            self.print(panel)
        self.print(
            render.state_changes(
                changes,
                result.events_rejected,
                result.mvu_rejected,
                self.lang,
            )
        )
        if summary and result.summary_entries:
            self.print(render.summary_entries(result.summary_entries, self.lang))

    def show_last(self, play: PlaySession) -> None:
        """The exchange the story is at now (after undo, swipe or resume)."""
        story = play.story
        last = story.history[-1] if story.history else None
        if last is None:
            return
        if last.user_input:
            name = story.persona.name or t("label.user", self.lang)
            self.print(render.user_line(name, self.shown_input(last.user_input)))
        self._tree = story.snapshot.mvu
        self.print(self.story(last.narrative, self._tree))
        outputs = {tool: self.shown(text) for tool, text in last.post_outputs.items()}
        panel = render.outputs_panel(outputs, self.lang)
        if panel is not None:
            self.print(panel)
        failure = play.failure
        if failure is not None and failure.kind == "analysis":
            pending = t("label.analysis_pending", self.lang, turn=play.turn, error=failure.error)
            self.print(render.warning_lines([pending]))

    def show_opening(self, play: PlaySession) -> None:
        """The card header, then the greeting (new session) or the last exchange (resumed)."""
        story = play.story
        info = play.info()
        facts = render.header_facts(
            self.lang,
            session=f"{info.id} · {info.name}",
            turn=play.turn,
            model=play.model_name(),
            lore=len(story.entries),
            tools=[tool.name for tool in story.tools.tools],
        )
        self.print(render.card_header(story.card.name, facts, play.warnings))
        self.show_last(play)
        self.print(Text(t("label.hint", self.lang), style="dim"))

    # -- messages ----------------------------------------------------------------------------

    def info(self, text: str) -> None:
        self.print(Text(safe_text(text), style="dim"))

    def error(self, text: str, hint: str | None = None) -> None:
        prefix = t("error.prefix", self.lang)
        self.consoles.err.print(Text(f"{prefix}{safe_text(text)}", style="error"))
        if hint:
            prefix = t("hint.prefix", self.lang)
            self.consoles.err.print(Text(f"{prefix}{safe_text(hint)}", style="dim"))

    def panel(self, title: str, body: str) -> None:
        self.print(render.text_panel(title, body))

    def table(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self.print(render.rows_table(title, headers, rows))

    def _revealed(self, result: TurnResult) -> None:
        """Hidden rolls the card reveals after the story (roll_dice ``reveal_hidden``)."""
        from narrative_cli.ui.dice_view import dice_panel

        for item in result.tool_results:
            data = item.data
            if item.kind == "dice" and isinstance(data, dict) and data.get("reveal"):
                self.print(dice_panel(data, self.lang))

    def roll(self, rolled: DiceRoll) -> None:
        from narrative_cli.ui.dice_view import dice_panel

        self.print(dice_panel(rolled, self.lang))

    def roster(self, roster: Roster) -> None:
        """``/group``: the members in their colours and the group's rules."""
        self.print(render.roster_panel(roster.rows, roster.facts, self.lang,
                                       color=self.consoles.color))

    def dice_ledger(self, rows: Sequence[dict[str, Any]], *, reveal: bool) -> None:
        from narrative_cli.ui.dice_view import ledger_table

        self.print(ledger_table(rows, self.lang, reveal=reveal))

    @contextmanager
    def progress(self, title: str, total: int) -> Iterator[Callable[[int], None]]:
        """A progress bar of ``total`` steps on a terminal; elsewhere (line mode, logs) one
        line per update, so a script sees how far it got."""
        out = self.consoles.out
        if not out.is_terminal:

            def line(done: int) -> None:
                out.print(Text(f"{safe_text(title)}: {done}/{total}", style="dim"))

            yield line
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=out, transient=True) as bar:
            task = bar.add_task(safe_text(title), total=total)
            yield lambda done: bar.update(task, completed=done)


def _streamed(view: TurnListener) -> str:
    return str(getattr(view, "streamed", ""))


def _after_prefix(narrative: str, prefix: str) -> str:
    """The part of a continued reply after the text that was already shown."""
    head = prefix.rstrip()
    if head and narrative.startswith(head):
        return narrative[len(head) :].lstrip("\n")
    return narrative
