"""Cache economics on Anthropic (#17 item 5): the turn's footer and /cost show the tokens read
from and written to the prompt cache, the turn's stored usage keeps both, and a turn after an
idle pause longer than the cache lives is announced as paying for cache writes again.

The sample card plays against the scripted server speaking Anthropic's protocol; every call
reports 100 fresh input tokens, 600 read from the cache, 300 written to it and 50 output.
The pause is set through the story's clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import Consoles, captured, recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import Reply, ScriptedServer
from tests.story_replies import StoryScript

scripted_server = servers.scripted_server

USAGE = {"input_tokens": 100, "cache_read_input_tokens": 600,
         "cache_creation_input_tokens": 300, "output_tokens": 50}  # fmt: skip


class CachedScript(StoryScript):
    """The story's replies, each reporting ``USAGE`` (or ``usage`` when set)."""

    usage: dict[str, int] | None = None

    def __call__(self, body: Any, request: Any) -> Reply | str | dict[str, Any] | None:
        answer = super().__call__(body, request)
        if isinstance(answer, dict):
            answer = Reply(text=json.dumps(answer))
        elif isinstance(answer, str):
            answer = Reply(text=answer)
        usage = self.usage or USAGE
        return replace(answer, usage=usage) if isinstance(answer, Reply) else answer


class Clock:
    """The story's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 5, 20, 0, 0)

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Game:
    play: PlaySession
    dispatcher: Dispatcher
    consoles: Consoles
    clock: Clock
    script: CachedScript

    def run(self, line: str) -> str:
        before = len(captured(self.consoles.out))
        self.dispatcher.handle(line)
        return captured(self.consoles.out)[before:]


@pytest.fixture
def anthropic(tmp_path: Path, scripted_server: ScriptedServer,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[Game]:  # fmt: skip
    monkeypatch.setenv("SCRIPTED_ANTHROPIC_KEY", "sk-ant-test")
    script = CachedScript()
    scripted_server.reply_with(script)
    options = PlayOptions(card=str(SAMPLES / "lantern-keeper.png"), provider="anthropic",
                          base_url=scripted_server.base_url, model="scripted-model", seed=11,
                          api_key_env="SCRIPTED_ANTHROPIC_KEY")  # fmt: skip
    store = SessionStore(tmp_path / "sessions.db")
    play = PlaySession.open(store, options)
    clock = Clock()
    play.story.clock = clock
    consoles = recording_consoles(width=120)
    yield Game(play, Dispatcher(play, RichScreen.for_play(play, consoles)), consoles, clock,
               script)
    play.close()
    store.close()


def test_the_footer_shows_cache_reads_and_writes_of_the_turn(anthropic: Game) -> None:
    out = anthropic.run("I climb the stairs to the lamp.")
    calls = anthropic.play.last.usage.total().calls if anthropic.play.last else 0
    assert calls >= 3
    # 600 of 1,000 prompt tokens per call read from the cache, 300 written to it
    assert f"cached 60%: {600 * calls:,} read, {300 * calls:,} written" in out


def test_the_stored_turn_keeps_cache_reads_and_writes(anthropic: Game) -> None:
    anthropic.run("I climb the stairs to the lamp.")
    stored = anthropic.play.store.record(anthropic.play.session_id, 1)
    usage = stored["usage"]
    for agent, figures in usage.items():
        calls = figures["calls"]
        assert figures["cached_tokens"] == 600 * calls, agent
        assert figures["cache_write_tokens"] == 300 * calls, agent
        assert figures["prompt_tokens"] == 1000 * calls, agent


def test_cost_says_how_much_was_written_to_the_cache(anthropic: Game) -> None:
    anthropic.run("I climb the stairs to the lamp.")
    out = anthropic.run("/cost")
    total = anthropic.play.account.total()
    written, fresh = 300 * total.calls, 100 * total.calls
    assert f"{written:,} prompt tokens were written to the cache" in out
    assert f"{fresh:,} were processed fresh" in out  # writes are not counted as fresh


def test_a_pause_longer_than_the_cache_lives_is_announced_once(anthropic: Game) -> None:
    notice = "this turn pays for cache writes again"
    first = anthropic.run("I climb the stairs to the lamp.")
    anthropic.clock.now += timedelta(minutes=4, seconds=50)
    second = anthropic.run("I trim the wick.")
    anthropic.clock.now += timedelta(minutes=7, seconds=30)
    third = anthropic.run("I look out at the fog.")
    fourth = anthropic.run("I wait for the ship.")
    assert notice not in first and notice not in second and notice not in fourth
    assert "Idle 7 min, longer than the prompt cache lives (5 min)" in third
    assert third.index(notice) < third.index("calls ")  # before the turn, not after it


def test_no_notice_where_the_provider_bills_no_cache_writes(anthropic: Game) -> None:
    anthropic.script.usage = {"input_tokens": 400, "cache_read_input_tokens": 600,
                              "cache_creation_input_tokens": 0, "output_tokens": 50}
    first = anthropic.run("I climb the stairs to the lamp.")
    anthropic.clock.now += timedelta(minutes=30)
    second = anthropic.run("I trim the wick.")
    assert "pays for cache writes" not in second
    assert " written" not in first + second  # no write figure where nothing was written


def test_the_cache_figures_read_in_chinese() -> None:
    from narrative_cli.pipeline.accounting import AgentUsage
    from narrative_cli.ui import render

    usage = AgentUsage(calls=1, prompt_tokens=1000, cached_tokens=600, cache_write_tokens=300,
                       completion_tokens=50)  # fmt: skip
    assert "缓存 60%：读 600，写 300" in render.footer(usage, "zh", 1.0, cache_io=True).plain
    assert "写" not in render.footer(usage, "zh", 1.0).plain
