"""A played session for the issue-13 reliability tests: the sample card on the scripted server,
a real SQLite file, the real dispatcher and Rich screen printing to recording consoles.

``Overrides`` answers chosen agents with raw reply text (NaN, nesting bombs, escapes that a
``dict`` could not carry) and leaves the rest to ``StoryScript``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher, Outcome
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import Consoles, captured, recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests.conftest import SAMPLES
from tests.servers import Reply, ScriptedServer
from tests.story_replies import StoryScript

CARD = str(SAMPLES / "lantern-keeper.png")

Answer = str | dict[str, Any] | Reply | Callable[[Any], Any]


@dataclass
class Overrides:
    """Per-agent answers: a list is consumed one call at a time (its last item repeats)."""

    script: StoryScript = field(default_factory=StoryScript)
    answers: dict[str, list[Answer]] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    def set(self, agent: str, *answers: Answer) -> None:
        self.answers[agent] = list(answers)

    def clear(self, agent: str) -> None:
        self.answers.pop(agent, None)

    def __call__(self, body: Any, request: Any) -> Any:
        agent = request.agent
        self.calls[agent] = self.calls.get(agent, 0) + 1
        queue = self.answers.get(agent)
        if not queue:
            return self.script(body, request)
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        return answer(request) if callable(answer) else answer


def run_line(dispatcher: Dispatcher, consoles: Consoles, line: str) -> tuple[Outcome, str, str]:
    """Handle a line; return its outcome and what it printed on stdout and stderr."""
    out_before = len(captured(consoles.out))
    err_before = len(captured(consoles.err))
    outcome = dispatcher.handle(line)
    out = captured(consoles.out)[out_before:]
    err = captured(consoles.err)[err_before:]
    return outcome, out, err


@dataclass
class Game:
    play: PlaySession
    dispatcher: Dispatcher
    consoles: Consoles
    store: SessionStore
    replies: Overrides
    server: ScriptedServer

    def run(self, line: str) -> tuple[Outcome, str, str]:
        return run_line(self.dispatcher, self.consoles, line)

    def record(self, number: int | None = None) -> dict[str, Any]:
        """The stored record of turn ``number`` (default: the last stored turn)."""
        sid = self.play.session_id
        if number is None:
            number = self.store.resume(sid).number
        return self.store.record(sid, number)


def options_for(server: ScriptedServer, **changes: Any) -> PlayOptions:
    return PlayOptions(
        card=CARD, provider="openai", base_url=server.base_url, model="scripted-model",
        seed=11, session="night watch", **changes,
    )  # fmt: skip


@dataclass
class GameFactory:
    server: ScriptedServer
    folder: Path
    made: list[Game] = field(default_factory=list)

    def __call__(self, db: Path | None = None, **changes: Any) -> Game:
        replies = Overrides()
        self.server.reply_with(replies)
        store = SessionStore(db or self.folder / "sessions.db")
        play = PlaySession.open(store, options_for(self.server, **changes))
        consoles = recording_consoles(width=120)
        game = Game(play, Dispatcher(play, RichScreen.for_play(play, consoles)), consoles,
                    store, replies, self.server)  # fmt: skip
        self.made.append(game)
        return game

    def close(self) -> None:
        for game in self.made:
            game.play.close()
            game.store.close()


def game_factory(server: ScriptedServer, folder: Path) -> Iterator[GameFactory]:
    factory = GameFactory(server, folder)
    try:
        yield factory
    finally:
        factory.close()
