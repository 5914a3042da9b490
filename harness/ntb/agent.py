"""Tool-using agents for NoisyToolBench: native tool calls, or a JSON text protocol.

Native (``protocol = "native"``): the case's APIs plus ``ask_user`` and ``final_answer`` are
offered as OpenAI tools; the model's tool call is the action (a reply without a tool call is
the final answer). Small local models (the embedded Qwen2.5-Coder) write tool calls as text
instead, so they get the text protocol (``protocol = "text"``): the APIs are described in the
system prompt and every step is one JSON action constrained by a JSON schema whose
``api_name`` is an enum of the case's APIs. Both paths return the same :class:`Action`.

Three prompt variants (``ntb.agent_variant``), each on both protocols:

* ``current``: the harness's own prompt (:data:`SYSTEM`): call, ask or answer.
* ``awn``: the paper's Ask-when-Needed (``SeekHelp_prompts.py`` in the official code, in our
  words and cut down for a 1.5B model): before each action the agent checks the request
  against the API it needs; it asks ("Question: ...") for a missing, ambiguous or wrong
  argument, states "Due to the limitation of toolset, I cannot solve the question" when no API
  can do the request, and otherwise acts. One worked example asks for the missing argument by
  name. As in the official loop, a message to the user that contains ``limitation of toolset``
  (and is not a question with ``Question:``) ends the case (a final answer flagged
  ``limitation``), and a final answer that starts with ``Question:`` is a question (it goes
  to the user).
* ``no-ask``: the paper's runs without asking: ``ask_user`` is not offered (not in the prompt,
  not in the JSON schema's action enum, not among the native tools). An ask written anyway is
  never forwarded to the user: the text protocol retries it like any unusable action (the error
  says asking is not available); if it still asks, and on the native protocol at once, the
  question is recorded as the case's final answer, flagged ``ask_blocked``, with an
  ``agent_error``. (The official non-interactive loop differs: it still matches the text of
  every assistant message and answers a match with the clarification; see
  docs/noisytoolbench.md.)
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import openai

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphs.protocols import LLMCall
from graphs.toolloop import Action
from harness.config import NtbConfig
from harness.models.llm import RoleClient
from harness.ntb.cases import Case, openai_tools

PROTOCOL_VERSION = "ntb-agent-1"
VARIANTS = ("current", "awn", "no-ask")
DEFAULT_VARIANT = NtbConfig.model_fields["agent_variant"].default  # ntb.agent_variant
PROTOCOL_VERSIONS = {"current": PROTOCOL_VERSION, "awn": "ntb-agent-awn-1", "no-ask": "ntb-agent-noask-1"}
"""The prompt version of each variant (stored as the run's prompt_version); bump on any change."""
THOUGHT_CHARS = 160  # short reasoning: output tokens are most of a step's time on a CPU
QUESTION_MARK = "Question:"            # official: a reflection containing this is a question
LIMITATION_MARK = "limitation of toolset"  # official: a reflection containing this ends the case
LIMITATION_TEXT = "Due to the limitation of toolset, I cannot solve the question."
ASK_BLOCKED = "asked the user, but asking is not offered in a no-ask run (not forwarded)"

SYSTEM = """You help a user by calling APIs. Available APIs:
{apis}

At each step choose exactly one action:
- call_api: call one API with its arguments, when you have all the information it needs;
- ask_user: ask the user ONE clarifying question, when the request is missing information, is ambiguous, or contains an error; never guess or invent missing values;
- final_answer: answer the user from the API results, or explain that the request cannot be done with the available APIs."""

TEXT_FORMAT = """
Answer with one JSON object: {"thought": "<one short sentence>", "action": "call_api" | "ask_user" | "final_answer", "api_name": "<API name, or empty>", "arguments": {<API arguments, or empty>}, "text": "<your question or final answer, or empty>"}"""

# Ask-when-Needed: the official reflection prompt's four cases (missing or wrong information ->
# ask; beyond the APIs -> say so; else go on), short enough for a 1.5B model, one example.
AWN_SYSTEM = """You help a user by calling APIs. Available APIs:
{apis}

Before each action, check the request against the API you need: did the user give every required argument, clearly and correctly?
- If an argument is missing, ambiguous or wrong: action "ask_user", text "Question: " and ask for exactly that argument. Never guess or invent a value. Do not ask again what the user already answered.
- If no API can do the request: action "final_answer", text "%s"
- Otherwise: "call_api" with its arguments, or "final_answer" from the API results.
Write your check in "thought".

Example. Request: "Show me the reviews of my hotel." API: get_reviews(hotel_id: string).
{"thought": "get_reviews needs hotel_id; the user did not give it.", "action": "ask_user", "api_name": "", "arguments": {}, "text": "Question: What is the hotel_id of your hotel?"}
""" % LIMITATION_TEXT

AWN_NATIVE_SYSTEM = """You help a user by calling the APIs given as tools.

Before each action, check the request against the API you need: did the user give every required argument, clearly and correctly?
- If an argument is missing, ambiguous or wrong: call ask_user with a question that starts with "Question: " and asks for exactly that argument. Never guess or invent a value. Do not ask again what the user already answered.
- If no API can do the request: call final_answer with "%s"
- Otherwise: call the API with its arguments, or final_answer from the API results.

Example. Request: "Show me the reviews of my hotel." Tool: get_reviews(hotel_id). Call ask_user with question "Question: What is the hotel_id of your hotel?".""" % LIMITATION_TEXT

# No asking (the paper's runs without asking): the same prompt as ``current`` less ask_user.
NO_ASK_SYSTEM = """You help a user by calling APIs. Available APIs:
{apis}

At each step choose exactly one action:
- call_api: call one API with its arguments;
- final_answer: answer the user from the API results, or explain that the request cannot be done with the available APIs."""

NO_ASK_TEXT_FORMAT = """
Answer with one JSON object: {"thought": "<one short sentence>", "action": "call_api" | "final_answer", "api_name": "<API name, or empty>", "arguments": {<API arguments, or empty>}, "text": "<your final answer, or empty>"}"""


def check_variant(variant: str) -> None:
    """Raises ValueError for an unknown agent variant."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown agent variant {variant!r}; choose one of {', '.join(VARIANTS)}")


def system_prompt(variant: str, apis: str, protocol: str) -> str:
    """The system prompt of ``variant`` on ``protocol`` (``text``: with the JSON format)."""
    check_variant(variant)
    if protocol == "text":
        if variant == "awn":
            return AWN_SYSTEM.replace("{apis}", apis) + TEXT_FORMAT
        if variant == "no-ask":
            return NO_ASK_SYSTEM.format(apis=apis) + NO_ASK_TEXT_FORMAT
        return SYSTEM.format(apis=apis) + TEXT_FORMAT
    if variant == "awn":
        return AWN_NATIVE_SYSTEM
    return (NO_ASK_SYSTEM if variant == "no-ask" else SYSTEM).format(apis="(given as tools)")

ASK_TOOL = {"type": "function", "function": {
    "name": "ask_user", "description": "Ask the user one clarifying question.",
    "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}}
ANSWER_TOOL = {"type": "function", "function": {
    "name": "final_answer", "description": "Give the final answer, or state that the request cannot be done.",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}}


def describe_apis(tools: Sequence[dict]) -> str:
    """The API list of the text protocol's prompt: one ``- name(param: type, ...): description``
    line per OpenAI tool schema, optional parameters marked, descriptions cut at 300 characters."""
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


def text_action_schema(api_names: Sequence[str], variant: str = DEFAULT_VARIANT) -> dict:
    """The ``response_format`` that constrains a text-protocol step to one JSON action.

    ``action`` is ``call_api``, ``ask_user`` (left out for ``no-ask``) or ``final_answer``;
    ``api_name`` is one of ``api_names`` or empty.
    """
    actions = ["call_api", "final_answer"] if variant == "no-ask" else ["call_api", "ask_user", "final_answer"]
    return {"type": "json_schema", "json_schema": {"name": "action", "strict": False, "schema": {
        "type": "object", "additionalProperties": False,
        "properties": {"thought": {"type": "string", "maxLength": THOUGHT_CHARS},
                       "action": {"enum": actions},
                       "api_name": {"enum": [*api_names, ""]},
                       "arguments": {"type": "object"},
                       "text": {"type": "string", "maxLength": 1500}},
        "required": ["thought", "action", "api_name", "arguments", "text"]}}}


OBSERVATION_CHARS = 3000        # the latest API response in the agent's prompt
EARLIER_OBSERVATION_CHARS = 400  # each earlier one (the agent read it whole at its step)
CUT_MARK = " ... [cut: the whole response was shown at that step]"


def _observation_text(step: dict[str, Any], latest: bool = True) -> str:
    """What the agent reads after a step: the API's response, or the user's reply. An earlier
    response is cut to ``EARLIER_OBSERVATION_CHARS`` so that a case of 12 steps fits the
    embedded model's 4,096-token slot (a run of long chart responses overflowed it at step 8;
    docs/noisytoolbench.md)."""
    if step["type"] != "call":
        return f"User: {step.get('reply') or ''}"
    text = f"Observation: {step.get('observation') or ''}"
    limit = OBSERVATION_CHARS if latest else EARLIER_OBSERVATION_CHARS
    return text if len(text) <= limit else text[:limit] + ("" if latest else CUT_MARK)


def _latest_call_index(steps: Sequence[dict[str, Any]]) -> int:
    return max((i for i, s in enumerate(steps) if s["type"] == "call"), default=-1)


class _AskBlocked(ValueError):
    """An ask in a no-ask run; ``question`` is kept for the record."""

    def __init__(self, question: str):
        super().__init__("asking the user is not available: call an API or give the final answer")
        self.question = question


def _blocked_answer(question: str, thought: str | None, calls: list[LLMCall]) -> Action:
    return Action("answer", question, thought=thought, calls=calls, error=ASK_BLOCKED,
                  flags={"ask_blocked": True})


def _awn_markers(action: Action) -> Action:
    """The official loop's rule for the reflection message, on a message to the user: a
    question stays a question, and so is a final answer that starts with "Question:" (the
    official rule is "contains"; a final answer may quote "Question:" from API data, and the
    official loop never reads its final answers for markers); else "limitation of toolset"
    in it makes it the statement that ends the case."""
    if action.kind not in ("ask", "answer"):
        return action
    if QUESTION_MARK in action.text and (action.kind == "ask" or action.text.lstrip().startswith(QUESTION_MARK)):
        action.kind = "ask"
    elif LIMITATION_MARK in action.text:
        action.kind = "answer"
        action.flags["limitation"] = True
    return action


class TextProtocolAgent:
    """One schema-constrained JSON action per step (for models without native tool calls)."""

    def __init__(self, client: RoleClient, retries: int = 2, variant: str = DEFAULT_VARIANT):
        check_variant(variant)
        self.client = client
        self.retries = retries
        self.variant = variant

    def messages(self, case: Case, steps: Sequence[dict[str, Any]]) -> list[BaseMessage]:
        """The prompt of the next step: system prompt with the API list, the query, then each
        earlier call or ask as a JSON action followed by its observation or the user's reply."""
        tools = openai_tools(case)
        out: list[BaseMessage] = [SystemMessage(system_prompt(self.variant, describe_apis(tools), "text")),
                                  HumanMessage(case.query)]
        latest = _latest_call_index(steps)
        for i, step in enumerate(steps):
            if step["type"] == "answer":
                continue
            out.append(AIMessage(json.dumps(_as_text_action(step))))
            out.append(HumanMessage(_observation_text(step, i == latest)))
        return out

    async def act(self, case: Case, steps: Sequence[dict[str, Any]]) -> Action:
        """The agent's next action, retrying up to ``retries`` times on an unusable reply.

        After the last failed try the action is an empty ``answer`` carrying the error; an ask
        in a ``no-ask`` run becomes that question recorded as the answer (never sent to the user).
        """
        names = [t["function"]["name"] for t in openai_tools(case)]
        messages = self.messages(case, steps)
        calls: list[LLMCall] = []
        error = None
        blocked: _AskBlocked | None = None
        thought = None
        for _ in range(self.retries + 1):
            try:
                text, call = await self.client.complete(messages, "agent:ntb-step",
                                                        text_action_schema(names, self.variant))
            except openai.LengthFinishReasonError as exc:
                # the JSON action ran into max_tokens before it closed (seen on the embedded
                # 1.5B: a thought that never ends): the agent's unusable step, not a failed case
                calls.extend(getattr(exc, "llm_calls", None) or [])
                error = "unusable action: the reply ran into the token cap (max_tokens) before its JSON closed"
                messages = [*self.messages(case, steps),
                            HumanMessage("Your last action was cut off at the length limit. Answer with one "
                                         "short JSON action (a thought of one sentence).")]
                continue
            calls.append(call)
            try:
                parsed = _TextAction.model_validate_json(text)
                thought = parsed.thought
                action = _action_of(parsed, calls, self.variant)
                return _awn_markers(action) if self.variant == "awn" else action
            except (ValidationError, ValueError) as exc:
                blocked = exc if isinstance(exc, _AskBlocked) else None
                error = f"unusable action: {str(exc)[:300]}"
                messages = [*messages, AIMessage(text[:2000]),
                            HumanMessage(f"That was not a valid action ({error}). Answer with one JSON action.")]
        if blocked is not None:  # the last attempt asked: never forwarded, recorded as the answer
            return _blocked_answer(blocked.question, thought, calls)
        return Action("answer", "", thought=None, calls=calls, error=error)


