"""One rate limit shared by every log a replay runs at once (``--jobs N``).

``TokenBucket(rate, burst)`` hands out ``rate`` tokens a second, at most ``burst`` saved up;
``acquire()`` blocks the calling thread until a token is free. Every backend of every log
is wrapped in a ``LimitedBackend`` holding the same bucket, so ``--jobs 4 --rpm 60`` makes at
most 60 model calls a minute in total, however the four logs interleave. The clock and the
sleep are injectable, so the arithmetic is testable without waiting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from narrative_cli.backends.base import Backend, ChatReply, ChatRequest, TextCallback


class TokenBucket:
    """A thread-safe token bucket: ``rate`` tokens per second, up to ``burst`` in store."""

    def __init__(
        self,
        rate: float,
        burst: float = 1.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("the rate must be above 0")
        self.rate = rate
        self.burst = max(1.0, burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._stamp = clock()
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds callers spent waiting, in total

    @classmethod
    def per_minute(cls, calls: float) -> TokenBucket:
        """A bucket for ``calls`` calls a minute (bursts of up to a second's worth, at least 1)."""
        return cls(calls / 60.0, max(1.0, calls / 60.0))

    def acquire(self) -> float:
        """Take one token, waiting for it if needed; returns the seconds waited."""
        with self._lock:
            self._refill()
            self._tokens -= 1.0  # a debt when negative: later callers queue behind it
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
            self.waited += wait
        if wait > 0:
            self._sleep(wait)
        return wait

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now


class LimitedBackend:
    """A Backend whose calls each take a token from a shared bucket first."""

    def __init__(self, inner: Backend, bucket: TokenBucket | None) -> None:
        self.inner = inner
        self.bucket = bucket
        self.name = inner.name

    @property
    def model(self) -> str:
        return str(getattr(self.inner, "model", "") or "")

    @property
    def speculates(self) -> bool:
        """Whether calls may be sent ahead of time (not to a recording: pipeline.calls.guess)."""
        return bool(getattr(self.inner, "speculates", True))

    def complete(self, request: ChatRequest, on_text: TextCallback | None = None) -> ChatReply:
        """Wait for the shared limit, then call the wrapped backend."""
        if self.bucket is not None:
            self.bucket.acquire()
        return self.inner.complete(request, on_text)

    def close(self) -> None:
        """Close the wrapped backend."""
        self.inner.close()
