"""The help-desk agent as a LangGraph graph over ``MessagesState``:

``plan_search`` -> ``tools`` (``search_kb`` over the chromadb knowledge base) -> ``answer`` (the LLM).

Small local models do not call tools reliably, so the search is planned deterministically: each
turn ``plan_search`` writes an AI message with a ``search_kb`` tool call (the query: the user's
first and latest messages), LangGraph's ``ToolNode`` runs it and records the ``ToolMessage``
with the passages, and ``answer`` asks the model with those passages in its system prompt. The
conversation therefore carries a real tool call and its result, as a tool-calling agent's does.

``graph`` (compiled with an in-memory checkpointer: one thread per conversation) is what
``deskbench run --agent python --agent-target examples.helpdesk_agent.graph:graph`` loads.
"""
from __future__ import annotations

import json
from typing import Any, Sequence
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from examples.helpdesk_agent.kb import knowledge_base
from examples.helpdesk_agent.settings import load_settings

SYSTEM_PROMPT = (
    "You are the help desk for Linux and Ubuntu users. Work out the user's actual problem and give "
    "concrete steps: the exact commands, files or settings to check or change. When you need a "
    "detail to go on (the error message, the version, what they already tried), ask for it. Keep "
    "each reply under 120 words.")
KB_BLOCK = ("\n\nPassages from the help desk's knowledge base (earlier questions and their answers); "
            "use them where they fit the user's problem, ignore them where they do not:\n{passages}")
QUERY_CHARS = 500  # of the first and of the latest user message in the search query
HISTORY_MESSAGES = 8  # the conversation's latest messages sent to the model
MESSAGE_CHARS = 1500


@tool(response_format="content_and_artifact")
def search_kb(query: str, k: int = 3) -> tuple[str, list[dict[str, Any]]]:
    """Search the help desk's knowledge base of earlier questions and answers."""
    passages = knowledge_base().search(query, k)
    return json.dumps(passages, ensure_ascii=False), passages


def text_of(message: BaseMessage) -> str:
    """A message's text (string content, or the text parts of a list)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def search_query(messages: Sequence[BaseMessage]) -> str:
    """The search query: the user's first message and, from the second turn on, the latest."""
    asked = [text_of(m) for m in messages if isinstance(m, HumanMessage)]
    if not asked:
        return ""
    parts = [asked[0][:QUERY_CHARS]] + ([asked[-1][:QUERY_CHARS]] if len(asked) > 1 else [])
    return "\n".join(parts)


def chat_model() -> ChatOpenAI:
    """The model on the OpenAI-compatible endpoint the settings name (``HELPDESK_LLM_URL``)."""
    s = load_settings()
    return ChatOpenAI(base_url=s.llm_url, model=s.llm_model, api_key=s.llm_api_key, temperature=0.3,
                      max_tokens=s.max_tokens, timeout=180, max_retries=1)


def build_graph(llm: BaseChatModel | None = None, k: int | None = None, checkpointer: Any = None):
    """The compiled agent graph.

    Args:
        llm: the chat model (default :func:`chat_model`).
        k: passages per search (default ``HELPDESK_K``).
        checkpointer: e.g. ``MemorySaver()`` to remember each conversation by its thread id;
            None for a stateless graph that is given the whole history each time.
    """
    model = llm or chat_model()
    k = k or load_settings(require_llm=False).k

    def plan_search(state: MessagesState) -> dict:
        call = {"name": "search_kb", "args": {"query": search_query(state["messages"]), "k": k},
                "id": f"call_{uuid4().hex[:12]}", "type": "tool_call"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    async def answer(state: MessagesState) -> dict:
        messages = state["messages"]
        found = next((m for m in reversed(messages) if isinstance(m, ToolMessage)), None)
        passages = (found.artifact or []) if found is not None else []
        block = "\n\n".join(f"[{p['id']}] {p['text']}" for p in passages)
        system = SystemMessage(SYSTEM_PROMPT + (KB_BLOCK.format(passages=block) if block else ""))
        talk = [type(m)(text_of(m)[:MESSAGE_CHARS]) for m in messages
                if isinstance(m, HumanMessage) or (isinstance(m, AIMessage) and text_of(m).strip())]
        reply = await model.ainvoke([system, *talk[-HISTORY_MESSAGES:]])
        return {"messages": [reply]}

    builder = StateGraph(MessagesState)
    builder.add_node("plan_search", plan_search)
    builder.add_node("tools", ToolNode([search_kb]))
    builder.add_node("answer", answer)
    builder.add_edge(START, "plan_search")
    builder.add_edge("plan_search", "tools")
    builder.add_edge("tools", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=checkpointer, name="helpdesk-agent")


graph = build_graph(checkpointer=MemorySaver())
"""The agent, remembering each conversation by ``thread_id`` (deskbench passes the conversation id)."""
