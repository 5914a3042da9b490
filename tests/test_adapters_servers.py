"""The ``a2a`` and ``langgraph`` adapters against servers on a free port (docs/agents.md), driven
through ``ExternalAgent.respond`` as the turn loop drives them.

A2A: the a2a-sdk's own server (its request handler, in-memory task store and JSON-RPC routes,
with the v0.3 compatibility layer) serving a scripted ``AgentExecutor``, under uvicorn in a
thread, once with an agent card that offers A2A 1.0 and once 0.3 (``message/send``).

LangGraph: a real LangGraph server needs ``langgraph-api`` (``langgraph-cli[inmem]``), whose pins
clash with this project's (it would downgrade protobuf and grpcio), so these tests run against
:class:`RecordedLangGraph`: the few endpoints ``langgraph-sdk`` calls (threads, runs wait and
stream, the run check after a stream), their bodies and event sequences as recorded from
``langgraph dev`` (langgraph-api 0.16.7) on the graphs of ``REAL_GRAPHS``. With
``DESKBENCH_LANGGRAPH_CLI`` naming a ``langgraph`` executable installed with the ``inmem`` extra
(e.g. in a separate venv), the same tests also run against ``langgraph dev`` serving those graphs.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")  # before a2a is imported

import httpx  # noqa: E402
import pytest  # noqa: E402
import uvicorn  # noqa: E402
from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part  # noqa: E402
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes  # noqa: E402
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater  # noqa: E402
from a2a.types import (AgentCapabilities, AgentCard, AgentInterface, AgentSkill, StreamResponse, Task,  # noqa: E402
                       TaskState, TaskStatus)
from google.protobuf.json_format import MessageToDict  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from graphs.protocols import AgentFailure, Message, Problem, Reply  # noqa: E402
from harness.adapters import a2a_agent  # noqa: E402
from harness.adapters.a2a_agent import A2AAgent, context_id_of  # noqa: E402
from harness.adapters.build import build_external_agent, check_agent  # noqa: E402
from harness.adapters.langgraph_server import LangGraphServerAgent, thread_id_of  # noqa: E402
from harness.config import load_config  # noqa: E402
from harness.models.retry import RetryPolicy  # noqa: E402

PROBLEM = Problem("run-1:wifi#1", "My wifi drops.", None, None, persona="cooperative",
                  context={"run_id": "run-1", "task_id": "wifi", "trial": 1})


def policy(attempts: int = 3, waits: list | None = None) -> RetryPolicy:
    """No real waiting: the waits are recorded."""
    async def sleep(s):
        if waits is not None:
            waits.append(s)
    return RetryPolicy(max_attempts=attempts, base_s=0.5, jitter=False, sleep=sleep)


async def talk(agent, texts: list[str], problem: Problem = PROBLEM) -> list[Reply]:
    """A conversation: each user message in turn, each reply added to the history."""
    history, replies = [], []
    for text in texts:
        history.append(Message("user", text))
        reply = await agent.respond(problem, history)
        replies.append(reply)
        history.append(Message("agent", reply.text))
    return replies


@contextmanager
def serving(make_app: Callable[[int], Any]):
    """Serve the ASGI app ``make_app(port)`` with uvicorn in a thread on a free port; yields the port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(make_app(port), log_level="error", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(5)
        sock.close()


# -- A2A: the a2a-sdk's server with a scripted executor --------------------------------------------
USAGE = {"input_tokens": 12, "output_tokens": 4, "cost": 0.0002}
TRACE = {"tool_calls": [{"name": "search_kb", "arguments": {"q": "wifi"}, "result": "kb-7"}]}


class DeskExecutor(AgentExecutor):
    """A scripted A2A agent. ``ask``: asks which version (input-required), and the next message in
    that task completes it; ``fail``/``reject``: the task fails or is rejected with a message;
    ``message``: a plain Message answer, no task; anything else: an ``echo:`` artifact, completed
    with usage and trace in the status message's metadata. Every request is kept in ``seen``."""

    def __init__(self):
        self.seen: list[dict[str, Any]] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text, continuing = context.get_user_input(), context.current_task is not None
        self.seen.append({"text": text, "task_id": context.task_id, "context_id": context.context_id,
                          "metadata": MessageToDict(context.message.metadata), "continuing": continuing})
        if text == "message":
            await event_queue.enqueue_event(new_text_message("A plain message answer.", context_id=context.context_id))
            return
        task = context.current_task or new_task_from_user_message(context.message)
        if not continuing:
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        if continuing:
            await up.add_artifact([new_text_part(f"thanks, {text}")])
            await up.complete()
        elif text == "ask":
            await up.requires_input(up.new_agent_message([new_text_part("Which Ubuntu version?")]))
        elif text == "fail":
            await up.failed(up.new_agent_message([new_text_part("the knowledge base is down")]))
        elif text == "reject":
            await up.reject(up.new_agent_message([new_text_part("not a help-desk question")]))
        else:
            await up.add_artifact([new_text_part(f"echo: {text}")], name="answer")
            await up.complete(up.new_agent_message([new_text_part("(done)")], metadata={"usage": USAGE, "trace": TRACE}))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Not cancellable."""
        raise NotImplementedError


class Gate:
    """ASGI middleware before the A2A app: keeps each request's headers and each POST's JSON-RPC
    method, and answers the next POSTs from ``failures`` ((status, Retry-After)) instead of the app."""

    def __init__(self, app: Any):
        self.app, self.headers, self.methods = app, [], []
        self.failures: list[tuple[int, str | None]] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        self.headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        if scope["method"] != "POST":
            return await self.app(scope, receive, send)
        chunks = [await receive()]
        while chunks[-1].get("more_body"):
            chunks.append(await receive())
        body = json.loads(b"".join(c.get("body", b"") for c in chunks) or b"{}")
        self.methods.append(body.get("method") or f"POST {scope['path']}")  # JSON-RPC, else HTTP+JSON
        if self.failures:
            status, retry = self.failures.pop(0)
            answer = PlainTextResponse("overloaded", status, headers={"Retry-After": retry} if retry else None)
            return await answer(scope, receive, send)

        async def replay():
            return chunks.pop(0) if chunks else await receive()
        return await self.app(scope, replay, send)


SENT_AS = {("1.0", "JSONRPC"): "SendMessage", ("0.3", "JSONRPC"): "message/send", ("1.0", "HTTP+JSON"): "POST /message:send"}


@pytest.fixture(params=list(SENT_AS), ids=["1.0-jsonrpc", "0.3-jsonrpc", "1.0-rest"])
def a2a_server(request):
    """The a2a-sdk server on a free port, its card offering one (protocol version, binding)."""
    executor, gates = DeskExecutor(), []
    version, binding = request.param

    def make_app(port: int) -> Gate:
        card = AgentCard(name="desk", description="A scripted help-desk agent", version="1.0.0",
                         supported_interfaces=[AgentInterface(url=f"http://127.0.0.1:{port}/", protocol_binding=binding,
                                                              protocol_version=version)],
                         capabilities=AgentCapabilities(streaming=False), default_input_modes=["text/plain"],
                         default_output_modes=["text/plain"],
                         skills=[AgentSkill(id="desk", name="help desk", description="answers", tags=["support"])])
        handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
        routes = create_agent_card_routes(card) + (
            create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True) if binding == "JSONRPC"
            else create_rest_routes(handler))
        gates.append(Gate(Starlette(routes=routes)))
        return gates[0]

    with serving(make_app) as port:
        yield {"url": f"http://127.0.0.1:{port}", "executor": executor, "gate": gates[0],
               "sent_as": SENT_AS[request.param]}


async def test_a2a_completed_task_is_the_reply_with_context_metadata_usage_and_trace(a2a_server):
    agent = A2AAgent(a2a_server["url"], {"x-api-key": "s3"}, "desk", policy=policy())
    first, second = await talk(agent, ["hello", "again"])
    await agent.aclose()
    assert (first.text, second.text) == ("echo: hello", "echo: again")  # the artifact, not the status message
    assert first.extra["usage"] == USAGE and first.extra["trace"] == TRACE and first.extra["adapter"] == "a2a"
    call = first.calls[0]
    assert (call.input_tokens, call.output_tokens, call.cost, call.usage_reported) == (12, 4, 0.0002, True)
    seen = a2a_server["executor"].seen
    assert {s["context_id"] for s in seen} == {context_id_of(PROBLEM.interaction_id)}
    assert seen[0]["task_id"] != seen[1]["task_id"] and not seen[1]["continuing"]  # a completed task is closed
    assert seen[1]["metadata"] == {"conversation_id": "run-1:wifi#1", "turn": 2.0, "run_id": "run-1",
                                   "task_id": "wifi", "trial": 1.0, "persona": "cooperative"}
    gate = a2a_server["gate"]
    assert all(h["x-api-key"] == "s3" for h in gate.headers)  # the card's request too
    assert gate.methods == [a2a_server["sent_as"]] * 2


async def test_a2a_input_required_is_a_reply_and_the_next_message_continues_that_task(a2a_server):
    agent = A2AAgent(a2a_server["url"], {}, "desk", policy=policy())
    asked, answered, later = await talk(agent, ["ask", "22.04", "hello"])
    assert asked.text == "Which Ubuntu version?" and asked.extra["usage"] == "not reported"
    assert answered.text == "thanks, 22.04" and later.text == "echo: hello"
    seen = a2a_server["executor"].seen
    assert seen[1]["continuing"] and seen[1]["task_id"] == seen[0]["task_id"]
    assert not seen[2]["continuing"] and seen[2]["task_id"] != seen[0]["task_id"]


@pytest.mark.parametrize("text,state,said", [("fail", "failed", "the knowledge base is down"),
                                             ("reject", "rejected", "not a help-desk question")])
async def test_a2a_failed_or_rejected_task_fails_the_turn_without_a_retry(a2a_server, text, state, said):
    agent = A2AAgent(a2a_server["url"], {}, "desk", policy=policy())
    with pytest.raises(AgentFailure, match=f"ended {state}: {said}") as failure:
        await talk(agent, [text])
    assert failure.value.detail["kind"] == f"task_{state}" and failure.value.detail["attempts"] == 1
    assert len(a2a_server["executor"].seen) == 1


async def test_a2a_a_503_then_success_is_retried_honouring_retry_after(a2a_server):
    a2a_server["gate"].failures = [(503, "0"), (502, None)]
    waits = []
    agent = A2AAgent(a2a_server["url"], {}, "desk", policy=policy(waits=waits))
    [reply] = await talk(agent, ["hello"])
    assert reply.text == "echo: hello" and reply.extra["attempts"] == 3
    errors = [c.error for c in reply.calls[0].earlier_attempts]
    assert errors[0].startswith("server_error: HTTP 503") and errors[1].startswith("server_error: HTTP 502")
    assert waits == [0.0, 1.0]  # Retry-After: 0, then the backoff


async def test_a2a_a_401_is_not_retried(a2a_server):
    a2a_server["gate"].failures = [(401, None)]
    agent = A2AAgent(a2a_server["url"], {}, "desk", policy=policy())
    with pytest.raises(AgentFailure, match="HTTP 401") as failure:
        await talk(agent, ["hello"])
    assert failure.value.detail["status"] == 401 and failure.value.detail["kind"] == "client_error"
    assert failure.value.detail["attempts"] == 1 and a2a_server["executor"].seen == []


async def test_a2a_a_plain_message_answer_is_a_reply(a2a_server):
    agent = A2AAgent(a2a_server["url"], {}, "desk", policy=policy())
    [reply] = await talk(agent, ["message"])
    assert reply.text == "A plain message answer." and reply.extra["trace"] is None


async def test_a2a_unreachable_agent_is_retried_then_fails():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = A2AAgent(f"http://127.0.0.1:{port}", {}, "desk", policy=policy(attempts=2))
    with pytest.raises(AgentFailure) as failure:
        await talk(agent, ["hello"])
    assert failure.value.detail["attempts"] == 2 and failure.value.detail["kind"] in ("refused", "connection")


async def test_a2a_a_task_left_working_is_polled_until_it_completes(monkeypatch):
    monkeypatch.setattr(a2a_agent, "POLL_FIRST_S", 0.0)
    working = Task(id="t1", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
    done = Task(id="t1", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED,
                                                           message=new_text_message("polled answer")))

    class Client:
        polls = 0

        async def send_message(self, request):
            yield StreamResponse(task=working)

        async def get_task(self, request):
            Client.polls += 1
            return working if Client.polls < 2 else done

    agent = A2AAgent("http://unused", {}, "desk", policy=policy())

    async def client():
        return Client()
    monkeypatch.setattr(agent, "client", client)
    [reply] = await talk(agent, ["hello"])
    assert reply.text == "polled answer" and Client.polls == 2


# -- LangGraph: the recorded server API, or `langgraph dev` ---------------------------------------
NOW = "2026-12-06T17:28:18.849970+00:00"
RUN_META = {"created_by": "system", "graph_id": "agent", "run_attempt": 1, "langgraph_version": "1.2.24",
            "langgraph_api_version": "0.16.7", "langgraph_node": "respond", "langgraph_step": 1}


def lc(kind: str, content: str, **extra: Any) -> dict[str, Any]:
    """A message as the server serializes it (``type``-tagged, as recorded)."""
    message = {"content": content, "additional_kwargs": {}, "response_metadata": {}, "type": kind, "name": None,
               "id": str(uuid.uuid4())}
    if kind in ("ai", "AIMessageChunk"):
        message.update(tool_calls=[], invalid_tool_calls=[], usage_metadata=None)
    if kind == "AIMessageChunk":
        message.update(tool_call_chunks=[], chunk_position=None)
    if kind == "tool":
        message.update(artifact=None, status="success")
    return {**message, **extra}


def tokens(i: int, o: int) -> dict[str, int]:
    """A message's ``usage_metadata``."""
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


class RecordedLangGraph:
    """The LangGraph server API as ``langgraph-sdk`` uses it (``POST /threads``, ``POST
    /threads/{id}/runs/wait`` and ``/runs/stream``, ``GET /threads/{id}/runs/{run}``), its bodies
    and event sequences as recorded from ``langgraph dev`` running ``REAL_GRAPHS``: ``agent``
    (a tool call, its result, an ``echo N: TEXT`` reply streamed token by token, usage on the AI
    messages), ``ask`` (``interrupt("Which Ubuntu version?")``, then ``thanks, ANSWER``) and
    ``failing`` (raises ``ValueError("model provider down")``). Every request is kept;
    ``failures`` answer the next run requests with (status, Retry-After)."""

    def __init__(self):
        self.threads: dict[str, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.failures: list[tuple[int, str | None]] = []

    def app(self, port: int) -> Starlette:
        """The ASGI app."""
        return Starlette(routes=[
            Route("/info", lambda r: JSONResponse({"version": "0.16.7"})),
            Route("/threads", self.create_thread, methods=["POST"]),
            Route("/threads/{thread_id}/runs/wait", self.wait, methods=["POST"]),
            Route("/threads/{thread_id}/runs/stream", self.stream, methods=["POST"]),
            Route("/threads/{thread_id}/runs/{run_id}", self.get_run)])

    async def _record(self, request: Request) -> dict[str, Any]:
        body = json.loads(await request.body() or b"{}")
        self.requests.append({"path": request.url.path, "headers": dict(request.headers), "body": body})
        return body

    async def create_thread(self, request: Request) -> Response:
        body = await self._record(request)
        tid = body.get("thread_id") or str(uuid.uuid4())
        if tid in self.threads and body.get("if_exists") != "do_nothing":
            return JSONResponse({"detail": f"Thread with ID {tid} already exists"}, 409)
        return JSONResponse(self.threads.setdefault(tid, {
            "thread_id": tid, "created_at": NOW, "updated_at": NOW, "state_updated_at": NOW,
            "metadata": body.get("metadata") or {}, "status": "idle", "config": {}, "values": None}))

    async def _refused(self, request: Request, body: dict[str, Any]) -> Response | None:
        if self.failures:
            status, retry = self.failures.pop(0)
            return PlainTextResponse("overloaded", status, headers={"Retry-After": retry} if retry else None)
        if body.get("assistant_id") not in ("agent", "ask", "failing"):
            return JSONResponse({"detail": f"Invalid assistant: '{body.get('assistant_id')}'. Must be either:\n- A valid "
                                           "assistant UUID, or\n- One of the registered graphs: agent, ask, failing"}, 422)
        if request.path_params["thread_id"] not in self.threads:
            return JSONResponse({"detail": "Thread not found"}, 404)
        return None

    def _events(self, thread: dict[str, Any], body: dict[str, Any]) -> list[tuple[str, Any]]:
        """The run's events after ``metadata``: the state with the input, the new messages (the
        reply in chunks), the final state; or an ``error`` event."""
        messages = list((thread["values"] or {}).get("messages") or [])
        messages += [lc("human" if m["role"] == "user" else "ai", m["content"])
                     for m in (body.get("input") or {}).get("messages", [])]
        thread["values"], thread["status"] = {"messages": messages}, "idle"
        events: list[tuple[str, Any]] = [("values", {"messages": list(messages)})]
        resume = (body.get("command") or {}).get("resume")
        if body["assistant_id"] == "failing":
            return events + [("error", {"error": "ValueError", "message": "model provider down"})]
        if body["assistant_id"] == "ask" and resume is None:
            thread["status"] = "interrupted"
            asked = [{"value": "Which Ubuntu version?", "id": "6d455b6bbb0c7396d03d1099032cfcf1", "response_schema": None}]
            return events + [("values", {"messages": list(messages), "__interrupt__": asked})]
        if body["assistant_id"] == "ask":
            added = [lc("ai", f"thanks, {resume}")]
        else:
            last, n = messages[-1]["content"], sum(m["type"] == "human" for m in messages)
            call = {"name": "lookup", "args": {"q": last}, "id": f"c{n}", "type": "tool_call"}
            added = [lc("ai", "", tool_calls=[call], usage_metadata=tokens(10, 2)),
                     lc("tool", "found it", tool_call_id=f"c{n}"), lc("ai", f"echo {n}: {last}", usage_metadata=tokens(20, 5))]
        events += [("messages", [m, RUN_META]) for m in added[:-1]]
        words = added[-1]["content"].split(" ")
        events += [("messages", [lc("AIMessageChunk", (" " if i else "") + w, id=added[-1]["id"]), RUN_META])
                   for i, w in enumerate(words)]
        thread["values"] = {"messages": messages + added}
        return events + [("values", {"messages": messages + added})]

    async def wait(self, request: Request) -> Response:
        body = await self._record(request)
        refused = await self._refused(request, body)
        if refused is not None:
            return refused
        event, data = self._events(self.threads[request.path_params["thread_id"]], body)[-1]
        return JSONResponse({"__error__": data} if event == "error" else data)

    async def stream(self, request: Request) -> Response:
        body = await self._record(request)
        refused = await self._refused(request, body)
        if refused is not None:
            return refused
        tid, run_id = request.path_params["thread_id"], str(uuid.uuid4())
        events = [("metadata", {"run_id": run_id, "attempt": 1})] + self._events(self.threads[tid], body)

        async def sse():
            for event, data in events:
                await asyncio.sleep(0.005)
                yield f"event: {event}\ndata: {json.dumps(data)}\n\n"
        return StreamingResponse(sse(), media_type="text/event-stream", headers={
            "location": f"/threads/{tid}/runs/{run_id}/stream", "content-location": f"/threads/{tid}/runs/{run_id}",
            "cache-control": "no-store"})

    async def get_run(self, request: Request) -> Response:
        await self._record(request)
        return JSONResponse({"run_id": request.path_params["run_id"], "thread_id": request.path_params["thread_id"],
                             "status": "success", "metadata": {}})


REAL_GRAPHS = '''
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt


def respond(state: MessagesState):
    last = state["messages"][-1].content
    n = sum(1 for m in state["messages"] if m.type == "human")
    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": last}, "id": f"c{n}"}],
                     usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12})
    reply = AIMessage(f"echo {n}: {last}", usage_metadata={"input_tokens": 20, "output_tokens": 5, "total_tokens": 25})
    return {"messages": [call, ToolMessage("found it", tool_call_id=f"c{n}"), reply]}


def ask(state: MessagesState):
    return {"messages": [AIMessage(f"thanks, {interrupt('Which Ubuntu version?')}")]}


def boom(state: MessagesState):
    raise ValueError("model provider down")


def one(name, node):
    g = StateGraph(MessagesState)
    g.add_node(name, node)
    g.add_edge(START, name)
    g.add_edge(name, END)
    return g.compile()


agent, ask_graph, failing = one("respond", respond), one("ask", ask), one("boom", boom)
'''


@contextmanager
def langgraph_dev(cli: str, folder: Path):
    """``langgraph dev`` serving ``REAL_GRAPHS`` from ``folder``; yields its URL."""
    (folder / "graphs.py").write_text(REAL_GRAPHS)
    (folder / "langgraph.json").write_text(json.dumps({"dependencies": ["."], "graphs": {
        "agent": "./graphs.py:agent", "ask": "./graphs.py:ask_graph", "failing": "./graphs.py:failing"}}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    proc = subprocess.Popen([cli, "dev", "--no-browser", "--no-reload", "--port", str(port)], cwd=folder, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("langgraph dev did not start within 90 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.fixture(scope="module", params=["recorded", "real"])
def langgraph_server(request, tmp_path_factory):
    """The recorded server API on a free port, or (``DESKBENCH_LANGGRAPH_CLI`` set) ``langgraph dev``."""
    if request.param == "real":
        cli = os.environ.get("DESKBENCH_LANGGRAPH_CLI")
        if not cli:
            pytest.skip("set DESKBENCH_LANGGRAPH_CLI to a langgraph executable with the inmem extra")
        with langgraph_dev(cli, tmp_path_factory.mktemp("langgraph")) as url:
            yield {"url": url, "recorded": None}
        return
    recorded = RecordedLangGraph()
    with serving(recorded.app) as port:
        yield {"url": f"http://127.0.0.1:{port}", "recorded": recorded}


def fresh_problem() -> Problem:
    """A problem with a conversation id of its own (the module's server keeps its threads)."""
    return Problem(f"run-1:wifi#{uuid.uuid4().hex[:8]}", "My wifi drops.", None, None,
                   context={"run_id": "run-1", "task_id": "wifi", "trial": 1})


EXPECTED_TRACE = {"tool_calls": [{"name": "lookup", "arguments": {"q": "hello"}, "result": "found it"}]}


@pytest.mark.parametrize("stream", [False, True])
async def test_langgraph_turns_are_runs_on_one_thread_with_trace_and_usage(langgraph_server, stream):
    agent = LangGraphServerAgent(langgraph_server["url"], "agent", {"x-api-key": "s3", "X-Team": "desk"}, "desk",
                                 stream=stream, policy=policy())
    problem = fresh_problem()
    first, second = await talk(agent, ["hello", "again"], problem)
    await agent.aclose()
    assert (first.text, second.text) == ("echo 1: hello", "echo 2: again")  # only the turn's new messages
    assert first.extra["trace"] == EXPECTED_TRACE and first.extra["adapter"] == "langgraph"
    assert first.extra["usage"] == {"input_tokens": 30, "output_tokens": 7, "cost": None}
    assert first.calls[0].input_tokens == 30 and first.calls[0].usage_reported
    if stream:
        assert 0 < first.extra["ttft_ms"] <= first.extra["latency_ms"]
    else:
        assert first.extra["ttft_ms"] is None
    recorded = langgraph_server["recorded"]
    if recorded is None:
        return
    mine = [r for r in recorded.requests if thread_id_of(problem.interaction_id) in json.dumps(r)]
    assert sum(r["path"] == "/threads" for r in mine) == 1  # the thread made once, on the first turn
    runs = [r for r in mine if r["path"].endswith("/wait" if not stream else "/stream")]
    assert runs[1]["body"]["input"] == {"messages": [{"role": "user", "content": "again"}]}
    assert runs[0]["body"]["metadata"] == {"deskbench_run_id": "run-1", "deskbench_task_id": "wifi", "deskbench_trial": 1,
                                           "deskbench_persona": "cooperative"}
    assert runs[0]["body"]["assistant_id"] == "agent" and runs[0]["body"]["multitask_strategy"] == "rollback"
    assert all(r["headers"]["x-api-key"] == "s3" and r["headers"]["x-team"] == "desk" for r in mine)


async def test_langgraph_a_thread_the_server_lacks_gets_the_whole_conversation(langgraph_server):
    agent = LangGraphServerAgent(langgraph_server["url"], "agent", {}, "desk", policy=policy())
    history = [Message("user", "hello"), Message("agent", "echo 1: hello"), Message("user", "again")]
    reply = await agent.respond(fresh_problem(), history)  # e.g. a run resumed against a new server
    assert reply.text == "echo 2: again"


@pytest.mark.parametrize("stream", [False, True])
async def test_langgraph_an_interrupt_asks_the_user_and_the_next_message_resumes(langgraph_server, stream):
    agent = LangGraphServerAgent(langgraph_server["url"], "ask", {}, "desk", stream=stream, policy=policy())
    asked, answered = await talk(agent, ["hi", "22.04"], fresh_problem())
    assert asked.text == "Which Ubuntu version?" and answered.text == "thanks, 22.04"
    assert answered.extra["usage"] == "not reported" and answered.extra["trace"] is None
    recorded = langgraph_server["recorded"]
    if recorded is not None:
        last_run = [r for r in recorded.requests if r["path"].endswith(("/wait", "/stream"))][-1]
        assert last_run["body"]["command"] == {"resume": "22.04"} and "input" not in last_run["body"]


@pytest.mark.parametrize("stream", [False, True])
async def test_langgraph_a_failed_run_fails_the_turn_without_a_retry(langgraph_server, stream):
    agent = LangGraphServerAgent(langgraph_server["url"], "failing", {}, "desk", stream=stream, policy=policy())
    with pytest.raises(AgentFailure, match="the graph run failed: ValueError: model provider down") as failure:
        await talk(agent, ["hi"], fresh_problem())
    assert failure.value.detail["kind"] == "run_error" and failure.value.detail["attempts"] == 1


async def test_langgraph_an_unknown_assistant_is_a_client_error_not_retried(langgraph_server):
    agent = LangGraphServerAgent(langgraph_server["url"], "nope", {}, "desk", policy=policy())
    with pytest.raises(AgentFailure, match="HTTP 422") as failure:
        await talk(agent, ["hi"], fresh_problem())
    assert failure.value.detail["status"] == 422 and failure.value.detail["attempts"] == 1
    assert "Invalid assistant" in failure.value.detail["body"]


@pytest.mark.parametrize("stream", [False, True])
async def test_langgraph_a_503_then_success_is_retried(langgraph_server, stream):
    recorded = langgraph_server["recorded"]
    if recorded is None:
        pytest.skip("the failures are the recorded server's")
    recorded.failures = [(503, "0"), (429, "2")]
    waits = []
    agent = LangGraphServerAgent(langgraph_server["url"], "agent", {}, "desk", stream=stream,
                                 policy=policy(waits=waits))
    [reply] = await talk(agent, ["hello"], fresh_problem())
    assert reply.text == "echo 1: hello" and reply.extra["attempts"] == 3 and waits == [0.0, 2.0]
    errors = [c.error for c in reply.calls[0].earlier_attempts]
    assert errors[0].startswith("server_error: HTTP 503") and errors[1].startswith("rate_limited: HTTP 429")


# -- from the config -------------------------------------------------------------------------------
def test_the_config_builds_both_adapters_and_check_agent_reaches_them(tmp_path, a2a_server):
    recorded = RecordedLangGraph()
    with serving(recorded.app) as port:
        url = f"http://127.0.0.1:{port}"
        cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "run": {"agent": "langgraph"},
                                     "agent": {"url": url, "target": "agent", "stream": True}})
        agent = build_external_agent(cfg)
        assert isinstance(agent, LangGraphServerAgent) and agent.stream and agent.assistant_id == "agent"
        assert check_agent(cfg) is None
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"), "run": {"agent": "a2a"},
                                 "agent": {"url": a2a_server["url"]}})
    assert isinstance(build_external_agent(cfg), A2AAgent) and check_agent(cfg) is None
