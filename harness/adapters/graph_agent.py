"""A compiled LangGraph graph as the agent under test (``--agent python --agent-target
MODULE:graph``): invoked once per turn with the user's new message and the conversation id as
its thread (``config={"configurable": {"thread_id": ...}}``); a graph without a checkpointer
gets the whole history. The reply is the graph's new AI messages; their tool calls, the tool
messages and ``usage_metadata`` become the trace and the usage."""
from __future__ import annotations

from typing import Any, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from graphs.protocols import Problem
from harness.adapters.contract import AgentResponse, ContractError
from harness.adapters.external import ExternalAgent, Sent


def message_text(message: BaseMessage) -> str:
    """A message's text (string content, or the text blocks of a list)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content or [])


def new_messages(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages after the last human message: what the graph added this turn."""
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return list(messages[last_human + 1:])


def response_of(added: Sequence[BaseMessage]) -> AgentResponse:
    """The contract's response of a turn's new messages: AI texts as messages, tool calls with
    their results as the trace, summed ``usage_metadata`` as the usage (None when none reported)."""
    texts, calls, results = [], [], {}
    tokens_in = tokens_out = 0
    reported = False
    for m in added:
        if isinstance(m, ToolMessage):
            results[m.tool_call_id] = message_text(m)
        elif isinstance(m, AIMessage):
            if message_text(m).strip():
                texts.append(message_text(m))
            calls.extend(m.tool_calls or [])
            if m.usage_metadata:
                reported = True
                tokens_in += m.usage_metadata.get("input_tokens") or 0
                tokens_out += m.usage_metadata.get("output_tokens") or 0
    if not texts:
        raise ContractError("the graph added no AI message with text this turn (its last messages: "
                            + ", ".join(type(m).__name__ for m in added[-3:]) + ")")
    trace = {"tool_calls": [{"name": c["name"], "arguments": c.get("args") or {},
                             "result": results.get(c.get("id"))} for c in calls]} if calls else None
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost": None} if reported else None
    return AgentResponse(texts, usage=usage, trace=trace)


class GraphAgent(ExternalAgent):
    """A compiled LangGraph graph whose state has ``messages``."""

    kind = "python"

    def __init__(self, graph: Any, name: str, **kw):
        super().__init__(name, **kw)
        self.graph = graph
        self.remembers = bool(getattr(graph, "checkpointer", None))

    async def send(self, request: dict[str, Any], problem: Problem) -> Sent:
        """Invoke the graph on the conversation's thread with the new message (or the history)."""
        # the run's metadata under deskbench_* names: LangGraph reads metadata["run_id"] equal to
        # the thread's last run's as re-entry into that run, resumes it and drops the new message
        config = {"configurable": {"thread_id": request["conversation_id"]},
                  "metadata": {f"deskbench_{k}": v for k, v in request["metadata"].items() if v is not None}}
        history = [HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"])
                   for m in request["messages"]]
        held = await self._thread_conversation(config) if self.remembers else None
        if held is not None and held == [(m["role"], m["content"]) for m in request["messages"][:-1]]:
            inputs: list = [history[-1]]  # the graph remembers the conversation: the new message only
        elif held:  # a thread that went another way (a turn cut off by a timeout, then retried): reset
            inputs = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *history]
        else:  # no memory, or a thread it has not seen (a run resumed in a new process)
            inputs = history
        state = await self.graph.ainvoke({"messages": inputs}, config)
        messages = state.get("messages") if isinstance(state, dict) else None
        if not messages:
            raise ContractError("the graph's output state has no 'messages'; the agent graph must keep "
                                "its conversation in a 'messages' key (MessagesState)")
        return Sent(response_of(new_messages(messages)))

    async def _thread_conversation(self, config: dict) -> list[tuple[str, str]]:
        """The user and assistant texts the graph's thread holds (tool steps left out)."""
        snapshot = await self.graph.aget_state(config)
        out = []
        for m in (snapshot.values or {}).get("messages") or []:
            if isinstance(m, HumanMessage):
                out.append(("user", message_text(m)))
            elif isinstance(m, AIMessage) and message_text(m).strip():
                out.append(("assistant", message_text(m)))
        return _joined_turns(out)


def _joined_turns(texts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Consecutive assistant texts as one (a turn's several messages, as the contract joins them)."""
    out: list[tuple[str, str]] = []
    for role, text in texts:
        if out and role == "assistant" and out[-1][0] == "assistant":
            out[-1] = ("assistant", out[-1][1] + "\n\n" + text)
        else:
            out.append((role, text))
    return out
