"""The ``<writing_guide>`` text the writer reads, made from the planner's reply.

One line each: direction, scene (the original dropped ``scene_setting``; here it always reaches
the writer when the plan has one), key points, tone and pacing, continuity notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from narrative_cli.agents.templates import label

_SEPARATOR = {"zh": "；", "en": "; "}


def writing_guide_text(plan: Mapping[str, Any] | None, lang: str) -> str:
    """The guide lines for ``plan`` (empty when there is no plan)."""
    if not plan:
        return ""
    lines = [label(lang, "guide.direction", text=_text(plan, "narrative_direction", lang))]
    scene = _plain(plan.get("scene_setting"))
    if scene:
        lines.append(label(lang, "guide.scene", text=scene))
    points = _joined(plan, "key_points", "guide.points_empty", lang)
    lines.append(label(lang, "guide.points", text=points))
    default = label(lang, "guide.tone_default")
    tone = _plain(plan.get("tone")) or default
    pacing = _plain(plan.get("pacing")) or default
    lines.append(label(lang, "guide.tone", tone=tone, pacing=pacing))
    notes = _joined(plan, "continuity_notes", "guide.continuity_empty", lang)
    lines.append(label(lang, "guide.continuity", text=notes))
    return "\n".join(lines)


def _plain(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _text(plan: Mapping[str, Any], key: str, lang: str) -> str:
    return _plain(plan.get(key)) or label(lang, "guide.direction_empty")


def _joined(plan: Mapping[str, Any], key: str, empty_label: str, lang: str) -> str:
    items = plan.get(key)
    parts = [s for s in (_plain(i) for i in items) if s] if isinstance(items, list) else []
    sep = _SEPARATOR.get(lang, _SEPARATOR["en"])
    return sep.join(parts) if parts else label(lang, empty_label)
