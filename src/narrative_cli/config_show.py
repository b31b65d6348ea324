"""What ``narrative config`` shows and writes: the effective settings as plain data, with each
key only as a status (``config show``), and a new config.yaml (``config init``). Only the
config commands load this; everything else reads settings through ``config.py``."""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from narrative_cli import paths
from narrative_cli.config import (
    LOCAL_ONLY,
    Profile,
    Settings,
    read_key_file,
    settings_from_dict,
)
from narrative_cli.errors import ConfigError, worded


def settings_summary(settings: Settings, lang: str = "en") -> dict[str, Any]:
    """The effective settings as plain data for ``config show``; keys appear only as a status.
    The names are config.yaml's own (as the user writes them); the status words are in
    ``lang`` (``--json`` keeps English)."""
    from narrative_cli.credentials import scrub, scrub_url
    from narrative_cli.i18n import t

    profiles = {}
    for name, profile in settings.profiles.items():
        skip = {"name"} | (set() if profile.provider == "local" else LOCAL_ONLY)
        data = {f.name: getattr(profile, f.name) for f in fields(Profile) if f.name not in skip}
        data = {k: v for k, v in data.items() if v not in (None, {}, [])}
        if profile.provider == "local":
            data["model_path"] = profile.model_path or t("config.bundled_model", lang)
        for key in ("headers", "extra_body"):
            if key in data:
                data[key] = scrub(data[key])
        if "base_url" in data:
            data["base_url"] = scrub_url(str(data["base_url"]))
        data["api_key"] = key_status(profile, lang)
        profiles[name] = data
    agents = {
        name: {k: v for k, v in vars(agent).items() if v is not None}
        for name, agent in settings.agents.items()
    }
    return {
        "config_file": settings.source or t("config.no_file", lang),
        "default_profile": settings.default_profile,
        "profiles": profiles,
        "agents": agents,
        "pipeline": dict(vars(settings.pipeline)),
        "lore": settings.lore,
        **({"prices": {model: vars(price) for model, price in settings.prices.items()}}
           if settings.prices else {}),
    }


def create_config_file(text: str, *, force: bool = False) -> Path:
    """Write ``text`` as config.yaml once it loads cleanly; an existing file needs ``force``."""
    import yaml

    path = paths.config_file()
    if path.exists() and not force:
        raise worded(ConfigError, "config.exists", path=path, hint=("config.exists_hint", {}))
    settings_from_dict(yaml.safe_load(text) or {}, "config template")
    paths.usable_dir(path.parent, "the config folder")
    path.write_text(text, encoding="utf-8")
    return path


def key_status(profile: Profile, lang: str = "en") -> str:
    """Where the profile's key comes from and whether it is there, in ``lang``; never the key
    itself."""
    from narrative_cli.i18n import t

    if profile.api_key_file:
        try:
            read_key_file(profile)
        except ConfigError as exc:  # the reason without its "profile 'x': " prefix
            why = exc.text(lang).split("：" if lang == "zh" else ": ", 1)[-1]
            return t("config.key_unusable", lang, why=why)
        return t("config.key_file_set", lang, path=profile.api_key_file)
    if profile.api_key_env:
        present = bool(os.environ.get(profile.api_key_env, "").strip())
        return t("config.key_env_set" if present else "config.key_env_unset", lang,
                 variable=profile.api_key_env)
    return t("config.key_none", lang)
