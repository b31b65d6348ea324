"""``narrative config add NAME`` (#18 item 3): common providers written into config.yaml."""

from __future__ import annotations

from pathlib import Path

from narrative_cli import paths
from narrative_cli.cli.config import TEMPLATE
from narrative_cli.config import load_settings
from narrative_cli.config_show import create_config_file
from tests.test_config import cli


def test_adding_a_provider_to_a_new_file_makes_a_loadable_profile() -> None:
    code, out = cli("config", "add", "deepseek", "--default")
    assert code == 0, out
    assert 'deepseek: {provider: "openai", base_url: "https://api.deepseek.com/v1"' in out
    settings = load_settings()
    assert settings.default_profile == "deepseek"
    profile = settings.profiles["deepseek"]
    assert (profile.base_url, profile.model, profile.api_key_env) == (
        "https://api.deepseek.com/v1", "deepseek-chat", "DEEPSEEK_API_KEY",
    )  # fmt: skip


def test_adding_to_the_commented_template_keeps_its_comments_and_profiles() -> None:
    create_config_file(TEMPLATE)
    code, out = cli("config", "add", "ollama", "--model", "llama3.1:8b")
    assert code == 0, out
    text = paths.config_file().read_text(encoding="utf-8")
    assert "# Keys never go in this file" in text  # comments kept
    settings = load_settings()
    assert settings.default_profile == "local"  # not made the default unless asked
    assert {"local", "deepseek", "claude", "ollama"} <= set(settings.profiles)
    ollama = settings.profiles["ollama"]
    assert (ollama.base_url, ollama.model, ollama.api_key_env) == (
        "http://127.0.0.1:11434/v1", "llama3.1:8b", None,
    )  # fmt: skip


def test_every_known_provider_loads_and_gemini_uses_its_openai_endpoint() -> None:
    for name in ("openrouter", "gemini", "llamacpp", "koboldcpp", "openai", "anthropic"):
        code, out = cli("config", "add", name)
        assert code == 0, out
    profiles = load_settings().profiles
    assert profiles["gemini"].base_url == "https://generativelanguage.googleapis.com/v1beta/openai"
    assert profiles["gemini"].api_key_env == "GEMINI_API_KEY"
    assert profiles["anthropic"].provider == "anthropic"
    assert profiles["llamacpp"].model is None  # the server answers with the model it loaded


def test_an_unknown_provider_or_a_taken_name_is_refused_and_the_file_unchanged(
    clean_environ: Path,
) -> None:
    code, out = cli("config", "add", "mistral")
    assert code == 2 and "unknown provider 'mistral' (known: openai, anthropic, deepseek" in out
    assert not paths.config_file().exists()
    cli("config", "add", "ollama")
    before = paths.config_file().read_text(encoding="utf-8")
    code, out = cli("config", "add", "ollama")
    assert code == 2 and "a profile named 'ollama' already exists" in out
    assert paths.config_file().read_text(encoding="utf-8") == before
