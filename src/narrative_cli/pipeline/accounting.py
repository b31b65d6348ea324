"""Token and latency accounting: per turn and agent, session totals, and cost estimates.

Every LLM call of a turn is recorded against its agent name (``planning``, ``writing``,
``merged_writing``, ``analysis``, ``tool:<name>``, ``mvu_extract``) with its usage figures
and latency. The REPL shows the turn's totals in its footer, the trace writer prints them per
turn, and the session keeps running totals::

    account = TurnAccount()
    account.record("writing", reply.usage, reply.latency_ms)
    account.total().prompt_tokens
    session = SessionAccount(); session.add_turn(account)
    estimate_cost(session.agents, {"writing": Price(prompt=0.27, cached=0.07, completion=1.1)})

Usage figures that a provider did not report are estimated by the backend; ``estimated`` is
then True on the agent's totals so the UI can mark them with a ``~``. Cost is an estimate from
a price table the user supplies (per million tokens), never a bill: no prices are built in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class UsageLike(Protocol):
    """What accounting reads from a backend's ``Usage``."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    estimated: bool


@dataclass
class AgentUsage:
    """Calls, tokens and latency of one agent (or of a whole turn or session)."""

    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    latency_ms: float = 0.0
    estimated: bool = False
    cache_write_tokens: int = 0  # prompt tokens written to the provider's cache (priced apart)

    def add_call(self, usage: UsageLike | None, latency_ms: float, failed: bool = False) -> None:
        """Count one call with its usage (None when the call failed before any reply)."""
        self.calls += 1
        self.failed_calls += int(failed)
        self.latency_ms += latency_ms
        if usage is not None:
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self.cached_tokens += usage.cached_tokens
            self.cache_write_tokens += getattr(usage, "cache_write_tokens", 0) or 0
            self.estimated = self.estimated or usage.estimated

    def add(self, other: AgentUsage) -> None:
        """Add another total into this one."""
        self.calls += other.calls
        self.failed_calls += other.failed_calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.latency_ms += other.latency_ms
        self.estimated = self.estimated or other.estimated

    @property
    def cache_share(self) -> float:
        """The share of prompt tokens the provider served from its cache (0..1)."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The stored form; ``cache_write_tokens`` only when there were some, so records of
        providers without cache writes keep the bytes earlier versions wrote."""
        data: dict[str, Any] = {
            "calls": self.calls,
            "failed_calls": self.failed_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "latency_ms": self.latency_ms,
            "estimated": self.estimated,
        }  # every field in order, as ``asdict`` gave them (its generic copy: #17 session seven)
        if self.cache_write_tokens:
            data["cache_write_tokens"] = self.cache_write_tokens
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentUsage:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


def _total(agents: Mapping[str, AgentUsage]) -> AgentUsage:
    total = AgentUsage()
    for usage in agents.values():
        total.add(usage)
    return total


@dataclass
class TurnAccount:
    """Per-agent usage of one turn, in the order the agents were first called."""

    agents: dict[str, AgentUsage] = field(default_factory=dict)

    def record(
        self, agent: str, usage: UsageLike | None, latency_ms: float, failed: bool = False
    ) -> None:
        """Count one call of ``agent``."""
        self.agents.setdefault(agent, AgentUsage()).add_call(usage, latency_ms, failed)

    def total(self) -> AgentUsage:
        """The turn's totals over every agent."""
        return _total(self.agents)

    def to_dict(self) -> dict[str, Any]:
        return {agent: usage.to_dict() for agent, usage in self.agents.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnAccount:
        return cls({agent: AgentUsage.from_dict(value) for agent, value in data.items()})


@dataclass
class SessionAccount:
    """Running totals of a session: turns played and usage per agent."""

    turns: int = 0
    agents: dict[str, AgentUsage] = field(default_factory=dict)

    def add_turn(self, account: TurnAccount) -> None:
        """Add a finished turn's usage."""
        self.turns += 1
        for agent, usage in account.agents.items():
            self.agents.setdefault(agent, AgentUsage()).add(usage)

    def total(self) -> AgentUsage:
        """The session's totals over every agent."""
        return _total(self.agents)


@dataclass(frozen=True)
class Price:
    """Prices per million tokens: fresh prompt tokens, cached prompt tokens, completion."""

    prompt: float = 0.0
    cached: float = 0.0
    completion: float = 0.0

    def cost(self, usage: AgentUsage) -> float:
        """The estimated cost of ``usage`` at these prices."""
        fresh = max(usage.prompt_tokens - usage.cached_tokens, 0)
        millions = (
            fresh * self.prompt
            + usage.cached_tokens * self.cached
            + usage.completion_tokens * self.completion
        )
        return millions / 1_000_000


PriceLookup = Callable[[str], "Price | None"]


def estimate_cost(
    agents: Mapping[str, AgentUsage], prices: Mapping[str, Price] | PriceLookup
) -> float:
    """The estimated cost of per-agent usage; agents without a price cost nothing.

    ``prices`` maps an agent name to its ``Price`` (a ``"*"`` key applies to every agent not
    listed), or is a function ``agent -> Price | None`` (e.g. looking up the agent's model).
    """
    lookup: PriceLookup = prices if callable(prices) else _table_lookup(prices)
    total = 0.0
    for agent, usage in agents.items():
        price = lookup(agent)
        if price is not None:
            total += price.cost(usage)
    return total


def _table_lookup(table: Mapping[str, Price]) -> PriceLookup:
    def lookup(agent: str) -> Price | None:
        return table.get(agent, table.get("*"))

    return lookup
