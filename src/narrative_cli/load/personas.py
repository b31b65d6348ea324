"""Personas (compat §7): the user's name and description, from text or a file.

``--persona`` takes either the description itself or a file: plain text (the description),
JSON ``{"name", "description"}``, or a SillyTavern ``settings.json`` (its default persona, else
the active persona description).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from narrative_cli.domain_chat import Persona
from narrative_cli.errors import ConfigError, worded
from narrative_cli.load import files
from narrative_cli.load.fields import Fields, json_type

FILE_SUFFIXES = (".txt", ".md", ".json")


def _from_settings(settings: dict[str, Any], where: str) -> Persona:
    power = Fields(settings, where, ConfigError).mapping("power_user")
    p = Fields(power, f"{where}: power_user", ConfigError)
    names = p.mapping("personas")
    descriptions = p.mapping("persona_descriptions")
    avatar = power.get("default_persona") or settings.get("user_avatar")
    if avatar not in names:
        avatar = next(iter(names), None)
    fallback = Fields(settings, where, ConfigError).text("username") or "User"
    if avatar is None:
        return Persona(name=fallback, description=p.text("persona_description"))
    detail = descriptions.get(avatar)
    description = detail.get("description") if isinstance(detail, dict) else None
    return Persona(name=str(names[avatar] or fallback),
                   description=description if isinstance(description, str) else "")


def parse_persona_json(obj: object, where: str) -> Persona:
    """A persona from JSON: ``{"name", "description"}`` or a SillyTavern settings.json."""
    if not isinstance(obj, dict):
        raise worded(ConfigError, "persona.not_object", where=where, got=json_type(obj))
    if "power_user" in obj:
        return _from_settings(obj, where)
    f = Fields(obj, where, ConfigError)
    if "description" not in obj and "name" not in obj:
        raise worded(ConfigError, "persona.no_fields", where=where)
    return Persona(name=f.text("name") or "User", description=f.text("description"))


def _looks_like_path(value: str) -> bool:
    return "\n" not in value and len(value) < 4096 and value.lower().endswith(FILE_SUFFIXES)


def load_persona(text_or_path: str, name: str | None = None) -> Persona:
    """The persona for ``--persona``: an existing file is read, anything else is the text."""
    if files.is_existing_file(text_or_path) or files.is_special_file(text_or_path):
        where = os.fspath(text_or_path)
        text = files.read_text(where, limit=files.MAX_TEXT_BYTES, error=ConfigError,
                               kind="persona")
        if Path(where).suffix.lower() == ".json":
            persona = parse_persona_json(files.parse_json_text(text, where, ConfigError,
                                                               "persona"), where)
        else:
            persona = Persona(description=text.strip())
    elif _looks_like_path(text_or_path.strip()):
        raise worded(ConfigError, "persona.missing", where=text_or_path)
    else:
        persona = Persona(description=text_or_path.strip())
    if name:
        persona.name = name
    return persona
