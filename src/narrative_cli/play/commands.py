"""The one slash-command dispatcher of the REPL and of line mode.

``Dispatcher(play, screen).handle(line)`` plays a turn for plain text and runs a command
for a line starting with ``/`` (``//text`` plays ``/text``). It never raises for what a user
can type: errors are shown on the screen and reported in the returned ``Outcome``, which
says whether to quit, whether the line failed (a turn whose backend failed, a command that
could not run) and whether it was a usage error (unknown command, bad argument).

The dispatcher knows nothing of Rich or prompt_toolkit: it hands data to a ``Screen`` (the
Rich one is ``ui.screen.RichScreen``; tests may use it with recording consoles).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from narrative_cli.domain_chat import AuthorsNote
from narrative_cli.errors import (
    BackendError,
    BadInput,
    NarrativeError,
    TurnCancelled,
    TurnNotSaved,
    worded,
)
from narrative_cli.i18n import has, t
from narrative_cli.pipeline.story import TurnResult
from narrative_cli.play import group_play, reports, words
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.editing_commands import EditingCommands
from narrative_cli.play.editor import edit_text
from narrative_cli.play.screen_api import Outcome as Outcome  # re-exported
from narrative_cli.play.screen_api import Screen as Screen
from narrative_cli.play.screen_api import TurnListener as TurnListener
from narrative_cli.play.screen_api import backend_hint as backend_hint


@dataclass(frozen=True)
class Command:
    """One slash command: its name, argument hint, one-line help and argument completions."""

    name: str
    args: str
    help: str
    choices: tuple[str, ...] = ()


COMMANDS: tuple[Command, ...] = (
    Command("help", "", "list the commands"),
    Command("state", "", "the game state: time, place, items, relationships, quests, flags"),
    Command("vars", "", "the MVU variables"),
    Command("summary", "[on|off]", "the summary; on/off: each turn's new entry", ("on", "off")),
    Command("chapters", "", "the chapters and arcs old summary entries were folded into"),
    Command("recall", "QUERY", "search everything said so far (turns, summaries, chapters)"),
    Command("lore", "", "the lore entries that activated this turn, and why"),
    Command("tools", "", "the card's tools"),
    Command("note", "[TEXT|off]", "show or set the Author's Note (off: none)"),
    Command("roll", "EXPR [adv|dis] [dc N] | coc SKILL", "roll dice or a CoC check (no story)"),
    Command("dice", "[reveal]", "every roll of the story; reveal: show the hidden ones",
            ("reveal",)),
    Command("regen", "", "redo the last turn (a group: the last speaker's reply); old: a swipe"),
    Command("group", "", "a group scene's members, who is muted, its strategy and mode"),
    Command("next", "NAME", "a group scene: NAME answers the next turn"),
    Command("mute", "NAME", "a group scene: NAME stays silent until /unmute"),
    Command("unmute", "NAME", "a group scene: NAME may speak again"),
    Command("swipe", "[N]", "list the last turn's replies, or show reply N (state follows)"),
    Command("undo", "", "drop the last turn"),
    Command("branch", "[NAME]", "copy the story so far into a new session and play on there"),
    Command("retry", "", "after a failed turn: try it again"),
    Command("continue", "", "let the writer go on with the last reply"),
    Command("trace", "on [DIR]|off", "write every model call to DIR", ("on", "off")),
    Command("cost", "", "session totals: calls, tokens, what the cache saved"),
    Command("mode", "[auto|merged|serial|parallel]", "show or switch the pipeline mode",
            ("auto", "merged", "serial", "parallel")),
    Command("edit", "[--reply] [TEXT]",
            "your last line (or --reply: the last reply) replaced by TEXT, or edited in"
            " $EDITOR; the turn is redone (old: a swipe)"),
    Command("impersonate", "", "the writer drafts your next line into the input (not sent)"),
    Command("model", "[NAME]", "show or switch the model (kept with the session)"),
    Command("profile", "[NAME]", "show or switch the config profile (kept with the session)"),
    Command("delete", "N", "delete the last N messages (a turn is 2: your line and the reply)"),
    Command("export", "[md|txt|jsonl|json] [FILE] [--force]",
            "export: md/txt transcript, jsonl SillyTavern chat, json everything",
            ("md", "txt", "jsonl", "json")),
    Command("catchup", "", "an imported chat: summarise its old turns and rebuild the state"),
    Command("quit", "", "leave (the story is saved after every turn)"),
)
ALIASES = {"exit": "quit", "q": "quit", "regenerate": "regen", "h": "help", "?": "help"}
BY_NAME = {command.name: command for command in COMMANDS}
# commands whose argument is text as typed (a story line, a model name, a member's name)
FREE_TEXT = ("edit", "model", "next", "mute", "unmute")

Handler = Callable[[list[str]], Outcome]
UNFINISHED_ANSWERS = {
    "": "keep", "k": "keep", "keep": "keep", "保留": "keep",
    "r": "regen", "regen": "regen", "rewrite": "regen", "重写": "regen",
    "d": "drop", "drop": "drop", "丢弃": "drop",
}  # fmt: skip


class Dispatcher(EditingCommands):
    """Turns typed lines into turns and commands on a PlaySession (see the module doc)."""

    def __init__(self, play: PlaySession, screen: Screen) -> None:
        self.play = play
        self.screen = screen
        self.show_summary = True
        self.rolls = 0
        self._quit_warned = False
        # asks the player one question and returns the answer (None: no answer); the REPL
        # and line mode set it, for the unfinished reply after Ctrl-C
        self.ask: Callable[[str], str | None] | None = None
        self.draft = ""  # /impersonate's draft: the REPL puts it in the next input
        self.edit: Callable[[str, str], str] = edit_text  # $EDITOR on a text (tests: a stub)

    @property
    def lang(self) -> str:
        """The language of what the dispatcher says: the story's."""
        return self.play.story.lang

    # -- entry point -------------------------------------------------------------------------

    def handle(self, line: str) -> Outcome:
        """Play a turn or run a command; never raises for user mistakes."""
        text = line.strip()
        if not text:
            return Outcome()
        if text.startswith("//"):
            return self.say(text[1:])
        if not text.startswith("/"):
            return self.say(text)
        head, _, rest = text[1:].partition(" ")
        if head.lower() in FREE_TEXT:  # the rest is story text: quotes and apostrophes as typed
            return self.command(head.lower(), [rest.strip()] if rest.strip() else [])
        try:
            name, args = parse_command(text)
        except ValueError as exc:
            self.screen.error(t("msg.bad_command", self.lang, error=exc))
            return Outcome(failed=True, usage_error=True)
        return self.command(name, args)

    def say(self, text: str) -> Outcome:
        """Play one turn for what the user typed."""
        return self._turn(lambda view: self.play.play(text, view))

    def command(self, name: str, args: list[str]) -> Outcome:
        """Run slash command ``name`` with its arguments."""
        name = ALIASES.get(name, name)
        handler: Handler | None = getattr(self, f"cmd_{name}", None)
        if name not in BY_NAME or handler is None:
            self.screen.error(t("msg.unknown_command", self.lang, name=name),
                              hint=t("msg.unknown_hint", self.lang))
            return Outcome(failed=True, usage_error=True)
        try:
            return handler(args)
        except BadInput as error:
            self.screen.error(error.text(self.lang), error.hint_text(self.lang))
            return Outcome(failed=True, usage_error=True)
        except NarrativeError as error:
            self.screen.error(error.text(self.lang), error.hint_text(self.lang))
            return Outcome(failed=True)

    def _turn(self, action: Callable[[Any], TurnResult], prefix: str = "") -> Outcome:
        notice = self.play.idle_notice()
        if notice:  # said before the turn: it is the turn about to run that pays
            self.screen.info(notice)
        try:
            with self.screen.turn(prefix) as view:
                result = action(view)
        except TurnCancelled:
            if self.play.interrupted is not None:
                return self._unfinished()
            self.screen.info(t("msg.cancelled", self.lang))
            return Outcome(cancelled=True)
        except TurnNotSaved as error:  # shown in full, kept in memory, /retry stores it
            if isinstance(error.result, TurnResult):
                self.screen.show_turn(self.play, error.result, view, summary=self.show_summary)
            self.screen.error(error.text(self.lang), error.hint_text(self.lang))
            return Outcome(failed=True)
        except BackendError as error:
            self.screen.error(error.text(self.lang), backend_hint(error, self.lang))
            return Outcome(failed=True)
        except BadInput as error:
            self.screen.error(error.text(self.lang), error.hint_text(self.lang))
            return Outcome(failed=True, usage_error=True)
        except NarrativeError as error:
            self.screen.error(error.text(self.lang), error.hint_text(self.lang))
            return Outcome(failed=True)
        self.screen.show_turn(self.play, result, view, summary=self.show_summary)
        return Outcome()

    def _unfinished(self) -> Outcome:
        """Ctrl-C cut a reply short: keep it, write it again or drop it (asked once)."""
        if self.ask is None:  # nobody to ask (an embedder): nothing is stored unasked
            self.play.drop_unfinished()
            self.screen.info(t("msg.cancelled", self.lang))
            return Outcome(cancelled=True)
        answer = (self.ask(t("msg.unfinished_ask", self.lang)) or "").strip()
        choice = UNFINISHED_ANSWERS.get(answer.lower())
        if choice is None:
            self.screen.error(t("msg.unfinished_unknown", self.lang, answer=answer))
            choice = "keep"
        if choice == "regen":
            return self._turn(lambda view: self.play.retry(view))
        if choice == "drop":
            self.play.drop_unfinished()
            self.screen.info(t("msg.unfinished_dropped", self.lang))
            return Outcome(cancelled=True)
        try:
            kept = self.play.keep_unfinished()
        except NarrativeError as error:
            self.screen.error(error.text(self.lang), error.hint_text(self.lang))
            return Outcome(failed=True)
        self.screen.info(t("msg.unfinished_kept", self.lang, turn=kept.number))
        return Outcome()

    # -- commands ----------------------------------------------------------------------------

    def cmd_help(self, args: list[str]) -> Outcome:
        self.screen.table(*help_table(self.lang))
        self.screen.info(t("help.keys", self.lang))
        lang = self.lang
        headers = (t("help.key", lang), t("help.key_does", lang))
        self.screen.table(t("help.keys_title", lang), headers, words.key_rows(lang))
        return Outcome()

    def cmd_state(self, args: list[str]) -> Outcome:
        self.screen.panel(*reports.state_text(self.play))
        return Outcome()

    def cmd_vars(self, args: list[str]) -> Outcome:
        self.screen.panel(*reports.vars_text(self.play))
        return Outcome()

    def cmd_summary(self, args: list[str]) -> Outcome:
        if args:
            self.show_summary = _on_off(args[0], "/summary", self.lang)
            self.screen.info(
                t("msg.summary_shown" if self.show_summary else "msg.summary_hidden", self.lang)
            )
            return Outcome()
        self.screen.panel(*reports.summary_text(self.play))
        return Outcome()

    def cmd_chapters(self, args: list[str]) -> Outcome:
        self.screen.panel(*reports.chapters_text(self.play))
        return Outcome()

    def cmd_recall(self, args: list[str]) -> Outcome:
        if not args:
            self.screen.error(t("msg.recall_needs", self.lang))
            return Outcome(usage_error=True)
        query = " ".join(args)
        title, headers, rows = reports.recall_rows(self.play, query)
        if not rows:
            self.screen.info(t("msg.recall_none", self.lang, query=query))
            return Outcome()
        self.screen.table(title, headers, rows)
        return Outcome()

    def cmd_lore(self, args: list[str]) -> Outcome:
        self.screen.table(*reports.lore_rows(self.play))
        return Outcome()

    def cmd_note(self, args: list[str]) -> Outcome:
        if args:
            text = "" if args == ["off"] else " ".join(args)
            note = self.play.set_note(text)
            self.screen.info(t("msg.note_set" if text else "msg.note_cleared", self.lang))
        else:
            note = self.play.story.authors_note or AuthorsNote()
        self.screen.panel(*reports.note_text(note, self.lang))
        return Outcome()

    def cmd_tools(self, args: list[str]) -> Outcome:
        self.screen.table(*reports.tool_rows(self.play))
        for problem in self.play.story.tools.problems:
            self.screen.info(f"! {problem}")
        return Outcome()

    def cmd_roll(self, args: list[str]) -> Outcome:
        from narrative_cli.rng import new_rng
        from narrative_cli.tools.dice import DiceError
        from narrative_cli.tools.dice_checks import check

        params = parse_coc(args, self.lang)
        if params is None:
            expr, mode, dc = parse_roll(args, self.lang)
            params = {"expr": expr, "mode": mode, "dc": dc}
        self.rolls += 1
        rng = new_rng(self.play.story.seed * 1_000_003 + self.rolls)
        try:
            rolled = check(params, rng)
        except DiceError as error:
            self.screen.error(error.localized(self.play.story.lang))
            return Outcome(failed=True, usage_error=True)
        self.screen.roll(rolled)
        return Outcome()

    def cmd_dice(self, args: list[str]) -> Outcome:
        from narrative_cli.play.dice_ledger import session_rolls

        if args and args[0] != "reveal" or len(args) > 1:
            raise BadInput(t("msg.dice_args", self.lang))
        self.screen.dice_ledger(session_rolls(self.play), reveal=bool(args))
        return Outcome()

    def cmd_group(self, args: list[str]) -> Outcome:
        self.screen.roster(group_play.roster(self.play))
        return Outcome()

    def cmd_next(self, args: list[str]) -> Outcome:
        self.screen.info(group_play.set_next(self.play, args))
        return Outcome()

    def cmd_mute(self, args: list[str]) -> Outcome:
        self.screen.info(group_play.set_muted(self.play, args, True))
        return Outcome()

    def cmd_unmute(self, args: list[str]) -> Outcome:
        self.screen.info(group_play.set_muted(self.play, args, False))
        return Outcome()

    def cmd_regen(self, args: list[str]) -> Outcome:
        return self._turn(lambda view: self.play.regenerate(view))

    def cmd_continue(self, args: list[str]) -> Outcome:
        if self.play.story.group is not None:
            raise BadInput(group_play.say(self.play.story.lang, "no_continue"))
        so_far = self.play.story.history[-1].narrative if self.play.turn else ""
        if not self.play.turn:
            raise NarrativeError(t("msg.nothing_to_continue", self.lang))
        return self._turn(lambda view: self.play.continue_(view), prefix=so_far)

    def cmd_retry(self, args: list[str]) -> Outcome:
        if self.play.unsaved is not None:
            number = self.play.save_unsaved().number
            self.screen.info(t("msg.turn_saved", self.lang, turn=number))
            return Outcome()
        if self.play.failure is None:
            raise NarrativeError(t("msg.nothing_to_retry", self.lang))
        return self._turn(lambda view: self.play.retry(view))

    def cmd_swipe(self, args: list[str]) -> Outcome:
        if not args:
            self.screen.table(*reports.swipe_rows(self.play))
            return Outcome()
        index = _number(args[0], "/swipe N", self.lang)
        state = self.play.swipe(index)
        self.screen.info(
            t("msg.swiped", self.lang, turn=state.number, index=index, count=state.swipe_count)
        )
        self.screen.show_last(self.play)
        return Outcome()

    def cmd_undo(self, args: list[str]) -> Outcome:
        now = self.play.undo()
        self.screen.info(t("msg.undone", self.lang, turn=now))
        self.screen.show_last(self.play)
        return Outcome()

    def cmd_branch(self, args: list[str]) -> Outcome:
        new_id = self.play.branch(" ".join(args) or None)
        info = self.play.info()
        self.screen.info(t("msg.branched", self.lang, session=new_id, name=info.name))
        return Outcome()

    def cmd_trace(self, args: list[str]) -> Outcome:
        if not args:
            where = self.play.trace.directory if self.play.trace else None
            said = t("msg.trace_on", self.lang, path=where) if where else None
            self.screen.info(said or t("msg.trace_off", self.lang))
            return Outcome()
        if _on_off(args[0], "/trace", self.lang):
            directory = args[1] if len(args) > 1 else str(self.play.default_trace_dir())
            writer = self.play.set_trace(directory)
            path = writer.directory if writer else directory
            self.screen.info(t("msg.trace_on", self.lang, path=path))
        else:
            self.play.set_trace(None)
            self.screen.info(t("msg.trace_off", self.lang))
        return Outcome()

    def cmd_cost(self, args: list[str]) -> Outcome:
        self.screen.table(*reports.cost_rows(self.play))
        self.screen.info(reports.cache_note(self.play))
        return Outcome()

    def cmd_mode(self, args: list[str]) -> Outcome:
        if args:
            self.play.set_mode(args[0])
        self.screen.info(t("msg.mode", self.lang, mode=self.play.mode))
        return Outcome()

    def cmd_export(self, args: list[str]) -> Outcome:
        from narrative_cli.play.transcript import FORMATS

        force = "--force" in args
        args = [word for word in args if word != "--force"]
        if not args:
            raise BadInput(t("msg.export_needs", self.lang))
        fmt = args[0].lower() if args[0].lower() in FORMATS else None
        rest = args[1:] if fmt else args
        target = " ".join(rest) if rest else str(self.play.default_export_path(str(fmt)))
        count, what = self.play.export(target, fmt, force=force)
        what = t("export.turns" if what == "turns" else "export.messages", self.lang)
        self.screen.info(t("msg.exported", self.lang, count=count, what=what, path=target))
        return Outcome()

    def cmd_delete(self, args: list[str]) -> Outcome:
        if len(args) != 1:
            raise BadInput(t("msg.delete_args", self.lang))
        now = self.play.delete_messages(_number(args[0], "/delete N", self.lang))
        self.screen.info(t("msg.deleted", self.lang, turn=now))
        self.screen.show_last(self.play)
        return Outcome()

    def cmd_catchup(self, args: list[str]) -> Outcome:
        from narrative_cli.play import catch_up

        if args:
            raise worded(BadInput, "usage.no_argument", command="/catchup")
        outcome = catch_up.run(self.play, self.screen)
        return Outcome(failed=not outcome.finished, cancelled=outcome.stopped.startswith("cancel"))

    def cmd_quit(self, args: list[str]) -> Outcome:
        unsaved = self.play.unsaved
        if unsaved is not None and not self._quit_warned:  # say it once; a second /quit goes
            self._quit_warned = True
            self.screen.error(
                t("msg.quit_unsaved", self.lang, turn=unsaved.result.number),
                hint=t("msg.quit_unsaved_hint", self.lang),
            )
            return Outcome(failed=True)
        return Outcome(quit=True)


