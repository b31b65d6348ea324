"""Retries with exponential backoff and jitter, honouring the server's Retry-After.

Which errors retry is decided by the error class (``BackendError.retryable``): connection
errors, timeouts, 408/409/429/5xx/529 and unwatched dropped streams retry; 400/401/403/404/
422, content-filter rejections, quota errors and watched dropped streams (``StreamInterrupted``:
the user already saw part of the text, the caller decides) never do.

The wait before retry ``n`` (0-based) is ``min(base * 2**n, max_delay)`` (doubled for an
overloaded 529/503), minus up to ``jitter`` of it at random; a server's ``retry-after-ms`` or
``Retry-After`` replaces it when it is at most ``max_retry_after`` seconds. A server asking for
a longer wait gets no retry: the error is raised at once, saying how long it asked for.
The jitter RNG and the sleep function are injectable; jitter only moves wait times, never
prompts or state.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from narrative_cli.backends.base import attach_attempts
from narrative_cli.errors import BackendError, StreamInterrupted
from narrative_cli.logs import logger

log = logger(__name__)  # sets logging up (logs.py): a backend's library may log
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry."""

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0
    jitter: float = 0.25
    overloaded_factor: float = 2.0


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, else ``retry-after``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # an HTTP date is rare; its import is not (calendar, email parsing)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class Retrier:
    """Runs an attempt function until it succeeds, fails for good, or retries run out."""

    def __init__(
        self,
        policy: RetryPolicy | None = None,
        *,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.policy = policy or RetryPolicy()
        self.rng = rng or random.Random()
        self.sleep = sleep

    def delay_for(self, error: BackendError, retry_index: int) -> float | None:
        """Seconds to wait before retry ``retry_index`` (0-based), or None: do not retry."""
        policy = self.policy
        if not error.retryable or isinstance(error, StreamInterrupted):
            return None
        if retry_index >= policy.max_retries:
            return None
        if error.retry_after is not None:
            if error.retry_after > policy.max_retry_after:
                error.message += (
                    f" (the server asks to wait {error.retry_after:.0f} s,"
                    f" more than the {policy.max_retry_after:.0f} s we wait)"
                )
                error.args = (error.message,)
                return None
            return float(error.retry_after)
        delay = policy.base_delay * 2.0**retry_index
        if error.status in (503, 529):
            delay *= policy.overloaded_factor
        delay = min(delay, policy.max_delay)
        return delay * (1 - policy.jitter * self.rng.random())

    def run(
        self,
        attempt: Callable[[int], T],
        on_retry: Callable[[int, BackendError, float], None] | None = None,
    ) -> tuple[T, int]:
        """``attempt(n)`` for n = 1, 2, …; returns (result, attempts) or raises the last error."""
        number = 1
        while True:
            try:
                return attempt(number), number
            except BackendError as error:
                delay = self.delay_for(error, number - 1)
                if delay is None:
                    attach_attempts(error, number)
                    raise
                log.info("retrying in %.2f s after: %s", delay, error.message)
                if on_retry is not None:
                    on_retry(number, error, delay)
                self.sleep(delay)
                number += 1
