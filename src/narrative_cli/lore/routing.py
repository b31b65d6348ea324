"""Where each lore entry goes: the design document's routing table, made total.

The design (世界书条目分类) routes constant position-4 entries to ``worldinfo1`` (planning and
writing system prompts), constant position-0 entries to ``worldinfo2``, and constant
position-1 plus keyword-activated entries to ``worldinfo3``. Formatting entries (tools, UI,
MVU) never reach a prompt. The original extension silently dropped every other position; here
each one gets a route and a stated reason, shown by ``inspect`` and ``lore test``:

- Author's Note top/bottom (2, 3) sit near the end of a SillyTavern prompt, beside the recent
  chat: they join ``worldinfo3`` with the constant after-char entries.
- Example-message top/bottom (5, 6) belong to the character definition: ``worldinfo2``.
- Outlets (7) are inserted only where a prompt says ``{{outlet::name}}``: route ``outlet``.
- An absent position (SillyTavern: activates, inserted nowhere): ``unrouted``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from narrative_cli.domain import (
    POSITION_AFTER_CHAR,
    POSITION_AN_BOTTOM,
    POSITION_AN_TOP,
    POSITION_AT_DEPTH,
    POSITION_BEFORE_CHAR,
    POSITION_EM_BOTTOM,
    POSITION_EM_TOP,
    POSITION_OUTLET,
    LoreEntry,
)
from narrative_cli.safetext import loads

# Route names (a contract: inspect --json, lore test --json and traces use them).
WORLDINFO1 = "worldinfo1"
WORLDINFO2 = "worldinfo2"
WORLDINFO3 = "worldinfo3"  # constant after-char (and Author's Note positions)
KEYWORD = "keyword"  # activated by keys, then placed in worldinfo3 after the constants
OUTLET = "outlet"
TOOL = "tool"
UI = "ui"
INITVAR = "initvar"
MVU_UPDATE = "mvu_update"
DISABLED = "disabled"
UNROUTED = "unrouted"

FORMATTING_ROUTES = frozenset({TOOL, UI, INITVAR, MVU_UPDATE})
PROMPT_ROUTES = frozenset({WORLDINFO1, WORLDINFO2, WORLDINFO3, KEYWORD, OUTLET})

_TOOL_COMMENT = re.compile(r"^\s*\[TOOL:", re.IGNORECASE)
_UI_COMMENT = re.compile(r"^\s*\[UI\]", re.IGNORECASE)
_INITVAR_COMMENT = re.compile(r"\[initvar\]", re.IGNORECASE)  # anywhere, as MagVarUpdate reads
_MVU_UPDATE_COMMENT = re.compile(r"^\s*\[mvu_update\]", re.IGNORECASE)


@dataclass(frozen=True)
class Route:
    name: str
    reason: str


def is_tool_json(content: str) -> bool:
    """Content that is a tool definition: an object with type llm/code and a named function."""
    text = content.strip()
    if not text.startswith("{"):
        return False
    try:
        value = loads(text, strict=False)  # hand-written code often holds raw newlines
    except ValueError:
        return False
    if not isinstance(value, dict) or value.get("type") not in ("llm", "code"):
        return False
    function = value.get("function")
    return isinstance(function, dict) and isinstance(function.get("name"), str)


def formatting_kind(entry: LoreEntry) -> str | None:
    """The formatting route of an entry (tool, ui, initvar, mvu_update), or None."""
    comment = entry.comment or ""
    if _TOOL_COMMENT.match(comment) or is_tool_json(entry.content):
        return TOOL
    if _UI_COMMENT.match(comment):
        return UI
    if _INITVAR_COMMENT.search(comment):
        return INITVAR
    if _MVU_UPDATE_COMMENT.match(comment):
        return MVU_UPDATE
    return None


def classify(entry: LoreEntry) -> Route:
    """The route of one entry, with the reason in words."""
    kind = formatting_kind(entry)
    if kind is not None:
        return Route(kind, f"{kind} entry: never sent to a prompt")
    if entry.disabled:
        return Route(DISABLED, "disabled")
    position = entry.position
    if not entry.constant:
        if entry.vectorized and not entry.keys:
            return Route(UNROUTED, "vectorized entry without keys (no vector search here)")
        if not entry.keys:
            return Route(UNROUTED, "not constant and has no keys: can never activate")
        if position == POSITION_OUTLET:
            return Route(OUTLET, f"keyword entry for outlet {entry.outlet_name or '(unnamed)'}")
        return Route(KEYWORD, "keyword-activated → worldinfo3")
    if position is None:
        return Route(UNROUTED, "no position in the file: SillyTavern inserts it nowhere")
    if position == POSITION_AT_DEPTH:
        return Route(WORLDINFO1, "constant @D (position 4) → system prompts")
    if position == POSITION_BEFORE_CHAR:
        return Route(WORLDINFO2, "constant ↑Char (position 0)")
    if position == POSITION_AFTER_CHAR:
        return Route(WORLDINFO3, "constant ↓Char (position 1)")
    if position in (POSITION_AN_TOP, POSITION_AN_BOTTOM):
        return Route(WORLDINFO3, f"constant Author's Note position {position}: near the chat")
    if position in (POSITION_EM_TOP, POSITION_EM_BOTTOM):
        return Route(WORLDINFO2, f"constant example-message position {position}: with the card")
    if position == POSITION_OUTLET:
        name = entry.outlet_name or "(unnamed)"
        return Route(OUTLET, f"outlet {name}: only where {{{{outlet::{name}}}}} appears")
    return Route(UNROUTED, f"unknown position {position}")


def is_initvar(entry: LoreEntry) -> bool:
    """MVU's test: the comment contains ``[initvar]`` in any case. Here, not in
    ``state.mvu_init`` (which re-exports it), so that ``inspect`` can ask without loading MVU."""
    return "[initvar]" in (entry.comment or "").lower()


def initvar_entries(entries: Sequence[LoreEntry]) -> list[LoreEntry]:
    """Every ``[InitVar]`` entry, enabled or not, in lore order."""
    return [entry for entry in entries if is_initvar(entry)]