def help_table(lang: str) -> tuple[str, tuple[str, str], list[tuple[str, str]]]:
    """``/help``: the title, the headers and one row per command, in ``lang``."""
    rows = [(f"/{c.name} {c.args}".strip(), command_help(c, lang)) for c in COMMANDS]
    return t("help.title", lang), (t("help.command", lang), t("help.what", lang)), rows


def command_help(command: Command, lang: str) -> str:
    """A command's one-line help in ``lang`` (``cmd.<name>`` in the catalogs; a command added
    without catalog lines shows its English ``help``, and the catalog test fails)."""
    key = f"cmd.{command.name}"
    return t(key, lang) if has(key, lang) else command.help


def parse_command(text: str) -> tuple[str, list[str]]:
    """``/name arg …`` → (name, args), quotes respected; ValueError for an unclosed quote."""
    words = shlex.split(text[1:], posix=True)
    if not words:
        return "", []
    return words[0].lower(), words[1:]


_MODE_WORDS = {
    "adv": "advantage", "advantage": "advantage", "dis": "disadvantage",
    "disadvantage": "disadvantage", "explode": "exploding", "exploding": "exploding",
    "normal": "normal", "优势": "advantage", "劣势": "disadvantage", "爆炸": "exploding",
}


def parse_roll(args: list[str], lang: str = "en") -> tuple[str, str, str | None]:
    """``/roll`` arguments → (expression, mode, dc)."""
    words = iter(args)
    expr: list[str] = []
    mode, dc = "normal", None
    for word in words:
        low = word.lower()
        if low in ("--mode", "-m"):
            mode = next(words, "normal")
        elif low in ("dc", "--dc"):
            dc = next(words, None)
        elif low.startswith(("dc=", "--dc=")):
            dc = low.split("=", 1)[1]
        elif low in _MODE_WORDS:
            mode = _MODE_WORDS[low]
        else:
            expr.append(word)
    if not expr:
        raise BadInput(t("msg.roll_needs", lang))
    return " ".join(expr), mode, dc


