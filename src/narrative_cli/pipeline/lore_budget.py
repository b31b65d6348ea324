"""The lore budget as SillyTavern computes it (issue #15), and the warning when it bites.

SillyTavern gives world info ``world_info_budget`` percent (default 25) of the prompt room:
the Chat Completion context size minus the reply's ``max_tokens``. Here that context size is
the writer's: the profile's ``context_size`` when the profile states one, else what the
provider states for the model (its ``GET …/models`` entry, or llama.cpp's ``/props``; asked
once per session, ``BackendSet.stated_context``), else the preset's ``openai_max_context``;
the reply room is the writer's ``max_tokens`` (config, else preset, else our default).
``lore: {max_context: N}`` in the config still wins; without any of these the lore settings'
default (32768) applies and a note says so when the session opens. A constant entry the budget
drops is a visible warning naming it and the budget.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from narrative_cli.i18n import t
from narrative_cli.lore.engine import ActivationResult, LoreSettings
from narrative_cli.pipeline.backendset import BackendSet
from narrative_cli.pipeline.samplers import preset_samplers, reply_tokens
from narrative_cli.pipeline.story import Story


def writer_room(story: Story, backends: BackendSet) -> tuple[int, str] | None:
    """Prompt tokens the writer has (context minus reply) and where the context came from."""
    context = backends.context_limit("writing")
    source = "the writer's profile context_size"
    if context is None:
        stated = backends.stated_context("writing")
        if stated is not None:
            context, source = stated[0], stated[1]
    if context is None and story.preset is not None:
        value = story.preset.samplers.get("openai_max_context")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            context, source = value, f"preset {story.preset.name!r} openai_max_context"
    if context is None:
        return None
    reply = reply_tokens("writing", preset_samplers(story.preset),
                         backends.configured("writing"),
                         story.settings.agent("writing").max_tokens) or 0
    return max(1, context - int(reply)), f"{source} {context} minus {reply} for the reply"


def lore_settings(story: Story, backends: BackendSet) -> LoreSettings:
    """The story's lore settings with ``max_context`` set from the writer's room."""
    settings = _settings(repr(tuple(story.settings.lore.items())), story.settings.lore)
    if _configured(story):
        return settings
    room = writer_room(story, backends)
    return _with_room(settings, room[0]) if room else settings


# The settings of the last few ``lore:`` configs, by the ``repr`` of their items (which tells
# 1 from 1.0, True and "1"): read anew for every turn (their fields listed, each value checked,
# then the copy with the writer's room) they were 0.4% of a replay (#17, session nine).
# ``LoreSettings`` is frozen, so one object serves every turn.
_READ: dict[str, LoreSettings] = {}
_ROOMED: dict[tuple[LoreSettings, int], LoreSettings] = {}


def _settings(key: str, data: dict[str, Any]) -> LoreSettings:
    settings = _READ.get(key)
    if settings is None:
        settings = LoreSettings.from_dict(data)  # ConfigError: nothing kept
        if len(_READ) >= 8:
            _READ.clear()
        _READ[key] = settings
    return settings


def _with_room(settings: LoreSettings, room: int) -> LoreSettings:
    made = _ROOMED.get((settings, room))
    if made is None:
        made = replace(settings, max_context=room)
        if len(_ROOMED) >= 8:
            _ROOMED.clear()
        _ROOMED[(settings, room)] = made
    return made


def fallback_note(story: Story, backends: BackendSet) -> str | None:
    """Said once when a session opens: the writer's context size is known from nowhere, so
    the lore budget is a share of an assumed size (None when something states it, when the
    config sets ``lore.max_context``, or when the story has no lore)."""
    if not story.entries or _configured(story) or writer_room(story, backends):
        return None
    assumed = LoreSettings.from_dict(story.settings.lore).max_context
    return t("lore.context_assumed", story.lang, tokens=assumed)


def _configured(story: Story) -> bool:
    return any(k in story.settings.lore for k in ("max_context", "world_info_max_context"))


def budget_warnings(result: ActivationResult, settings: LoreSettings) -> list[str]:
    """One warning per constant entry the budget left out."""
    percent = 25 if settings.budget_percent > 100 else settings.budget_percent
    where = f"{percent}% of {settings.max_context} prompt tokens"
    if settings.budget_cap:
        where += f", capped at {settings.budget_cap}"
    return [
        f"constant entry {label(r.entry.comment, r.entry.uid)!r} was dropped: the lore budget "
        f"is {result.budget} tokens ({where}); {r.reason}. Raise lore.budget or the "
        "writer's context_size"
        for r in result.rejected if r.entry.constant and r.reason.startswith("budget")
    ]


def label(comment: str, uid: object) -> str:
    return comment.strip() or f"uid {uid}"
