"""The slash commands that edit the story and change how it is played (#18 item 6).

``/edit`` (the last input, or ``--reply`` the last reply; inline or in ``$EDITOR``),
``/impersonate``, ``/model`` and ``/profile``: the ``Dispatcher`` (``play.commands``) gets
them from this mixin, which keeps that module about reading lines and the older commands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from narrative_cli.errors import BackendError, BadInput, NarrativeError, TurnCancelled, worded
from narrative_cli.i18n import t
from narrative_cli.play.editor import editor_command
from narrative_cli.play.screen_api import Outcome, Screen, backend_hint

if TYPE_CHECKING:
    from narrative_cli.pipeline.story import TurnResult
    from narrative_cli.play.controller import PlaySession


class EditingCommands:
    """``cmd_edit``, ``cmd_impersonate``, ``cmd_model``, ``cmd_profile`` of the dispatcher."""

    play: PlaySession
    screen: Screen
    draft: str
    edit: Callable[[str, str], str]

    if TYPE_CHECKING:

        @property
        def lang(self) -> str: ...
        def _turn(self, action: Callable[[Any], TurnResult], prefix: str = "") -> Outcome: ...

    def cmd_edit(self, args: list[str]) -> Outcome:
        if not self.play.turn:
            raise NarrativeError(t("msg.nothing_to_edit", self.lang))
        text = " ".join(args).strip()
        head, _, rest = text.partition(" ")
        if head in ("--reply", "-r"):
            return self._edit_reply(rest.strip())
        if not text:
            if editor_command() is None:  # as before $EDITOR could be used: say what to type
                raise BadInput(
                    t("msg.edit_needs", self.lang, last=self.play.last_input()),
                    hint=t("msg.edit_hint", self.lang),
                )
            text = self.edit(self.play.last_input(), "/edit TEXT replays the last turn with TEXT")
            if not text.strip() or text.strip() == self.play.last_input().strip():
                self.screen.info(t("msg.edit_unchanged", self.lang))
                return Outcome()
        return self._turn(lambda view: self.play.edit(text.strip(), view))

    def _edit_reply(self, text: str) -> Outcome:
        old = self.play.last_reply()
        if not text:
            text = self.edit(old, "/edit --reply TEXT replaces the last reply with TEXT")
            if not text.strip() or text.strip() == old.strip():
                self.screen.info(t("msg.edit_unchanged", self.lang))
                return Outcome()
        return self._turn(lambda view: self.play.edit_reply(text, view))

    def cmd_impersonate(self, args: list[str]) -> Outcome:
        from narrative_cli.play.impersonate import impersonate

        if args:
            raise worded(BadInput, "usage.no_argument", command="/impersonate")
        try:
            with self.screen.turn() as view:
                draft = impersonate(self.play, view)
        except TurnCancelled:
            self.screen.info(t("msg.impersonate_cancelled", self.lang))
            return Outcome(cancelled=True)
        except BackendError as error:
            self.screen.error(error.message, backend_hint(error, self.lang))
            return Outcome(failed=True)
        self.draft = draft
        self.screen.panel(t("report.impersonate_title", self.lang), draft)
        return Outcome()

    def cmd_model(self, args: list[str]) -> Outcome:
        from narrative_cli.play.switching import switch_backend

        if args:
            model = switch_backend(self.play, model=" ".join(args))
            self.screen.info(t("msg.model_switched", self.lang, model=model))
        else:
            self.screen.info(t("msg.model_now", self.lang, model=self.play.model_name()))
        return Outcome()

    def cmd_profile(self, args: list[str]) -> Outcome:
        from narrative_cli.play.switching import profile_name, switch_backend

        if len(args) > 1:
            raise worded(BadInput, "usage.profile_name")
        if args:
            model = switch_backend(self.play, profile=args[0])
            name = profile_name(self.play)
            self.screen.info(t("msg.profile_switched", self.lang, profile=name, model=model))
        else:
            names = ", ".join(sorted(self.play.story.settings.profiles))
            name = profile_name(self.play)
            self.screen.info(t("msg.profile_now", self.lang, profile=name, names=names))
        return Outcome()


