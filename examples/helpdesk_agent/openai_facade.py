"""The agent as an OpenAI-compatible chat endpoint, stateless as such endpoints are: every
``POST /v1/chat/completions`` carries the whole conversation, the graph (without a checkpointer)
answers its last user message, and the answer comes back as a ``chat.completion`` with the
model's ``usage``. The client's system messages are left out (the agent has its own prompt).
``"stream": true`` sends the finished reply as one chunk. ``GET /v1/models`` lists the agent.

    python -m examples.helpdesk_agent.openai_facade --port 8301
    deskbench run --agent openai --agent-url http://127.0.0.1:8301/v1
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, AsyncIterator
from uuid import uuid4

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict

from examples.helpdesk_agent.serving import AGENT_NAME, ClientGone, serve, unless_client_gone


class CompletionRequest(BaseModel):
    """The fields of a chat completion request the facade reads (others are accepted and ignored)."""

    model_config = ConfigDict(extra="allow")

    model: str = AGENT_NAME
    messages: list[dict[str, Any]]
    stream: bool = False
    stream_options: dict[str, Any] | None = None


def message_text(content: Any) -> str:
    """An OpenAI message's content as text (a string, or the text of its parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def error(status: int, message: str, kind: str) -> JSONResponse:
    """An error in OpenAI's shape."""
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


def completion(result: Any, model: str) -> dict[str, Any]:
    """The ``chat.completion`` object of a turn's result."""
    usage = result.usage() or {"input_tokens": 0, "output_tokens": 0}
    return {"id": f"chatcmpl-{uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": result.reply}}],
            "usage": {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
                      "total_tokens": usage["input_tokens"] + usage["output_tokens"]}}


async def chunks(body: dict[str, Any], with_usage: bool) -> AsyncIterator[str]:
    """A finished completion as server-sent ``chat.completion.chunk`` events."""
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"], "model": body["model"]}
    content = body["choices"][0]["message"]["content"]
    for delta, finish in (({"role": "assistant", "content": content}, None), ({}, "stop")):
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        yield "data: " + json.dumps({**base, "choices": [choice]}) + "\n\n"
    if with_usage:
        yield "data: " + json.dumps({**base, "choices": [], "usage": body["usage"]}) + "\n\n"
    yield "data: [DONE]\n\n"


def create_app(agent_graph: Any = None) -> FastAPI:
    """The facade of ``agent_graph`` (default: the agent's graph built without a checkpointer)."""
    from examples.helpdesk_agent.turns import NoUserMessage, run_turn
    if agent_graph is None:
        from examples.helpdesk_agent.graph import build_graph
        agent_graph = build_graph()
    app = FastAPI(title=f"{AGENT_NAME} (OpenAI-compatible)")

    @app.get("/")
    async def health() -> dict[str, Any]:
        """The server is up."""
        return {"status": "ok", "agent": AGENT_NAME, "api": "/v1"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        """The one model this endpoint serves: the agent."""
        return {"object": "list", "data": [{"id": AGENT_NAME, "object": "model", "created": 0,
                                            "owned_by": "examples"}]}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(request: CompletionRequest, http: Request) -> Any:
        """One answer to the conversation's last user message."""
        history = [{"role": m.get("role"), "content": message_text(m.get("content"))} for m in request.messages]
        try:
            result = await unless_client_gone(http, run_turn(agent_graph, history))
        except ClientGone:
            return error(499, "the client went away", "client_closed")
        except NoUserMessage as exc:
            return error(400, str(exc), "invalid_request_error")
        except Exception as exc:  # noqa: BLE001 - the model endpoint or the knowledge base failed
            return error(502, f"{type(exc).__name__}: {exc}", "upstream_error")
        body = completion(result, request.model or AGENT_NAME)
        if request.stream:
            with_usage = bool((request.stream_options or {}).get("include_usage"))
            return StreamingResponse(chunks(body, with_usage), media_type="text/event-stream")
        return body

    return app


def main(argv: list[str] | None = None) -> int:
    """``python -m examples.helpdesk_agent.openai_facade [--host H] [--port N]``."""
    return serve(create_app, "OpenAI-compatible chat endpoint, base URL /v1", 8301, argv)


if __name__ == "__main__":
    sys.exit(main())
