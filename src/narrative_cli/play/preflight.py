"""Preflight: the checks a new or resumed story passes before its greeting is shown or stored.

A missing key, a base URL that does not answer or a model name the server does not know used
to surface only after the greeting and the first line typed, each attempt leaving an empty
session behind. ``preflight(settings)`` checks every profile the agents will call, once:

- its key's variable (or key file) is set, naming the variable when it is not;
- its base URL answers (``GET …/models``);
- its model is one the server lists, when the server lists models (a server without the
  list passes).

It raises the first problem as a ``NarrativeError`` (a ``ConfigError``, exit 2, for a key or
model; ``BackendUnavailable``, exit 1, for a server that does not answer). The ``local``
profile needs no network and passes.
"""

from __future__ import annotations

from narrative_cli.config import Profile, Settings, read_api_key
from narrative_cli.errors import ConfigError, worded

_SHOWN_MODELS = 8  # how many listed models an unknown-model message names


def profiles_in_use(settings: Settings) -> list[Profile]:
    """The distinct profiles the agents of a turn call, in agent order."""
    from narrative_cli.agents.table import agent_names

    seen: dict[str, Profile] = {}
    for agent in agent_names():
        profile = settings.profile_for(agent)
        seen.setdefault(profile.name, profile)
    return list(seen.values())


def preflight(settings: Settings) -> None:
    """Raise the first reason the story's backends cannot answer (see the module doc)."""
    for profile in profiles_in_use(settings):
        check_profile(profile)


def check_profile(profile: Profile) -> None:
    """The key, the base URL and the model of one remote profile."""
    if profile.provider == "local":
        return
    from narrative_cli.backends.probe import list_models

    key = read_api_key(profile)  # ConfigError naming the variable when it is not set
    models = list_models(profile, key)
    if models and profile.model and not model_listed(profile.model, models):
        more = len(models) - _SHOWN_MODELS
        raise worded(ConfigError, "preflight.no_model_more" if more > 0 else "preflight.no_model",
                     profile=repr(profile.name), model=repr(profile.model),
                     listed=", ".join(models[:_SHOWN_MODELS]), more=max(more, 0),
                     hint=("preflight.no_model_hint", {}))


def model_listed(model: str, models: list[str]) -> bool:
    """True when ``model`` is listed, allowing the spellings servers differ in: Gemini's
    ``models/`` prefix, an OpenRouter vendor prefix, Ollama's ``:latest`` tag."""
    for listed in models:
        bare = listed.removeprefix("models/")
        if model in (listed, bare, bare.removesuffix(":latest")) or bare.endswith("/" + model):
            return True
    return False

