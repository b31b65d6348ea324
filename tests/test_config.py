"""Settings: precedence, profiles, ad hoc flags, keys, clear errors, ``narrative config``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from narrative_cli import paths
from narrative_cli.backends import ChatRequest, open_backend
from narrative_cli.cli import config as config_cli
from narrative_cli.config import (
    PipelineSettings,
    Profile,
    load_settings,
    read_api_key,
)
from narrative_cli.domain_chat import Message
from narrative_cli.errors import ConfigError, NarrativeError

from . import servers
from .servers import ScriptedServer, quick_retrier

scripted_server = servers.scripted_server  # until tests/conftest.py imports the fixtures
SECRET = "sk-deepseek-THISMUSTNEVERSHOW-1234567890"


def write_config(text: str) -> Path:
    path = paths.config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cli(*args: str) -> tuple[int, str]:
    app = click.Group()
    config_cli.register(app)
    result = CliRunner().invoke(app, list(args))
    if isinstance(result.exception, NarrativeError):  # what app.main() turns into an exit code
        return result.exception.exit_code, result.output + result.exception.message
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_without_a_config_file_the_local_model_is_the_default() -> None:
    settings = load_settings()
    assert settings.default_profile == "local" and settings.source is None
    local = settings.profile_for("writing")
    assert (local.provider, local.model_path) == ("local", None)
    assert settings.pipeline == PipelineSettings()
    assert settings.pipeline.recent_turns_for_planning == 4
    assert settings.pipeline.writing_growth_margin == 4 and settings.pipeline.seed is None


def test_flag_beats_environment_beats_file_beats_default(monkeypatch: pytest.MonkeyPatch) -> None:
    write_config("pipeline: {mode: serial, seed: 7, parallel: true}\n")
    monkeypatch.setenv("NARRATIVE_MODE", "merged")
    monkeypatch.setenv("NARRATIVE_SEED", "8")
    settings = load_settings({"mode": "parallel", "seed": None})
    assert settings.pipeline.mode == "parallel"  # flag
    assert settings.pipeline.seed == 8  # env (the flag was not given)
    assert settings.pipeline.parallel is True  # file
    monkeypatch.delenv("NARRATIVE_MODE")
    assert load_settings().pipeline.mode == "serial"
    paths.config_file().unlink()
    assert load_settings().pipeline.mode == "auto"


def test_profiles_agents_and_lore_from_the_file() -> None:
    write_config(
        """
default_profile: deepseek
profiles:
  deepseek: {model: deepseek-reasoner, read_timeout: 240}
  claude: {provider: anthropic, model: claude-sonnet-4-5, api_key_env: ANTHROPIC_API_KEY}
agents:
  writing: {profile: claude, temperature: 0.9, max_tokens: 4096}
  tool: {max_retries: 0}
