"""``narrative run``: open or resume the session, show the opening, then REPL or line mode.

The REPL runs when stdin and stdout are terminals; otherwise every input line is a turn or a
slash command (``ui.lineio``). On a terminal, a card with alternate greetings asks which one
to start with unless ``--greeting N`` chose it.
"""

from __future__ import annotations

import sys
from typing import IO

from narrative_cli.play.commands import Dispatcher
from narrative_cli.play.controller import PlaySession
from narrative_cli.play.options import PlayOptions
from narrative_cli.store.sessions import SessionStore
from narrative_cli.ui.console import Consoles, is_terminal, make_consoles
from narrative_cli.ui.screen import RichScreen


def run_story(
    options: PlayOptions,
    *,
    no_color: bool = False,
    stdin: IO[str] | None = None,
    consoles: Consoles | None = None,
) -> int:
    """Play ``options.card`` (or resume a session) and return the exit code."""
    source = stdin or sys.stdin
    consoles = consoles or make_consoles(no_color)
    interactive = is_terminal(source) and is_terminal(consoles.out.file)
    store = SessionStore()
    try:
        if interactive:
            options = _choose_greeting(options, store, consoles)
        play = PlaySession.open(store, options)
        try:
            return _loop(play, consoles, interactive, source)
        finally:
            play.close()
    finally:
        store.close()


def _loop(play: PlaySession, consoles: Consoles, interactive: bool, source: IO[str]) -> int:
    screen = RichScreen.for_play(play, consoles)
    screen.show_opening(play)
    dispatcher = Dispatcher(play, screen)
    if interactive:
        from narrative_cli.ui.repl import run_repl

        return run_repl(dispatcher)
    from narrative_cli.ui.lineio import run_lines

    return run_lines(dispatcher, source, consoles)


def _choose_greeting(options: PlayOptions, store: SessionStore, consoles: Consoles) -> PlayOptions:
    """Ask for a greeting when a new session starts from a card with alternate greetings."""
    from dataclasses import replace

    from narrative_cli.load import load_card
    from narrative_cli.play.opening import named_session

    if options.greeting is not None or options.resume or named_session(store, options):
        return options
    card = load_card(options.card)
    if len(card.greetings) < 2:
        return options
    from narrative_cli.context.macros import env_for, expand
    from narrative_cli.domain import Persona
    from narrative_cli.load import card_language
    from narrative_cli.ui.render import greeting_menu
    from narrative_cli.ui.repl import ask_greeting

    lang = options.lang if options.lang in ("zh", "en") else card_language(card)
    env = env_for(card, Persona(name=options.user_name or "User"), lang=lang)
    consoles.out.print(greeting_menu([expand(g, env) for g in card.greetings], lang))
    return replace(options, greeting=ask_greeting(len(card.greetings)))
