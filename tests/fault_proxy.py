"""A fault-injecting OpenAI-compatible proxy: a real local HTTP server in front of another one.

Each ``POST .../chat/completions`` is either forwarded to the upstream server (usually
``tests.fake_openai_server.FakeOpenAIServer``) or answered with a fault:

=================  ===================================================================
``timeout``        sleeps ``timeout_sleep_s`` (set it past the client's timeout), then
                   closes the connection without an answer
``429``            HTTP 429 with ``Retry-After: <retry_after>``
``500/502/503``    the status with an OpenAI-style error body
``truncated``      a 200 whose body stops half-way (Content-Length promises more)
``malformed``      a 200 whose body is not JSON
``empty_choices``  a 200 completion with ``choices: []``
``empty_content``  a 200 completion whose message content is empty
``400/401/404``    client errors (not retryable; not in the default mix)
=================  ===================================================================

Whether a request fails, and how, depends only on the seed, the request body and how many
times that same body was seen before: a retried request gets a fresh draw, and the faults of
a run do not depend on the order in which concurrent requests arrive. ``injected`` counts
what was injected; ``rate`` and ``fault_for`` can be changed while it runs (0 heals it).
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

KINDS = ("timeout", "429", "500", "502", "503", "truncated", "malformed", "empty_choices",
         "empty_content", "400", "401", "404")  # the last three are not retryable
#: the fault mix when none is given: every kind, timeouts rarer (each costs a client timeout)
DEFAULT_MIX = {"timeout": 0.5, "429": 1, "500": 1, "502": 1, "503": 1, "truncated": 1,
               "malformed": 1, "empty_choices": 1, "empty_content": 1}


def _unit(*parts) -> float:
    """A number in [0, 1) determined by ``parts``."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


class FaultProxy:
    """Forwards to ``upstream`` (a base URL ending in /v1) and injects faults.

    Args:
        upstream: the OpenAI-compatible base URL to forward to.
        rate: share of requests that get a fault (0..1).
        seed: varies which requests fail.
        mix: relative weights of the fault kinds (``KINDS``).
        timeout_sleep_s: how long a ``timeout`` fault keeps the client waiting.
        retry_after: the ``Retry-After`` value of 429s (seconds, or an HTTP date).
        fault_for: optional ``(request body dict) -> kind or None``; when it returns a kind,
            that fault is injected whatever the rate (e.g. one judge that never succeeds).
    """

    def __init__(self, upstream: str, rate: float = 0.3, seed: int = 0,
                 mix: dict[str, float] | None = None, timeout_sleep_s: float = 1.0,
                 retry_after: str = "1", fault_for: Callable[[dict], str | None] | None = None):
        self.upstream = upstream.rstrip("/")
        self.rate, self.seed, self.timeout_sleep_s, self.retry_after = rate, seed, timeout_sleep_s, retry_after
        self.mix = dict(mix or DEFAULT_MIX)
        unknown = set(self.mix) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; kinds are {', '.join(KINDS)}")
        self.fault_for = fault_for
        self.injected: Counter[str] = Counter()
        self.requests = 0
        self.forwarded = 0
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._send(200, b'{"status": "ok"}')

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                kind = proxy.choose(raw)
                if kind is None:
                    status, body = proxy.forward(self.path, raw, self.headers)
                    self._send(status, body)
                else:
                    self._fault(kind, raw)

            def _fault(self, kind: str, raw: bytes):
                if kind == "timeout":
                    time.sleep(proxy.timeout_sleep_s)
                    self.close_connection = True
                    return
                if kind == "429":
                    self._send(429, b'{"error": {"message": "rate limited (injected)"}}',
                               {"Retry-After": proxy.retry_after})
                elif kind in ("400", "401", "404", "500", "502", "503"):
                    self._send(int(kind), json.dumps({"error": {"message": f"injected {kind}"}}).encode())
                elif kind == "truncated":
                    body = _completion(json.loads(raw), "this reply is cut short")
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                elif kind == "malformed":
                    self._send(200, b'{"id": "x", "choices": [{"message": {"content": "oops')
                elif kind == "empty_choices":
                    self._send(200, json.dumps({"id": "x", "object": "chat.completion", "created": 0,
                                                "model": "m", "choices": []}).encode())
                elif kind == "empty_content":
                    self._send(200, _completion(json.loads(raw), ""))

            def _send(self, status: int, body: bytes, headers: dict | None = None):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def total_injected(self) -> int:
        return sum(self.injected.values())

    def choose(self, raw: bytes) -> str | None:
        """The fault for this request (None: forward it), counted in ``injected``."""
        digest = hashlib.sha256(raw).hexdigest()
        with self._lock:
            self.requests += 1
            self._seen[digest] += 1
            nth = self._seen[digest]
            kind = self.fault_for(json.loads(raw)) if self.fault_for else None
            if kind is None and _unit(self.seed, digest, nth, "fail") < self.rate:
                kind = self._kind(_unit(self.seed, digest, nth, "kind"))
            if kind is not None:
                self.injected[kind] += 1
            else:
                self.forwarded += 1
            return kind

    def _kind(self, u: float) -> str:
        total = sum(self.mix.values())
        acc = 0.0
        for kind, weight in self.mix.items():
            acc += weight / total
            if u < acc:
                return kind
        return next(reversed(self.mix))

    def forward(self, path: str, raw: bytes, headers) -> tuple[int, bytes]:
        url = self.upstream + path[path.index("/v1") + 3:] if "/v1" in path else self.upstream + path
        request = urllib.request.Request(url, data=raw, method="POST", headers={
            "Content-Type": "application/json",
            "Authorization": headers.get("Authorization") or ""})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def __enter__(self) -> "FaultProxy":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _completion(request: dict, text: str) -> bytes:
    return json.dumps({
        "id": "x", "object": "chat.completion", "created": 0, "model": request.get("model", "m"),
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}).encode()
