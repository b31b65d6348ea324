"""When the provider's prompt cache has expired between two turns (issue #17 item 5).

Anthropic keeps a prompt prefix marked ``cache_control: ephemeral`` (what
``backends.anthropic`` sends) for five minutes after its last use; a turn after a longer
pause writes the whole prefix again, at the write price (1.25x fresh input), instead of
reading it (0.1x). The player sees one line saying so before that turn.

Only sessions whose provider has billed cache writes get the line: providers that cache
without charging for writes (OpenAI, DeepSeek, llama.cpp) lose nothing worth a notice.
The time comes from the story's clock, so tests set it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from narrative_cli.i18n import t
from narrative_cli.pipeline.accounting import AgentUsage

CACHE_LIFETIME = timedelta(minutes=5)  # Anthropic's ephemeral cache, refreshed on each read


def idle_notice(
    last_turn_at: datetime | None,
    now: datetime,
    usage: AgentUsage,
    lang: str,
    lifetime: timedelta = CACHE_LIFETIME,
) -> str:
    """The one-line notice before a turn that comes after an idle pause longer than the
    cache lives, or "" (no turn yet this session, a short pause, no billed cache writes)."""
    if last_turn_at is None or not usage.cache_write_tokens:
        return ""
    idle = now - last_turn_at
    if idle <= lifetime:
        return ""
    return t("msg.cache_expired", lang, minutes=int(idle.total_seconds() // 60),
             lifetime=int(lifetime.total_seconds() // 60))  # fmt: skip
