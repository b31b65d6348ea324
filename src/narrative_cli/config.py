"""Settings: profiles, per-agent overrides and pipeline options, from flags, env and YAML.

Precedence, highest first: a command-line flag (``load_settings(overrides)``), a ``NARRATIVE_*``
environment variable, ``config.yaml`` (``paths.config_file()``), the built-in defaults. With no
config file the default profile is ``local``, the embedded model.

A profile chosen by flag or environment (``--profile``, or the ad hoc ``--provider``,
``--base-url``, ``--model``, ``--api-key-env``) is used by every agent; without one, agents use
the profile their ``agents:`` entry names, else ``default_profile``.

API keys are never stored here: a profile names the environment variable that holds its key
(``api_key_env``) or a key file readable only by its owner (``api_key_file``, mode 0600).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from narrative_cli import paths
from narrative_cli.errors import ConfigError, worded

# Loaded where they are used: the table of agents (an agent's settings), prices (a config's
# ``prices:``), the secret rules (a key read, a config shown) and the Author's Note (a chat):
# ``lore test`` reads its settings without a config file, and needs none of them.
if TYPE_CHECKING:
    from narrative_cli.domain_chat import AuthorsNote, Role
    from narrative_cli.pricing import ModelPrice

PROVIDERS = ("openai", "anthropic", "local")
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
DEFAULT_KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_CHOICES = {
    "mode": ("auto", "serial", "merged", "parallel"),
    "lang": ("auto", "zh", "en"),
    "worldbook_source": ("auto", "card", "world"),
    "preset_mode": ("none", "split"),
    "authors_note_position": ("chat", "after_main", "before_main"),
    "authors_note_role": ("system", "user", "assistant"),
    "max_tokens_field": ("auto", "max_tokens", "max_completion_tokens"),
    "response_format": ("auto", "json_schema", "json_object", "none"),
}
LOCAL_ONLY = {"model_path", "context_size", "slots", "threads", "cache_reuse"}
ADHOC_FIELDS = ("provider", "base_url", "model", "api_key_env", "model_path")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
T = TypeVar("T")


@dataclass
class Profile:
    """One model endpoint: which provider, where, which model, and where its key lives."""

    name: str = "local"
    provider: str = "local"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None
    model_path: str | None = None  # local: a GGUF file; None = the bundled SmolLM2
    context_size: int = 8192  # local: context tokens per server slot
    slots: int = 5  # local: server slots: planning, writing, analysis, tools, mvu_extract
    threads: int | None = None  # local: CPU threads (None = llama.cpp's choice)
    cache_reuse: int = 64  # local: least run of cached tokens shifted into place (0: off)
    max_tokens_field: str = "auto"
    response_format: str = "auto"
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    timeout: float = 300.0  # one whole call (one attempt), streaming included
    max_retries: int = 2
    headers: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)

    def model_name(self) -> str:
        """The model this profile's requests go to, for headers and traces ("" when unknown)."""
        if self.model:
            return self.model
        if self.provider == "local":  # the GGUF's name, or the bundled SmolLM2
            return Path(self.model_path).stem if self.model_path else "SmolLM2-135M-Instruct"
        return ""

    def endpoint(self) -> str:
        """The base URL, or the provider's default."""
        return self.base_url or DEFAULT_BASE_URLS.get(self.provider, "")


@dataclass
class AgentSettings:
    """Per-agent overrides: which profile, sampling defaults, timeouts."""

    profile: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop: list[str] | None = None
    connect_timeout: float | None = None
    read_timeout: float | None = None
    timeout: float | None = None
    max_retries: int | None = None


