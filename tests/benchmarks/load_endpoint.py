"""A light OpenAI-compatible endpoint for load benchmarks (``tests.benchmarks.bench_load``).

Unlike ``tests.fake_openai_server`` (a thread per connection and a prompt-cache figure that
compares every prompt with every earlier one), this one is a single asyncio loop that costs
next to nothing per request, so that thousands of requests a minute measure the client, not
the server. It answers ``POST .../chat/completions`` after a fixed delay with the answers of
``tests.fakes.default_responder`` (the role is the model name before ``-fake``), so the real
judges parse real JSON verdicts; ``"stream": true`` is answered as server-sent chunks.
Usage counts one prompt token per five characters of the messages (no cached tokens).

``GET /stats`` returns the connections opened and the requests answered since the last
``GET /reset`` (in all and per role) and the monotonic times (``time.monotonic()``, shared by
every process of the machine) of the first request and the last answer, so a benchmark can
tell the window in which its client was busy.
``capture`` (a file path) appends every request to it as one JSON line, ``{"headers": {...},
"body": "<the body as sent>"}`` (to compare what goes on the wire before and after a change).

Run on its own:

    .venv/bin/python -m tests.benchmarks.load_endpoint --port 8765 --delay 0.2
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakes import default_responder

_TYPES = {"system": "system", "user": "human", "assistant": "ai", "tool": "tool"}


class _Message:
    """What the responders read of a message: ``type`` and ``content`` (no langchain object)."""

    __slots__ = ("type", "content")

    def __init__(self, role: str, content: Any):
        self.type = _TYPES.get(role, role)
        self.content = content if isinstance(content, str) else json.dumps(content)


class LoadEndpoint:
    """The endpoint's state: its responders, its delay and what it has answered."""

    def __init__(self, delay_s: float = 0.2, solve_at: int | None = None, capture: str | None = None,
                 rpm: int | None = None):
        self.delay_s = delay_s
        #: a provider's limit: at most ``rpm`` requests in any 60 s and ``rpm / 60`` (at least 1)
        #: in any second; past it an HTTP 429 with Retry-After (whole seconds, as providers send)
        self.rpm = rpm
        self.accepted: deque[float] = deque()
        self.rate_limited = 0
        self.responders = default_responder(solve_at=solve_at)
        self._by_role: dict[str, Any] = {}
        self.counts: dict[str, int] = {}
        self.requests = 0
        self.errors = 0
        self.first: float | None = None
        self.last: float | None = None
        self.connections = 0
        self.capture = open(capture, "a", encoding="utf-8") if capture else None

    def reset(self) -> None:
        """Forget what was answered (``GET /reset``, before each measured run)."""
        self.counts, self.requests, self.errors, self.first, self.last = {}, 0, 0, None, None
        self.connections, self.rate_limited = 0, 0

    def stats(self) -> dict:
        """The requests answered so far and the busy window (see the module docstring)."""
        return {"requests": self.requests, "errors": self.errors, "rate_limited": self.rate_limited,
                "by_role": dict(self.counts),
                "first": self.first, "last": self.last, "connections": self.connections}

    def respond(self, raw: bytes, headers: list[str]) -> tuple[dict | None, str, str]:
        """(the body, its role, the answer's text) of one chat-completion request."""
        body = json.loads(raw)
        if self.capture:
            fields = dict(h.split(": ", 1) for h in headers if ": " in h)
            self.capture.write(json.dumps({"headers": fields, "body": raw.decode()}) + "\n")
            self.capture.flush()
        role = str(body.get("model", "")).split("-fake")[0]
        responder = self._by_role.get(role) or self._by_role.setdefault(role, self.responders(role))
        messages = [_Message(m.get("role", "user"), m.get("content") or "") for m in body["messages"]]
        return body, role, responder(messages, body)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one keep-alive connection until the client closes it."""
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                length = 0
                for line in lines[1:]:
                    if line[:15].lower() == "content-length:":
                        length = int(line[15:])
                raw = await reader.readexactly(length) if length else b""
                if method == "GET":
                    if path.endswith("/reset"):
                        self.reset()
                    payload = self.stats() if path.endswith(("/stats", "/reset")) else \
                        {"object": "list", "data": [{"id": "fake", "object": "model"}]}
                    _send(writer, 200, json.dumps(payload).encode())
                    continue
                await self._complete(raw, lines[1:], writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def retry_after(self, now: float) -> int | None:
        """Whole seconds until a request would be accepted (None: accepted now, and counted)."""
        if self.rpm is None:
            return None
        while self.accepted and self.accepted[0] <= now - 60.0:
            self.accepted.popleft()
        per_second = max(1, self.rpm // 60)
        last_second = [t for t in list(self.accepted)[-per_second:] if t > now - 1.0]
        if len(self.accepted) >= self.rpm:
            return math.ceil(self.accepted[0] + 60.0 - now)
        if len(last_second) >= per_second:
            return math.ceil(last_second[0] + 1.0 - now)
        self.accepted.append(now)
        return None

    async def _complete(self, raw: bytes, headers: list[str], writer: asyncio.StreamWriter) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = now
        wait = self.retry_after(now)
        if wait is not None:
            self.rate_limited += 1
            _send(writer, 429, json.dumps({"error": {"message": "Rate limit reached", "type": "requests"}}).encode(),
                  {"Retry-After": str(wait)})
            return
        try:
            body, role, text = self.respond(raw, headers)
        except Exception as exc:  # an unexpected prompt: a 500 the client sees
            self.errors += 1
            _send(writer, 500, json.dumps({"error": {"message": f"{type(exc).__name__}: {exc}"}}).encode())
            return
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        words = sum(len(m.get("content") or "") for m in body["messages"]) // 5 + 1
        done = len(text.split())
        usage = {"prompt_tokens": words, "completion_tokens": done, "total_tokens": words + done}
        model = body["model"]
        if body.get("stream"):
            _stream(writer, model, text, usage if (body.get("stream_options") or {}).get("include_usage") else None)
        else:
            _send(writer, 200, json.dumps({
                "id": "x", "object": "chat.completion", "created": 0, "model": model,
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": text}}],
                "usage": usage}).encode())
        self.requests += 1
        self.counts[role] = self.counts.get(role, 0) + 1
        self.last = time.monotonic()


REASONS = {200: "OK", 429: "Too Many Requests", 500: "Internal Server Error"}


def _send(writer: asyncio.StreamWriter, code: int, data: bytes, headers: dict[str, str] | None = None) -> None:
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    writer.write(f"HTTP/1.1 {code} {REASONS[code]}\r\nContent-Type: application/json\r\n{extra}"
                 f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n".encode() + data)


def _stream(writer: asyncio.StreamWriter, model: str, text: str, usage: dict | None) -> None:
    """The answer as server-sent chunks (one per word), chunked transfer encoding."""
    base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": model}
    words = text.split(" ")
    events = [{**base, "choices": [{"index": 0, "finish_reason": None, "delta": {
        "role": "assistant", "content": w if i == 0 else " " + w}}]} for i, w in enumerate(words)]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage:
        events.append({**base, "choices": [], "usage": usage})
    data = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                 + f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")


async def serve(port: int, delay_s: float, solve_at: int | None, capture: str | None,
                ready: Any = None, rpm: int | None = None) -> None:
    """Serve on 127.0.0.1:``port`` (0: any free port) until cancelled; prints the port."""
    endpoint = LoadEndpoint(delay_s, solve_at, capture, rpm)
    server = await asyncio.start_server(endpoint.handle, "127.0.0.1", port, backlog=1024)
    bound = server.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """Command line: serve until killed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer")
    parser.add_argument("--solve-at", type=int, default=None,
                        help="agent turns after which the judges find the problem solved (default: never)")
    parser.add_argument("--capture", default=None, help="append every request body to this file")
    parser.add_argument("--rpm", type=int, default=None,
                        help="a provider's limit: requests a minute (and rpm/60 a second), HTTP 429 past it")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.port, args.delay, args.solve_at, args.capture, rpm=args.rpm))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
