"""The ``a2a`` adapter: an Agent2Agent agent through ``a2a-sdk``, ``--agent-url URL``.

The agent card is read from ``URL/.well-known/agent-card.json`` once; the SDK's client then
speaks the protocol version and binding the card offers (A2A 1.0 ``SendMessage`` or 0.3
``message/send``, JSON-RPC or HTTP+JSON). Each conversation is one ``context_id`` derived from the
conversation id; each turn sends the user's message, with the run's metadata in the message's
``metadata``, and waits for the task (polling one the agent left submitted or working):

- ``completed``: the reply is the task's new artifacts' text (else its status message, else its
  last agent message); a plain ``Message`` answer is a reply too;
- ``input-required``: the agent asks the user; its question is the reply, the conversation goes
  on and the user's next message continues the same task (its ``task_id``);
- ``failed``, ``rejected``, ``canceled``, ``auth-required``: the turn fails, not retried, naming
  the state and what the agent said.

A2A has no usage or trace; an agent may put the contract's ``usage`` and ``trace`` objects in the
task's (or its status message's) ``metadata``.
"""
from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, Iterator, Sequence

import httpx
from a2a.client import A2ACardResolver, A2AClientTimeoutError, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, get_text_parts
from a2a.types import (AgentCard, GetTaskRequest, Message, Part, Role, SendMessageRequest, Task, TaskState)
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict

from graphs.protocols import Problem
from harness.adapters.contract import AgentResponse, ContractError, parse_response
from harness.adapters.external import AttemptError, ExternalAgent, Sent, attempt_error, status_error
from harness.adapters.http_agent import LoopClients, retry_after

CONTEXT_NAMESPACE = uuid.UUID("0b8e4f0e-7d1a-5c55-8f43-5a0c2e61d2a7")
"""The namespace of the contexts' uuid5 ids (fixed: the same conversation keeps its context)."""
PENDING = {TaskState.TASK_STATE_UNSPECIFIED, TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING}
ENDED = {TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_REJECTED, TaskState.TASK_STATE_CANCELED,
         TaskState.TASK_STATE_AUTH_REQUIRED}
BINDINGS = ["JSONRPC", "HTTP+JSON"]
POLL_FIRST_S, POLL_MAX_S = 0.2, 2.0


def context_id_of(conversation_id: str) -> str:
    """The A2A context of a conversation: a uuid5 of its id."""
    return str(uuid.uuid5(CONTEXT_NAMESPACE, conversation_id))