def parse_coc(args: list[str], lang: str = "en") -> dict[str, Any] | None:
    """``/roll coc 60 hard bonus`` → coc7 check parameters; None when not a CoC roll.

    ``bonus`` / ``penalty`` (or 奖励 / 惩罚) each add one die; ``hard`` / ``extreme`` (or 困难 /
    极难) set the difficulty."""
    if not args or args[0].lower() not in ("coc", "coc7", "克苏鲁"):
        return None
    if len(args) < 2:
        raise BadInput(t("msg.coc_needs", lang))
    params: dict[str, Any] = {"system": "coc7", "skill": args[1], "bonus": 0, "penalty": 0}
    for word in args[2:]:
        low = word.lower()
        if low in ("bonus", "奖励"):
            params["bonus"] += 1
        elif low in ("penalty", "惩罚"):
            params["penalty"] += 1
        elif low in ("hard", "extreme", "困难", "极难"):
            params["difficulty"] = low
        elif low in ("pushed", "push", "孤注一掷"):
            params["pushed"] = True
        else:
            raise BadInput(t("msg.coc_word", lang, word=repr(word)))
    return params


def completions(text: str) -> Iterator[str]:
    """Completions of a partly typed command line (command names, then argument choices)."""
    if not text.startswith("/"):
        return
    if " " not in text:
        for command in COMMANDS:
            if command.name.startswith(text[1:].lower()):
                yield "/" + command.name
        return
    name, _, rest = text[1:].partition(" ")
    found = BY_NAME.get(ALIASES.get(name.lower(), name.lower()))
    if found is not None and " " not in rest:
        yield from (choice for choice in found.choices if choice.startswith(rest))


def _on_off(word: str, where: str, lang: str = "en") -> bool:
    low = word.lower()
    if low in ("on", "yes", "1", "true"):
        return True
    if low in ("off", "no", "0", "false"):
        return False
    raise BadInput(t("msg.on_off", lang, where=where, word=repr(word)))


def _number(word: str, where: str, lang: str = "en") -> int:
    try:
        return int(word)
    except ValueError:
        raise BadInput(t("msg.number", lang, where=where, word=repr(word))) from None
