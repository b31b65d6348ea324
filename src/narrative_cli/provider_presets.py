"""The common providers ``narrative config add NAME`` knows: base URL, a model, the key variable.

Every one speaks the OpenAI Chat Completions protocol except ``anthropic``. Local servers
(Ollama, llama.cpp, KoboldCpp) need no key; llama.cpp and KoboldCpp answer with whatever
model they loaded, so their profiles name none (preflight then checks only the URL).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from narrative_cli.errors import ConfigError, worded


@dataclass(frozen=True)
class Preset:
    """A provider's profile as ``config add`` writes it."""

    provider: str
    base_url: str | None
    model: str | None
    api_key_env: str | None


PRESETS: dict[str, Preset] = {
    "openai": Preset("openai", None, "gpt-4o-mini", "OPENAI_API_KEY"),
    "anthropic": Preset("anthropic", None, "claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
    "deepseek": Preset(
        "openai", "https://api.deepseek.com/v1", "deepseek-chat", "DEEPSEEK_API_KEY"
    ),
    "openrouter": Preset(
        "openai", "https://openrouter.ai/api/v1", "deepseek/deepseek-chat", "OPENROUTER_API_KEY"
    ),
    "gemini": Preset(
        "openai",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "gemini-2.0-flash",
        "GEMINI_API_KEY",
    ),
    "ollama": Preset("openai", "http://127.0.0.1:11434/v1", "qwen2.5:7b", None),
    "llamacpp": Preset("openai", "http://127.0.0.1:8080/v1", None, None),
    "koboldcpp": Preset("openai", "http://127.0.0.1:5001/v1", None, None),
}


def profile_line(name: str, preset: Preset) -> str:
    """The profile as one YAML flow mapping line under ``profiles:``."""
    values = {
        "provider": preset.provider,
        "base_url": preset.base_url,
        "model": preset.model,
        "api_key_env": preset.api_key_env,
    }
    body = ", ".join(f'{key}: "{value}"' for key, value in values.items() if value)
    return f"  {name}: {{{body}}}"


def add_profile(
    name: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    make_default: bool = False,
) -> tuple[Path, str]:
    """Add profile ``name`` (a provider above) to config.yaml, keeping its comments.

    The line goes right under ``profiles:`` (the file is created when missing); the result
    must load, else the file is left as it was. Returns the file and the line written."""
    import re

    import yaml

    from narrative_cli import paths
    from narrative_cli.config import settings_from_dict

    preset = PRESETS.get(name)
    if preset is None:
        raise worded(ConfigError, "config.unknown_provider", name=repr(name),
                     known=", ".join(PRESETS), hint=("config.unknown_provider_hint", {}))
    preset = replace(
        preset,
        model=model or preset.model,
        base_url=base_url or preset.base_url,
        api_key_env=api_key_env or preset.api_key_env,
    )
    path = paths.config_file()
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    current = yaml.safe_load(old) or {}
    if name in ((current.get("profiles") or {}) if isinstance(current, dict) else {}):
        raise worded(ConfigError, "config.profile_exists", path=path, name=repr(name))
    line = profile_line(name, preset)
    lines = old.splitlines()
    at = next((i for i, text in enumerate(lines) if re.match(r"profiles:\s*(#.*)?$", text)), None)
    if at is None:
        lines += ["profiles:", line]
    else:
        lines.insert(at + 1, line)
    if make_default:
        lines = [text for text in lines if not text.startswith("default_profile:")]
        lines.insert(0, f"default_profile: {name}")
    new = "\n".join(lines) + "\n"
    settings_from_dict(yaml.safe_load(new) or {}, str(path))  # ConfigError: nothing written
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new, encoding="utf-8")
    return path, line.strip()
