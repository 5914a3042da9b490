"""One turn of the agent graph as the servers report it: the reply, the tokens the model used,
the tool calls with their results and the passages retrieved."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from examples.helpdesk_agent.graph import text_of


class NoUserMessage(ValueError):
    """The conversation given has no user message to answer."""


@dataclass(slots=True)
class TurnResult:
    """What the graph added in one turn."""

    reply: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    retrieved: list[dict[str, Any]] = field(default_factory=list)

    def usage(self) -> dict[str, int] | None:
        """The contract's ``usage`` (None when the model reported no token counts)."""
        if self.input_tokens is None:
            return None
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens or 0}

    def trace(self) -> dict[str, Any]:
        """The contract's ``trace``: tool calls with their results, and the passages retrieved."""
        return {"tool_calls": self.tool_calls, "retrieved": self.retrieved}


def as_messages(history: Sequence[dict[str, str]]) -> list[BaseMessage]:
    """Chat messages (``{"role": "user"|"assistant", "content"}``) as LangChain messages; other
    roles (a client's system prompt, tool messages) are left out: the agent has its own."""
    kinds = {"user": HumanMessage, "assistant": AIMessage}
    return [kinds[m["role"]](m["content"]) for m in history if m.get("role") in kinds and m.get("content")]


def added_this_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages after the last human message."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return list(messages[last + 1:])


def summarize(added: Sequence[BaseMessage]) -> TurnResult:
    """The turn's result from the messages the graph added.

    Raises:
        RuntimeError: the graph added no AI message with text.
    """
    results = {m.tool_call_id: m for m in added if isinstance(m, ToolMessage)}
    texts, result = [], TurnResult("")
    for m in added:
        if not isinstance(m, AIMessage):
            continue
        if text_of(m).strip():
            texts.append(text_of(m))
        for call in m.tool_calls:
            done = results.get(call["id"])
            result.tool_calls.append({"name": call["name"], "arguments": call["args"],
                                      "result": None if done is None else text_of(done)})
            if done is not None and isinstance(done.artifact, list):
                result.retrieved.extend(done.artifact)
        if m.usage_metadata:
            result.input_tokens = (result.input_tokens or 0) + m.usage_metadata.get("input_tokens", 0)
            result.output_tokens = (result.output_tokens or 0) + m.usage_metadata.get("output_tokens", 0)
    if not texts:
        raise RuntimeError("the agent graph produced no reply this turn")
    result.reply = "\n\n".join(texts)
    return result


def conversation_of(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """The user and assistant texts of ``messages`` (tool calls and tool results left out)."""
    return [(m.type, text_of(m)) for m in messages
            if isinstance(m, HumanMessage) or (isinstance(m, AIMessage) and text_of(m).strip())]


async def run_turn(graph: Any, history: Sequence[dict[str, str]], thread_id: str | None = None) -> TurnResult:
    """Answer the history's last user message.

    With a ``thread_id`` on a graph with a checkpointer, the thread is the memory: when it holds
    the conversation up to the new message, only that message is sent. A thread that went another
    way (a turn abandoned half-way because the client gave up, a conversation resumed elsewhere)
    is reset to the history given, so a retried turn never adds the user's message twice. A new
    thread, or a graph without a checkpointer, gets the whole history.

    Raises:
        NoUserMessage: the history does not end with a user message.
    """
    messages = as_messages(history)
    if not messages or not isinstance(messages[-1], HumanMessage):
        raise NoUserMessage("the conversation must end with a user message")
    config: dict[str, Any] = {}
    if thread_id and getattr(graph, "checkpointer", None):
        config = {"configurable": {"thread_id": thread_id}}
        held = conversation_of((await graph.aget_state(config)).values.get("messages") or [])
        if held and held == conversation_of(messages[:-1]):
            messages = messages[-1:]
        elif held:
            messages = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]
    state = await graph.ainvoke({"messages": messages}, config)
    return summarize(added_this_turn(state["messages"]))