@dataclass
class PipelineSettings:
    """How turns run: windows, modes, recall, language, seed."""

    recent_turns_for_planning: int = 4
    planning_growth_margin: int = 4
    recent_turns_for_writing: int = 3
    writing_growth_margin: int = 4
    parallel: bool = False
    speculative_post_tools: bool = True  # parallel: send state-reading post tools early
    text_recall: bool = False
    text_recall_budget: int = 2000
    summary_budget: int = 1500  # tokens of <story_summary> before chapters fold (0: never)
    auto_recall: bool = True  # search past text for the input's rare words each turn
    auto_recall_budget: int = 600  # tokens of <text_recall> the automatic search may fill
    preset_mode: str = "none"
    preset: str = ""  # a Chat Completion preset file used when --preset is not given
    # The Author's Note of new chats (a chat's own note, e.g. an imported one, wins).
    authors_note: str = ""
    authors_note_interval: int = 1
    authors_note_position: str = "chat"  # chat (at depth) | after_main | before_main
    authors_note_depth: int = 4
    authors_note_role: str = "system"
    worldbook_source: str = "auto"
    # Global regex scripts (SillyTavern's own, not a card's): exported script files, run
    # before the card's scripts as SillyTavern runs them.
    regex_scripts: list[str] = field(default_factory=list)
    mode: str = "auto"
    lang: str = "auto"
    seed: int | None = None


_PIPELINE_NAMES = tuple(f.name for f in fields(PipelineSettings))
_PIPELINE_CHOICES = ("mode", "lang", "worldbook_source", "preset_mode",
                     "authors_note_position", "authors_note_role")


def default_authors_note(pipeline: PipelineSettings) -> AuthorsNote:
    """The config's Author's Note for new chats (``authors_note*`` keys of ``pipeline:``)."""
    from narrative_cli.domain_chat import AN_POSITIONS, AuthorsNote

    return AuthorsNote(
        text=pipeline.authors_note, interval=pipeline.authors_note_interval,
        position=AN_POSITIONS.get(pipeline.authors_note_position, 1),
        depth=pipeline.authors_note_depth,
        role=cast("Role", pipeline.authors_note_role),
    )


def builtin_profiles() -> dict[str, Profile]:
    """Profiles that exist without any config file."""
    return {
        "local": Profile(
            name="local", provider="local", read_timeout=300.0, timeout=900.0, max_retries=1
        ),
        "openai": Profile(
            name="openai", provider="openai", model="gpt-4o-mini", api_key_env="OPENAI_API_KEY"
        ),
        "deepseek": Profile(
            name="deepseek",
            provider="openai",
            base_url="https://api.deepseek.com/v1",
            model="deepseek-chat",
            api_key_env="DEEPSEEK_API_KEY",
        ),
        "anthropic": Profile(
            name="anthropic",
            provider="anthropic",
            model="claude-sonnet-4-5",
            api_key_env="ANTHROPIC_API_KEY",
        ),
    }


@dataclass
class Settings:
    """Everything configurable, after precedence was applied."""

    profiles: dict[str, Profile] = field(default_factory=builtin_profiles)
    default_profile: str = "local"
    agents: dict[str, AgentSettings] = field(default_factory=dict)
    pipeline: PipelineSettings = field(default_factory=PipelineSettings)
    lore: dict[str, Any] = field(default_factory=dict)
    prices: dict[str, ModelPrice] = field(default_factory=dict)  # by model id (pricing.py)
    source: str | None = None  # the config file that was read
    profile_forced: bool = False  # a flag or env var chose the profile for every agent

    def agent(self, agent: str) -> AgentSettings:
        """The settings of ``agent``; ``tool:dice`` falls back to ``tool``, ``merged_writing``
        to ``writing``, and an agent without settings gets the defaults. ``max_tokens`` is
        always set: a reply without a limit can run to the end of the context window."""
        entry = self._configured(agent)
        if entry is None:  # made at once, not made and then replaced (#17, session six)
            return AgentSettings(max_tokens=default_max_tokens(agent, self._profile(None)))
        if entry.max_tokens is None:
            return replace(entry, max_tokens=default_max_tokens(agent, self._profile(entry)))
        return entry

    def _configured(self, agent: str) -> AgentSettings | None:
        """The ``agents:`` entry ``agent`` takes its settings from, None when it has none."""
        if not self.agents:
            return None
        from narrative_cli.agents.table import find_agent

        spec = find_agent(agent)
        for key in (agent, agent.split(":", 1)[0], spec.settings_key if spec else agent):
            if key in self.agents:
                return self.agents[key]
        return None

    def profile_for(self, agent: str) -> Profile:
        """The profile ``agent`` calls."""
        return self._profile(self._configured(agent))

    def _profile(self, entry: AgentSettings | None) -> Profile:
        chosen = entry.profile if entry is not None else None
        return self.profiles[chosen if chosen and not self.profile_forced else self.default_profile]