lore: {scan_depth: 4, budget_percent: 25}
"""
    )
    settings = load_settings()
    planning = settings.profile_for("planning")
    assert (planning.name, planning.model, planning.read_timeout) == (
        "deepseek",
        "deepseek-reasoner",
        240,
    )
    assert planning.base_url == "https://api.deepseek.com/v1"  # merged over the built-in
    assert settings.profile_for("writing").provider == "anthropic"
    assert settings.profile_for("merged_writing").name == "claude"
    assert settings.agent("writing").temperature == 0.9
    assert settings.agent("tool:dice").max_retries == 0
    assert settings.agent("analysis").temperature is None
    assert settings.lore == {"scan_depth": 4, "budget_percent": 25}


def test_a_chosen_profile_is_used_by_every_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    write_config("agents:\n  writing: {profile: anthropic, temperature: 0.9}\n")
    assert load_settings().profile_for("writing").name == "anthropic"
    settings = load_settings({"profile": "local"})
    assert settings.profile_for("writing").name == "local"
    assert settings.agent("writing").temperature == 0.9  # sampling settings stay
    monkeypatch.setenv("NARRATIVE_PROFILE", "deepseek")
    assert load_settings().profile_for("writing").name == "deepseek"


def test_ad_hoc_flags_make_an_ad_hoc_profile() -> None:
    settings = load_settings(
        {
            "provider": "openai",
            "base_url": "http://127.0.0.1:11434/v1",
            "model": "qwen2.5:7b",
            "api_key_env": None,
        }
    )
    profile = settings.profile_for("planning")
    assert (profile.name, profile.provider) == ("adhoc", "openai")
    assert (profile.base_url, profile.model, profile.api_key_env) == (
        "http://127.0.0.1:11434/v1",
        "qwen2.5:7b",
        None,
    )
    model_only = load_settings({"profile": "deepseek", "model": "deepseek-reasoner"})
    changed = model_only.profile_for("writing")
    assert (changed.model, changed.base_url) == ("deepseek-reasoner", "https://api.deepseek.com/v1")


def test_ad_hoc_profile_talks_to_the_server(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", SECRET)
    monkeypatch.setenv("NARRATIVE_BASE_URL", scripted_server.base_url)
    settings = load_settings({"provider": "openai", "model": "m1", "api_key_env": "MY_KEY"})
    scripted_server.queue_text("hello")
    backend = open_backend(settings.profile_for("writing"), retrier=quick_retrier())
    assert backend.complete(ChatRequest([Message("user", "hi")])).text == "hello"
    sent = scripted_server.requests[0]
    assert sent.json["model"] == "m1" and sent.headers["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("profiles: {x: {provider: grok}}\n", ["profiles.x.provider", "'grok'"]),
        ("profiles: {x: {model: m}}\n", ["profiles.x.provider", "missing"]),
        ("pipeline: {seed: many}\n", ["pipeline.seed", "'many'"]),
        ("pipeline: {mode: fast}\n", ["pipeline.mode", "'fast'"]),
        ("pipeline: {recent_turns: 4}\n", ["pipeline.recent_turns", "unknown"]),
        ("pipeline: {speculative_post_tools: sometimes}\n",
         ["pipeline.speculative_post_tools", "true or false", "'sometimes'"]),
        ("profiles: {local: {cache_reuse: -1}}\n", ["profiles.local.cache_reuse", "-1"]),
        ("profiles: {local: {cache_reuse: 9000}}\n", ["profiles.local.cache_reuse", "8192"]),
        ("profiles: {local: {cache_reuse: lots}}\n", ["profiles.local.cache_reuse", "'lots'"]),
        ("agents: {writing: {temperature: hot}}\n", ["agents.writing.temperature", "a number"]),
        ("agents: {writing: {profile: nope}}\n", ["agents.writing.profile", "'nope'"]),
        ("default_profile: nope\n", ["default_profile", "'nope'"]),
        ("colour: red\n", ["unknown key 'colour'"]),
        ("profiles: [a, b]\n", ["profiles", "expected a mapping"]),
        ("pipeline:\n  mode: serial\n   lang: zh\n", ["line 3"]),
    ],
)
def test_bad_config_names_the_file_and_the_key(text: str, words: list[str]) -> None:
    path = write_config(text)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert str(path) in caught.value.message
    for word in words:
        assert word in caught.value.message


def test_keys_in_the_config_file_are_refused_without_echoing_them() -> None:
    write_config(f"profiles:\n  deepseek: {{api_key: {SECRET}}}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "profiles.deepseek.api_key" in caught.value.message
    assert SECRET not in caught.value.message + (caught.value.hint or "")
    write_config(f"profiles:\n  deepseek: {{headers: {{Authorization: Bearer {SECRET}}}}}\n")
    with pytest.raises(ConfigError) as again:
        load_settings()
    assert "headers.Authorization" in again.value.message and SECRET not in again.value.message


def test_bad_environment_values_name_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARRATIVE_PARALLEL", "yes")
    assert load_settings().pipeline.parallel is True
    monkeypatch.setenv("NARRATIVE_SEED", "abc")
    with pytest.raises(ConfigError, match="NARRATIVE_SEED"):
        load_settings()
    monkeypatch.delenv("NARRATIVE_SEED")
    monkeypatch.setenv("NARRATIVE_PROVIDER", "gemini")
    with pytest.raises(ConfigError, match="NARRATIVE_PROVIDER: unknown provider 'gemini'"):
        load_settings()


def test_the_key_comes_from_the_named_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = Profile(name="deepseek", provider="openai", api_key_env="DEEPSEEK_API_KEY")
    with pytest.raises(ConfigError) as caught:
        read_api_key(profile)
    assert "DEEPSEEK_API_KEY is not set" in caught.value.message
    monkeypatch.setenv("DEEPSEEK_API_KEY", f"  {SECRET}\n")
    assert read_api_key(profile) == SECRET


def test_a_key_file_must_be_private(tmp_path: Path) -> None:
    key_file = tmp_path / "deepseek.key"
    key_file.write_text(SECRET + "\n", encoding="utf-8")
    profile = Profile(name="deepseek", provider="openai", api_key_file=str(key_file))
    os.chmod(key_file, 0o644)
    with pytest.raises(ConfigError) as caught:
        read_api_key(profile)
    assert "readable by other users (mode 0644)" in caught.value.message
    assert f"chmod 600 {key_file}" in (caught.value.hint or "")
    assert SECRET not in caught.value.message
    os.chmod(key_file, 0o600)
    assert read_api_key(profile) == SECRET


def test_config_show_never_prints_a_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    key_file = tmp_path / "claude.key"
    key_file.write_text("sk-ant-FILEKEY-abcdef", encoding="utf-8")
    key_file.chmod(0o600)
    write_config(
        f"profiles:\n  claude: {{provider: anthropic, model: c, api_key_file: {key_file}}}\n"
    )
    monkeypatch.setenv("DEEPSEEK_API_KEY", SECRET)
    code, out = cli("config", "show")
    assert code == 0
    assert SECRET not in out and "sk-ant-FILEKEY" not in out
    assert "set ($DEEPSEEK_API_KEY)" in out and "not set ($OPENAI_API_KEY)" in out
    assert f"set (file {key_file})" in out
    code, out = cli("config", "show", "--json", "--profile", "deepseek")
    shown = json.loads(out)
    assert shown["default_profile"] == "deepseek" and SECRET not in out


def test_config_init_writes_a_template_that_loads_and_path_finds_it() -> None:
    code, out = cli("config", "path")
    assert code == 0 and out.strip() == str(paths.config_file())
    code, out = cli("config", "init")
    assert code == 0 and paths.config_file().exists()
    settings = load_settings()
    assert settings.default_profile == "local" and "deepseek" in settings.profiles
    assert settings.agent("writing").temperature == 0.9
    code, _ = cli("config", "init")
    assert code == 2  # refuses to overwrite
    code, _ = cli("config", "init", "--force")
    assert code == 0


def test_the_real_command_reports_bad_yaml_in_one_line() -> None:
    write_config("profiles: {local: {provider: local}\n")
    result = subprocess.run(
        [sys.executable, "-m", "narrative_cli", "config", "show"],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {paths.config_file()}: line ")
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 2


def test_every_agent_gets_a_reply_limit_small_for_the_bundled_model() -> None:
    bundled = load_settings()
    assert bundled.agent("writing").max_tokens == 256  # the 135M model loops when unbounded
    assert bundled.agent("tool:keeper_log").max_tokens == 160
    write_config(
        "default_profile: big\n"
        "profiles:\n  big: {provider: local, model_path: /models/big.gguf}\n"
        "agents:\n  analysis: {max_tokens: 700}\n"
    )
    bigger = load_settings()
    assert bigger.agent("merged_writing").max_tokens == 2048
    assert bigger.agent("analysis").max_tokens == 700  # the config wins


def test_the_model_name_shown_for_a_local_profile_is_the_gguf_not_a_question_mark() -> None:
    assert load_settings().profile_for("writing").model_name() == "SmolLM2-135M-Instruct"
    assert (
        Profile(provider="local", model_path="/m/qwen2.5-7b.Q4.gguf").model_name()
        == "qwen2.5-7b.Q4"
    )
    assert Profile(provider="openai").model_name() == ""


def test_speculative_post_tools_and_cache_reuse_are_settings_config_show_lists() -> None:
    assert load_settings().pipeline.speculative_post_tools is True  # the default: guess
    assert load_settings().profiles["local"].cache_reuse == 64
    write_config("pipeline: {speculative_post_tools: false}\n"
                 "profiles: {local: {provider: local, cache_reuse: 0}}\n")
    settings = load_settings()
    assert settings.pipeline.speculative_post_tools is False
    assert settings.profiles["local"].cache_reuse == 0
    code, out = cli("config", "show", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["pipeline"]["speculative_post_tools"] is False
    assert shown["profiles"]["local"]["cache_reuse"] == 0
    assert "cache_reuse" not in shown["profiles"]["deepseek"]  # a local-only setting
    code, out = cli("config", "show")
    assert code == 0 and "speculative_post_tools" in out


def test_the_environment_turns_speculation_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NARRATIVE_SPECULATIVE_POST_TOOLS", "off")
    assert load_settings().pipeline.speculative_post_tools is False
    monkeypatch.setenv("NARRATIVE_SPECULATIVE_POST_TOOLS", "perhaps")
    with pytest.raises(ConfigError, match="NARRATIVE_SPECULATIVE_POST_TOOLS"):
        load_settings()
