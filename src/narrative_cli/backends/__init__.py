"""Model backends: every byte of HTTP lives here.

``open_backend(profile, agent_settings)`` gives a ``Backend`` for a profile (``openai``,
``anthropic`` or ``local``); the agent's settings fill sampling defaults, timeouts and retries.
"""

from __future__ import annotations

from narrative_cli.backends.base import (
    Backend,
    ChatReply,
    ChatRequest,
    TextCallback,
    Usage,
    backend_errors,
)
from narrative_cli.backends.retry import Retrier, RetryPolicy
from narrative_cli.config import AgentSettings, Profile, read_api_key
from narrative_cli.errors import ConfigError

__all__ = [
    "Backend",
    "ChatReply",
    "ChatRequest",
    "Retrier",
    "RetryPolicy",
    "TextCallback",
    "Usage",
    "backend_errors",
    "open_backend",
]


def open_backend(
    profile: Profile, agent_settings: AgentSettings | None = None, *, retrier: Retrier | None = None
) -> Backend:
    """A ready Backend for ``profile``; the local model server starts here if needed."""
    if profile.provider == "local":
        from narrative_cli.backends.local import LocalBackend

        return LocalBackend(profile, agent_settings, retrier=retrier)
    key = read_api_key(profile)
    if profile.provider == "openai":
        from narrative_cli.backends.openai_compat import OpenAIBackend

        return OpenAIBackend(profile, agent_settings, api_key=key, retrier=retrier)
    if profile.provider == "anthropic":
        from narrative_cli.backends.anthropic import AnthropicBackend

        return AnthropicBackend(profile, agent_settings, api_key=key, retrier=retrier)
    raise ConfigError(
        f"profile {profile.name!r}: unknown provider {profile.provider!r} "
        "(expected openai, anthropic or local)"
    )
