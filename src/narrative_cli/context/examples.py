"""A card's ``mes_example`` split into example dialogues, as SillyTavern splits it.

``parseMesExamples`` (SillyTavern's ``script.js``): text without a leading ``<START>`` gets one,
then the text is split on ``<START>`` (any case) and each block trimmed. Used by the writer's
request with a preset (``preset_prompt``) and without one (``parts.character``).
"""

from __future__ import annotations

import re

_START = re.compile(r"<START>", re.IGNORECASE)


def example_dialogues(text: str) -> list[str]:
    """``mes_example`` split on ``<START>`` (case-insensitive), each block trimmed."""
    if not text or text == "<START>":
        return []
    if not text.startswith("<START>"):
        text = "<START>\n" + text.strip()
    return [block.strip() for block in _START.split(text)[1:]]
