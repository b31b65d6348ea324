"""``narrative config init|show|add|path``: create, inspect and locate config.yaml."""

from __future__ import annotations

import click

from narrative_cli.cli.errors import user_errors
from narrative_cli.cli.help import SETUP, argument, command, group, option

config_group = group("config", "Create, show or locate config.yaml.", SETUP)

TEMPLATE = """\
# narrative-cli configuration. Precedence: command-line flag > NARRATIVE_* variable > this file.
# Keys never go in this file: name the environment variable that holds each key (api_key_env),
# or a key file readable only by you (api_key_file, chmod 600).

default_profile: local          # the embedded model: no key, no network

profiles:
  local: {provider: local, model_path: null}    # null = bundled SmolLM2-135M; or a GGUF path
  deepseek:
    provider: openai
    base_url: https://api.deepseek.com/v1
    model: deepseek-chat
    api_key_env: DEEPSEEK_API_KEY
    # timeouts in seconds: connect_timeout 10, read_timeout 120 (silence between bytes),
    # timeout 300 (one whole call, streaming included; 900 for local); retries: max_retries 2
  claude: {provider: anthropic, model: claude-sonnet-4-5, api_key_env: ANTHROPIC_API_KEY}
  # ollama: {provider: openai, base_url: "http://127.0.0.1:11434/v1", model: qwen2.5:7b}

agents:                         # any agent may use another profile and its own settings
  planning: {temperature: 0.7, max_tokens: 2048}
  writing: {temperature: 0.9, max_tokens: 4096}
  # analysis: {profile: deepseek, temperature: 0.3, read_timeout: 180}

pipeline:
  recent_turns_for_planning: 4
  planning_growth_margin: 4
  recent_turns_for_writing: 3
  writing_growth_margin: 4
  parallel: false
  speculative_post_tools: true  # parallel: post tools that read the state are sent beside the
                                # analysis and kept if it changed nothing they read (false: wait)
  text_recall: false
  text_recall_budget: 2000
  summary_budget: 1500          # tokens of the story summary before old entries fold (0: never)
  auto_recall: true             # past passages naming the input's rare words, every turn
  auto_recall_budget: 600
  preset_mode: none             # none | split; a preset you give (--preset) is always used
  preset: ""                    # a Chat Completion preset file when --preset is not given
  authors_note: ""              # Author's Note of new chats (/note sets a chat's own)
  authors_note_interval: 1      # every N player messages (0: never)
  authors_note_position: chat   # chat (at depth) | after_main | before_main
  authors_note_depth: 4
  authors_note_role: system     # system | user | assistant
  worldbook_source: auto        # auto | card | world
  regex_scripts: []             # global regex script files (exported JSON), run before a card's
  mode: auto                    # auto | serial | merged | parallel
  lang: auto                    # auto | zh | en (screens and prompts; auto: the card's)

# Prices in US dollars per million tokens, by model id, for the cost in the footer, /cost and
# exports. Common models have dated list prices built in (docs/prices.md); a model with
# neither shows tokens only. cache_read and cache_write default to input.
# prices:
#   deepseek-chat: {input: 0.27, output: 1.10, cache_read: 0.07}
#   my-model: {input: 1.0, output: 2.0, cache_read: 0.25, cache_write: 1.25}
"""


def register(root: click.Group) -> None:
    """Add the ``config`` command group to the root group."""
    root.add_command(config_group)


@command("init", "narrative config init", parent=config_group)
@option("--force", "force", is_flag=True, default=False, help="Overwrite an existing file.")
def config_init(force: bool) -> None:
    """Write a commented config.yaml to start from."""
    from narrative_cli.config_show import create_config_file
    from narrative_cli.i18n import choose, t

    with user_errors():
        path = create_config_file(TEMPLATE, force=force)
    click.echo(t("config.wrote", choose(None), path=path))


@command("show", "narrative config show --profile deepseek", parent=config_group)
@option("--profile", "profile", metavar="NAME", help="Use this profile.")
@option("--provider", "provider", metavar="NAME", help="openai|anthropic|local")
@option("--base-url", "base_url", metavar="URL", help="Ad hoc base URL.")
@option("--model", "model", metavar="NAME", help="Ad hoc model name.")
@option("--api-key-env", "api_key_env", metavar="VAR", help="Variable that holds the key.")
@option("--json", "as_json", is_flag=True, default=False, help="Print JSON instead of YAML.")
def config_show(
    profile: str | None,
    provider: str | None,
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    as_json: bool,
) -> None:
    """Print the settings in effect (flags, environment, file, defaults); keys are never shown."""
    from narrative_cli.config import load_settings
    from narrative_cli.config_show import settings_summary
    from narrative_cli.i18n import choose
    from narrative_cli.ui.config_view import render_settings

    flags = {"profile": profile, "provider": provider, "base_url": base_url, "model": model}
    with user_errors():
        settings = load_settings({**flags, "api_key_env": api_key_env})
    lang = "en" if as_json else choose(None)  # no card: the locale; --json keeps English
    render_settings(settings_summary(settings, lang), as_json=as_json)


@command("add", "narrative config add deepseek --default", parent=config_group)
@argument("name", metavar="NAME",
          help="deepseek, openrouter, ollama, gemini, llamacpp, koboldcpp, openai or anthropic.")
@option("--model", "model", metavar="NAME", help="Another model.")
@option("--base-url", "base_url", metavar="URL", help="Another base URL.")
@option("--api-key-env", "api_key_env", metavar="VAR", help="Another key variable.")
@option("--default", "make_default", is_flag=True, default=False,
        help="Make it the default profile.")
def config_add(
    name: str, model: str | None, base_url: str | None, api_key_env: str | None,
    make_default: bool,
) -> None:
    """Add a common provider's profile (base URL, model, key variable) to config.yaml."""
    from narrative_cli.i18n import choose, t
    from narrative_cli.provider_presets import add_profile

    with user_errors():
        path, line = add_profile(name, model=model, base_url=base_url, api_key_env=api_key_env,
                                 make_default=make_default)  # fmt: skip
    click.echo(t("config.added", choose(None), path=path, line=line))


@command("path", "narrative config path", parent=config_group)
def config_path() -> None:
    """Print where config.yaml lives (NARRATIVE_HOME moves it)."""
    from narrative_cli import paths

    click.echo(str(paths.config_file()))
