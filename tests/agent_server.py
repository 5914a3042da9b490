"""A real HTTP agent for the adapter tests: a Starlette app served by uvicorn in a thread on a
free port, speaking the agent contract (docs/agents.md) with scripted behaviour: fail the first
N requests with a status (and Retry-After), answer with a body given per test, or echo."""
from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScriptedAgent:
    """What the server does with each request: ``failures`` (status, body, retry_after) first,
    then ``respond(request) -> body or Response``. Every request and header set is kept."""

    def __init__(self, respond: Callable[[dict], Any] | None = None,
                 failures: list[tuple[int, str, str | None]] | None = None):
        self.respond = respond or (lambda req: {"reply": f"echo {req['turn']}: {req['message']}",
                                                "usage": {"input_tokens": 10, "output_tokens": 5, "cost": 0.001},
                                                "trace": {"tool_calls": [{"name": "kb", "arguments": {"q": req["message"]},
                                                                          "result": "doc 1"}]}})
        self.failures = list(failures or [])
        self.requests: list[dict] = []
        self.headers: list[dict] = []

    async def chat(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        if self.failures:
            status, text, retry_after = self.failures.pop(0)
            return PlainTextResponse(text, status, headers={"Retry-After": retry_after} if retry_after else None)
        out = self.respond(body)
        return out if isinstance(out, Response) else JSONResponse(out)


@contextmanager
def serve(agent: ScriptedAgent):
    """Serve ``agent`` at ``http://127.0.0.1:PORT/chat`` (yields the URL) until the block ends."""
    port = free_port()
    app = Starlette(routes=[Route("/chat", agent.chat, methods=["POST"]),
                            Route("/", lambda r: PlainTextResponse("ok"), methods=["GET"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/chat"
    finally:
        server.should_exit = True
        thread.join(5)
