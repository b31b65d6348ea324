"""``narrative run``: open or resume the session, show the opening, then hand lines to a front end.

``run_session(options, front)`` is the wiring: the session store, the greeting choice, the
``PlaySession`` and the ``Dispatcher``. The card is loaded once: when a new session asks
which greeting to start with, the card read for the menu is the card the story is built
from. Everything shown or read goes through the ``Front`` (``ui.front.TerminalFront`` on a
terminal or a pipe; ``cli`` builds it and hands it in), so this module draws nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from narrative_cli.domain import Card
from narrative_cli.play.commands import Dispatcher, Screen
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.options import PlayOptions
from narrative_cli.store.sessions import SessionStore


class OpeningScreen(Screen, Protocol):
    """A ``Screen`` that can also show a session's opening (card header, greeting or last turn)."""

    def show_opening(self, play: PlaySession) -> None: ...


class Front(Protocol):
    """What a played session needs from the user interface."""

    @property
    def interactive(self) -> bool:
        """True on a terminal: greetings are offered and the REPL reads the lines."""
        ...

    def choose_greeting(self, greetings: Sequence[str], lang: str) -> int:
        """Which greeting (by index) a new session starts with; greetings have macros expanded."""
        ...

    def screen(self, play: PlaySession) -> OpeningScreen:
        """The screen the dispatcher shows the session on."""
        ...

    def confirm(self, question: str) -> bool:
        """A yes/no question on a terminal (the default is yes)."""
        ...

    def read_lines(self, dispatcher: Dispatcher) -> int:
        """Feed lines to ``dispatcher`` until the input ends or ``/quit``; the exit code."""
        ...


def run_session(options: PlayOptions, front: Front, store: SessionStore | None = None) -> int:
    """Play ``options.card`` (or resume a session) through ``front``; returns the exit code."""
    store = store or SessionStore()
    try:
        card = None
        if front.interactive:
            options, card = choose_greeting(options, store, front)
        play = PlaySession.open(store, options, card=card)
        try:
            screen = front.screen(play)
            screen.show_opening(play)
            from narrative_cli.play import catch_up

            ask = front.confirm if front.interactive else None
            catch_up.offer(play, screen, options.catch_up, ask)
            return front.read_lines(Dispatcher(play, screen))
        finally:
            play.close()
    finally:
        store.close()


def choose_greeting(
    options: PlayOptions, store: SessionStore, front: Front
) -> tuple[PlayOptions, Card | None]:
    """Ask for a greeting when a new session starts from a card with alternate greetings.

    Returns the options (with ``greeting`` set when asked) and the card if it was loaded, so
    the session is built from it instead of reading the file again.
    """
    from narrative_cli.play.opening import named_session, with_st_card

    if options.greeting is not None or options.resume or options.continue_last:
        return options, None
    if options.members or options.group:  # a group scene opens with every member's greeting
        return options, None
    if named_session(store, options):
        return options, None
    from narrative_cli.load import load_card

    options = with_st_card(options)  # run NAME --st-data DIR: the card's file

    card = load_card(options.card)
    if len(card.greetings) < 2:
        return options, card
    from narrative_cli.context.macros import env_for, expand
    from narrative_cli.domain_chat import Persona
    from narrative_cli.load import card_language

    lang = options.lang if options.lang in ("zh", "en") else card_language(card)
    env = env_for(card, Persona(name=options.user_name or "User"), lang=lang)
    from narrative_cli.config import load_settings
    from narrative_cli.errors import spoken_in
    from narrative_cli.play.preflight import preflight

    with spoken_in(lang):  # the story's language (--lang, then the card's), not the locale's
        preflight(load_settings(options.overrides()))  # before the menu shows any greeting
    index = front.choose_greeting([expand(g, env) for g in card.greetings], lang)
    return replace(options, greeting=index), card
