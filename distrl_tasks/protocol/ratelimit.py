"""Client-side pacing for a paid API: a requests-per-minute token bucket and retry backoff.

Both take their clock and randomness from the caller, so tests drive them with a fake clock
and a seeded generator instead of real waiting.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """Allows at most ``requests_per_minute`` requests per minute, with bursts up to ``burst``.

    Tokens refill continuously at ``requests_per_minute / 60`` per second. Waiters are served
    in arrival order (an asyncio lock serialises them), so a retry cannot starve new requests.

    Args:
        requests_per_minute: the sustained budget (> 0).
        burst: bucket capacity: how many requests may go out back to back after idling.
        clock: monotonic seconds (default :func:`time.monotonic`).
        sleep: async sleep (default :func:`asyncio.sleep`); a fake one advances a fake clock.
    """

    def __init__(
        self,
        requests_per_minute: float,
        *,
        burst: int = 1,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if requests_per_minute <= 0:
            raise ValueError(f"requests_per_minute must be > 0, got {requests_per_minute}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.rate = requests_per_minute / 60.0  # tokens per second
        self.capacity = float(burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._stamp = clock()
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now

    def _loop_lock(self) -> asyncio.Lock:
        # A lock belongs to one event loop; label_many() runs a fresh loop per batch.
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def acquire(self) -> float:
        """Take one token, waiting as long as needed. Returns the seconds waited."""
        waited = 0.0
        async with self._loop_lock():
            self._refill()
            while self._tokens < 1.0:
                delay = (1.0 - self._tokens) / self.rate
                await self._sleep(delay)
                waited += delay
                self._refill()
            self._tokens -= 1.0
        return waited


@dataclass
class RetryPolicy:
    """Exponential backoff with seeded jitter that never undercuts a server's ``Retry-After``.

    The n-th retry (n = 1, 2, ...) waits ``min(max_delay, base_delay * 2**(n-1))`` scaled by a
    factor drawn uniformly from ``[1 - jitter, 1]``; when the server sent ``Retry-After``, the
    wait is at least that long.

    Attributes:
        max_retries: retries after the first attempt (0 = try once).
        base_delay: seconds before the first retry, before jitter.
        max_delay: cap on the exponential part.
        jitter: fraction of the delay that is randomised (0 = deterministic).
        seed: seeds the jitter, so a run's waits are reproducible.
    """

    max_retries: int = 5
    base_delay: float = 1.0
    max_delay: float = 60.0
    jitter: float = 0.5
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("base_delay and max_delay must be >= 0")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError(f"jitter must be in [0, 1], got {self.jitter}")
        self._rng = random.Random(self.seed)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        if retry < 1:
            raise ValueError(f"retry numbers start at 1, got {retry}")
        base = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        wait = base * (1.0 - self.jitter * self._rng.random())
        if retry_after is not None:
            wait = max(wait, retry_after)
        return wait


def parse_retry_after(value: str | None) -> float | None:
    """Read a ``Retry-After`` header given in seconds (fractions allowed); else ``None``.

    The HTTP-date form is not used by Google APIs and is ignored (backoff applies instead).
    """
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    if seconds != seconds or seconds < 0:  # NaN or negative: treat as absent
        return None
    return seconds
