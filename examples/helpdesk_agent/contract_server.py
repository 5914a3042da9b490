"""The agent behind deskbench's agent contract: ``POST /chat`` takes the turn's request and
returns the reply with the model's token usage and the turn's trace (the ``search_kb`` call with
its result, the passages retrieved). The conversation is remembered by the graph's checkpointer,
one thread per ``conversation_id``. ``GET /`` says the server is up.

    python -m examples.helpdesk_agent.contract_server --port 8300
    deskbench run --agent http --agent-url http://127.0.0.1:8300/chat --agent-name helpdesk-agent
"""
from __future__ import annotations

import sys
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from examples.helpdesk_agent.serving import AGENT_NAME, ClientGone, serve, unless_client_gone

CONTRACT_VERSION = "1"


class ChatMessage(BaseModel):
    """One message of the conversation so far."""

    role: Literal["user", "assistant"]
    content: str


class TurnRequest(BaseModel):
    """The contract's request (deskbench docs/agents.md)."""

    contract_version: str = CONTRACT_VERSION
    conversation_id: str
    turn: int = Field(ge=1)
    message: str
    messages: list[ChatMessage] = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)


def create_app(agent_graph: Any = None) -> FastAPI:
    """The contract server of ``agent_graph`` (default: the agent of
    :mod:`examples.helpdesk_agent.graph`, with its checkpointer)."""
    from examples.helpdesk_agent.turns import NoUserMessage, run_turn
    if agent_graph is None:
        from examples.helpdesk_agent.graph import graph as agent_graph
    app = FastAPI(title=f"{AGENT_NAME} (deskbench agent contract)")

    @app.get("/")
    async def health() -> dict[str, Any]:
        """The server is up."""
        return {"status": "ok", "agent": AGENT_NAME, "contract_version": CONTRACT_VERSION, "chat": "POST /chat"}

    @app.get("/chat")
    async def describe() -> dict[str, Any]:
        """What to POST here (deskbench's reachability check GETs the agent's URL)."""
        return {"agent": AGENT_NAME, "contract_version": CONTRACT_VERSION,
                "post": {"conversation_id": "...", "turn": 1, "message": "...", "messages": [], "metadata": {}}}

    @app.post("/chat", response_model=None)
    async def chat(request: TurnRequest, http: Request) -> dict[str, Any] | JSONResponse:
        """One turn: the graph on the conversation's thread; its reply, usage and trace."""
        history = [m.model_dump() for m in request.messages]
        if history[-1]["role"] != "user":
            history.append({"role": "user", "content": request.message})
        try:
            turn = run_turn(agent_graph, history, thread_id=request.conversation_id)
            result = await unless_client_gone(http, turn)
        except ClientGone:
            return JSONResponse({"error": "the client went away"}, status_code=499)
        except NoUserMessage as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except Exception as exc:  # noqa: BLE001 - the model endpoint or the knowledge base failed
            return JSONResponse({"error": f"{type(exc).__name__}: {exc}"}, status_code=502)
        return {"reply": result.reply, "usage": result.usage(), "trace": result.trace()}

    return app


def main(argv: list[str] | None = None) -> int:
    """``python -m examples.helpdesk_agent.contract_server [--host H] [--port N]``."""
    return serve(create_app, "deskbench agent contract, POST /chat", 8300, argv)


if __name__ == "__main__":
    sys.exit(main())
