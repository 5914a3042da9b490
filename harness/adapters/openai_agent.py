"""The ``openai`` adapter: an OpenAI-compatible chat endpoint evaluated **as it is**. The
conversation goes as user/assistant messages, with no harness system prompt (unless
``agent.system_prompt`` names a file), no reply cap, no history window and no ``max_tokens``;
the endpoint's ``usage`` is recorded. With ``agent.stream`` the reply is streamed (time to first
token measured)."""
from __future__ import annotations

import json
from pathlib import Path
from time import perf_counter
from typing import Any

from graphs.protocols import Problem
from harness.adapters.contract import AgentResponse, ContractError, parse_json_body, parse_response
from harness.adapters.external import ExternalAgent, Sent, status_error
from harness.adapters.http_agent import LoopClients, retry_after
from harness.config import ConfigError


def read_system_prompt(path: str | None) -> str | None:
    """The system prompt file's text, or None.

    Raises:
        ConfigError: the file does not exist or cannot be read."""
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"--agent-system-prompt {path}: cannot be read ({exc.strerror}). Pass a UTF-8 text "
                          "file, or leave the option out to send the conversation alone.") from exc


def chat_usage(usage: Any) -> dict[str, Any] | None:
    """The contract's usage of an OpenAI ``usage`` object (None when absent)."""
    if not isinstance(usage, dict):
        return None
    return {"input_tokens": usage.get("prompt_tokens") or 0, "output_tokens": usage.get("completion_tokens") or 0,
            "cost": usage.get("cost")}


def completion_response(body: Any) -> AgentResponse:
    """The contract's response of a chat completion (its first choice's text and tool calls).

    Raises:
        ContractError: no choices, or a choice without a message."""
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        raise ContractError(f"the chat completion has no choices[0].message: {json.dumps(body)[:200]}")
    message = choices[0]["message"]
    calls = [{"id": c.get("id"), "name": (c.get("function") or {}).get("name"),
              "arguments": (c.get("function") or {}).get("arguments")} for c in message.get("tool_calls") or []]
    text = message.get("content") or ""
    if not text.strip() and not calls:
        raise ContractError("the chat completion's message has no content and no tool calls")
    parsed = parse_response({"reply": text or None, "tool_calls": calls or None})
    parsed.usage = chat_usage(body.get("usage"))
    return parsed


def chat_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's conversation as chat messages. On NoisyToolBench, each agent response's
    ``tool_results`` go where they happened (``after``: the number of ``messages`` before them) as
    native tool calls: one assistant message with the response's ``tool_calls``, then a ``tool``
    message with each call's result (docs/agents.md, NoisyToolBench: tools in the contract)."""
    messages = request["messages"]
    results = request.get("tool_results") or []
    out: list[dict[str, Any]] = []
    for position in range(len(messages) + 1):
        here = [r for r in results if min(r.get("after", len(messages)), len(messages)) == position]
        for response in dict.fromkeys(r.get("response") for r in here):
            group = [r for r in here if r.get("response") == response]
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": r["id"], "type": "function",
                 "function": {"name": r["name"], "arguments": json.dumps(r.get("arguments") or {}, ensure_ascii=False)}}
                for r in group]})
            out += [{"role": "tool", "tool_call_id": r["id"], "content": str(r.get("result") or "")} for r in group]
        if position < len(messages):
            out.append({"role": messages[position]["role"], "content": messages[position]["content"]})
    return out


class OpenAIChatAgent(ExternalAgent):
    """An OpenAI-compatible ``/chat/completions`` endpoint as the agent under test."""

    kind = "openai"

    def __init__(self, base_url: str, model: str, headers: dict[str, str], name: str,
                 system_prompt: str | None = None, stream: bool = False, **kw):
        super().__init__(name, **kw)
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.system_prompt, self.stream = model, system_prompt, stream
        self.clients = LoopClients(headers, self.timeout_s)

    def body(self, request: dict[str, Any]) -> dict[str, Any]:
        """The chat request: the system prompt (if any) and the conversation (:func:`chat_messages`),
        and on NoisyToolBench the case's APIs as native ``tools``; nothing else."""
        messages = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else [])
        messages += chat_messages(request)
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.get("tools"):
            body["tools"] = request["tools"]
        return body

    async def send(self, request: dict[str, Any], problem: Problem) -> Sent:
        """One chat completion (streamed with ``agent.stream``)."""
        body = self.body(request)
        if self.stream and not request.get("tools"):
            return await self._streamed(body, request["conversation_id"])
        response = await self.clients.get(request["conversation_id"]).post(self.url, json=body)
        if response.status_code >= 300:
            raise status_error(response.status_code, response.text, retry_after(response))
        return Sent(completion_response(parse_json_body(response.text, response.status_code)))

    async def _streamed(self, body: dict[str, Any], key: str) -> Sent:
        started, first, parts, usage = perf_counter(), None, [], None
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        async with self.clients.get(key).stream("POST", self.url, json=body) as response:
            if response.status_code >= 300:
                raise status_error(response.status_code, (await response.aread()).decode(errors="replace"),
                                   retry_after(response))
            async for line in response.aiter_lines():
                if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                    continue
                chunk = json.loads(line[5:])
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        first = first if first is not None else (perf_counter() - started) * 1000.0
                        parts.append(piece)
        if not "".join(parts).strip():
            raise ContractError("the streamed chat completion had no content")
        return Sent(AgentResponse(["".join(parts)], usage=chat_usage(usage)), ttft_ms=first)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.clients.aclose()
