"""The conversation a participant's prompt gets: the first message and the latest that fit
(:func:`window`), seen from one side (:func:`as_chat`). The plain agent, the RAG agent and the
simulated user (``harness.simuser.users``) all read the history through it."""
from __future__ import annotations

from typing import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from graphs.protocols import Message

HISTORY_CHARS = 9000  # keeps the prompt inside one llama.cpp slot's context


def window(history: Sequence[Message], max_chars: int = HISTORY_CHARS) -> list[Message]:
    """The first message plus the most recent messages that fit in ``max_chars``."""
    if not history:
        return []
    kept: list[Message] = []
    budget = max_chars - len(history[0].content)
    for m in reversed(history[1:]):
        if budget - len(m.content) < 0 and kept:
            break
        kept.append(m)
        budget -= len(m.content)
    return [history[0], *reversed(kept)]


def as_chat(history: Sequence[Message], me: str) -> list[BaseMessage]:
    """History from the point of view of ``me``: my messages are AI, the other side's human."""
    return [AIMessage(m.content) if m.role == me else HumanMessage(m.content) for m in history]
