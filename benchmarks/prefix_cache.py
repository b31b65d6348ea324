"""A model-free measure of what llama.cpp's slot cache serves (issue 17, item 5).

llama.cpp keeps, per server slot, the tokens of the last prompt it evaluated there; a new
request pinned to that slot skips the longest common token prefix of the two and evaluates
the rest (always at least the last prompt token, which it re-evaluates for the logits).
``backends.local`` pins each agent family to its own slot, so "cached tokens" of a call is
``min(common prefix with the slot's previous prompt, prompt length - 1)``.

With chunk reuse on (llama.cpp's ``n_cache_reuse``, the local profile's ``cache_reuse``) the
server goes on past that prefix: ``shifted_chunks`` follows its loop token for token (runs of
at least ``n_cache_reuse`` old tokens that equal the new prompt where it has got to are shifted
into place; text deleted from the old prompt is skipped, text inserted ends the reuse).

``SlotCache`` replays that rule over recorded requests. Prompts are counted in the local
model's own tokens when its vocabulary is reachable offline (the bundled SmolLM2 GGUF through
xllamacpp: the server's ``/apply-template`` renders the chat template, ``/tokenize`` gives the
ids, nothing is evaluated), else in characters of a flat rendering (``CharTokens``); the
report says which. ``benchmarks/pipeline.py --parts f`` runs it; ``--parts v`` checks it
against the cached tokens a real llama.cpp server reports for the same prompts.

llama.cpp's host-memory prompt cache (``cache_ram``, 1 GiB in ``backends.local``) can restore
an older prompt into a slot; with one family per slot the slot's own last prompt is normally the
best match, so this rule is the floor the real server should meet (``--parts v`` shows by how
much it differs).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

from narrative_cli.backends.local import LocalServer

SLOTS = 5  # pipeline.local_settings(): planning, writing, analysis, then the rest as they come


class Tokens(Protocol):
    name: str

    def __call__(self, messages: Sequence[dict[str, Any]]) -> Sequence[Any]: ...


class CharTokens:
    """Characters of the messages, each as ``<|role|>content`` (no tokenizer needed)."""

    name = "characters"

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        return "".join(f"<|{m['role']}|>{m['content']}" for m in messages)

    def pieces(self, messages: Sequence[dict[str, Any]]) -> tuple[str, list[str]]:
        text = self(messages)
        return text, list(text)


class LlamaTokens:
    """The local model's token ids for a chat, from a running llama.cpp server (its chat
    template and tokenizer; nothing is evaluated, so it costs milliseconds)."""

    def __init__(self, base_url: str, model: str) -> None:
        self.client = httpx.Client(base_url=base_url, timeout=60)
        self.name = f"{model} tokens"

    def __call__(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        plain = [{"role": m["role"], "content": m["content"]} for m in messages]
        prompt = self.client.post("/apply-template", json={"messages": plain}).json()["prompt"]
        body = {"content": prompt, "add_special": True, "parse_special": True}
        tokens: list[int] = self.client.post("/tokenize", json=body).json()["tokens"]
        return tokens

    def pieces(self, messages: Sequence[dict[str, Any]]) -> tuple[list[int], list[str]]:
        """The token ids and each token's text (to say which prompt part a token is in)."""
        plain = [{"role": m["role"], "content": m["content"]} for m in messages]
        prompt = self.client.post("/apply-template", json={"messages": plain}).json()["prompt"]
        body = {"content": prompt, "add_special": True, "parse_special": True,
                "with_pieces": True}
        found = self.client.post("/tokenize", json=body).json()["tokens"]
        texts = [t["piece"] if isinstance(t["piece"], str)
                 else bytes(t["piece"]).decode("utf-8", "replace") for t in found]
        return [t["id"] for t in found], texts

    def close(self) -> None:
        self.client.close()


def local_tokens() -> tuple[Tokens, Any]:
    """The bundled model's tokenizer (and the server to stop), or characters when the local
    model or its runtime is not installed."""
    from narrative_cli.backends.local import shared_server
    from narrative_cli.config import Settings
    from narrative_cli.errors import LocalModelMissing

    try:
        server = shared_server(Settings().profiles["local"])
    except LocalModelMissing as exc:
        print(f"  (no local model: {exc}; counting characters)")
        return CharTokens(), None
    return LlamaTokens(server.base_url, server.model_path.stem), server


