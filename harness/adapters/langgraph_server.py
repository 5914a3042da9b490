"""The ``langgraph`` adapter: a deployed LangGraph server (``langgraph dev``, ``langgraph up``, a
LangSmith deployment) through ``langgraph-sdk``, ``--agent-url URL --agent-target ASSISTANT_ID``.

Each conversation is one thread whose id is derived from the conversation id (a resumed run finds
its thread again); each turn is one run on it: ``runs.wait`` with the user's new message, or with
``agent.stream`` ``runs.stream`` (``messages-tuple`` and ``values``) so that the time to the
first token is measured. A thread the server does not have yet (the first turn, or a server
that lost its memory) gets the whole conversation. The reply is the run's new AI messages; their
tool calls, the tool messages and ``usage_metadata`` are the trace and the usage, as for a graph
run in-process (:mod:`harness.adapters.graph_agent`). A run that stops at ``interrupt(...)``
replies with the interrupt's value (the agent asks the user) and the user's next message resumes
it (``Command(resume=...)``). Headers go with every request (``x-api-key`` for a LangSmith
deployment); no API key is read from the environment.
"""
from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Mapping

import httpx
from langchain_core.messages import AIMessage, BaseMessage, convert_to_messages, messages_from_dict
from langgraph_sdk import get_client

from graphs.protocols import Problem
from harness.adapters.contract import AgentResponse, ContractError
from harness.adapters.external import AttemptError, ExternalAgent, Sent, attempt_error, status_error
from harness.adapters.graph_agent import new_messages, response_of
from harness.adapters.http_agent import retry_after

THREAD_NAMESPACE = uuid.UUID("6f1d3c52-4b1e-5a4e-9c07-2f0d5e8a9b31")
"""The namespace of the threads' uuid5 ids (fixed: the same conversation finds the same thread)."""
STREAM_MODES = ["messages-tuple", "values"]
_AI_TYPES = ("ai", "AIMessageChunk")


def thread_id_of(conversation_id: str) -> str:
    """The thread of a conversation: a uuid5 of its id (LangGraph thread ids are UUIDs)."""
    return str(uuid.uuid5(THREAD_NAMESPACE, conversation_id))


def state_messages(raw: Any) -> list[BaseMessage]:
    """LangChain messages from a thread state's serialized ``messages`` (``type``-tagged dicts as
    the server sends them, with their tool calls and ``usage_metadata``; role dicts too).

    Raises:
        ContractError: not a list, or an item that is no message."""
    if not isinstance(raw, list):
        raise ContractError("the run's state has no 'messages' list: the assistant's graph must keep its "
                            "conversation in a 'messages' key (MessagesState)")
    out: list[BaseMessage] = []
    for i, item in enumerate(raw):
        try:
            if isinstance(item, Mapping) and "type" in item and "role" not in item:
                out.extend(messages_from_dict([{"type": item["type"], "data": dict(item)}]))
            else:
                out.extend(convert_to_messages([item]))
        except (ValueError, TypeError, KeyError) as exc:
            raise ContractError(f"state 'messages'[{i}] is not a LangChain message ({exc}): "
                                f"{json.dumps(item, default=str)[:160]}") from exc
    return out


def interrupt_texts(values: Mapping[str, Any]) -> list[str]:
    """What a run stopped at ``interrupt(...)`` asks: each interrupt's value (a string as it is,
    anything else as JSON)."""
    texts = []
    for item in values.get("__interrupt__") or []:
        value = item.get("value") if isinstance(item, Mapping) else item
        texts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))
    return [t for t in texts if t.strip()]


def run_error(error: Any) -> AttemptError:
    """The attempt error of a run that failed inside the graph (``__error__`` or an ``error``
    event): not retried, since the thread already holds the user's message."""
    if isinstance(error, Mapping):
        detail = f"{error.get('error') or 'Error'}: {error.get('message') or ''}".strip()
    else:
        detail = str(error)
    return AttemptError(f"the graph run failed: {detail}", False, kind="run_error", body=detail)


def turn_response(values: Any, seen: int | None = None) -> tuple[AgentResponse, bool]:
    """The turn's response from the run's final state, and whether the run stopped at an interrupt.

    Args:
        values: the thread's state after the run (``runs.wait``'s result, the last ``values`` event).
        seen: for a resumed run, how many messages the state had when the run was interrupted
            (the new ones follow them); else the new messages are those after the last human one.

    Raises:
        AttemptError: the run failed (``__error__``).
        ContractError: no state, no messages, or no AI text and no interrupt.
    """
    if not isinstance(values, Mapping):
        raise ContractError(f"the run returned no state object: {json.dumps(values, default=str)[:200]}")
    if values.get("__error__") is not None:
        raise run_error(values["__error__"])
    messages = state_messages(values.get("messages"))
    added = messages[seen:] if seen is not None and seen <= len(messages) else new_messages(messages)
    asks = interrupt_texts(values)
    return response_of(added + [AIMessage(text) for text in asks]), bool(asks)


def sdk_error(exc: BaseException) -> AttemptError:
    """An exception of ``langgraph-sdk`` as an attempt error: an HTTP status by
    :func:`~harness.adapters.external.status_error` (429 and 5xx retried, other 4xx not, with the
    body and ``Retry-After``), the rest as :func:`~harness.adapters.external.attempt_error` sorts it."""
    response = getattr(exc, "response", None) if isinstance(exc, httpx.HTTPStatusError) else None
    if response is None:
        return attempt_error(exc)
    body = getattr(exc, "body", None)
    if body is None:
        try:
            body = response.text
        except httpx.ResponseNotRead:
            body = str(exc)
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    return status_error(response.status_code, text, retry_after(response))