def state_name(state: int) -> str:
    """A task state as the specification writes it (``input-required``, ``completed``, ...)."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")


def part_texts(parts: Sequence[Part]) -> str:
    """The text of parts: the text parts, else the data parts as JSON (files and URLs left out)."""
    texts = [t for t in get_text_parts(parts) if t.strip()]
    if not texts:
        texts = [json.dumps(d, ensure_ascii=False, default=str) for d in get_data_parts(parts)]
    return "\n".join(texts)


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def a2a_error(exc: BaseException) -> AttemptError:
    """An exception of ``a2a-sdk`` as an attempt error: an HTTP status (of the card or the call)
    by :func:`~harness.adapters.external.status_error` (429 and 5xx retried, other 4xx not), a
    timeout retried, an A2A error the agent answered with (task not found, invalid params, ...)
    not, the rest as :func:`~harness.adapters.external.attempt_error` sorts it."""
    if isinstance(exc, (AttemptError, ContractError)):
        return attempt_error(exc)
    for cause in _chain(exc):
        response = getattr(cause, "response", None) if isinstance(cause, httpx.HTTPStatusError) else None
        if response is not None:
            try:
                body = response.text
            except httpx.ResponseNotRead:
                body = str(cause)
            return status_error(response.status_code, body, retry_after(response))
        if isinstance(cause, json.JSONDecodeError):
            return AttemptError(f"malformed response: not JSON ({exc})", False, kind="malformed")
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status_error(status, str(exc))
    if isinstance(exc, A2AClientTimeoutError):
        return AttemptError("timed out", True, kind="timeout")
    failure = attempt_error(exc)
    if failure.kind == "unknown" and isinstance(exc, A2AError):
        return AttemptError(f"the agent answered with an A2A error: {type(exc).__name__}: {exc}", False,
                            kind="protocol_error", body=str(exc))
    return failure


class A2AAgent(ExternalAgent):
    """An A2A agent found by its agent card.

    Args:
        url: the agent's base URL (its card at ``/.well-known/agent-card.json``).
        headers: sent with every request (the card's too).
        name: the agent's name.
        **kw: timeout_s, policy, prices (:class:`~harness.adapters.external.ExternalAgent`).
    """

    kind = "a2a"

    def __init__(self, url: str, headers: dict[str, str], name: str, **kw: Any):
        super().__init__(name, **kw)
        self.url = url
        self.clients = LoopClients(headers, self.timeout_s)
        self.card: AgentCard | None = None
        self._open: dict[str, tuple[str, frozenset[str]]] = {}

    async def client(self) -> Any:
        """An SDK client over the running loop's connection pool (the card read on first use).

        Raises:
            AttemptError: the card offers neither JSON-RPC nor HTTP+JSON."""
        http = self.clients.get()
        if self.card is None:
            self.card = await A2ACardResolver(http, self.url).get_agent_card()
        try:
            return ClientFactory(ClientConfig(httpx_client=http, streaming=False,
                                              supported_protocol_bindings=BINDINGS)).create(self.card)
        except ValueError as exc:
            offered = ", ".join(f"{i.protocol_binding} {i.protocol_version}" for i in self.card.supported_interfaces)
            raise AttemptError(f"the agent card offers no interface this adapter speaks ({exc}; offered: "
                               f"{offered or 'none'}; spoken: {', '.join(BINDINGS)})", False, kind="client_error") from exc

    async def send(self, request: dict[str, Any], problem: Problem) -> Sent:
        """Send the user's message in the conversation's context and read the task it leads to.

        Raises:
            AttemptError: an HTTP error status, a task that failed, or any error of the SDK, sorted."""
        try:
            return await self._send(request)
        except Exception as exc:
            raise a2a_error(exc) from exc

    async def _send(self, request: dict[str, Any]) -> Sent:
        client = await self.client()
        context_id = context_id_of(request["conversation_id"])
        message = self.message(request, context_id)
        result = None
        async for event in client.send_message(SendMessageRequest(message=message)):
            result = event
        if result is not None and result.HasField("message"):
            self._open.pop(context_id, None)
            return Sent(self._response([part_texts(result.message.parts)], result.message.metadata))
        if result is None or not result.HasField("task"):
            raise ContractError("the agent answered the message with neither a task nor a message")
        task, delay = result.task, POLL_FIRST_S
        while task.status.state in PENDING:  # the turn's timeout bounds the polling
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX_S)
            task = await client.get_task(GetTaskRequest(id=task.id))
        return Sent(self.task_reply(task, context_id))

    def message(self, request: dict[str, Any], context_id: str) -> Message:
        """The user's message of the turn: in the conversation's context, in the open task where
        the agent asked for input, with the conversation, turn and run metadata."""
        metadata = {"conversation_id": request["conversation_id"], "turn": request["turn"],
                    **{k: v for k, v in request["metadata"].items() if v is not None}}
        message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), context_id=context_id,
                          parts=[Part(text=request["message"])], metadata=metadata)
        if context_id in self._open:
            message.task_id = self._open[context_id][0]
        return message

    def task_reply(self, task: Task, context_id: str) -> AgentResponse:
        """The reply of a task that completed or asks for input.

        Raises:
            AttemptError: the task failed, was rejected or canceled, or needs authentication (not retried).
            ContractError: the task has no text for the user."""
        state, said = task.status.state, part_texts(task.status.message.parts)
        shown = self._open.pop(context_id, ("", frozenset()))[1]  # artifacts of the task's earlier turns
        if state in ENDED:
            detail = said or "no message"
            raise AttemptError(f"the agent's task {task.id} ended {state_name(state)}: {detail}", False,
                               kind=f"task_{state_name(state).replace('-', '_')}", body=detail)
        artifacts = [part_texts(a.parts) for a in task.artifacts if a.artifact_id not in shown]
        artifacts = [t for t in artifacts if t.strip()]
        if state == TaskState.TASK_STATE_INPUT_REQUIRED:
            self._open[context_id] = (task.id, frozenset(a.artifact_id for a in task.artifacts))
            texts = [said] if said.strip() else artifacts
        elif state == TaskState.TASK_STATE_COMPLETED:
            texts = artifacts or ([said] if said.strip() else [])
        else:
            raise ContractError(f"the agent's task {task.id} is {state_name(state)}, neither completed nor "
                                "asking for input")
        if not texts:
            agent = [part_texts(m.parts) for m in task.history if m.role == Role.ROLE_AGENT]
            texts = [t for t in agent[-1:] if t.strip()]
        if not texts:
            raise ContractError(f"the agent's task {task.id} is {state_name(state)} with no text for the user "
                                "(no text artifact, status message or agent message)")
        return self._response(texts, task.metadata, task.status.message.metadata)

    @staticmethod
    def _response(texts: list[str], *metadata: Any) -> AgentResponse:
        """The contract's response: the texts, with ``usage`` and ``trace`` where the metadata has them."""
        reported: dict[str, Any] = {}
        for meta in metadata:
            found = MessageToDict(meta) if meta is not None else {}
            reported.update({k: found[k] for k in ("usage", "trace") if k in found})
        if not any(t.strip() for t in texts):
            raise ContractError("the agent's message has no text")
        return parse_response({"messages": texts, **reported})

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.clients.aclose()
