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
from narrative_cli.errors import BackendUnavailable, ConfigError

PROBE_READ_TIMEOUT = 15.0  # a models list is small; a server slower than this is reported later


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
            raise BackendUnavailable(
                f"profile {profile.name!r}: {shown} does not answer ({type(exc).__name__})",
                hint="check --base-url (or base_url in config.yaml) and that the server runs",
            ) from None
    if response.status_code in (401, 403):
        raise ConfigError(
            f"profile {profile.name!r}: {shown} refused the key (HTTP {response.status_code})",
            hint=_key_hint(profile),
        )
    if response.status_code != 200:
        return None
    try:
        return _ids(response.json())
    except ValueError:
        return None


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


def _key_hint(profile: Profile) -> str:
    if profile.api_key_env:
        return f"check the key in ${profile.api_key_env}"
    if profile.api_key_file:
        return f"check the key in {profile.api_key_file}"
    return "name the variable that holds the key with --api-key-env NAME"
