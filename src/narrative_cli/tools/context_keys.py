"""The context keys an ``llm`` tool may declare, and the order its prompt shows them in.

Its own module so that tool definitions (which check the keys a tool declares) and the llm-tool
prompts (which render them) both read it without importing each other.
"""

from __future__ import annotations

CANONICAL_CONTEXT_ORDER = (
    "world_full",
    "story_summary",
    "recent_turns",
    "narrative_text",
    "writing_guide",
    "state_summary",
    "user_persona",
    "user_input",
    "dice_results",
    "known_context",
)
# Keys that change when the merged analysis runs: tools declaring them must wait for it.
ANALYSIS_DEPENDENT_KEYS = ("story_summary", "state_summary", "known_context")

# Where a tool's own ``<tool_history>`` goes among its context keys.
TOOL_HISTORY = "tool_history"
# The order an llm tool's user message shows its blocks in: stable first (issue #17 item 5).
# A prefix cache (llama.cpp's slots, a provider's prompt cache) serves a prompt up to its
# first changed token, so what stays the same across turns (the world, the persona, the
# summary that only grows at its end) comes before what each turn rewrites (the state, the
# tool's own past outputs, the recent turns, this turn's guide, input, dice and story text).
PROMPT_ORDER = (
    "world_full",
    "user_persona",
    "story_summary",
    "known_context",
    "state_summary",
    TOOL_HISTORY,
    "recent_turns",
    "writing_guide",
    "user_input",
    "dice_results",
    "narrative_text",
)
