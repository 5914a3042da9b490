"""A real local OpenAI-compatible HTTP server with scripted answers, for CLI and endpoint tests.

It answers ``POST /v1/chat/completions`` by handing the request's messages to the same
responders the fake chat models use (``tests.fakes.default_responder``); the role is taken
from the model name, so each role can be pointed at it as ``<role>-fake``.
``delay_s`` makes every answer take that long (a model's latency, for load tests); a request
with ``"stream": true`` (a live session's agent reply) is answered as server-sent chunks,
``token_delay_s`` apart (0: all at once), so a test can tell streamed speech from the whole reply.
``work_s`` (role -> seconds) models one machine's compute: a request of that role needs that
much work before its answer, shared equally by the requests working at the same moment (two at
once each go at half speed, as on a llama.cpp server), and a request whose client went away
stops working (as llama.cpp drops it); ``server.cancelled`` counts those.
Usage counts one prompt token per word and reports, like llama.cpp's prompt cache, the leading
words shared with the most similar earlier prompt as ``prompt_tokens_details.cached_tokens``.
"""
from __future__ import annotations

import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

_TYPES = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


class FakeOpenAIServer:
    def __init__(self, responders, delay_s: float = 0.0, token_delay_s: float = 0.0,
                 work_s: dict[str, float] | None = None):
        self.responders = responders
        self.delay_s = delay_s
        self.token_delay_s = token_delay_s
        self.work_s = work_s or {}
        self.working = 0
        self.cancelled = 0
        #: per request that worked: role, seconds worked alone and beside another, finished or not
        self.work_log: list[dict] = []
        self._lock = threading.Lock()
        self.requests: list[dict] = []
        self._prompts: list[list[str]] = []
        server = self

        def usage(body: dict, completion: int) -> dict:
            words = " ".join(f"{m['role']}: {m['content']}" for m in body["messages"]).split()
            cached = 0
            for earlier in server._prompts:
                n = 0
                for a, b in zip(words, earlier):
                    if a != b:
                        break
                    n += 1
                cached = max(cached, n)
            server._prompts.append(words)
            return {"prompt_tokens": len(words), "completion_tokens": completion,
                    "total_tokens": len(words) + completion,
                    "prompt_tokens_details": {"cached_tokens": min(cached, len(words) - 1)}}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._send(200, {"status": "ok"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({**body, "authorization": self.headers.get("Authorization")})
                role = body["model"].split("-fake")[0]
                messages = [_TYPES[m["role"]](m["content"]) for m in body["messages"]]
                text = server.responders(role)(messages, body)
                if server.delay_s:
                    time.sleep(server.delay_s)
                if server.work_s.get(role) and not self._work(role, server.work_s[role]):
                    return  # the client went away: nothing to answer
                if isinstance(text, Exception):
                    self._send(500, {"error": {"message": str(text)}})
                    return
                if body.get("stream"):
                    self._stream(body, text)
                    return
                self._send(200, {
                    "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": usage(body, len(text.split()))})

            def _work(self, role: str, seconds: float, step: float = 0.005) -> bool:
                """Spend ``seconds`` of the shared compute; False when the client left first."""
                log = {"role": role, "alone_s": 0.0, "shared_s": 0.0, "finished": False}
                with server._lock:
                    server.working += 1
                    server.work_log.append(log)
                try:
                    left = seconds
                    while left > 0:
                        sharing = server.working
                        time.sleep(step)
                        left -= step / max(1, sharing)
                        log["shared_s" if sharing > 1 else "alone_s"] += step
                        if self._client_gone():
                            server.cancelled += 1
                            return False
                    log["finished"] = True
                    return True
                finally:
                    with server._lock:
                        server.working -= 1

            def _client_gone(self) -> bool:
                readable, _, _ = select.select([self.connection], [], [], 0)
                if not readable:
                    return False
                try:
                    return self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    return True

            def _stream(self, body, text):
                """The answer as server-sent chunks (one per word), usage last when asked."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "x", "object": "chat.completion.chunk", "created": 0,
                        "model": body["model"]}
                words = text.split(" ")
                chunks = [{"role": "assistant", "content": w if i == 0 else " " + w}
                          for i, w in enumerate(words)]
                events = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                          for d in chunks]
                events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    events.append({**base, "choices": [], "usage": usage(body, len(words))})
                for event in events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    if server.token_delay_s:
                        self.wfile.flush()
                        time.sleep(server.token_delay_s)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _send(self, code, payload):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
