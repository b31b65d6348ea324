"""Backend benchmark: our client's overhead per call, and the embedded model's speed and cache use.

1. Client overhead: the same chat call against the scripted loopback server
   (``tests/servers.py``), once through ``OpenAIBackend.complete`` and once through raw httpx
   (post, parse, pick the text; for streams: iterate lines, decode each event). Both are run
   interleaved in batches in one process; medians per call and the ratio ours / raw.
2. Local model: a 10-call conversation that grows by appending (system prompt, then user /
   assistant turns) against the real llama.cpp server with SmolLM2-135M: completion tokens per
   second (end to end), and the share of prompt tokens served from the prompt cache. The
   baseline is the same conversation with ``cache_prompt`` off, in the same run.

    python benchmarks/backend.py [--calls 300] [--turns 10] [--skip-local]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.servers import ScriptedServer, quick_retrier  # noqa: E402

from narrative_cli.backends import ChatRequest, open_backend  # noqa: E402
from narrative_cli.backends.base import ChatReply  # noqa: E402
from narrative_cli.backends.openai_compat import OpenAIBackend  # noqa: E402
from narrative_cli.config import builtin_profiles  # noqa: E402
from narrative_cli.domain_chat import Message

STORY = "灯塔的光扫过海面，雾气在礁石间缓缓散开。Mara lifts the lantern and waits. " * 4
MESSAGES = [Message("system", "You narrate a quiet story. " * 30), Message("user", "Look out.")]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(call: Callable[[], object], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def raw_whole(client: httpx.Client, url: str, body: dict[str, object]) -> str:
    data = client.post(url, json=body).json()
    return str(data["choices"][0]["message"]["content"])


def raw_stream(client: httpx.Client, url: str, body: dict[str, object]) -> str:
    parts = []
    with client.stream("POST", url, json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for choice in json.loads(line[6:]).get("choices", []):
                    parts.append(choice["delta"].get("content") or "")
    return "".join(parts)


def overhead(calls: int) -> None:
    with ScriptedServer() as server:
        server.reply_with(lambda body, req: STORY)
        backend = open_backend(server.profile("openai"), retrier=quick_retrier())
        assert isinstance(backend, OpenAIBackend)
        client = httpx.Client(trust_env=False)
        print(f"client overhead: {calls} calls each, interleaved in batches of 25 (loopback)")
        for stream in (False, True):
            request = ChatRequest(MESSAGES, max_tokens=200, temperature=0.8, stream=stream)
            body = backend.build_body(request, "scripted-model")
            raw = raw_stream if stream else raw_whole
            assert raw(client, backend.url, body) == backend.complete(request).text == STORY
            ours_t: list[float] = []
            raw_t: list[float] = []
            for _ in range(max(1, calls // 25)):
                ours_t += timed(partial(backend.complete, request), 25)
                raw_t += timed(partial(raw, client, backend.url, body), 25)
            ours, base = median_ms(ours_t), median_ms(raw_t)
            kind = "streamed" if stream else "whole   "
            ratio = ours / base
            print(f"  {kind}: ours {ours:6.2f} ms   raw httpx {base:6.2f} ms   ratio {ratio:4.2f}")
        client.close()
        backend.close()


def conversation(turns: int, cache: bool) -> list[ChatReply]:
    backend = open_backend(builtin_profiles()["local"])
    messages = [
        Message(
            "system",
            "You are the narrator of a story about Mara, a lighthouse "
            "keeper on a rocky island. Answer in two short sentences. " * 3,
        )
    ]
    replies = []
    for turn in range(turns):
        messages.append(Message("user", f"Turn {turn + 1}: what does Mara do next?"))
        request = ChatRequest(
            list(messages),
            agent="writing",
            max_tokens=48,
            temperature=0.0,
            extra={} if cache else {"cache_prompt": False},
        )
        reply = backend.complete(request)
        replies.append(reply)
        messages.append(Message("assistant", reply.text))
    backend.close()
    return replies


def local_model(turns: int) -> None:
    started = time.perf_counter()
    try:
        conversation(1, cache=True)  # starts the server (and warms it)
    except Exception as exc:  # noqa: BLE001 - report and skip
        print(f"local model: skipped ({exc})")
        return
    print(f"local model: server ready in {time.perf_counter() - started:.1f} s; {turns} calls")
    for cache in (False, True):
        replies = conversation(turns, cache)
        speeds = [r.usage.completion_tokens / (r.latency_ms / 1000) for r in replies]
        prompt = sum(r.usage.prompt_tokens for r in replies[1:])
        cached = sum(r.usage.cached_tokens for r in replies[1:])
        share = cached / max(prompt, 1)
        latency = statistics.median(r.latency_ms for r in replies)
        label = "cache on " if cache else "cache off"
        print(
            f"  {label}: {statistics.median(speeds):6.1f} completion tokens/s (median, end to end)"
            f"   median latency {latency:6.0f} ms   cached share (calls 2-{turns})"
            f" {share:5.1%}   last prompt {replies[-1].usage.prompt_tokens} tokens"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--skip-local", action="store_true")
    args = parser.parse_args()
    overhead(args.calls)
    if not args.skip_local:
        local_model(args.turns)


if __name__ == "__main__":
    main()
