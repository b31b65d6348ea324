"""The context keys an ``llm`` tool may declare, in the order its prompt shows them.

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
