"""The live app's guards between a person and the models, shared by the SelfScore and the
NoisyToolBench live sessions: the error a person is shown (:class:`LiveError`), the checking and
cleaning of what they type (:func:`clean_message`), per-key rate limiting (:class:`RateLimiter`),
and what becomes of model work that fails for good (:func:`dropping_failed_work`).
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
import unicodedata
from collections import defaultdict, deque
from typing import Any, Callable

from harness.models.circuit import CircuitOpenError
from harness.models.retry import ModelCallError

log = logging.getLogger(__name__)


class LiveError(ValueError):
    """Something a person did that the app refuses; the message says what and what to do."""


def anonymous_name(session_id: str) -> str:
    """A stable name for a session that reveals nothing of its token (logs, free raters)."""
    return "anon-" + hashlib.sha256(session_id.encode()).hexdigest()[:12]


# -- input checks ---------------------------------------------------------------------------
_KEEP_CONTROLS = {"\n", "\t"}


def clean_message(text: Any, max_chars: int) -> str:
    """The message a person typed, checked and cleaned for the conversation.

    Control characters (other than newline and tab) are removed; text that is mostly
    unprintable (binary data pasted in) and empty or oversized messages are refused.

    Raises:
        LiveError: naming the problem and the fix.
    """
    if text is None or not isinstance(text, str):
        raise LiveError("Type a message first: the message is empty.")
    if len(text) > max_chars:
        raise LiveError(f"Your message has {len(text):,} characters; the limit is {max_chars:,}. "
                        "Shorten it (or split it over several turns) and send again.")
    bad = sum(1 for ch in text if unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn")
              and ch not in _KEEP_CONTROLS) + text.count("\ufffd")
    if text and bad / len(text) > 0.1:
        raise LiveError("Your message looks like binary data, not text. Type or paste plain text.")
    cleaned = "".join(ch for ch in text if ch in _KEEP_CONTROLS
                      or unicodedata.category(ch) not in ("Cc", "Cs", "Co", "Cn"))
    cleaned = cleaned.replace("\ufffd", "").strip()
    if not cleaned:
        raise LiveError("Type a message first: the message is empty.")
    return cleaned


class RateLimiter:
    """At most ``per_minute`` events per key in any 60-second window."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self.clock = clock
        self._events: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._calls = 0

    def check(self, key: str) -> None:
        """Count one event for ``key``.

        Raises:
            LiveError: when ``key`` already had ``per_minute`` events in the last minute.
        """
        with self._lock:
            now, events = self.clock(), self._events[key]
            while events and now - events[0] >= 60.0:
                events.popleft()
            if len(events) >= self.per_minute:
                wait = 60.0 - (now - events[0])
                raise LiveError(f"You are sending messages too fast (at most {self.per_minute} a "
                                f"minute). Wait {wait:.0f} s and send again.")
            events.append(now)
            self._calls += 1
            if self._calls % 1000 == 0:  # drop keys idle for a minute (bounded memory)
                for k in [k for k, e in self._events.items() if not e or now - e[-1] >= 60.0]:
                    del self._events[k]

    def forget(self, key: str) -> None:
        """Drop what is counted for ``key`` (its session left memory or ended)."""
        with self._lock:
            self._events.pop(key, None)

@contextlib.asynccontextmanager
async def dropping_failed_work(checkpointer, session_id: str, log_message: str, advice: str):
    """Around a live session's model work: a model that fails for good (after its retries) or
    an open circuit breaker drops the paused graph of ``session_id`` from ``checkpointer`` (the
    store keeps what was finished) and becomes a :class:`LiveError` naming the failure, then
    ``advice``; any other error is logged with ``log_message`` first. A LiveError passes."""
    try:
        yield
    except LiveError:
        raise
    except (CircuitOpenError, Exception) as exc:  # CircuitOpenError is a BaseException
        if not isinstance(exc, (ModelCallError, CircuitOpenError)):
            log.exception(log_message, anonymous_name(session_id))
        checkpointer.delete_thread(session_id)
        raise LiveError("The model did not answer (" + str(exc).splitlines()[0][:200] + "). "
                        + advice) from None
