"""Money, not only tokens (#18 item 8): prices per model in config.yaml (validated), the dated
list prices, cost per turn in the footer, per agent in /cost, the session total in /cost and
in exports; cache reads and writes priced apart from fresh input.

The game plays the sample card against the scripted server, which reports the same usage
for every call (1,000 prompt tokens of which 400 read from the cache and 200 written to it,
100 output tokens), so each figure below follows from the prices by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from narrative_cli.config import settings_from_dict
from narrative_cli.errors import ConfigError
from narrative_cli.pipeline.accounting import AgentUsage
from narrative_cli.play import PlayOptions, PlaySession
from narrative_cli.play.commands import Dispatcher
from narrative_cli.pricing import LIST_PRICES, PRICES_DATE, ModelPrice, money, price_of
from narrative_cli.store import SessionStore
from narrative_cli.ui.console import Consoles, captured, recording_consoles
from narrative_cli.ui.screen import RichScreen
from tests import servers
from tests.conftest import SAMPLES
from tests.servers import Reply, ScriptedServer
from tests.story_replies import StoryScript

scripted_server = servers.scripted_server

USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 100,
    "prompt_tokens_details": {"cached_tokens": 400, "cache_write_tokens": 200},
}
PRICES = "prices:\n  scripted-model: {input: 2, output: 8, cache_read: 0.5, cache_write: 2.5}\n"
# per call: 400 fresh × 2 + 400 read × 0.5 + 200 written × 2.5 + 100 out × 8 = 2,300 / 1e6
PER_CALL = (400 * 2 + 400 * 0.5 + 200 * 2.5 + 100 * 8) / 1_000_000


class CostedScript(StoryScript):
    """The story's replies, each reporting ``USAGE``."""

    def __call__(self, body: Any, request: Any) -> Reply | str | dict[str, Any] | None:
        answer = super().__call__(body, request)
        if isinstance(answer, dict):
            answer = Reply(text=json.dumps(answer))
        elif isinstance(answer, str):
            answer = Reply(text=answer)
        return replace(answer, usage=USAGE) if isinstance(answer, Reply) else answer


@dataclass
class Game:
    play: PlaySession
    dispatcher: Dispatcher
    consoles: Consoles

    def run(self, line: str) -> str:
        before = len(captured(self.consoles.out))
        self.dispatcher.handle(line)
        return captured(self.consoles.out)[before:]


def _game(tmp_path: Path, server: ScriptedServer, model: str, width: int = 100) -> Iterator[Game]:
    server.reply_with(CostedScript())
    options = PlayOptions(card=str(SAMPLES / "lantern-keeper.png"), provider="openai",
                          base_url=server.base_url, model=model, seed=11)  # fmt: skip
    store = SessionStore(tmp_path / "sessions.db")
    play = PlaySession.open(store, options)
    consoles = recording_consoles(width=width)
    yield Game(play, Dispatcher(play, RichScreen.for_play(play, consoles)), consoles)
    play.close()
    store.close()


@pytest.fixture
def priced(tmp_path: Path, scripted_server: ScriptedServer) -> Iterator[Game]:
    home = Path(__import__("os").environ["NARRATIVE_HOME"])
    (home / "config.yaml").write_text(PRICES, encoding="utf-8")
    yield from _game(tmp_path, scripted_server, "scripted-model")


@pytest.fixture
def unpriced(tmp_path: Path, scripted_server: ScriptedServer) -> Iterator[Game]:
    yield from _game(tmp_path, scripted_server, "scripted-model")


def test_the_footer_shows_what_the_turn_cost(priced: Game) -> None:
    out = priced.run("I climb the stairs to the lamp.")
    calls = priced.play.account.total().calls
    assert calls >= 3
    assert f"· {money(calls * PER_CALL)} ·" in out
    assert "No price" not in out


