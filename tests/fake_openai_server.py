"""A real local OpenAI-compatible HTTP server with scripted answers, for CLI and endpoint tests.

It answers ``POST /v1/chat/completions`` by handing the request's messages to the same
responders the fake chat models use (``tests.fakes.default_responder``); the role is taken
from the model name, so each role can be pointed at it as ``<role>-fake``.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

_TYPES = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


class FakeOpenAIServer:
    def __init__(self, responders):
        self.responders = responders
        self.requests: list[dict] = []
        server = self

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
                if isinstance(text, Exception):
                    self._send(500, {"error": {"message": str(text)}})
                    return
                self._send(200, {
                    "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": len(text.split()),
                              "total_tokens": 10 + len(text.split())}})

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