def default_max_tokens(agent: str, profile: Profile) -> int:
    """The reply limit of ``agent`` when the config names none (its ``agents.table`` row; an
    agent without a row gets the tools' limit). The bundled 135M model writes little and slowly
    on two cores, and loops when left unbounded, so it gets short limits; others get room."""
    from narrative_cli.agents.table import agent as agent_spec
    from narrative_cli.agents.table import find_agent

    small = profile.provider == "local" and not profile.model_path
    spec = find_agent(agent) or agent_spec("tool")
    return spec.small_max_tokens if small else spec.max_tokens


def load_settings(overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from defaults < config.yaml < NARRATIVE_* env < ``overrides`` (flags)."""
    path = paths.config_file()
    settings = read_config_file(path) if path.exists() else Settings()
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    _apply_layers(settings, env_overrides(), flags)
    return settings


def read_config_file(path: Path) -> Settings:
    """Settings from one YAML file over the defaults; ConfigError names the file and key."""
    import yaml  # only when there is a file: most commands start faster without it

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{path}:{where}: {problem}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from exc
    return settings_from_dict(data or {}, str(path))


def settings_from_dict(data: Any, where: str) -> Settings:
    """Settings from parsed YAML; ``where`` names the file in messages."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping at the top level")
    known = {"default_profile", "profiles", "agents", "pipeline", "lore", "prices"}
    for key in data:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r} (expected {', '.join(sorted(known))})")
    settings = Settings(source=where)
    for name, raw in _mapping(data.get("profiles"), f"{where}: profiles").items():
        settings.profiles[str(name)] = _profile(str(name), raw, settings.profiles, where)
    for name, raw in _mapping(data.get("agents"), f"{where}: agents").items():
        ctx = f"{where}: agents.{name}"
        settings.agents[str(name)] = build(AgentSettings, _mapping(raw, ctx), ctx)
    ctx = f"{where}: pipeline"
    settings.pipeline = build(PipelineSettings, _mapping(data.get("pipeline"), ctx), ctx)
    settings.lore = dict(_mapping(data.get("lore"), f"{where}: lore"))
    from narrative_cli.pricing import parse_prices

    settings.prices = parse_prices(data.get("prices"), f"{where}: prices")
    if data.get("default_profile") is not None:
        settings.default_profile = str(data["default_profile"])
    _validate(settings, where)
    return settings


def _mapping(value: Any, where: str) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _profile(name: str, raw: Any, known: dict[str, Profile], where: str) -> Profile:
    ctx = f"{where}: profiles.{name}"
    values = dict(_mapping(raw, ctx))
    if "api_key" in values:
        raise ConfigError(
            f"{ctx}.api_key: keys are not stored in config.yaml",
            hint="put the key in an environment variable named by api_key_env, "
            "or in a file readable only by you (chmod 600) named by api_key_file",
        )
    base = known.get(name)
    if base is not None and values.get("provider", base.provider) == base.provider:
        merged = {f.name: getattr(base, f.name) for f in fields(Profile)} | values
    else:
        merged = values
    if "provider" not in merged:
        raise ConfigError(f"{ctx}.provider: missing (expected one of {', '.join(PROVIDERS)})")
    merged["name"] = name
    return build(Profile, merged, ctx)


def _check_seconds(value: float | None, where: str) -> None:
    """A timeout must be a positive, finite number of seconds."""
    if value is not None and not 0 < value < float("inf"):
        raise ConfigError(f"{where}: expected a positive number of seconds, got {value!r}")


def _is_secret_name(header: str) -> bool:
    from narrative_cli.credentials import is_secret_name

    return is_secret_name(header)


def _check_agent(agent: str, where: str) -> None:
    """An ``agents:`` key must name a row of the table of agents."""
    from narrative_cli.agents.table import find_agent, known_agents

    if find_agent(agent) is None:
        raise ConfigError(
            f"{where}: agents.{agent}: unknown agent (expected one of {known_agents()})"
        )


