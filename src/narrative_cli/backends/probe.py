"""One cheap request before a story starts: does the base URL answer, and which models does it list?

``list_models(profile, key)`` sends ``GET …/models`` (OpenAI's and Anthropic's shape; Ollama,
llama.cpp, OpenRouter, DeepSeek and Gemini's OpenAI-compatible endpoint answer it too). It
returns the model ids, or ``None`` when the server has no such list (404, 405, 501, a body
that is not a list): such a server passes, since many compatible servers never implemented it.
A server that does not answer at all raises ``BackendUnavailable``; one that refuses the key
(401, 403) raises ``ConfigError``, both naming the URL without its secrets. ``play.preflight``
decides what the answer means for a story.
"""

from __future__ import annotations

from typing import Any

import httpx

from narrative_cli.backends.base import split_query
from narrative_cli.backends.http import make_client
from narrative_cli.config import Profile
from narrative_cli.credentials import remember, remember_url, scrub_url
from narrative_cli.errors import BackendUnavailable, ConfigError, worded

PROBE_READ_TIMEOUT = 15.0  # a models list is small; a server slower than this is reported later
# The models lists this process has read, by URL: the preflight's answer serves the lore
# budget too, so a session asks for the list once.
_LISTS: dict[str, Any] = {}
# Where servers state a model's context window in their list: OpenRouter ``context_length``
# (and ``top_provider``), vLLM ``max_model_len``, llama.cpp ``meta.n_ctx_train``, others.
_CONTEXT_KEYS = ("context_length", "max_model_len", "context_window", "max_context_length",
                 "input_token_limit")  # fmt: skip


def models_url(profile: Profile) -> str:
    """The ``…/models`` URL of a profile's endpoint (the query, if any, kept)."""
    path, query = split_query(profile.endpoint())
    base = path.rstrip("/")
    for tail in ("/chat/completions", "/messages"):
        if base.endswith(tail):
            base = base[: -len(tail)]
    if profile.provider == "anthropic" and not base.endswith("/v1"):
        base += "/v1"
    return base + "/models" + query


def _headers(profile: Profile, key: str | None) -> dict[str, str]:
    headers = dict(profile.headers)
    if profile.provider == "anthropic":
        from narrative_cli.backends.anthropic import API_VERSION

        headers["anthropic-version"] = API_VERSION
        if key:
            headers["x-api-key"] = key
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def list_models(
    profile: Profile, key: str | None, transport: httpx.BaseTransport | None = None
) -> list[str] | None:
    """The ids the server lists, or None when it lists none (see the module doc)."""
    url = models_url(profile)
    remember(key)
    remember_url(url)
    shown = scrub_url(url)
    with make_client(url, profile.connect_timeout, PROBE_READ_TIMEOUT, transport) as client:
        try:
            response = client.get(url, headers=_headers(profile, key))
        except httpx.HTTPError as exc:
            raise worded(BackendUnavailable, "preflight.no_answer", profile=repr(profile.name),
                         url=shown, error=type(exc).__name__,
                         hint=("preflight.no_answer_hint", {})) from None
    if response.status_code in (401, 403):
        raise worded(ConfigError, "preflight.key_refused", profile=repr(profile.name), url=shown,
                     status=response.status_code, hint=_key_hint(profile))
    data = _json_body(response)
    if data is None:
        return None
    _LISTS[url] = data
    return _ids(data)


def _ids(data: Any) -> list[str] | None:
    """Model ids from ``{"data": [{"id": …}]}`` (OpenAI, Anthropic) or ``{"models": [...]}``."""
    items = data.get("data", data.get("models")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        return None
    ids = []
    for item in items:
        name = item.get("id") or item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str) and name:
            ids.append(name)
    return ids


def _key_hint(profile: Profile) -> tuple[str, dict[str, object]]:
    if profile.api_key_env:
        return "preflight.check_key", {"where": f"${profile.api_key_env}"}
    if profile.api_key_file:
        return "preflight.check_key", {"where": profile.api_key_file}
    return "preflight.name_key_variable", {}


def model_context(
    profile: Profile, key: str | None, transport: httpx.BaseTransport | None = None
) -> tuple[int, str] | None:
    """The context window the server states for the profile's model, and where it said so:
    its entry in ``GET …/models`` (read once per process), else llama.cpp's ``GET /props``
    (``n_ctx``). None when neither says; never raises (the caller falls back)."""
    url = models_url(profile)
    try:
        if url not in _LISTS:
            list_models(profile, key, transport)
        found = _listed_context(_LISTS.get(url), profile.model or "")
        if found is not None:
            return found, f"the model list of {scrub_url(url)}"
        return _props_context(profile, key, transport)
    except (BackendUnavailable, ConfigError, httpx.HTTPError):
        return None


def _listed_context(data: Any, model: str) -> int | None:
    items = data.get("data", data.get("models")) if isinstance(data, dict) else data
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        name = str(item.get("id") or item.get("name") or "").removeprefix("models/")
        if model and name not in (model, f"{model}:latest") and not name.endswith("/" + model):
            continue
        values = [item.get(k) for k in _CONTEXT_KEYS]
        values += [(item.get("top_provider") or {}).get("context_length"),
                   (item.get("meta") or {}).get("n_ctx_train")]  # fmt: skip
        for value in values:
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def _props_context(
    profile: Profile, key: str | None, transport: httpx.BaseTransport | None
) -> tuple[int, str] | None:
    """llama.cpp's server states its context (``n_ctx``) at ``/props`` beside ``/v1``."""
    base = models_url(profile).split("?")[0].removesuffix("/models").removesuffix("/v1")
    url = base + "/props"
    with make_client(url, profile.connect_timeout, PROBE_READ_TIMEOUT, transport) as client:
        response = client.get(url, headers=_headers(profile, key))
    data = _json_body(response)
    if data is None:
        return None
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    for value in ((settings or {}).get("n_ctx"), data.get("n_ctx") if isinstance(data, dict)
                  else None):  # fmt: skip
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, f"{scrub_url(url)} n_ctx"
    return None


def _json_body(response: httpx.Response) -> Any:
    """A 200 answer's JSON, or None (another status, or not JSON): a probe never fails on it."""
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None
