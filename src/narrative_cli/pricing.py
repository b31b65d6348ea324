"""Money: prices per million tokens, per model, and what a call's tokens cost.

Prices come from ``config.yaml`` first (``prices:``, by model id; see docs/prices.md)::

    prices:
      deepseek-chat: {input: 0.27, output: 1.10, cache_read: 0.07}
      my-proxy-model: {input: 1, output: 2, cache_read: 0.25, cache_write: 1.25}

then from ``LIST_PRICES``, the public list prices of a few common models as of
``PRICES_DATE`` (US dollars). A model in neither shows tokens only (``price_of`` returns
None), and the screens say so once. Cached prompt tokens are priced at ``cache_read`` and
tokens written to a prompt cache (Anthropic's cache creation) at ``cache_write``, apart from
the fresh input tokens: ``AgentUsage.prompt_tokens`` counts all three, as the backends
report them (``backends/usage.py``).

This module reads no files and imports nothing above the shared modules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from narrative_cli.errors import ConfigError

PRICES_DATE = "2025-06"  # when the list prices below were checked against the providers' pages
CURRENCY = "$"


class TokenCounts(Protocol):
    """What a price reads of a usage total (``pipeline.accounting.AgentUsage``)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cache_write_tokens: int


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens: fresh input, output, cache reads, cache writes."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, usage: TokenCounts) -> float:
        """What ``usage`` costs at these prices (fresh input = prompt − cache read − write)."""
        cached, written = usage.cached_tokens, usage.cache_write_tokens
        fresh = max(usage.prompt_tokens - cached - written, 0)
        total = (fresh * self.input + cached * self.cache_read + written * self.cache_write
                 + usage.completion_tokens * self.output)  # fmt: skip
        return total / 1_000_000


def _price(inp: float, out: float, read: float | None = None,
           write: float | None = None) -> ModelPrice:  # fmt: skip
    return ModelPrice(inp, out, inp if read is None else read, inp if write is None else write)


# Public list prices (USD per million tokens) as of PRICES_DATE, standard tier, no batch
# discount. Only models whose prices were checked; anything else shows tokens only.
LIST_PRICES: dict[str, ModelPrice] = {
    # OpenAI: cached input is discounted, cache writes cost nothing extra.
    "gpt-4o": _price(2.50, 10.00, 1.25),
    "gpt-4o-mini": _price(0.15, 0.60, 0.075),
    "gpt-4.1": _price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": _price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _price(0.10, 0.40, 0.025),
    # Anthropic: 5-minute cache writes at 1.25x input, cache reads at 0.1x.
    "claude-opus-4": _price(15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4": _price(3.00, 15.00, 0.30, 3.75),
    "claude-3-7-sonnet": _price(3.00, 15.00, 0.30, 3.75),
    "claude-3-5-haiku": _price(0.80, 4.00, 0.08, 1.00),
    # DeepSeek (standard hours): a cache hit is the cheap read; misses are input.
    "deepseek-chat": _price(0.27, 1.10, 0.07),
    "deepseek-reasoner": _price(0.55, 2.19, 0.14),
}
_DATED = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$")

PriceOf = Callable[[str], "ModelPrice | None"]


def price_of(model: str, configured: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model``: the config's, else the list price (a dated id such as
    ``claude-sonnet-4-20250514`` or ``gpt-4o-2024-08-06`` takes its model's), else None."""
    configured = configured or {}
    if model in configured:
        return configured[model]
    if model in LIST_PRICES:
        return LIST_PRICES[model]
    base = _DATED.sub("", model)
    return LIST_PRICES.get(base) if base != model else None


def price_source(model: str, configured: Mapping[str, ModelPrice] | None = None) -> str | None:
    """``config`` or ``table`` (where ``price_of`` found the price), None when it did not."""
    if model in (configured or {}):
        return "config"
    return "table" if price_of(model) is not None else None


def money(amount: float) -> str:
    """``$0.0123``: four decimals under a dollar (a turn costs cents or less), else two."""
    if amount >= 1:
        return f"{CURRENCY}{amount:,.2f}"
    return f"{CURRENCY}{amount:.4f}"


PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


def parse_prices(data: Any, where: str) -> dict[str, ModelPrice]:
    """The ``prices:`` mapping of config.yaml, checked: every model maps to ``input`` and
    ``output`` (and optionally ``cache_read`` / ``cache_write``, which default to ``input``),
    each a finite number ≥ 0 in US dollars per million tokens."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of model ids to prices")
    return {str(model): _model_price(raw, f"{where}.{model}") for model, raw in data.items()}


def _model_price(raw: Any, where: str) -> ModelPrice:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with input and output prices",
                          hint="e.g. {input: 0.27, output: 1.10, cache_read: 0.07}")
    for key in raw:
        if key not in PRICE_KEYS:
            raise ConfigError(f"{where}.{key}: unknown price (expected {', '.join(PRICE_KEYS)})")
    for key in ("input", "output"):
        if key not in raw:
            raise ConfigError(f"{where}.{key}: missing (US dollars per million tokens)")
    values = {key: _amount(raw[key], f"{where}.{key}") for key in raw}
    return _price(values["input"], values["output"], values.get("cache_read"),
                  values.get("cache_write"))  # fmt: skip


def _amount(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number of US dollars per million tokens, "
                          f"got {value!r}")  # fmt: skip
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: expected a price of 0 or more, got {value!r}")
    return float(value)
