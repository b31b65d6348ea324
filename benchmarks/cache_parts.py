"""Where a prompt's evaluated tokens go, part by part (issue 17, item 5).

``prefix_cache`` says how many tokens of each call a llama.cpp slot serves; this says which
ones it does not: every token of a call is labelled with the prompt part it sits in (its
message's role and the outermost ``<tag>`` block around it; text outside any block, such as
a closing instruction, the blank lines between blocks or the chat template's own markers, is
"(text after <the block before it>)"), and the tokens the
slot evaluates again are summed per agent and part. ``benchmarks/pipeline.py --parts w``
prints it for the serial scripted session, so the accounting of which parts of which agent
still cost tokens every turn is reproducible, not a reading of a few prompts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import prefix_cache

from narrative_cli.backends.local import LocalServer

ROLE = re.compile(r"<\|im_start\|>(\w+)|<\|(system|user|assistant)\|>")
TAG = re.compile(r"<(/?)([a-z][a-z_0-9]*)>")


def part_labels(pieces: Sequence[str]) -> list[str]:
    """Each token's part, ``role:block``; outside any block ``role:(text after block)``,
    after the message's last closed block (``role:(text)`` before its first)."""
    text = "".join(pieces)
    events = [(m.start(), "role", m.group(1) or m.group(2)) for m in ROLE.finditer(text)]
    events += [(m.start(), "close" if m.group(1) else "open", m.group(2))
               for m in TAG.finditer(text)]
    events.sort()
    labels: list[str] = []
    stack: list[str] = []
    role, at, offset, after = "?", 0, 0, ""
    for piece in pieces:
        while at < len(events) and events[at][0] <= offset:
            _, kind, name = events[at]
            at += 1
            if kind == "role":
                role, stack, after = name, [], ""
            elif kind == "open":
                stack.append(name)
            elif name in stack:
                del stack[stack.index(name):]
                after = after if stack else name
        outside = f"(text after {after})" if after else "(text)"
        labels.append(f"{role}:{stack[0] if stack else outside}")
        offset += len(piece)
    return labels


@dataclass
class AgentParts:
    """One agent's calls after the first turn: prompt and evaluated tokens, by part."""

    calls: int = 0
    prompt: int = 0
    evaluated: Counter[str] = field(default_factory=Counter)
    stops: Counter[str] = field(default_factory=Counter)  # the part of the first evaluated token
    order: dict[str, int] = field(default_factory=dict)  # each part's place in the prompt


def evaluated_parts(requests: Sequence[tuple[str, Sequence[dict[str, Any]]]], tokens: Any,
                    reuse: int, skip: int) -> dict[str, AgentParts]:
    """Every request (agent, messages) through the slots in order; the calls after the first
    ``skip`` (the first turn, every slot cold) counted per agent and part."""
    layout = LocalServer(base_url="", model_path=Path(), slots=prefix_cache.SLOTS,
                         context_size=0)
    held: dict[int, Sequence[Any]] = {}
    out: dict[str, AgentParts] = {}
    for index, (agent, messages) in enumerate(requests):
        ids, pieces = tokens.pieces(messages)
        slot = layout.slot_for(agent)
        previous, held[slot] = held.get(slot), ids
        if index < skip or previous is None:
            continue
        mask = prefix_cache.served(previous, ids, reuse)
        labels = part_labels(pieces)
        parts = out.setdefault(agent, AgentParts())
        parts.calls += 1
        parts.prompt += len(ids)
        for place, label in enumerate(labels):
            parts.order.setdefault(label, place)
        parts.evaluated.update(label for label, kept in zip(labels, mask, strict=True)
                               if not kept)
        parts.stops[next((lab for lab, kept in zip(labels, mask, strict=True) if not kept),
                         "-")] += 1
    return out


def show(parts: dict[str, AgentParts], turns: int) -> None:
    """Per agent: tokens per turn, served share, then the evaluated tokens of each part in
    prompt order (what a turn pays for, and where the reuse stopped)."""
    per_turn = turns - 1
    total = sum(p.prompt for p in parts.values())
    evaluated = sum(sum(p.evaluated.values()) for p in parts.values())
    print(f"  all agents: prompt {total / per_turn:.0f} tokens/turn, evaluated "
          f"{evaluated / per_turn:.0f}, served {1 - evaluated / total:.3f}")
    for agent, p in parts.items():
        spent = sum(p.evaluated.values())
        stop, count = p.stops.most_common(1)[0]
        print(f"\n  {agent}: prompt {p.prompt / per_turn:.0f}/turn, evaluated "
              f"{spent / per_turn:.0f}, served {1 - spent / p.prompt:.3f}; reuse ends in "
              f"{stop} on {count} of {p.calls} calls")
        for label in sorted(p.evaluated, key=lambda lab: p.order[lab]):
            print(f"    {label:<34}{p.evaluated[label] / per_turn:>8.1f} evaluated/turn")