def _has_text(data: Any) -> bool:
    """Whether a ``messages`` stream event carries AI text (the first token)."""
    for item in data if isinstance(data, list) else [data]:
        if isinstance(item, Mapping) and item.get("type") in _AI_TYPES:
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") if isinstance(b, Mapping) else str(b) for b in content)
            if isinstance(content, str) and content:
                return True
    return False


@dataclass(slots=True)
class _Thread:
    """What the adapter knows of a conversation's thread: whether the server has its messages,
    whether its last run stopped at an interrupt, and how many messages its state then had."""

    fresh: bool
    interrupted: bool
    seen: int


class LangGraphServerAgent(ExternalAgent):
    """An assistant (a graph id or an assistant UUID) on a LangGraph server.

    Args:
        url: the server's base URL.
        assistant_id: ``--agent-target``: the graph's name in ``langgraph.json`` or an assistant id.
        headers: sent with every request (``x-api-key`` for LangSmith deployments).
        name: the agent's name.
        stream: stream each run (the time to the first token recorded).
        **kw: timeout_s, policy, prices (:class:`~harness.adapters.external.ExternalAgent`).
    """

    kind = "langgraph"

    def __init__(self, url: str, assistant_id: str, headers: dict[str, str], name: str,
                 stream: bool = False, **kw: Any):
        super().__init__(name, **kw)
        self.url, self.assistant_id, self.headers, self.stream = url.rstrip("/"), assistant_id, headers, stream
        self._by_loop: dict[int, tuple[asyncio.AbstractEventLoop, Any]] = {}
        self._threads: dict[str, _Thread] = {}

    def client(self) -> Any:
        """The running loop's ``LangGraphClient`` (made on first use; those of closed loops dropped).
        An ``x-api-key`` header is the SDK's API key (the SDK refuses it as a custom header)."""
        loop = asyncio.get_running_loop()
        entry = self._by_loop.get(id(loop))
        if entry is None or entry[0] is not loop:
            self._by_loop = {k: v for k, v in self._by_loop.items() if not v[0].is_closed()}
            timeout = httpx.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0))
            api_key = next((v for k, v in self.headers.items() if k.lower() == "x-api-key"), None)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "x-api-key"}
            client = get_client(url=self.url, api_key=api_key, headers=headers, timeout=timeout)
            entry = self._by_loop[id(loop)] = (loop, client)
        return entry[1]

    async def send(self, request: dict[str, Any], problem: Problem) -> Sent:
        """One run on the conversation's thread (the thread made on first use).

        Raises:
            AttemptError: an HTTP error status, a failed run, or any error of the SDK, sorted."""
        thread_id = thread_id_of(request["conversation_id"])
        try:
            return await self._run(thread_id, request)
        except Exception as exc:
            self._threads.pop(thread_id, None)  # read the thread again before the next attempt
            raise sdk_error(exc) from exc

    async def _run(self, thread_id: str, request: dict[str, Any]) -> Sent:
        client = self.client()
        thread = self._threads.get(thread_id) or await self._open(client, thread_id, request)
        payload = self._payload(thread, request)
        if self.stream:
            values, first = await self._streamed(client, thread_id, payload)
        else:
            values, first = await client.runs.wait(thread_id, self.assistant_id, raise_error=False, **payload), None
        response, interrupted = turn_response(values, thread.seen if thread.interrupted else None)
        self._threads[thread_id] = _Thread(False, interrupted, len(values.get("messages") or []))
        return Sent(response, ttft_ms=first)

    async def _open(self, client: Any, thread_id: str, request: dict[str, Any]) -> _Thread:
        """Create the thread, or find it (``if_exists="do_nothing"`` returns the existing one)."""
        thread = await client.threads.create(thread_id=thread_id, if_exists="do_nothing",
                                             metadata={"conversation_id": request["conversation_id"]})
        messages = ((thread or {}).get("values") or {}).get("messages") or []
        return _Thread(not messages, (thread or {}).get("status") == "interrupted", len(messages))

    def _payload(self, thread: _Thread, request: dict[str, Any]) -> dict[str, Any]:
        """The run's input (the new message, or the whole conversation for a thread without it)
        or its resume command, its metadata, and ``rollback`` of a run still going on the thread
        (an earlier attempt that timed out)."""
        # deskbench_* names: a "run_id" in a run's metadata would read as the server's own run id
        payload: dict[str, Any] = {"metadata": {f"deskbench_{k}": v for k, v in request["metadata"].items()
                                                if v is not None},
                                   "multitask_strategy": "rollback"}
        if thread.interrupted:
            payload["command"] = {"resume": request["message"]}
        elif thread.fresh:
            payload["input"] = {"messages": [dict(m) for m in request["messages"]]}
        else:
            payload["input"] = {"messages": [{"role": "user", "content": request["message"]}]}
        return payload

    async def _streamed(self, client: Any, thread_id: str, payload: dict[str, Any]) -> tuple[Any, float | None]:
        """Stream the run: the first AI text times the first token, the last ``values`` is the state."""
        started, first, values = perf_counter(), None, None
        async for part in client.runs.stream(thread_id, self.assistant_id, stream_mode=STREAM_MODES, **payload):
            if part.event == "error":
                raise run_error(part.data)
            if part.event == "values":
                values = part.data
            elif first is None and part.event.startswith("messages") and _has_text(part.data):
                first = (perf_counter() - started) * 1000.0
        if values is None:
            raise ContractError("the run's stream ended without the thread's state (no 'values' event)")
        return values, first

    async def aclose(self) -> None:
        """Close the running loop's client."""
        entry = self._by_loop.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].aclose()
