"""Prompts for ``llm`` tools: the context keys they declare, their own output history.

A tool's user message opens with the instruction to run (fixed text: before anything a turn
rewrites, issue #17), then holds each declared context key as ``<key>…</key>`` and its
``<tool_history>`` (if it has one) in the fixed ``PROMPT_ORDER``, stable blocks first
(whatever order the tool lists them in, so a prefix cache serves as much of it as it can).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping

from narrative_cli.domain import LoreEntry
from narrative_cli.domain_chat import Message
from narrative_cli.lore.routed import routes_for
from narrative_cli.tools.context_keys import (
    ANALYSIS_DEPENDENT_KEYS,
    CANONICAL_CONTEXT_ORDER,
    PROMPT_ORDER,
    TOOL_HISTORY,
)
from narrative_cli.tools.definitions import ToolDef

__all__ = [
    "ANALYSIS_DEPENDENT_KEYS",
    "CANONICAL_CONTEXT_ORDER",
    "PROMPT_ORDER",
    "TOOL_HISTORY",
    "LazyContext",
    "Overlay",
    "tool_history",
    "tool_messages",
    "tool_user_message",
    "world_full",
]
_TEXT = {
    "zh": {
        "empty": "（无可用上下文）",
        "run": "请根据下述内容执行工具 {name}。",
        "turn": "--- 第 {n} 轮 ---",
        "untitled": "未命名",
    },
    "en": {
        "empty": "(no context available)",
        "run": "Run the tool {name} using the content below.",
        "turn": "--- turn {n} ---",
        "untitled": "untitled",
    },
}


class LazyContext(Mapping[str, str]):
    """The context keys, each rendered the first time a tool reads it, then kept.

    Rendering every key every turn cost more than the rest of the turn with a large world
    (``world_full`` renders every entry); most turns no tool declares most keys."""

    def __init__(self, makers: Mapping[str, Callable[[], str]]) -> None:
        self._makers = dict(makers)
        self._made: dict[str, str] = {}
        self._lock = threading.Lock()  # parallel post tools read the same context

    def __getitem__(self, key: str) -> str:
        with self._lock:
            if key not in self._made:
                self._made[key] = self._makers[key]()
            return self._made[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)

    def rendered(self) -> list[str]:
        """The keys rendered so far (what the tools asked for)."""
        with self._lock:
            return list(self._made)


class Overlay(Mapping[str, str]):
    """``context`` with some keys given other values, without reading the rest of it."""

    def __init__(self, context: Mapping[str, str], values: Mapping[str, str]) -> None:
        self._context, self._values = context, dict(values)

    def __getitem__(self, key: str) -> str:
        return self._values[key] if key in self._values else self._context[key]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._context, *self._values]))

    def __len__(self) -> int:
        return len(dict.fromkeys([*self._context, *self._values]))


def _words(lang: str) -> dict[str, str]:
    return _TEXT["zh" if lang == "zh" else "en"]


def tool_user_message(
    tool: ToolDef, context: Mapping[str, str], tool_history: str = "", lang: str = "zh"
) -> str:
    """The user message of an llm tool: the instruction, its context keys, its history.

    The instruction to run leads (the original puts it last): it is the same every turn, and
    after the turn's story it was evaluated again on every call; the tool's own system prompt
    says what to do, this line only names the tool."""
    words = _words(lang)
    declared = set(tool.context)
    texts = {key: context.get(key) or "" for key in declared}
    blocks = {key: f"<{key}>\n{text}\n</{key}>" for key, text in texts.items() if text.strip()}
    parts = [words["run"].format(name=tool.name)]
    if not blocks:
        parts.append(words["empty"])  # no context at all: said before any history
    if tool_history.strip():
        blocks[TOOL_HISTORY] = tool_history
    parts += [blocks[key] for key in PROMPT_ORDER if key in blocks]
    return "\n\n".join(parts)


def tool_messages(
    tool: ToolDef, context: Mapping[str, str], tool_history: str = "", lang: str = "zh"
) -> list[Message]:
    """``[system: the tool's system_prompt, user: its context message]`` for one llm tool."""
    user = Message("user", tool_user_message(tool, context, tool_history, lang))
    if not tool.system_prompt.strip():
        return [user]
    return [Message("system", tool.system_prompt), user]


def world_full(entries: Iterable[LoreEntry], lang: str = "zh") -> str:
    """Every enabled story entry (no tools, UI or MVU entries), by ``order``, for ``world_full``."""
    untitled = _words(lang)["untitled"]
    routes = routes_for(entries)
    kept = [
        entry
        for entry in routes.entries
        if not entry.disabled and not routes.is_formatting(entry) and entry.content.strip()
    ]
    kept.sort(key=lambda entry: entry.order if entry.order is not None else 100)
    blocks = []
    for entry in kept:
        title = entry.comment.strip() or next((k for k in entry.keys if k.strip()), "") or untitled
        blocks.append(f"--- {title} ---\n{entry.content}")
    return "\n\n".join(blocks)


def tool_history(
    outputs_by_turn: Mapping[int, str],
    tag: str,
    lookback: int,
    current_turn: int,
    lang: str = "zh",
) -> str:
    """``<tool_history>`` with the tool's ``<tag>`` blocks from the last ``lookback`` turns.

    Each output is labelled with the turn it came from (``--- 第 12 轮 ---``), the way
    ``<recent_turns>`` numbers turns, not with its distance ("3 turns ago"): a distance label
    changes every turn, so every past output's text changed with it; a turn number keeps it
    word for word while the output stays in the window, which llama.cpp's chunk reuse can then
    keep (issue #17 item 5). One match alone is shown bare, as the original does.
    Only turns before ``current_turn`` are read. Returns "" when there is nothing to show.
    """
    if not tag or lookback <= 0:
        return ""
    pattern = re.compile(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", re.IGNORECASE | re.DOTALL)
    found: list[tuple[int, list[str]]] = []
    for turn in range(max(0, current_turn - lookback), current_turn):
        text = outputs_by_turn.get(turn) or ""
        matches = [m.strip() for m in pattern.findall(text) if m.strip()]
        if matches:
            found.append((turn, matches))
    if not found:
        return ""
    if len(found) == 1 and len(found[0][1]) == 1:
        body = found[0][1][0]
    else:
        body = "\n\n".join(_labelled(turn, texts, lang) for turn, texts in found)
    return f"<tool_history>\n<{tag}>\n{body}\n</{tag}>\n</tool_history>"


def _labelled(turn: int, texts: list[str], lang: str) -> str:
    return _words(lang)["turn"].format(n=turn) + "\n" + "\n\n".join(texts)
