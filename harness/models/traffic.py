"""Who is using an endpoint right now: the harness's own bookkeeping of requests in flight, and
the rule that lets the agent have the endpoint to itself during a call.

Every :class:`harness.models.llm.RoleClient` call goes through :func:`on_endpoint`, which
keeps, per endpoint (its base URL: one server, whatever model name a role sends):

- **contention**: for each request, the milliseconds during which at least one other request
  was in flight on the same endpoint (``LLMCall.contended_ms``). A reply whose time was mostly
  shared did not measure the agent alone: the call report gives latency for uncontended replies
  beside all of them.
- **yielding** (:func:`yielding`, on during simulated and live voice calls by default,
  ``voice.judging = "yield"``): the roles that are not the agent (the judges, the complexity
  rater, the extractor, the simulated caller) wait while an agent request is in flight on their
  endpoint, and one of theirs that is in flight when an agent request starts is cancelled (the
  server drops a request whose client went away) and sent again once the agent's is done. Its
  result is what it would have been; ``LLMCall.yielded_ms`` keeps the time it gave up. The
  agent never waits for them.

The bookkeeping sees one process: requests from another process (a ray shard, another program)
to the same server are not counted.
"""
from __future__ import annotations

import asyncio
import contextlib
import weakref
from dataclasses import dataclass, field
from time import perf_counter
from typing import Awaitable, Callable, Iterator, TypeVar

T = TypeVar("T")

#: the role that has the endpoint first while yielding is on
FOREGROUND_ROLES = frozenset({"agent"})

_calls_in_progress: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int]" = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def yielding(on: bool = True) -> Iterator[None]:
    """While this block runs (a batch of calls, a live spoken message), the other roles of this
    event loop yield every endpoint to the agent. A count, not a context variable: a live
    session's reply is an async generator whose steps may run in different tasks."""
    if not on:
        yield
        return
    loop = asyncio.get_running_loop()
    _calls_in_progress[loop] = _calls_in_progress.get(loop, 0) + 1
    try:
        yield
    finally:
        _calls_in_progress[loop] -= 1


def is_yielding() -> bool:
    """Whether the other roles yield the endpoint to the agent now (:func:`yielding`)."""
    return _calls_in_progress.get(asyncio.get_running_loop(), 0) > 0


@dataclass(eq=False)  # each request is itself: two alike are still two
class _Request:
    role: str
    foreground: bool
    contended_ms: float = 0.0
    task: asyncio.Task | None = None
    preempted: bool = False


@dataclass
class Usage:
    """What one request met on its endpoint: shared time and time given up to the agent."""

    contended_ms: float = 0.0
    yielded_ms: float = 0.0


@dataclass
class EndpointTraffic:
    """The requests in flight on one endpoint (one event loop's view)."""

    active: list[_Request] = field(default_factory=list)
    last_change: float = field(default_factory=perf_counter)
    agent_idle: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.agent_idle.set()

    def _account(self) -> None:
        """Charge the time since the last change to every request that shared it."""
        now = perf_counter()
        if len(self.active) > 1:
            elapsed = (now - self.last_change) * 1000.0
            for request in self.active:
                request.contended_ms += elapsed
        self.last_change = now

    def enter(self, request: _Request) -> None:
        self._account()
        self.active.append(request)
        if request.foreground:
            self.agent_idle.clear()

    def leave(self, request: _Request) -> None:
        self._account()
        self.active.remove(request)
        if not any(r.foreground for r in self.active):
            self.agent_idle.set()

    def preempt_background(self) -> None:
        """Cancel the other roles' requests in flight (each is sent again when the agent is done)."""
        for request in self.active:
            if not request.foreground and request.task is not None and not request.task.done():
                request.preempted = True
                request.task.cancel()


_traffic: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointTraffic]]" = \
    weakref.WeakKeyDictionary()


def traffic_of(endpoint: str) -> EndpointTraffic:
    """The running loop's bookkeeping of ``endpoint``."""
    per_loop = _traffic.setdefault(asyncio.get_running_loop(), {})
    if endpoint not in per_loop:
        per_loop[endpoint] = EndpointTraffic()
    return per_loop[endpoint]


async def on_endpoint(endpoint: str, role: str, send: Callable[[], Awaitable[T]]) -> tuple[T, Usage]:
    """Send one request (``send()`` makes it) on ``endpoint`` as ``role``, with the bookkeeping
    and, while :func:`yielding`, the agent first. Returns the result and its :class:`Usage`."""
    traffic = traffic_of(endpoint)
    foreground = role in FOREGROUND_ROLES
    usage = Usage()
    if foreground or not is_yielding():
        request = _Request(role, foreground)
        traffic.enter(request)
        if foreground and is_yielding():
            traffic.preempt_background()
        try:
            result = await send()
        finally:
            traffic.leave(request)  # charges the last stretch before the figures are read
        return result, _with(usage, request)
    while True:
        waited = perf_counter()
        await traffic.agent_idle.wait()
        request = _Request(role, False, task=asyncio.ensure_future(send()))
        traffic.enter(request)
        started = perf_counter()
        usage.yielded_ms += (started - waited) * 1000.0
        try:
            result = await asyncio.shield(request.task)
        except asyncio.CancelledError:
            if not request.preempted:  # our caller was cancelled, not the request
                request.task.cancel()
                raise
            usage.yielded_ms += (perf_counter() - started) * 1000.0
            continue
        finally:
            traffic.leave(request)
        return result, _with(usage, request)


def _with(usage: Usage, request: _Request) -> Usage:
    usage.contended_ms = round(usage.contended_ms + request.contended_ms, 1)
    usage.yielded_ms = round(usage.yielded_ms, 1)
    return usage