def _action_of(a: _TextAction, calls: list[LLMCall], variant: str = DEFAULT_VARIANT) -> Action:
    if a.action == "call_api":
        if not a.api_name:
            raise ValueError("call_api needs an api_name")
        return Action("call", name=a.api_name, arguments=a.arguments, thought=a.thought, calls=calls)
    if a.action == "ask_user":
        if not a.text.strip():
            raise ValueError("ask_user needs the question in text")
        if variant == "no-ask":
            raise _AskBlocked(a.text.strip())
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

    def __init__(self, client: RoleClient, variant: str = DEFAULT_VARIANT):
        check_variant(variant)
        self.client = client
        self.variant = variant

    def tools(self, case: Case) -> list[dict]:
        """The case's APIs, ``ask_user`` (not in a no-ask run) and ``final_answer``."""
        return [*openai_tools(case), *([] if self.variant == "no-ask" else [ASK_TOOL]), ANSWER_TOOL]

    def messages(self, case: Case, steps: Sequence[dict[str, Any]]) -> list[BaseMessage]:
        """The prompt of the next step: system prompt, the query, then each earlier call or ask
        as a tool call followed by its tool message (observation or the user's reply)."""
        out: list[BaseMessage] = [SystemMessage(system_prompt(self.variant, "", "native")),
                                  HumanMessage(case.query)]
        latest = _latest_call_index(steps)
        for i, step in enumerate(steps):
            if step["type"] == "answer":
                continue
            cid = f"call_{i + 1}"
            if step["type"] == "call":
                args = step.get("arguments") if isinstance(step.get("arguments"), dict) else {}
                tc = {"name": step["name"], "args": args, "id": cid}
            else:
                tc = {"name": "ask_user", "args": {"question": step.get("text", "")}, "id": cid}
            out.append(AIMessage(step.get("thought") or "", tool_calls=[tc]))
            out.append(ToolMessage(_observation_text(step, i == latest), tool_call_id=cid))
        return out

    async def act(self, case: Case, steps: Sequence[dict[str, Any]]) -> Action:
        """The agent's next action from one model call: its first tool call (``ask_user``,
        ``final_answer`` or an API; later ones are dropped and counted), or a plain reply as
        the final answer."""
        msg, call = await self.client.invoke(self.messages(case, steps), "agent:ntb-step", tools=self.tools(case))
        content = (msg.content if isinstance(msg.content, str) else str(msg.content)).strip()
        if not msg.tool_calls:
            action = Action("answer", content, calls=[call])
        else:
            # one action per step: a second tool call in the same message is not executed
            tc, thought = msg.tool_calls[0], content or None
            if tc["name"] == "ask_user":
                question = str(tc["args"].get("question", ""))
                if self.variant == "no-ask":
                    return _blocked_answer(question, thought, [call])
                action = Action("ask", question, thought=thought, calls=[call])
            elif tc["name"] == "final_answer":
                action = Action("answer", str(tc["args"].get("answer", "")), thought=thought, calls=[call])
            else:
                action = Action("call", name=tc["name"], arguments=tc["args"], thought=thought, calls=[call])
            if len(msg.tool_calls) > 1:
                action.flags["dropped_tool_calls"] = len(msg.tool_calls) - 1
        return _awn_markers(action) if self.variant == "awn" else action
