"""The ``<writing_guide>`` text the writer reads, made from the planner's reply.

One line each: direction, scene (the original dropped ``scene_setting``; here it always reaches
the writer when the plan has one), key points, tone and pacing, continuity notes.
"""

from __future__ import annotations

from narrative_cli.agents.replies import Plan
from narrative_cli.agents.templates import label

_SEPARATOR = {"zh": "；", "en": "; "}


def writing_guide_text(plan: Plan | None, lang: str) -> str:
    """The guide lines for ``plan`` (empty when there is no plan); the last plan's are kept
    (a turn asks for its plan's guide twice: the writer's block and the llm tools' context).
    A plan is frozen and the fields read here are texts and
    tuples of texts, so the same plan object always gives the same lines."""
    global _LAST
    if plan is None:
        return ""
    last = _LAST
    if last is not None and last[0] is plan and last[1] == lang:
        return last[2]
    text = _guide(plan, lang)
    _LAST = (plan, lang, text)  # one tuple: a reader on another thread sees it whole
    return text


_LAST: tuple[Plan, str, str] | None = None


def _guide(plan: Plan, lang: str) -> str:
    direction = plan.narrative_direction.strip() or label(lang, "guide.direction_empty")
    lines = [label(lang, "guide.direction", text=direction)]
    scene = plan.scene_setting.strip()
    if scene:
        lines.append(label(lang, "guide.scene", text=scene))
    points = _joined(plan.key_points, "guide.points_empty", lang)
    lines.append(label(lang, "guide.points", text=points))
    default = label(lang, "guide.tone_default")
    tone = plan.tone.strip() or default
    pacing = plan.pacing.strip() or default
    lines.append(label(lang, "guide.tone", tone=tone, pacing=pacing))
    notes = _joined(plan.continuity_notes, "guide.continuity_empty", lang)
    lines.append(label(lang, "guide.continuity", text=notes))
    return "\n".join(lines)


def _joined(items: tuple[str, ...], empty_label: str, lang: str) -> str:
    parts = [s for s in (i.strip() for i in items) if s]
    sep = _SEPARATOR.get(lang, _SEPARATOR["en"])
    return sep.join(parts) if parts else label(lang, empty_label)