@dataclass
class SlotCache:
    """Per-slot longest-common-prefix reuse, as llama.cpp's server does with ``id_slot``."""

    slots: int = SLOTS
    reuse: int = 0  # llama.cpp's n_cache_reuse: shortest shifted chunk reused (0: off)
    layout: LocalServer = field(init=False)
    held: dict[int, Sequence[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the real slot map (families pinned in table order, the rest as they come)
        self.layout = LocalServer(base_url="", model_path=Path(), slots=self.slots,
                                  context_size=0)

    def serve(self, agent: str, tokens: Sequence[Any]) -> int:
        """Cached tokens of this prompt on its agent's slot; the slot then holds it."""
        slot = self.layout.slot_for(agent)
        previous = self.held.get(slot)
        self.held[slot] = tokens
        if previous is None or not tokens:
            return 0
        reused = common_prefix(previous, tokens)
        if self.reuse > 0:
            reused = shifted_chunks(previous, tokens, reused, self.reuse)
        return min(reused, len(tokens) - 1)


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    if isinstance(a, str) and isinstance(b, str):
        return len(os.path.commonprefix([a, b]))
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def shifted_chunks(held: Sequence[Any], tokens: Sequence[Any], n_past: int, least: int) -> int:
    """Tokens served once llama.cpp's chunk reuse (``n_cache_reuse = least``) has run after
    the common prefix ``n_past``, as its server does it: from the point of divergence, walk
    the slot's old tokens; where a run of at least ``least`` of them equals the new prompt at
    its current point, shift that run's KV entries into place and move both points past it;
    else skip one old token. The new prompt's point moves only on a match, so text deleted
    from the old prompt costs nothing, while text inserted ends the reuse."""
    return n_past + sum(length for _, length in kept_runs(held, tokens, n_past, least))


def kept_runs(held: Sequence[Any], tokens: Sequence[Any], n_past: int,
              least: int) -> Iterator[tuple[int, int]]:
    """The runs ``shifted_chunks`` keeps: (start in the new prompt, length), in order."""
    head_c = head_p = n_past
    while head_c < len(held) and head_p < len(tokens):
        n = 0
        while (head_c + n < len(held) and head_p + n < len(tokens)
               and held[head_c + n] == tokens[head_p + n]):
            n += 1
        if n >= least:
            yield head_p, n
            head_c, head_p = head_c + n, head_p + n
        else:
            head_c += 1


def served(held: Sequence[Any], tokens: Sequence[Any], least: int) -> list[bool]:
    """Which tokens of the new prompt the slot serves (the common prefix, then the runs chunk
    reuse keeps when ``least`` > 0); the last token is always evaluated again."""
    n_past = common_prefix(held, tokens)
    mask = [True] * n_past + [False] * (len(tokens) - n_past)
    if least > 0:
        for start, length in kept_runs(held, tokens, n_past, least):
            mask[start:start + length] = [True] * length
    if mask:
        mask[-1] = False
    return mask


@dataclass
class Call:
    """One request as the cache saw it."""

    agent: str
    prompt: int
    cached: int


def replay(requests: Iterable[tuple[str, Sequence[dict[str, Any]]]], tokens: Tokens,
           slots: int = SLOTS, reuse: int = 0) -> list[Call]:
    """Every request (agent, messages) in order, through a fresh ``SlotCache`` (``reuse``:
    llama.cpp's ``n_cache_reuse``)."""
    return replay_ids(((agent, tokens(messages)) for agent, messages in requests), slots, reuse)


def replay_ids(prompts: Iterable[tuple[str, Sequence[Any]]], slots: int = SLOTS,
               reuse: int = 0) -> list[Call]:
    """``replay`` on prompts already counted (agent, tokens)."""
    cache = SlotCache(slots, reuse)
    return [Call(agent, len(ids), cache.serve(agent, ids)) for agent, ids in prompts]


def shares(calls: Sequence[Call], skip: int = 0) -> dict[str, float]:
    """cached / prompt per agent and for all agents, the first ``skip`` calls left out
    (the first turn: every slot starts cold)."""
    totals: dict[str, list[int]] = {}
    for call in calls[skip:]:
        pair = totals.setdefault(call.agent, [0, 0])
        pair[0] += call.prompt
        pair[1] += call.cached
    out = {agent: cached / prompt for agent, (prompt, cached) in sorted(totals.items()) if prompt}
    prompt = sum(p for p, _ in totals.values())
    out["all agents"] = sum(c for _, c in totals.values()) / prompt if prompt else 0.0
    return out
