"""``/model NAME`` and ``/profile NAME``: another backend mid-story, kept with the session.

The switch is checked before anything changes: the settings are loaded with the new flag
(an unknown profile is refused, naming the ones there are), and the preflight checks the
key, the base URL and (when the server lists models) that the model exists. Only then are
the session's backends replaced and its stored flags updated, so a resume starts with the
new model or profile. Choosing a profile drops the session's own model, provider and base
URL flags: the profile says which to use.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from narrative_cli.errors import BadInput, worded
from narrative_cli.play.options import PlayOptions

if TYPE_CHECKING:
    from narrative_cli.play.controller import PlaySession

PROFILE_DECIDES = ("model", "provider", "base_url", "api_key_env")


def switch_backend(
    play: PlaySession, *, model: str | None = None, profile: str | None = None
) -> str:
    """Switch the writer's (and every agent's) model or profile; returns the new model."""
    from narrative_cli.config import load_settings
    from narrative_cli.pipeline.backendset import BackendSet
    from narrative_cli.play.preflight import preflight

    options = play.options or PlayOptions()
    if model is not None:
        if not model.strip():
            raise worded(BadInput, "usage.model_name")
        changed = replace(options, model=model.strip())
    elif profile is not None:
        changed = replace(
            options, profile=profile.strip(), model=None, provider=None, base_url=None,
            api_key_env=None,
        )  # fmt: skip
    else:
        raise worded(BadInput, "usage.nothing_to_switch")
    settings = load_settings(changed.overrides())  # ConfigError: no such profile
    preflight(settings)  # ConfigError: no key, no such model; BackendUnavailable
    settings.pipeline = play.story.settings.pipeline  # the story's mode and pipeline stay
    settings.lore = play.story.settings.lore
    backends = BackendSet.from_settings(settings)
    old, play.backends = play.backends, backends
    old.close()
    play.story.settings = settings
    play.options = changed
    stored = {**play.info().settings}
    for key in ("profile", *PROFILE_DECIDES):
        stored.pop(key, None)
    stored.update(
        {k: getattr(changed, k) for k in ("profile", *PROFILE_DECIDES) if getattr(changed, k)}
    )
    play.store.set_settings(play.session_id, stored)
    return play.model_name()


def profile_name(play: PlaySession) -> str:
    """The profile the writer uses now."""
    return play.story.settings.profile_for("writing").name
