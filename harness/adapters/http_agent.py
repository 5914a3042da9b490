"""The ``http`` adapter: the contract's request POSTed as JSON to ``agent.url``, the contract's
response read back (docs/agents.md)."""
from __future__ import annotations

import asyncio
import zlib
from typing import Any

import httpx

from graphs.protocols import Problem
from harness.adapters.contract import parse_json_body, parse_response
from harness.adapters.external import ExternalAgent, Sent, status_error
from harness.models.retry import headers_retry_after


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, else ``Retry-After``), or None."""
    return headers_retry_after(response.headers)


POOLS = 8
"""Connection pools per event loop. httpcore assigns each request to a connection by scanning
every connection and queued request of its pool, so one pool's cost per request grows with the
conversations in flight (at 64 it was most of the harness's CPU per turn); conversations are
spread over several small pools by their id."""


class LoopClients:
    """Pooled ``httpx.AsyncClient``s per event loop (:data:`POOLS` of them, a conversation always
    on the same one): a batch runs in one loop, but the live app and a CLI command that runs
    several ``asyncio.run`` may call the agent from others, and a pool cannot cross loops."""

    def __init__(self, headers: dict[str, str], timeout_s: float):
        self.headers, self.timeout_s = headers, timeout_s
        self._by_loop: dict[int, tuple[asyncio.AbstractEventLoop, list[httpx.AsyncClient]]] = {}

    def get(self, key: str = "") -> httpx.AsyncClient:
        """The running loop's client for conversation ``key`` (made on first use; clients of
        closed loops dropped)."""
        loop = asyncio.get_running_loop()
        entry = self._by_loop.get(id(loop))
        if entry is None or entry[0] is not loop:
            self._by_loop = {k: v for k, v in self._by_loop.items() if not v[0].is_closed()}
            timeout = httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0))
            limits = httpx.Limits(max_connections=64, max_keepalive_connections=32)
            entry = self._by_loop[id(loop)] = (loop, [httpx.AsyncClient(headers=self.headers, timeout=timeout,
                                                                        limits=limits) for _ in range(POOLS)])
        return entry[1][zlib.crc32(key.encode()) % POOLS]

    async def aclose(self) -> None:
        """Close the running loop's clients."""
        entry = self._by_loop.pop(id(asyncio.get_running_loop()), None)
        for client in entry[1] if entry else ():
            await client.aclose()


class HttpAgent(ExternalAgent):
    """A team's agent behind an HTTP endpoint that speaks the contract."""

    kind = "http"

    def __init__(self, url: str, headers: dict[str, str], name: str, **kw):
        super().__init__(name, **kw)
        self.url = url
        self.clients = LoopClients(headers, self.timeout_s)

    async def send(self, request: dict[str, Any], problem: Problem) -> Sent:
        """POST the request; a non-2xx status or a body that breaks the contract fails the attempt."""
        response = await self.clients.get(request["conversation_id"]).post(self.url, json=request)
        if response.status_code >= 300:
            raise status_error(response.status_code, response.text, retry_after(response))
        return Sent(parse_response(parse_json_body(response.text, response.status_code)))

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.clients.aclose()
