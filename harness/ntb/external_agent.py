"""The team's own tool-using agent on NoisyToolBench (docs/agents.md, "NoisyToolBench: tools in
the contract"): an :class:`harness.adapters.ExternalAgent` (``http``, ``python``, ``openai``) as
the tool loop's agent (``graphs.toolloop.ToolAgent``).

Each step the agent gets the contract's request plus ``tools`` (the case's APIs as OpenAI tool
schemas) and ``tool_results`` (every tool call it made in the case, with its result and where in
``messages`` it happened). Its response becomes the loop's :class:`graphs.toolloop.Action`, so a
step is stored and scored exactly as a built-in agent's:

* ``tool_calls``: each call is one ``call`` step run in the case's API environment; the first
  runs now, the others are queued on the stored step (``queued_calls``) and run as the next
  steps without a new request (one step each, as every call of a built-in agent);
* a text reply is the agent's message to the user (:func:`text_kind`): the final ``answer`` when
  the response says ``"end": true``; else an ``ask`` (the simulated user answers) when it starts
  with ``Question:`` (the official marker) or ends with a question mark; else the ``answer``.

A failure of the agent (retries spent, a timeout, a malformed response) is an
:class:`graphs.protocols.AgentFailure`, raised on: the batch ends that case with stop reason
``agent_error``. The request never names the case's noise category: its ``conversation_id`` and
``task_id`` are opaque, stable hashes.
"""
from __future__ import annotations

import copy
import hashlib
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Sequence

from graphs.protocols import Message, Problem, Reply
from graphs.toolloop import Action
from harness.adapters import ExternalAgent, GraphAgent, build_request
from harness.config import ConfigError
from harness.ntb.cases import Case, case_key, openai_tools

EXTERNAL_PROTOCOL_VERSION = "ntb-external-1"
"""The version of the tools-in-the-contract rules (stored as the run's prompt_version); bump on
any change of the request, of the response's mapping or of :func:`text_kind`."""
NTB_ADAPTERS = ("http", "python", "openai")
"""The adapters that can play NoisyToolBench (they pass ``tools`` and ``tool_results`` on)."""
QUESTION_PREFIX = "Question:"
QUESTION_MARKS = ("?", "\uff1f")
_TRAILING = " \t\r\n\"'`*_)]}\u201d\u2019"  # closing quotes, brackets and emphasis after a "?"
REPLY_KEYS = ("adapter", "usage", "latency_ms", "ttft_ms", "attempts", "n_messages", "trace")
"""What a step keeps of the agent's reply (``agent_reply``), beside the ``llm_calls`` row."""

_CONVERSATION: ContextVar[dict[str, Any] | None] = ContextVar("deskbench_ntb_conversation", default=None)


@contextmanager
def conversation(interaction_id: str, run_id: str | None = None, trial: int = 1) -> Iterator[None]:
    """Within the block (and the tasks it starts), the agent's requests belong to this
    interaction: its ``conversation_id`` and ``metadata`` (the tool loop hands the agent only the
    case and its steps)."""
    token = _CONVERSATION.set({"interaction_id": interaction_id, "run_id": run_id, "trial": trial})
    try:
        yield
    finally:
        _CONVERSATION.reset(token)


def opaque_id(prefix: str, text: str) -> str:
    """``prefix-`` and 16 hex digits of ``text``'s SHA-256: stable, and it names no category."""
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def transcript(case: Case, steps: Sequence[dict[str, Any]]) -> tuple[list[Message], list[dict[str, Any]]]:
    """The conversation so far (the query, each question and the user's reply) and the tool
    results: every call step as ``{"id", "name", "arguments", "result", "after", "response"}``,
    ``after`` the number of messages that came before it, ``response`` the agent response that
    made it (calls of one response share it)."""
    messages = [Message("user", case.query)]
    results: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        if step["type"] == "ask":
            messages.append(Message("agent", step.get("text") or ""))
            if step.get("reply") is not None:
                messages.append(Message("user", step["reply"]))
        elif step["type"] == "call":
            arguments = step.get("arguments")
            results.append({"id": step.get("tool_call_id") or f"call_{i + 1}", "name": step.get("name"),
                            "arguments": copy.deepcopy(arguments) if isinstance(arguments, dict) else {},
                            "result": step.get("observation") or "", "after": len(messages),
                            "response": step.get("response") or i + 1})
    return messages, results


