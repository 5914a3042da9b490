"""What both servers share: the command line (``--host``, ``--port``), the settings checked and
the knowledge base built before the first request, then uvicorn."""
from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any, Awaitable, Callable, Sequence, TypeVar

from examples.helpdesk_agent.settings import SettingsError, load_settings

AGENT_NAME = "helpdesk-agent"
T = TypeVar("T")


class ClientGone(Exception):
    """The client closed the connection before the answer was ready."""


async def unless_client_gone(request: Any, work: Awaitable[T], poll_s: float = 0.5) -> T:
    """``work``'s result, or :class:`ClientGone` once ``request``'s client has disconnected (the work
    cancelled: a client that timed out and retries must not leave the model busy with the turn
    it gave up on)."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=poll_s)
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()
            raise ClientGone


def parse_args(description: str, default_port: int, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The servers' options."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=default_port, help=f"port (default {default_port})")
    p.add_argument("--log-level", default="warning", help="uvicorn's log level (default warning)")
    return p.parse_args(argv)


def serve(make_app: Callable[[], Any], description: str, default_port: int,
          argv: Sequence[str] | None = None) -> int:
    """Check the settings, build the knowledge base, then serve the app ``make_app()`` returns
    until interrupted; returns the exit status (2: a setting is missing or wrong)."""
    args = parse_args(description, default_port, argv)
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import uvicorn

    from examples.helpdesk_agent.kb import knowledge_base
    started = time.perf_counter()
    kb = knowledge_base()
    print(f"{AGENT_NAME}: knowledge base of {kb.collection.count()} entries in {settings.index_dir} "
          f"({time.perf_counter() - started:.1f} s); model {settings.llm_model} at {settings.llm_url}", flush=True)
    print(f"{AGENT_NAME}: {description} on http://{args.host}:{args.port}", flush=True)
    uvicorn.run(make_app(), host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=5)
    return 0