def test_cost_shows_money_per_agent_and_the_session_total(priced: Game) -> None:
    priced.run("I climb the stairs to the lamp.")
    priced.run("I trim the wick.")
    out = priced.run("/cost")
    agents = priced.play.account.agents
    assert "cost" in out.splitlines()[1] or "cost" in out
    for agent, usage in agents.items():
        row = next(line for line in out.splitlines() if line.strip("│ ").startswith(agent))
        assert money(usage.calls * PER_CALL) in row
    total = priced.play.account.total().calls * PER_CALL
    assert f"Session cost: {money(total)}. Prices: config.yaml." in out


def test_the_export_metadata_carries_the_session_total(priced: Game, tmp_path: Path) -> None:
    priced.run("I climb the stairs to the lamp.")
    priced.run("/export json " + str(tmp_path / "dump.json"))
    dump = json.loads((tmp_path / "dump.json").read_text(encoding="utf-8"))
    usage = dump["usage"]
    calls = priced.play.account.total().calls
    assert usage["calls"] == calls and usage["cached_tokens"] == 400 * calls
    assert usage["cache_write_tokens"] == 200 * calls
    assert usage["cost_usd"] == pytest.approx(calls * PER_CALL)
    priced.run("/export jsonl " + str(tmp_path / "chat.jsonl"))
    header = json.loads((tmp_path / "chat.jsonl").read_text(encoding="utf-8").splitlines()[0])
    kept = header["chat_metadata"]["narrative_cli"]["usage"]
    assert kept["cost_usd"] == pytest.approx(calls * PER_CALL)


def test_an_unknown_model_shows_tokens_only_and_says_so_once(unpriced: Game) -> None:
    first = unpriced.run("I climb the stairs to the lamp.")
    second = unpriced.run("I trim the wick.")
    note = "No price for scripted-model: tokens only"
    assert note in first and note not in second
    assert "$" not in first + second
    out = unpriced.run("/cost")
    assert note in out and "$" not in out


def test_cache_reads_and_writes_are_priced_apart_from_fresh_input() -> None:
    price = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = AgentUsage(prompt_tokens=10_000, cached_tokens=6_000, cache_write_tokens=3_000,
                       completion_tokens=500)  # fmt: skip
    fresh_only = AgentUsage(prompt_tokens=10_000, completion_tokens=500)
    assert price.cost(usage) == pytest.approx((1_000 * 3 + 6_000 * 0.3 + 3_000 * 3.75
                                               + 500 * 15) / 1e6)  # fmt: skip
    assert price.cost(usage) < price.cost(fresh_only)  # reads are cheaper than fresh input


def test_list_prices_are_dated_and_dated_model_ids_find_them() -> None:
    assert PRICES_DATE[:4].isdigit()
    assert price_of("claude-sonnet-4-20250514") == LIST_PRICES["claude-sonnet-4"]
    assert price_of("gpt-4o-2024-08-06") == LIST_PRICES["gpt-4o"]
    assert price_of("SmolLM2-135M-Instruct") is None and price_of("") is None
    mine = ModelPrice(1, 2, 1, 1)
    assert price_of("gpt-4o", {"gpt-4o": mine}) is mine  # the config wins


@pytest.mark.parametrize(
    ("prices", "where"),
    [
        ({"m": {"input": 1}}, "prices.m.output: missing"),
        ({"m": {"input": -1, "output": 1}}, "prices.m.input: expected a price of 0 or more"),
        ({"m": {"input": "cheap", "output": 1}}, "prices.m.input: expected a number"),
        ({"m": {"input": 1, "output": 1, "cache_hit": 1}}, "prices.m.cache_hit: unknown price"),
        ({"m": 3}, "prices.m: expected a mapping"),
        ([1, 2], "prices: expected a mapping"),
    ],
)
def test_bad_prices_in_the_config_are_refused_by_key(prices: Any, where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_dict({"prices": prices}, "config.yaml")
    assert f"config.yaml: {where}" in caught.value.message


def test_good_prices_default_the_cache_to_the_input_price() -> None:
    settings = settings_from_dict({"prices": {"m": {"input": 1.5, "output": 2}}}, "c")
    assert settings.prices["m"] == ModelPrice(1.5, 2.0, 1.5, 1.5)
