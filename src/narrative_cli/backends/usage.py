"""Token usage in one shape, whatever the server reported.

- OpenAI: ``prompt_tokens`` (cached included), ``prompt_tokens_details.cached_tokens``.
- DeepSeek: ``prompt_cache_hit_tokens`` + ``prompt_cache_miss_tokens`` (read first).
- llama.cpp: ``timings.cache_n`` / ``prompt_n`` / ``predicted_n`` when usage lacks them.
- Anthropic: ``input_tokens`` excludes the cache, so prompt = input + cache read + cache write.

When a server sends nothing (or leaves a figure out), the missing figure is estimated with
``narrative_cli.tokens`` and the usage is marked ``estimated``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from narrative_cli.backends.base import Usage
from narrative_cli.domain_chat import Message
from narrative_cli.tokens import estimate_tokens

_PER_MESSAGE = 3  # chat formatting overhead per message, plus 3 for the reply primer


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _get(mapping: Any, *path: str) -> int | None:
    for key in path:
        if not isinstance(mapping, Mapping):
            return None
        mapping = mapping.get(key)
    return _int(mapping)


def estimate_prompt(messages: Sequence[Message]) -> int:
    """An offline estimate of the prompt tokens of ``messages``."""
    return sum(estimate_tokens(m.content) + _PER_MESSAGE for m in messages) + _PER_MESSAGE


def from_openai(
    usage: Mapping[str, Any] | None, timings: Mapping[str, Any] | None = None
) -> Usage | None:
    """Usage from an OpenAI-compatible ``usage`` object (and llama.cpp ``timings``)."""
    usage = usage if isinstance(usage, Mapping) else {}
    timings = timings if isinstance(timings, Mapping) else {}
    if not usage and not timings:
        return None
    cached = _cached_openai(usage, timings)
    prompt = _get(usage, "prompt_tokens")
    if prompt is None:
        prompt = _sum_known(
            _get(usage, "prompt_cache_hit_tokens"), _get(usage, "prompt_cache_miss_tokens")
        )
    if prompt is None:
        prompt = _sum_known(_get(timings, "cache_n"), _get(timings, "prompt_n"))
    completion = _get(usage, "completion_tokens")
    if completion is None:
        completion = _get(timings, "predicted_n")
    return Usage(
        prompt_tokens=prompt or 0,
        completion_tokens=completion or 0,
        cached_tokens=cached,
        estimated=prompt is None or completion is None,
        cache_write_tokens=_get(usage, "prompt_tokens_details", "cache_write_tokens") or 0,
        reasoning_tokens=_get(usage, "completion_tokens_details", "reasoning_tokens") or 0,
    )


def _cached_openai(usage: Mapping[str, Any], timings: Mapping[str, Any]) -> int:
    for value in (
        _get(usage, "prompt_cache_hit_tokens"),
        _get(usage, "prompt_tokens_details", "cached_tokens"),
        _get(timings, "cache_n"),
    ):
        if value is not None:
            return value
    return 0


def _sum_known(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def from_anthropic(usage: Mapping[str, Any] | None) -> Usage | None:
    """Usage from an Anthropic ``usage`` object (message_start merged with message_delta)."""
    if not isinstance(usage, Mapping) or not usage:
        return None
    read = _get(usage, "cache_read_input_tokens") or 0
    write = _get(usage, "cache_creation_input_tokens") or 0
    fresh = _get(usage, "input_tokens")
    output = _get(usage, "output_tokens")
    return Usage(
        prompt_tokens=(fresh or 0) + read + write,
        completion_tokens=output or 0,
        cached_tokens=read,
        estimated=fresh is None or output is None,
        cache_write_tokens=write,
    )


def complete_usage(usage: Usage | None, messages: Sequence[Message], text: str) -> Usage:
    """``usage`` with missing figures estimated (and marked), or a full estimate if None."""
    if usage is None:
        return Usage(
            prompt_tokens=estimate_prompt(messages),
            completion_tokens=estimate_tokens(text),
            estimated=True,
        )
    if usage.estimated:
        if not usage.prompt_tokens:
            usage.prompt_tokens = max(estimate_prompt(messages), usage.cached_tokens)
        if not usage.completion_tokens:
            usage.completion_tokens = estimate_tokens(text)
    return usage
