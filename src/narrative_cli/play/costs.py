"""What a session's tokens cost: per agent, per turn and in total, at each agent's model's
price (``pricing.price_of``: config.yaml's ``prices:``, then the dated list prices).

An agent whose model has no price counts tokens only; its model is named in ``unpriced`` so
the screens can say so once. The bundled and other local models cost nothing and are not
reported as unpriced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from narrative_cli.config import Settings
from narrative_cli.errors import NarrativeError
from narrative_cli.pipeline.accounting import AgentUsage, SessionAccount
from narrative_cli.pricing import PRICES_DATE, ModelPrice, money, price_of, price_source

ModelOf = Callable[[str], str]  # agent -> model id (``BackendSet.model_of``)


@dataclass
class Costs:
    """Money of a set of agents' usage."""

    agents: dict[str, float | None] = field(default_factory=dict)  # None: no price
    unpriced: list[str] = field(default_factory=list)  # models without a price
    sources: set[str] = field(default_factory=set)  # "config" and/or "table"

    @property
    def total(self) -> float | None:
        """The sum over priced agents; None when no agent had a price."""
        known = [cost for cost in self.agents.values() if cost is not None]
        return sum(known) if known else None

    def total_text(self) -> str:
        """``$0.0123`` (``""`` when nothing had a price)."""
        total = self.total
        return "" if total is None else money(total)


def _model(settings: Settings, model_of: ModelOf, agent: str) -> tuple[str, bool]:
    """The model ``agent`` calls and whether it runs locally (free)."""
    try:
        model = model_of(agent)
    except (KeyError, NarrativeError):
        model = ""
    try:
        local = settings.profile_for(agent).provider == "local"
    except KeyError:
        local = False
    return model, local and model not in settings.prices


def costs_of(settings: Settings, model_of: ModelOf, agents: Mapping[str, AgentUsage]) -> Costs:
    """The cost of ``agents``' usage (a turn's or the session's) at their models' prices."""
    configured = settings.prices
    costs = Costs()
    for agent, usage in agents.items():
        model, local = _model(settings, model_of, agent)
        price: ModelPrice | None = None if local else price_of(model, configured)
        if price is None:
            costs.agents[agent] = None
            if not local and model and model not in costs.unpriced:
                costs.unpriced.append(model)
            continue
        costs.agents[agent] = price.cost(usage)
        costs.sources.add(price_source(model, configured) or "table")
    return costs


def usage_metadata(
    settings: Settings, model_of: ModelOf, account: SessionAccount
) -> dict[str, Any]:
    """The session's totals for an export's metadata: tokens, and money when priced."""
    total = account.total()
    costs = costs_of(settings, model_of, account.agents)
    data: dict[str, Any] = {
        "turns": account.turns,
        "calls": total.calls,
        "prompt_tokens": total.prompt_tokens,
        "cached_tokens": total.cached_tokens,
        "cache_write_tokens": total.cache_write_tokens,
        "completion_tokens": total.completion_tokens,
    }
    if costs.total is not None:
        data["cost_usd"] = round(costs.total, 6)
        data["prices"] = sorted(costs.sources)
        if "table" in costs.sources:
            data["list_prices_as_of"] = PRICES_DATE
    if costs.unpriced:
        data["unpriced_models"] = list(costs.unpriced)
    return data
