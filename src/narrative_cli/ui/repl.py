"""The interactive prompt (prompt_toolkit): history, multi-line input, completion, toolbar.

- History lives in ``paths.history_file()`` (under ``NARRATIVE_HOME``).
- Enter sends the line; Esc then Enter (or Alt+Enter) inserts a line break, and so does a
  line ending in a backslash.
- Tab completes slash commands and their arguments (``/mode s`` → ``serial``, file names
  after ``/export``, reply numbers after ``/swipe``).
- The bottom toolbar shows the session, the turn, the model, the mode and the tokens spent.
- Ctrl-X Ctrl-E or Ctrl-O opens ``$EDITOR`` (``$VISUAL`` first) on the input; the saved text
  comes back as the input, not sent (Ctrl-O no longer sends the line, as readline's
  operate-and-get-next did).
- Ctrl-C clears a typed line; at an empty prompt Ctrl-C or Ctrl-D leaves. Ctrl-C while a
  turn runs stops it; once story text has shown, the player is asked once whether to keep
  it as an unfinished reply, write it again or drop it.
- Keys typed while a turn runs are not echoed over the status line and not sent: they are
  the next prompt's draft (``ui.typeahead``).

Every typed line goes to the shared ``Dispatcher``; this module only reads lines.
"""

from __future__ import annotations

from collections.abc import Iterable

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from narrative_cli import paths
from narrative_cli.errors import EXIT_OK
from narrative_cli.i18n import t
from narrative_cli.play.commands import ALIASES, Dispatcher, completions
from narrative_cli.play.controller import PlaySession
from narrative_cli.ui.safe import safe_text
from narrative_cli.ui.typeahead import TypeAhead

PROMPT = "> "


class SlashCompleter(Completer):
    """Completes ``/command`` names and their arguments."""

    def __init__(self, play: PlaySession | None = None) -> None:
        self.play = play
        self.paths = PathCompleter(expanduser=True)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        name, space, rest = text[1:].partition(" ")
        command = ALIASES.get(name.lower(), name.lower())
        if space and command == "export":
            yield from self.paths.get_completions(Document(rest, len(rest)), complete_event)
            return
        if space and command == "swipe" and self.play is not None:
            for swipe in self.play.swipes():
                if str(swipe.index).startswith(rest):
                    yield Completion(str(swipe.index), start_position=-len(rest))
            return
        start = -len(rest) if space else -len(text)
        for choice in completions(text):
            yield Completion(choice, start_position=start)


def key_bindings() -> KeyBindings:
    """Enter sends (a trailing backslash continues), Esc+Enter breaks the line, Ctrl-C."""
    bindings = KeyBindings()

    @bindings.add("enter")
    def _send(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        document = buffer.document
        if document.is_cursor_at_the_end and document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        buffer.validate_and_handle()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("c-x", "c-e")
    @bindings.add("c-o")
    def _editor(event: KeyPressEvent) -> None:
        event.current_buffer.open_in_editor(validate_and_handle=False)

    @bindings.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=EOFError())

    return bindings


def toolbar_text(play: PlaySession) -> str:
    """`` session 3 · turn 4 · gpt-4o-mini · serial · 12,345 tokens (40% cached) ``."""
    total = play.account.total()
    tokens = total.prompt_tokens + total.completion_tokens
    return safe_text(
        t("toolbar", play.story.lang, session=play.session_id, turn=play.turn,
          model=play.model_name(), mode=play.mode, tokens=f"{tokens:,}",
          share=f"{total.cache_share:.0%}")
    )


def make_prompt(play: PlaySession) -> PromptSession[str]:
    """The prompt_toolkit session of the REPL."""
    history_path = paths.history_file()
    paths.usable_dir(history_path.parent)
    return PromptSession(
        history=FileHistory(str(history_path)),
        completer=SlashCompleter(play),
        complete_while_typing=False,
        key_bindings=key_bindings(),
        bottom_toolbar=lambda: toolbar_text(play),
        multiline=False,
        enable_history_search=True,
    )


def run_repl(dispatcher: Dispatcher, typeahead: TypeAhead | None = None) -> int:
    """Read lines until /quit, Ctrl-D or Ctrl-C at an empty prompt; returns the exit code.

    ``typeahead``: the keys typed during the last turn, offered as the next input (after
    ``/impersonate``'s draft, when there is one)."""
    session = make_prompt(dispatcher.play)
    dispatcher.ask = ask_line
    while True:
        typed = typeahead.take() if typeahead is not None else ""
        draft = "\n".join(part for part in (dispatcher.draft, typed) if part)
        dispatcher.draft = ""  # /impersonate's draft, then what was typed during the turn
        try:
            line = session.prompt(PROMPT, default=draft)
        except EOFError:
            break
        except KeyboardInterrupt:  # not bound above on some terminals: treat as leaving
            break
        try:
            outcome = dispatcher.handle(line)
        except KeyboardInterrupt:  # Ctrl-C outside a turn (while a command printed)
            continue
        if outcome.quit:
            break
    return EXIT_OK


def ask_line(question: str) -> str | None:
    """One answer typed at ``question`` (None: Ctrl-C or Ctrl-D)."""
    session: PromptSession[str] = PromptSession()
    try:
        return session.prompt(question)
    except (EOFError, KeyboardInterrupt):
        return None


def ask_greeting(count: int, lang: str = "en") -> int:
    """Ask which of ``count`` greetings to start with (Enter: 0)."""
    session: PromptSession[str] = PromptSession()
    while True:
        try:
            answer = session.prompt(t("greeting.prompt", lang, last=count - 1)).strip()
        except (EOFError, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        if not answer:
            return 0
        if answer.isdigit() and int(answer) < count:
            return int(answer)
        print(t("greeting.again", lang, last=count - 1))