def _validate(settings: Settings, where: str) -> None:
    for name, profile in settings.profiles.items():
        ctx = f"{where}: profiles.{name}"
        if profile.provider not in PROVIDERS:
            raise ConfigError(
                f"{ctx}.provider: unknown provider {profile.provider!r} "
                f"(expected one of {', '.join(PROVIDERS)})"
            )
        for key in ("max_tokens_field", "response_format"):
            _check_choice(getattr(profile, key), key, f"{ctx}.{key}")
        for key in ("connect_timeout", "read_timeout", "timeout"):
            _check_seconds(getattr(profile, key), f"{ctx}.{key}")
        if profile.provider == "local" and not 0 <= profile.cache_reuse < profile.context_size:
            raise ConfigError(f"{ctx}.cache_reuse: expected 0 (off) or a number of tokens "
                              f"below context_size {profile.context_size}, "
                              f"got {profile.cache_reuse!r}")
        for header in profile.headers:
            if _is_secret_name(header):
                raise ConfigError(
                    f"{ctx}.headers.{header}: keys are not stored in config.yaml",
                    hint="name the environment variable that holds the key with api_key_env",
                )
    for key in _PIPELINE_CHOICES:
        _check_choice(getattr(settings.pipeline, key), key, f"{where}: pipeline.{key}")
    for agent, agent_settings in settings.agents.items():
        _check_agent(agent, where)
        if agent_settings.profile and agent_settings.profile not in settings.profiles:
            raise ConfigError(
                f"{where}: agents.{agent}.profile: no profile named {agent_settings.profile!r}"
            )
        for key in ("connect_timeout", "read_timeout", "timeout"):
            _check_seconds(getattr(agent_settings, key), f"{where}: agents.{agent}.{key}")
    if settings.default_profile not in settings.profiles:
        raise ConfigError(
            f"{where}: default_profile: no profile named {settings.default_profile!r} "
            f"(have {', '.join(sorted(settings.profiles))})"
        )


def _check_choice(value: Any, key: str, where: str) -> None:
    choices = _CHOICES[key]
    if value not in choices:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(choices)}")


def env_overrides() -> dict[str, Any]:
    """Settings given as ``NARRATIVE_*`` environment variables (raw strings, typed later)."""
    names = ["profile", *ADHOC_FIELDS, *_PIPELINE_NAMES]
    found = {}
    for name in names:
        value = os.environ.get(f"NARRATIVE_{name.upper()}")
        if value not in (None, ""):
            found[name] = value
    return found


def _apply_layers(settings: Settings, env: dict[str, Any], flags: dict[str, Any]) -> None:
    for layer, origin in ((env, "environment"), (flags, "flag")):
        for name, value in layer.items():
            if name in _PIPELINE_NAMES:
                where = f"NARRATIVE_{name.upper()}" if origin == "environment" else f"--{name}"
                typed = parse_env_value(PipelineSettings, name, value, where)
                if name in _PIPELINE_CHOICES:
                    _check_choice(typed, name, where)
                setattr(settings.pipeline, name, typed)
    if flags.get("profile"):
        _select_profile(settings, str(flags["profile"]), "--profile")
    elif env.get("profile"):
        _select_profile(settings, str(env["profile"]), "NARRATIVE_PROFILE")
    adhoc = {k: v for layer in (env, flags) for k, v in layer.items() if k in ADHOC_FIELDS}
    if adhoc:
        _apply_adhoc(settings, adhoc, "--provider" if "provider" in flags else "NARRATIVE_PROVIDER")


def _select_profile(settings: Settings, name: str, where: str) -> None:
    if name not in settings.profiles:
        raise ConfigError(
            f"{where}: no profile named {name!r} (have {', '.join(sorted(settings.profiles))})"
        )
    settings.default_profile = name
    settings.profile_forced = True


def _apply_adhoc(settings: Settings, values: dict[str, Any], where: str) -> None:
    """An ``adhoc`` profile: the chosen profile with the flags applied, or a new provider's."""
    base = settings.profiles[settings.default_profile]
    provider = str(values.get("provider", base.provider))
    if provider not in PROVIDERS:
        raise ConfigError(
            f"{where}: unknown provider {provider!r} (expected {', '.join(PROVIDERS)})"
        )
    if provider != base.provider:
        base = Profile(provider=provider, read_timeout=300.0 if provider == "local" else 120.0)
        base.api_key_env = default_key_env(provider, values)
    changes: dict[str, Any] = {k: str(v) for k, v in values.items() if k != "provider"}
    settings.profiles["adhoc"] = replace(base, name="adhoc", provider=provider, **changes)
    settings.default_profile = "adhoc"
    settings.profile_forced = True


