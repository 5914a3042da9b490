"""Tool-using agents for NoisyToolBench: native tool calls, or a JSON text protocol.

Native (``protocol = "native"``): the case's APIs plus ``ask_user`` and ``final_answer`` are
offered as OpenAI tools; the model's tool call is the action (a reply without a tool call is
the final answer). Small local models (the embedded Qwen2.5-Coder) write tool calls as text
instead, so they get the text protocol (``protocol = "text"``): the APIs are described in the
system prompt and every step is one JSON action constrained by a JSON schema whose
``api_name`` is an enum of the case's APIs. Both paths return the same :class:`Action`.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphs.protocols import LLMCall
from graphs.toolloop import Action
from harness.llm import RoleClient
from harness.ntb.cases import Case, openai_tools

PROTOCOL_VERSION = "ntb-agent-1"
THOUGHT_CHARS = 160  # short reasoning: output tokens are most of a step's time on a CPU

SYSTEM = """You help a user by calling APIs. Available APIs:
{apis}

At each step choose exactly one action:
- call_api: call one API with its arguments, when you have all the information it needs;
- ask_user: ask the user ONE clarifying question, when the request is missing information, is ambiguous, or contains an error; never guess or invent missing values;
- final_answer: answer the user from the API results, or explain that the request cannot be done with the available APIs."""

TEXT_FORMAT = """
Answer with one JSON object: {"thought": "<one short sentence>", "action": "call_api" | "ask_user" | "final_answer", "api_name": "<API name, or empty>", "arguments": {<API arguments, or empty>}, "text": "<your question or final answer, or empty>"}"""

ASK_TOOL = {"type": "function", "function": {
    "name": "ask_user", "description": "Ask the user one clarifying question.",
    "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}}
ANSWER_TOOL = {"type": "function", "function": {
    "name": "final_answer", "description": "Give the final answer, or state that the request cannot be done.",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}


def describe_apis(tools: Sequence[dict]) -> str:
    lines = []
    for t in tools:
        f = t["function"]
        props = f["parameters"].get("properties", {})
        required = set(f["parameters"].get("required", []))
        params = ", ".join(f"{n}: {p.get('type', 'string')}{'' if n in required else ' (optional)'}"
                           for n, p in props.items())
        lines.append(f"- {f['name']}({params}): {f.get('description', '')[:300]}")
    return "\n".join(lines)


class _TextAction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thought: str = Field(max_length=THOUGHT_CHARS)
    action: str
    api_name: str
    arguments: dict[str, Any]
    text: str = Field(max_length=1500)


def text_action_schema(api_names: Sequence[str]) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "action", "strict": False, "schema": {
        "type": "object", "additionalProperties": False,
        "properties": {"thought": {"type": "string", "maxLength": THOUGHT_CHARS},
                       "action": {"enum": ["call_api", "ask_user", "final_answer"]},
                       "api_name": {"enum": [*api_names, ""]},
                       "arguments": {"type": "object"},
                       "text": {"type": "string", "maxLength": 1500}},
        "required": ["thought", "action", "api_name", "arguments", "text"]}}}


def _observation_text(step: dict[str, Any]) -> str:
    if step["type"] == "call":
        return f"Observation: {step.get('observation') or ''}"[:3000]
    return f"User: {step.get('reply') or ''}"


class TextProtocolAgent:
    """One schema-constrained JSON action per step (for models without native tool calls)."""

    def __init__(self, client: RoleClient, retries: int = 2):
        self.client = client
        self.retries = retries

    def messages(self, case: Case, steps: Sequence[dict[str, Any]]) -> list[BaseMessage]:
        tools = openai_tools(case)
        out: list[BaseMessage] = [SystemMessage(SYSTEM.format(apis=describe_apis(tools)) + TEXT_FORMAT),
                                  HumanMessage(case.query)]
        for step in steps:
            if step["type"] == "answer":
                continue
            out.append(AIMessage(json.dumps(_as_text_action(step))))
            out.append(HumanMessage(_observation_text(step)))
        return out

    async def act(self, case: Case, steps: Sequence[dict[str, Any]]) -> Action:
        names = [t["function"]["name"] for t in openai_tools(case)]
        messages = self.messages(case, steps)
        calls: list[LLMCall] = []
        error = None
        for _ in range(self.retries + 1):
            text, call = await self.client.complete(messages, "agent:ntb-step", text_action_schema(names))
            calls.append(call)
            try:
                parsed = _TextAction.model_validate_json(text)
                return _action_of(parsed, calls)
            except (ValidationError, ValueError) as exc:
                error = f"unusable action: {str(exc)[:300]}"
                messages = [*messages, AIMessage(text[:2000]),
                            HumanMessage(f"That was not a valid action ({error}). Answer with one JSON action.")]
        return Action("answer", "", thought=None, calls=calls, error=error)


def _action_of(a: _TextAction, calls: list[LLMCall]) -> Action:
    if a.action == "call_api":
        if not a.api_name:
            raise ValueError("call_api needs an api_name")
        return Action("call", name=a.api_name, arguments=a.arguments, thought=a.thought, calls=calls)
    if a.action == "ask_user":
        if not a.text.strip():
            raise ValueError("ask_user needs the question in text")
        return Action("ask", a.text.strip(), thought=a.thought, calls=calls)
    if a.action == "final_answer":
        return Action("answer", a.text.strip(), thought=a.thought, calls=calls)
    raise ValueError(f"unknown action {a.action!r}")


def _as_text_action(step: dict[str, Any]) -> dict[str, Any]:
    if step["type"] == "call":
        args = step.get("arguments")
        return {"thought": step.get("thought", ""), "action": "call_api", "api_name": step["name"],
                "arguments": args if isinstance(args, dict) else {}, "text": ""}
    return {"thought": step.get("thought", ""), "action": "ask_user", "api_name": "", "arguments": {},
            "text": step.get("text", "")}


class NativeToolAgent:
    """OpenAI-style tool calling (OpenAI, vLLM with a tool parser, Ollama)."""

    def __init__(self, client: RoleClient):
        self.client = client

    def messages(self, case: Case, steps: Sequence[dict[str, Any]]) -> list[BaseMessage]:
        out: list[BaseMessage] = [SystemMessage(SYSTEM.format(apis="(given as tools)")), HumanMessage(case.query)]
        for i, step in enumerate(steps):
            if step["type"] == "answer":
                continue
            cid = f"call_{i + 1}"
            if step["type"] == "call":
                args = step.get("arguments") if isinstance(step.get("arguments"), dict) else {}
                tc = {"name": step["name"], "args": args, "id": cid}
            else:
                tc = {"name": "ask_user", "args": {"question": step.get("text", "")}, "id": cid}
            out.append(AIMessage("", tool_calls=[tc]))
            out.append(ToolMessage(_observation_text(step), tool_call_id=cid))
        return out

    async def act(self, case: Case, steps: Sequence[dict[str, Any]]) -> Action:
        tools = [*openai_tools(case), ASK_TOOL, ANSWER_TOOL]
        msg, call = await self.client.invoke(self.messages(case, steps), "agent:ntb-step", tools=tools)
        if not msg.tool_calls:
            text = msg.content if isinstance(msg.content, str) else str(msg.content)
            return Action("answer", text.strip(), calls=[call])
        tc = msg.tool_calls[0]
        if tc["name"] == "ask_user":
            return Action("ask", str(tc["args"].get("question", "")), calls=[call])
        if tc["name"] == "final_answer":
            return Action("answer", str(tc["args"].get("answer", "")), calls=[call])
        return Action("call", name=tc["name"], arguments=tc["args"], calls=[call])
