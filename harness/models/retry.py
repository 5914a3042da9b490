"""Bounded retries of model calls: which failures deserve another attempt, and how long to wait.

:func:`classify` sorts an exception raised by a chat-model call into a :class:`Failure`:
timeouts, dropped or refused connections, HTTP 429 and 5xx, malformed or truncated JSON and
empty replies are retryable; HTTP 400/401/403/404/422 are not (another attempt would get the
same answer) and get a message that names the fix. :class:`RetryPolicy` says how long to wait
before the next attempt: exponential backoff with full jitter, or the server's Retry-After
(seconds or an HTTP date), both capped at ``max_s``. Its clock, random source and sleep are
injectable so that tests can check every wait without waiting.
"""
from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from time import time
from typing import Any, Awaitable, Callable

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_CLIENT_ERROR_FIX = {
    400: "the endpoint rejected the request; check that it supports the role's max_tokens "
         "and response_format (JSON schema), and the model's context size",
    401: "the endpoint refused the API key; export the variable named by the role's api_key_env",
    403: "the API key may not use this model; check the key's permissions or the role's model",
    404: "no such model or URL; check the role's base_url (usually ending in /v1) and model",
    422: "the endpoint could not process the request; check the role's model and settings",
}


@dataclass(frozen=True, slots=True)
class Failure:
    """What went wrong with one attempt.

    ``kind`` is one of timeout, connection, refused, rate_limited, server_error, malformed,
    empty, client_error, unknown.
    """

    kind: str
    retryable: bool
    message: str
    retry_after_s: float | None = None
    status: int | None = None

    @property
    def endpoint_failure(self) -> bool:
        """True when the endpoint itself is failing (no answer, an error status); these count
        for the circuit breaker. A malformed or empty answer is retried but does not count:
        the endpoint is up, and one prompt that always gets a bad answer must not stop a run."""
        return self.kind not in ("unknown", "malformed", "empty")


class EmptyReplyError(RuntimeError):
    """The endpoint answered with neither text nor tool calls."""


class ModelCallError(Exception):
    """A model call that failed for good (retries exhausted, or a non-retryable answer).

    ``llm_call`` is the last attempt's record (its ``earlier_attempts`` hold the others) and
    ``llm_calls`` every attempt, so that callers can store each one.
    """

    def __init__(self, message: str, failure: Failure):
        super().__init__(message)
        self.failure = failure


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if value is None or not str(value).strip():
        return None
    value = str(value).strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time() if now is None else now))


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _headers_retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    return headers_retry_after(getattr(response, "headers", None) or {})


def headers_retry_after(headers) -> float | None:
    """Seconds a response's headers ask to wait: ``retry-after-ms``, else ``Retry-After``; None
    when neither says."""
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
    except (TypeError, ValueError):
        pass
    return parse_retry_after(headers.get("retry-after"))


def classify(exc: BaseException) -> Failure:
    """Sort one failed attempt's exception into a :class:`Failure`."""
    text = f"{type(exc).__name__}: {exc}"[:400]
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status in RETRYABLE_STATUS or status >= 500:
            kind = "rate_limited" if status == 429 else "server_error"
            return Failure(kind, True, f"HTTP {status}: {text}", _headers_retry_after(exc), status)
        fix = _CLIENT_ERROR_FIX.get(status, "the endpoint refused the request")
        return Failure("client_error", False, f"HTTP {status} ({fix}): {text}", None, status)
    if isinstance(exc, EmptyReplyError):
        return Failure("empty", True, text)
    if isinstance(exc, IndexError):  # langchain indexes an empty ``choices`` list
        return Failure("empty", True, f"reply without choices ({text})")
    if isinstance(exc, json.JSONDecodeError) or type(exc).__name__ == "APIResponseValidationError":
        return Failure("malformed", True, f"malformed JSON reply ({text})")
    names = [type(e).__name__ for e in _chain(exc)]
    if any("Timeout" in n for n in names) or isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return Failure("timeout", True, text)
    if any(n in ("ConnectError", "ConnectionRefusedError") for n in names):
        return Failure("refused", True, f"connection refused ({text})")
    if any("Connection" in n or "Protocol" in n or n in ("ReadError", "RemoteDisconnected",
                                                         "IncompleteRead") for n in names):
        return Failure("connection", True, f"connection failed or reply cut short ({text})")
    return Failure("unknown", False, text)


Sleep = Callable[[float], Awaitable[Any]]


class RetryPolicy:
    """How many attempts a model call gets and how long to wait between them.

    Args:
        max_attempts: attempts in all, the first included.
        base_s: the backoff before attempt ``n + 1`` is up to ``base_s * 2 ** (n - 1)``.
        max_s: no wait is longer, whatever the backoff or the server's Retry-After.
        jitter: full jitter (a uniform random wait up to the backoff); off: the backoff itself.
        rng: random source (seed it for reproducible waits).
        sleep: the coroutine that waits (tests pass one that records and returns at once).
    """

    def __init__(self, max_attempts: int = 5, base_s: float = 1.0, max_s: float = 30.0,
                 jitter: bool = True, rng: random.Random | None = None, sleep: Sleep | None = None):
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.max_attempts, self.base_s, self.max_s, self.jitter = max_attempts, base_s, max_s, jitter
        self.rng = rng or random.Random()
        self.sleep: Sleep = sleep or asyncio.sleep

    @classmethod
    def from_config(cls, cfg, **kw) -> "RetryPolicy":
        """A policy from a ``harness.config.RetryConfig``."""
        return cls(cfg.max_attempts, cfg.base_s, cfg.max_s, cfg.jitter, **kw)

    def delay(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) before the next one."""
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_s)
        ceiling = min(self.max_s, self.base_s * 2 ** (attempt - 1))
        return self.rng.uniform(0.0, ceiling) if self.jitter else ceiling
