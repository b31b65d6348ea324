"""Which backend each agent calls: ``BackendSet`` maps an agent name to (Backend, AgentSettings).

Agent names are those of the trace: ``planning``, ``writing``, ``merged_writing``,
``analysis``, ``tool:<name>``, ``mvu_extract``. ``BackendSet.from_settings(settings)`` follows
``Settings.profile_for(agent)`` and ``Settings.agent(agent)`` (``merged_writing`` falls back to
``writing``'s settings, ``tool:x`` to ``tool``'s) and opens one backend per profile and
settings entry, lazily, the first time an agent needs it. Tests and embedders can pass ready
backends instead::

    backends = BackendSet.from_settings(settings)          # real profiles
    backends = BackendSet.single(backend)                  # every agent on one backend
    backend, agent_settings = backends.get("analysis")
    backends.close()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.backends import Backend, open_backend
from narrative_cli.config import AgentSettings, Profile, Settings

Opener = Callable[[Profile, AgentSettings], Backend]


def settings_key(settings: Settings, agent: str) -> str:
    """The ``agents:`` entry an agent's settings come from ("" for the defaults)."""
    for key in (agent, agent.split(":", 1)[0], agent.replace("merged_", "")):
        if key in settings.agents:
            return key
    return ""


@dataclass
class BackendSet:
    """Agent name → (Backend, AgentSettings), opened on first use and closed together."""

    settings: Settings | None = None
    fixed: Mapping[str, tuple[Backend, AgentSettings]] = field(default_factory=dict)
    opener: Opener = open_backend
    _opened: dict[tuple[str, str], Backend] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stated: dict[str, tuple[int, str] | None] = field(default_factory=dict, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings, opener: Opener | None = None) -> BackendSet:
        """Backends for every agent as ``settings`` configures them."""
        return cls(settings=settings, opener=opener or open_backend)

    @classmethod
    def single(cls, backend: Backend, agent_settings: AgentSettings | None = None) -> BackendSet:
        """Every agent on ``backend`` (``"*"`` entry), with one set of agent settings."""
        return cls(fixed={"*": (backend, agent_settings or AgentSettings())})

    def get(self, agent: str) -> tuple[Backend, AgentSettings]:
        """The backend and settings ``agent`` uses."""
        for key in (agent, agent.split(":", 1)[0], "*"):
            if key in self.fixed:
                return self.fixed[key]
        if self.settings is None:
            raise KeyError(f"no backend for agent {agent!r}")
        profile = self.settings.profile_for(agent)
        agent_settings = self.settings.agent(agent)
        opened = (profile.name, settings_key(self.settings, agent))
        with self._lock:
            if opened not in self._opened:
                self._opened[opened] = self.opener(profile, agent_settings)
            return self._opened[opened], agent_settings

    def reply_limit(self, agent: str) -> int | None:
        """The ``max_tokens`` ``agent``'s requests carry, without opening its backend (a
        local profile's opens the model server)."""
        for key in (agent, agent.split(":", 1)[0], "*"):
            if key in self.fixed:
                return self.fixed[key][1].max_tokens
        return self.settings.agent(agent).max_tokens if self.settings is not None else None

    def configured(self, agent: str) -> AgentSettings | None:
        """The settings the user gave for ``agent`` (no defaults filled in), if any: a
        preset's samplers give way to these (``pipeline.samplers``)."""
        for key in (agent, agent.split(":", 1)[0], "*"):
            if key in self.fixed:
                return self.fixed[key][1]
        if self.settings is None:
            return None
        key = settings_key(self.settings, agent)
        return self.settings.agents.get(key) if key else None

    def model_of(self, agent: str) -> str:
        """The model name an agent's requests go to, for traces ("" when unknown)."""
        if self.settings is not None and not any(
            k in self.fixed for k in (agent, agent.split(":", 1)[0], "*")
        ):
            return self.settings.profile_for(agent).model_name()
        backend, _ = self.get(agent)
        return str(getattr(backend, "model", "") or "")

    def context_limit(self, agent: str) -> int | None:
        """The context window (tokens) an agent's prompt must fit, when the profile states one.

        Local profiles always state theirs (``context_size`` per server slot); remote
        profiles only when ``context_size`` was configured away from the built-in default.
        """
        if self.settings is None:
            return None
        profile = self.settings.profile_for(agent)
        default = Profile.__dataclass_fields__["context_size"].default
        if profile.provider == "local" or profile.context_size != default:
            return int(profile.context_size)
        return None

    def stated_context(self, agent: str) -> tuple[int, str] | None:
        """The context window the provider states for ``agent``'s model (its model list, or
        llama.cpp's ``/props``) and where it said so; asked once per profile per session.
        None for ready-made backends, local profiles and servers that state none."""
        if self.settings is None or any(
            k in self.fixed for k in (agent, agent.split(":", 1)[0], "*")
        ):
            return None
        profile = self.settings.profile_for(agent)
        if profile.provider == "local":
            return None
        with self._lock:
            if profile.name not in self._stated:
                self._stated[profile.name] = _ask_context(profile)
            return self._stated[profile.name]

    def close(self) -> None:
        """Close every backend this set opened (ready-made ones belong to the caller)."""
        with self._lock:
            for backend in self._opened.values():
                backend.close()
            self._opened.clear()

    def __enter__(self) -> BackendSet:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _ask_context(profile: Profile) -> tuple[int, str] | None:
    from narrative_cli.backends.probe import model_context
    from narrative_cli.config import read_api_key
    from narrative_cli.errors import ConfigError

    try:
        key = read_api_key(profile)
    except ConfigError:
        return None
    return model_context(profile, key)
