"""Where a replay's answers come from: the configured models, or a recording.

``backends_for(settings, bucket, recorded, limits)`` gives the ``BackendSet`` one log plays
with. Every agent keeps its configured sampling settings (they are part of the request a
recording is checked against); only the backend behind it changes:

- live: the agent's profile, opened as usual, behind the shared ``TokenBucket``;
- recorded: the log's ``RecordedBackend`` for every agent, and the prompts fitted to the
  context windows the recording noted (``limits``), so a trace recorded on one profile
  replays on a machine configured with another.

``context_limits(settings)`` is what a recording notes: each agent's context window under
the configured profiles (None: the prompt is not fitted), and each agent's reply limit
(``max_tokens:<agent>``), which a recorded replay sends again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from narrative_cli.agents.table import agent_names, prompt_agents
from narrative_cli.backends import Backend, open_backend
from narrative_cli.config import AgentSettings, Profile, Settings
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.replay.limiter import LimitedBackend, TokenBucket
from narrative_cli.replay.recorded import RecordedBackend

FITTED_AGENTS = prompt_agents()


@dataclass
class RecordedLimits(BackendSet):
    """A BackendSet whose context windows are the recorded ones (``*``: any other agent)."""

    limits: dict[str, int | None] = field(default_factory=dict)
    # what ``get`` gave each agent: the settings, the limits and the opened backends do not
    # change while the set is open, and working it out again (the agent's settings made anew,
    # twice a call) was 2% of a replayed turn (#17, session seven)
    _got: dict[str, tuple[Backend, AgentSettings]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def context_limit(self, agent: str) -> int | None:
        """The window the recording fitted ``agent``'s prompts to."""
        for key in (agent, agent.split(":", 1)[0], "*"):
            if key in self.limits:
                return self.limits[key]
        return super().context_limit(agent)

    def reply_limit(self, agent: str) -> int | None:
        """The reply limit the recording used (``max_tokens:…``), else the configured one."""
        for key in (agent, agent.split(":", 1)[0], "*"):
            if f"max_tokens:{key}" in self.limits:
                return self.limits[f"max_tokens:{key}"]
        return super().reply_limit(agent)

    def get(self, agent: str) -> tuple[Backend, AgentSettings]:
        """The agent's backend, with the reply limit the recording used (``max_tokens:…``)."""
        known = self._got.get(agent)
        if known is None:
            known = self._got[agent] = self._get(agent)
        return known

    def _get(self, agent: str) -> tuple[Backend, AgentSettings]:
        backend, agent_settings = super().get(agent)
        for key in (agent, agent.split(":", 1)[0], "*"):
            if f"max_tokens:{key}" in self.limits:
                noted = self.limits[f"max_tokens:{key}"]
                return backend, replace(agent_settings, max_tokens=noted)
        return backend, agent_settings

    def close(self) -> None:
        """Close the opened backends; a later ``get`` opens them again."""
        self._got.clear()
        super().close()


def context_limits(settings: Settings) -> dict[str, int | None]:
    """Each agent's context window under ``settings`` (what a recording notes)."""
    backends = BackendSet.from_settings(settings)
    limits = {agent: backends.context_limit(agent) for agent in (*agent_names(), "*")}
    for agent in (*agent_names(), "*"):  # reply limits: part of every request
        limits[f"max_tokens:{agent}"] = settings.agent(agent).max_tokens
    return limits


def backends_for(
    settings: Settings,
    bucket: TokenBucket | None,
    recorded: RecordedBackend | None = None,
    limits: dict[str, int | None] | None = None,
) -> BackendSet:
    """Every agent's backend behind the shared bucket (the recording stands in for all)."""

    def opener(profile: Profile, agent_settings: AgentSettings) -> Backend:
        inner: Backend = recorded if recorded is not None else open_backend(profile, agent_settings)
        return LimitedBackend(inner, bucket)

    if recorded is not None and limits is not None:
        return RecordedLimits(settings=settings, opener=opener, limits=dict(limits))
    return BackendSet.from_settings(settings, opener=opener)