def default_key_env(provider: str, values: dict[str, Any]) -> str | None:
    """The key variable of an ad hoc ``--provider openai|anthropic`` that names none.

    ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` when it is set, or when the provider's own
    endpoint is used (where a key is required: preflight names the variable if it is unset).
    A compatible server at another ``--base-url`` (llama.cpp, Ollama) often needs no key, so
    there an unset variable means "no key"."""
    name = DEFAULT_KEY_ENVS.get(provider)
    if name is None or values.get("api_key_env"):
        return None
    if os.environ.get(name, "").strip() or not values.get("base_url"):
        return name
    return None


def read_api_key(profile: Profile) -> str | None:
    """The profile's key, from its environment variable or its 0600 key file (None: no key)."""
    if profile.api_key_file:
        return read_key_file(profile)
    if not profile.api_key_env:
        return None
    value = os.environ.get(profile.api_key_env, "").strip()
    if not value:
        raise worded(ConfigError, "preflight.no_key_variable", profile=repr(profile.name),
                     variable=profile.api_key_env,
                     hint=("preflight.no_key_variable_hint", {"variable": profile.api_key_env}))
    _remember(value)  # scrubbed from every output from now on
    return value


def _remember(key: str) -> None:
    from narrative_cli.credentials import remember

    remember(key)


def read_key_file(profile: Profile) -> str:
    """The key in the profile's key file, which must be 0600 (owner only) and not empty."""
    path = Path(os.path.expanduser(str(profile.api_key_file)))
    if not path.is_absolute():
        path = paths.config_dir() / path
    try:
        mode = path.stat().st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise worded(ConfigError, "preflight.key_file_open", profile=repr(profile.name),
                         path=path, mode=f"{stat.S_IMODE(mode):04o}",
                         hint=("preflight.key_file_open_hint", {"path": path}))
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise worded(ConfigError, "preflight.key_file_unreadable", profile=repr(profile.name),
                     path=path) from exc
    if not value:
        raise worded(ConfigError, "preflight.key_file_empty", profile=repr(profile.name),
                     path=path)
    _remember(value)
    return value


def build(cls: type[T], values: dict[Any, Any], where: str, *, text: bool = False) -> T:
    """An instance of the dataclass ``cls`` from ``values``, each checked against its type."""
    types = {f.name: str(f.type) for f in fields(cls)}  # type: ignore[arg-type]
    typed = {}
    for key, value in values.items():
        if key not in types:
            raise ConfigError(
                f"{where}.{key}: unknown setting (expected one of {', '.join(types)})"
            )
        typed[key] = _coerce(value, types[key], f"{where}.{key}", text)
    return cls(**typed)


def parse_env_value(cls: type[Any], name: str, value: Any, where: str) -> Any:
    """One field of ``cls`` from a flag value or an environment string."""
    types = {f.name: str(f.type) for f in fields(cls)}
    return _coerce(value, types[name], where, isinstance(value, str))


def _coerce(value: Any, annotation: str, where: str, text: bool) -> Any:
    kinds = [part.strip() for part in annotation.split("|")]
    if value is None:
        if "None" in kinds:
            return None
        raise ConfigError(f"{where}: must have a value")
    kind = kinds[0]
    try:
        return _convert(value, kind, text)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected {_NAMES.get(kind, kind)}, got {value!r}") from None


_NAMES = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "text",
          "list[str]": "a list of texts"}


def _convert(value: Any, kind: str, text: bool) -> Any:
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if text and str(value).strip().lower() in _TRUE + _FALSE:
            return str(value).strip().lower() in _TRUE
        raise ValueError(kind)
    if kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(kind)
        if isinstance(value, str) and not text:
            raise ValueError(kind)
        number = float(value) if kind == "float" else int(value)
        if isinstance(value, float) and kind == "int" and value != number:
            raise ValueError(kind)
        return number
    if kind == "str":
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(kind)
        return str(value)
    if kind.startswith("list"):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ValueError(kind)
        return [str(item) for item in items]
    if not isinstance(value, dict):  # dict[...] kinds
        raise ValueError(kind)
    return {str(k): (str(v) if "str, str" in kind else v) for k, v in value.items()}
