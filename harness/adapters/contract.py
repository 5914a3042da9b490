"""The agent contract (docs/agents.md): the request the harness sends the agent under test each
turn, and the response it accepts back, validated with errors that name what was wrong.

One shape serves every adapter: the ``http`` adapter posts the request as JSON, the ``python``
adapter passes it to a callable, and the others translate their own protocol into the same
:class:`AgentResponse`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from graphs.protocols import Message, Problem

CONTRACT_VERSION = "1"
"""The version of the request and response shapes; the request carries it."""

_ROLES = {"user": "user", "agent": "assistant"}


class ContractError(ValueError):
    """A response that breaks the contract; the message names what was wrong and the fix."""


@dataclass(slots=True)
class AgentResponse:
    """A validated response of the agent under test: its messages of this turn and what it said
    about itself (``usage`` None: not reported)."""

    messages: list[str]
    end: bool = False
    usage: dict[str, Any] | None = None
    trace: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The turn's reply as the judges read it: the messages joined by a blank line."""
        return "\n\n".join(self.messages)


def build_request(conversation_id: str, turn: int, history: Sequence[Message],
                  metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The turn's request: the conversation id, the turn number, the user's latest message, the
    whole history as user/assistant messages (ending with that message) and the run's metadata."""
    messages = [{"role": _ROLES[m.role], "content": m.content} for m in history]
    latest = next((m.content for m in reversed(history) if m.role == "user"), "")
    return {"contract_version": CONTRACT_VERSION, "conversation_id": conversation_id, "turn": turn,
            "message": latest, "messages": messages, "metadata": dict(metadata)}


def request_metadata(problem: Problem, run_id: str | None = None, task_id: str | None = None,
                     trial: int | None = None) -> dict[str, Any]:
    """The request's ``metadata``: the run, task, trial and persona of the conversation."""
    return {"run_id": run_id, "task_id": task_id, "trial": trial, "persona": problem.persona}


def parse_response(body: Any) -> AgentResponse:
    """Validate a response: a string (the reply), or ``{"reply": TEXT}`` or ``{"messages": [...]}``
    with optional ``end``, ``usage``, ``trace`` and (NoisyToolBench) ``tool_calls``.

    Raises:
        ContractError: naming the field that is missing or of the wrong type.
    """
    if isinstance(body, str):
        return AgentResponse([body])
    if not isinstance(body, Mapping):
        raise ContractError(f"the response is a {type(body).__name__}, not an object: return "
                            '{"reply": "..."} or {"messages": [{"role": "assistant", "content": "..."}]}')
    tool_calls = _tool_calls(body.get("tool_calls"))
    messages = _messages(body)
    if not messages and not tool_calls:
        raise ContractError('the response has no "reply" (a string) and no "messages" (a list of '
                            '{"role": "assistant", "content": TEXT}); keys given: '
                            + (", ".join(sorted(map(str, body))) or "none"))
    end = body.get("end", False)
    if not isinstance(end, bool):
        raise ContractError(f'"end" must be true or false, got {end!r}')
    trace = body.get("trace")
    if trace is not None and not isinstance(trace, Mapping):
        raise ContractError(f'"trace" must be an object (tool_calls, retrieved, ...), got {type(trace).__name__}')
    return AgentResponse(messages, end, _usage(body.get("usage")), dict(trace) if trace else None, tool_calls)


def _messages(body: Mapping) -> list[str]:
    if "reply" in body and body["reply"] is not None:
        if not isinstance(body["reply"], str):
            raise ContractError(f'"reply" must be a string, got {type(body["reply"]).__name__}')
        return [body["reply"]]
    raw = body.get("messages")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ContractError(f'"messages" must be a list, got {type(raw).__name__}')
    texts = []
    for i, m in enumerate(raw):
        if isinstance(m, str):
            texts.append(m)
            continue
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            raise ContractError(f'"messages"[{i}] must be {{"role": "assistant", "content": TEXT}}, got {m!r:.120}')
        if m.get("role", "assistant") != "assistant":
            raise ContractError(f'"messages"[{i}] has role {m.get("role")!r}; the agent sends "assistant" messages')
        texts.append(m["content"])
    return texts


def _usage(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ContractError(f'"usage" must be an object with input_tokens, output_tokens, cost; got {raw!r:.80}')
    usage = {}
    for key in ("input_tokens", "output_tokens", "cost"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ContractError(f'"usage.{key}" must be a number >= 0, got {value!r}')
        usage[key] = value
    return usage


def _tool_calls(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ContractError(f'"tool_calls" must be a list of {{"id", "name", "arguments"}}, got {type(raw).__name__}')
    calls = []
    for i, c in enumerate(raw):
        if not isinstance(c, Mapping) or not isinstance(c.get("name"), str):
            raise ContractError(f'"tool_calls"[{i}] needs a "name" (string), got {c!r:.120}')
        arguments = c.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ContractError(f'"tool_calls"[{i}].arguments is not JSON ({exc.msg})') from exc
        if not isinstance(arguments, Mapping):
            raise ContractError(f'"tool_calls"[{i}].arguments must be an object')
        calls.append({"id": str(c.get("id") or f"call_{i}"), "name": c["name"], "arguments": dict(arguments)})
    return calls


def parse_json_body(text: str, status: int) -> Any:
    """The JSON of a response body.

    Raises:
        ContractError: the body is not JSON (its first characters quoted)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ContractError(f"HTTP {status} response is not JSON ({exc.msg}): {text[:200]!r}") from exc
