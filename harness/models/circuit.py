"""A circuit breaker per endpoint (base URL + model), and the run-wide scope that holds them.

An endpoint that keeps failing after retries, or keeps refusing connections, is down for good
as far as a batch is concerned: the breaker opens, every later call to it raises
:class:`CircuitOpenError` at once, and the batch stops cleanly (``harness.selfscore.runs.run_all`` marks
the run ``interrupted``; ``--resume RUN`` finishes it once the endpoint is back).

:class:`CircuitOpenError` derives from ``BaseException`` on purpose, like ``KeyboardInterrupt``:
it must pass through every ``except Exception`` that turns an ordinary failure into a failed
judgment or a failed interaction, because the turn it interrupts has to be replayed on resume,
not stored as failed.

A batch enters :func:`reliability_scope` with the run's ``RetryConfig``; role clients created
anywhere in that task tree find their policy and the shared breakers through
:func:`current_scope`. Outside a scope a client uses default settings and breakers of its own.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, field
from time import monotonic
from typing import Callable, Iterator

from harness.config import RetryConfig
from harness.models.retry import Failure, RetryPolicy


class CircuitOpenError(BaseException):
    """An endpoint is down for good; the batch must stop (and can be resumed later)."""

    def __init__(self, endpoint: str, reason: str):
        super().__init__(f"endpoint {endpoint} is down: {reason}")
        self.endpoint, self.reason = endpoint, reason
        self.run_id: str | None = None  # set by the batch that stopped


class CircuitBreaker:
    """Counts one endpoint's consecutive failed calls and how long it has refused connections.

    Args:
        endpoint: a label (``base_url model``) used in messages.
        failures: consecutive calls failed after all retries that open the breaker.
        refused_s: connections refused (attempts included) for this long open it.
        clock: monotonic seconds (injectable for tests).
    """

    def __init__(self, endpoint: str, failures: int = 5, refused_s: float = 60.0,
                 clock: Callable[[], float] = monotonic):
        self.endpoint, self.failures, self.refused_s, self.clock = endpoint, failures, refused_s, clock
        self.consecutive = 0
        self.refused_since: float | None = None
        self.open_reason: str | None = None

    @property
    def is_open(self) -> bool:
        """True once the breaker has opened (it never closes again)."""
        return self.open_reason is not None

    def check(self) -> None:
        """Raise :class:`CircuitOpenError` when the breaker is open."""
        if self.open_reason is not None:
            raise CircuitOpenError(self.endpoint, self.open_reason)

    def attempt_failed(self, failure: Failure) -> None:
        """Note one failed attempt (refused connections are timed across attempts)."""
        if failure.kind != "refused":
            self.refused_since = None
            return
        now = self.clock()
        if self.refused_since is None:
            self.refused_since = now
        elif now - self.refused_since >= self.refused_s and self.open_reason is None:
            self.open_reason = (f"refused connections for {now - self.refused_since:.0f} s "
                                f"(limit {self.refused_s:g} s)")

    def call_failed(self, failure: Failure) -> None:
        """Note a call that failed for good; opens the breaker after ``failures`` in a row."""
        if not failure.endpoint_failure:
            return
        self.consecutive += 1
        if self.consecutive >= self.failures and self.open_reason is None:
            self.open_reason = (f"{self.consecutive} calls in a row failed after retries "
                                f"(last: {failure.message[:200]})")

    def succeeded(self) -> None:
        """Note a successful call: resets the failure count and the refused-connection timer."""
        self.consecutive = 0
        self.refused_since = None


@dataclass
class ReliabilityScope:
    """The retry settings and the per-endpoint breakers shared by every call of one batch.

    ``policy_kw`` goes to each :class:`RetryPolicy` (``rng``, ``sleep``: tests inject them).
    """

    config: RetryConfig = field(default_factory=RetryConfig)
    policy_kw: dict = field(default_factory=dict)
    breakers: dict[str, CircuitBreaker] = field(default_factory=dict)

    def policy(self) -> RetryPolicy:
        """A fresh :class:`RetryPolicy` built from the scope's ``RetryConfig`` and ``policy_kw``."""
        return RetryPolicy.from_config(self.config, **self.policy_kw)

    def breaker(self, endpoint: str) -> CircuitBreaker:
        """The shared breaker of ``endpoint``, created on first use with the config's limits."""
        if endpoint not in self.breakers:
            self.breakers[endpoint] = CircuitBreaker(endpoint, self.config.breaker_failures,
                                                     self.config.breaker_refused_s)
        return self.breakers[endpoint]


_SCOPE: contextvars.ContextVar[ReliabilityScope | None] = contextvars.ContextVar(
    "deskbench_reliability_scope", default=None)


def current_scope() -> ReliabilityScope | None:
    """The scope of the running batch, or None outside one."""
    return _SCOPE.get()


@contextmanager
def reliability_scope(scope: ReliabilityScope) -> Iterator[ReliabilityScope]:
    """Make ``scope`` the one that role clients use in this task and the tasks it starts."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)
