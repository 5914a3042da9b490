"""An endpoint's rate limits, kept by the harness so that a batch runs at the allowed rate
instead of burning retries on HTTP 429 (issue 44).

A role's :class:`harness.config.ModelSpec` may set ``requests_per_minute``,
``tokens_per_minute`` and ``max_in_flight``. They are the limits of its endpoint (the base
URL): every role on that endpoint shares one :class:`RateLimiter` per event loop, and when roles
set different values the smallest of each holds. Before each attempt of a call the client
:meth:`~RateLimiter.acquire`\\ s a place:

- ``max_in_flight``: at most that many requests of this process on the endpoint at once;
- ``requests_per_minute`` and ``tokens_per_minute``: each a debt paid back at the limit's rate;
  a request goes when nothing is owed and leaves its cost owed, so requests are evenly spaced
  and any window of ``w`` seconds holds at most ``rate * w`` plus one request (a batch starting
  256 conversations does not send a minute's budget in its first second, which providers that
  enforce per-second windows answer with 429). A request costs one request and its estimated
  tokens: the prompt's characters / 4 plus the call's output bound (``max_tokens``, which
  providers count against the limit when the request arrives); :meth:`~RateLimiter.release`
  corrects the estimate with the tokens the endpoint reported;
- a 429 with or without ``Retry-After`` (:meth:`~RateLimiter.pause`): the endpoint is paused for
  that long for every role, so the requests in flight meanwhile do not each meet the 429 again.

Places are given in the order asked. The time a call waited is kept on its record
(``LLMCall.rate_wait_ms``) and the report sums it beside the 429 answers. The limits hold per
process: ``ray run`` divides them among its shards (docs/configuration.md).
"""
from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from time import monotonic
from typing import Any, Awaitable, Callable

#: characters per token of the estimate made before a request is sent
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Limits:
    """An endpoint's limits; None: not limited."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    max_in_flight: int | None = None

    @classmethod
    def of(cls, spec: Any) -> "Limits":
        """The limits a role's :class:`harness.config.ModelSpec` sets."""
        return cls(spec.requests_per_minute, spec.tokens_per_minute, spec.max_in_flight)

    def tightest(self, other: "Limits") -> "Limits":
        """The smaller of each limit of ``self`` and ``other``."""
        def low(a, b):
            return b if a is None else a if b is None else min(a, b)
        return Limits(low(self.requests_per_minute, other.requests_per_minute),
                      low(self.tokens_per_minute, other.tokens_per_minute),
                      low(self.max_in_flight, other.max_in_flight))

    def divided(self, parts: int) -> "Limits":
        """Each limit shared by ``parts`` processes (a ray run's shards), at least 1 each."""
        def part(v):
            return None if v is None else max(1, v // parts) if isinstance(v, int) else v / parts
        return Limits(part(self.requests_per_minute), part(self.tokens_per_minute), part(self.max_in_flight))

    @property
    def any(self) -> bool:
        """Whether any limit is set."""
        return any(v is not None for v in (self.requests_per_minute, self.tokens_per_minute, self.max_in_flight))


class _Bucket:
    """A limit as a debt paid back at ``per_minute / 60`` a second: a request goes when nothing
    is owed and leaves its cost owed. In any window of ``w`` seconds at most ``rate * w`` plus
    one request's cost go, and requests are evenly spaced (no burst a per-second window would
    refuse)."""

    def __init__(self, per_minute: float, now: float):
        self.rate = per_minute / 60.0
        self.owed = 0.0
        self.at = now

    def wait_s(self, now: float) -> float:
        """Seconds until a request may go (0: now)."""
        self.owed = max(0.0, self.owed - (now - self.at) * self.rate)
        self.at = now
        return self.owed / self.rate

    def take(self, cost: float) -> None:
        self.owed += cost

    def give_back(self, amount: float) -> None:
        """Correct an estimate (negative: the request cost more than estimated)."""
        self.owed = max(0.0, self.owed - amount)


class RateLimiter:
    """The places on one endpoint (one event loop's view); see the module docstring.

    ``clock`` and ``sleep`` are the time the limiter reads and waits on (a test's own clock)."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self.limits = limits
        self._clock, self._sleep = clock, sleep
        self._requests = _Bucket(limits.requests_per_minute, clock()) if limits.requests_per_minute else None
        self._tokens = _Bucket(limits.tokens_per_minute, clock()) if limits.tokens_per_minute else None
        self._in_flight = asyncio.Semaphore(limits.max_in_flight) if limits.max_in_flight else None
        self._queue = asyncio.Lock()
        self._paused_until = 0.0

    def pause(self, seconds: float) -> None:
        """Hold every request to the endpoint for ``seconds`` (an HTTP 429's Retry-After)."""
        self._paused_until = max(self._paused_until, self._clock() + max(0.0, seconds))

    async def acquire(self, estimated_tokens: int) -> float:
        """Wait for a place for a request of about ``estimated_tokens``; returns the seconds
        waited. Every :meth:`acquire` must be followed by one :meth:`release`."""
        started = self._clock()
        if not self.limits.any and self._paused_until <= started:  # nothing to wait for
            return 0.0
        if self._in_flight is not None:
            await self._in_flight.acquire()
        try:
            async with self._queue:
                while True:
                    now = self._clock()
                    wait = max(self._paused_until - now,
                               self._requests.wait_s(now) if self._requests else 0.0,
                               self._tokens.wait_s(now) if self._tokens else 0.0)
                    if wait <= 0:
                        break
                    await self._sleep(wait)
                if self._requests:
                    self._requests.take(1)
                if self._tokens:
                    self._tokens.take(estimated_tokens)
        except BaseException:
            if self._in_flight is not None:
                self._in_flight.release()
            raise
        return self._clock() - started

    def release(self, estimated_tokens: int, used_tokens: int | None) -> None:
        """The request is over: its place is free, its token estimate corrected by the tokens the
        endpoint reported (None: not reported, the estimate stands)."""
        if self._in_flight is not None:
            self._in_flight.release()
        if self._tokens is not None and used_tokens is not None:
            self._tokens.give_back(estimated_tokens - used_tokens)


_limiters: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, RateLimiter]]" = \
    weakref.WeakKeyDictionary()


def limiter_for(endpoint: str, limits: Limits) -> RateLimiter:
    """The running loop's limiter of ``endpoint``; a role that sets tighter limits than the
    limiter has tightens it for every role (a new limiter, the pause kept)."""
    per_loop = _limiters.setdefault(asyncio.get_running_loop(), {})
    current = per_loop.get(endpoint)
    if current is None:
        current = per_loop[endpoint] = RateLimiter(limits)
    elif limits.any and current.limits.tightest(limits) != current.limits:
        tighter = RateLimiter(current.limits.tightest(limits))
        tighter._paused_until = current._paused_until
        current = per_loop[endpoint] = tighter
    return current


def estimate_tokens(prompt_chars: int, max_tokens: int) -> int:
    """A request's tokens before it is sent: its prompt's characters / 4 and its output bound."""
    return prompt_chars // CHARS_PER_TOKEN + max_tokens
