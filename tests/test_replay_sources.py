"""``replay.sources.RecordedLimits``: what ``get`` gives an agent is remembered while the set is
open (the same as working it out anew), and a closed set opens its backends again."""

from __future__ import annotations

from typing import Any

from narrative_cli.config import AgentSettings, Profile, Settings
from narrative_cli.replay.sources import RecordedLimits


class _Backend:
    name = "fake"

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _limits(opened: list[_Backend]) -> RecordedLimits:
    def opener(profile: Profile, settings: AgentSettings) -> Any:
        opened.append(_Backend())
        return opened[-1]

    settings = Settings()
    settings.agents = {"writing": AgentSettings(temperature=0.9)}
    limits = {"max_tokens:planning": 300, "max_tokens:*": 64, "planning": 4096}
    return RecordedLimits(settings=settings, opener=opener, limits=limits)


def test_an_agent_gets_what_a_fresh_set_would_give_it_until_the_set_is_closed() -> None:
    opened: list[_Backend] = []
    remembered = _limits(opened)
    for agent in ["planning", "writing", "tool:dice", "analysis", "planning", "writing"]:
        fresh = _limits([])
        backend, agent_settings = remembered.get(agent)
        assert agent_settings == fresh.get(agent)[1]
        assert remembered.get(agent) == (backend, agent_settings)
    assert remembered.get("planning")[1].max_tokens == 300
    assert remembered.get("writing")[1].temperature == 0.9
    assert remembered.get("writing")[1].max_tokens == 64
    before = remembered.get("planning")[0]
    remembered.close()
    assert all(backend.closed for backend in opened)
    after = remembered.get("planning")[0]
    assert after is not before and not after.closed  # type: ignore[attr-defined]
