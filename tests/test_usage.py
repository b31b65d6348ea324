"""Usage normalization over every provider's shape, and estimates when a server says nothing."""

from __future__ import annotations

import pytest

from narrative_cli.backends import ChatRequest, Usage, open_backend
from narrative_cli.backends.usage import (
    complete_usage,
    estimate_prompt,
    from_anthropic,
    from_openai,
)
from narrative_cli.domain_chat import Message
from narrative_cli.tokens import estimate_tokens

from . import servers
from .servers import ScriptedServer, quick_retrier

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
MESSAGES = [Message("system", "你是叙述者。"), Message("user", "推开门。")]


def test_openai_cached_tokens_are_part_of_the_prompt() -> None:
    usage = from_openai(
        {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 50},
            "completion_tokens_details": {"reasoning_tokens": 120},
        }
    )
    assert usage == Usage(2006, 300, 1920, False, cache_write_tokens=50, reasoning_tokens=120)


def test_deepseek_hit_tokens_come_first() -> None:
    usage = from_openai(
        {
            "prompt_tokens": 1000,
            "completion_tokens": 80,
            "prompt_cache_hit_tokens": 768,
            "prompt_cache_miss_tokens": 232,
            "prompt_tokens_details": {"cached_tokens": 700},
        }
    )
    assert usage is not None and (usage.prompt_tokens, usage.cached_tokens) == (1000, 768)


def test_deepseek_without_prompt_tokens_adds_hit_and_miss() -> None:
    usage = from_openai(
        {"completion_tokens": 5, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36}
    )
    assert usage is not None and (usage.prompt_tokens, usage.cached_tokens) == (100, 64)
    assert not usage.estimated


def test_llama_cpp_timings_fill_what_usage_lacks() -> None:
    timings = {"cache_n": 293, "prompt_n": 21, "predicted_n": 40, "predicted_per_second": 120.5}
    usage = from_openai(None, timings)
    assert usage == Usage(prompt_tokens=314, completion_tokens=40, cached_tokens=293)
    both = from_openai({"prompt_tokens": 314, "completion_tokens": 40}, timings)
    assert both is not None and both.cached_tokens == 293


def test_anthropic_prompt_is_input_plus_cache_reads_and_writes() -> None:
    usage = from_anthropic(
        {
            "input_tokens": 50,
            "cache_read_input_tokens": 2000,
            "cache_creation_input_tokens": 300,
            "output_tokens": 75,
        }
    )
    assert usage == Usage(2350, 75, 2000, False, cache_write_tokens=300)


def test_no_usage_at_all_is_estimated_and_marked() -> None:
    assert from_openai(None) is None and from_anthropic({}) is None
    usage = complete_usage(None, MESSAGES, "门开了。")
    assert usage.estimated
    assert usage.prompt_tokens == estimate_prompt(MESSAGES) > 0
    assert usage.completion_tokens == estimate_tokens("门开了。") == 4


def test_a_partial_usage_keeps_what_was_reported_and_estimates_the_rest() -> None:
    usage = complete_usage(from_openai({"prompt_tokens": 77}), MESSAGES, "The door opens.")
    assert (usage.prompt_tokens, usage.completion_tokens) == (
        77,
        estimate_tokens("The door opens."),
    )
    assert usage.estimated


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_server_that_reports_no_usage_gets_an_estimate(
    scripted_server: ScriptedServer, stream: bool, provider: str
) -> None:
    scripted_server.queue_text("门开了，风灌了进来。", usage=None)
    backend = open_backend(scripted_server.profile(provider), retrier=quick_retrier())
    reply = backend.complete(ChatRequest(MESSAGES, stream=stream))
    assert reply.usage.estimated
    assert reply.usage.completion_tokens == estimate_tokens("门开了，风灌了进来。")
    assert reply.usage.prompt_tokens >= estimate_tokens("你是叙述者。推开门。")


@pytest.mark.parametrize("stream", [False, True])
def test_reported_usage_passes_through_the_wire(
    scripted_server: ScriptedServer, stream: bool
) -> None:
    raw = {
        "prompt_tokens": 500,
        "completion_tokens": 9,
        "prompt_cache_hit_tokens": 384,
        "prompt_cache_miss_tokens": 116,
    }
    scripted_server.queue_text("ok", usage=raw)
    backend = open_backend(scripted_server.profile("openai"), retrier=quick_retrier())
    reply = backend.complete(ChatRequest(MESSAGES, stream=stream))
    assert reply.usage == Usage(prompt_tokens=500, completion_tokens=9, cached_tokens=384)