def ntb_request(case: Case, steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The contract's request of the next step: ``build_request``'s fields (``turn`` counts the
    user's messages, ``message`` is the latest), ``metadata.benchmark = "noisytoolbench"``,
    ``tools`` and ``tool_results`` (:func:`transcript`)."""
    context = _CONVERSATION.get() or {}
    messages, results = transcript(case, steps)
    metadata = {"run_id": context.get("run_id"), "task_id": opaque_id("case", case_key(case)),
                "trial": context.get("trial") or 1, "persona": None, "benchmark": "noisytoolbench"}
    conversation_id = opaque_id("ntb", context.get("interaction_id") or case_key(case))
    turn = sum(1 for m in messages if m.role == "user")
    request = build_request(conversation_id, turn, messages, metadata)
    request.update(tools=copy.deepcopy(openai_tools(case)), tool_results=results)
    return request


def text_kind(text: str, end: bool = False) -> tuple[str, str]:
    """Whether a text reply asks the user or is the final answer, and the rule that decided:
    ``end`` (the response's ``"end": true``: the answer), ``question_prefix`` (starts with
    ``Question:``: an ask), ``question_mark`` (its last character, after closing quotes and
    brackets, is a question mark: an ask) or ``statement`` (the answer)."""
    if end:
        return "answer", "end"
    stripped = text.strip()
    if stripped.startswith(QUESTION_PREFIX):
        return "ask", "question_prefix"
    if stripped.rstrip(_TRAILING).endswith(QUESTION_MARKS):
        return "ask", "question_mark"
    return "answer", "statement"


def reply_action(reply: Reply, response: int) -> Action:
    """The loop's action of one agent response (``response``: its number in the case): its first
    tool call (the text beside it as the thought, the other calls queued), else its text as an
    ask or the answer (:func:`text_kind`)."""
    extra = reply.extra or {}
    record = {k: extra[k] for k in REPLY_KEYS if extra.get(k) is not None}
    text = (reply.text or "").strip()
    calls = extra.get("tool_calls") or []
    if calls:
        first, rest = calls[0], calls[1:]
        flags: dict[str, Any] = {"tool_call_id": first["id"], "response": response, "agent_reply": record}
        if rest:
            flags["queued_calls"] = rest
        return Action("call", name=first["name"], arguments=first["arguments"], thought=text or None,
                      calls=list(reply.calls), flags=flags)
    kind, rule = text_kind(text, bool(extra.get("end")))
    return Action(kind, text, calls=list(reply.calls),
                  flags={"response": response, "text_rule": rule, "agent_reply": record})


def queued_action(steps: Sequence[dict[str, Any]]) -> Action | None:
    """The next call an earlier response queued (run without a new request), or None."""
    if not steps or steps[-1]["type"] != "call" or not steps[-1].get("queued_calls"):
        return None
    last = steps[-1]
    call, rest = last["queued_calls"][0], last["queued_calls"][1:]
    flags: dict[str, Any] = {"tool_call_id": call["id"], "response": last.get("response"), "queued": True}
    if rest:
        flags["queued_calls"] = rest
    return Action("call", name=call["name"], arguments=call["arguments"], flags=flags)


def check_ntb_adapter(kind: str) -> None:
    """Raises ConfigError for an adapter that cannot play NoisyToolBench."""
    if kind not in NTB_ADAPTERS:
        raise ConfigError(f"--agent {kind} cannot play NoisyToolBench: its agent calls its own tools, not the "
                          f"case's. Use {', '.join(NTB_ADAPTERS)} (docs/agents.md, NoisyToolBench: tools in the "
                          "contract).")


class ExternalToolAgent:
    """Implements ``graphs.toolloop.ToolAgent`` over the team's agent (module docstring).

    Raises:
        ConfigError: the adapter cannot play NoisyToolBench (a compiled LangGraph graph brings its
            own tools; ``langgraph`` and ``a2a`` too).
    """

    def __init__(self, agent: ExternalAgent):
        check_ntb_adapter(agent.kind)
        if isinstance(agent, GraphAgent):
            raise ConfigError("--agent-target names a compiled LangGraph graph, which calls its own tools; "
                              "NoisyToolBench needs an agent that calls the case's tools from the request: "
                              "name a callable fn(request) (docs/agents.md, NoisyToolBench: tools in the contract).")
        self.agent = agent

    def request(self, case: Case, steps: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The request of the next step (:func:`ntb_request`)."""
        return ntb_request(case, steps)

    async def act(self, case: Case, steps: Sequence[dict[str, Any]]) -> Action:
        """The next action: a queued call of the last response, else the agent's new response
        (with the adapter's timeout and retries).

        Raises:
            AgentFailure: the agent gave no usable response."""
        queued = queued_action(steps)
        if queued is not None:
            return queued
        request = self.request(case, steps)
        response = 1 + max((s.get("response") or 0 for s in steps), default=0)
        return reply_action(await respond_with(self.agent, request), response)


async def respond_with(agent: ExternalAgent, request: dict[str, Any]) -> Reply:
    """``agent.respond`` with ``request`` as the request it sends."""
    problem = Problem(request["conversation_id"], request["message"], None, None,
                      context={k: request["metadata"].get(k) for k in ("run_id", "task_id", "trial")})
    return await agent.respond(problem, [], request)
