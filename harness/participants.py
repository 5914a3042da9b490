"""The two sides of a help-desk conversation: simulated and scripted users, the plain agent."""
from __future__ import annotations

import re
from typing import Mapping, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graphs.protocols import LLMCall, Message, Problem, Reply
from harness import prompts
from harness.llm import RoleClient

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


def _as_chat(history: Sequence[Message], me: str) -> list[BaseMessage]:
    """History from the point of view of ``me``: my messages are AI, the other side's human."""
    return [AIMessage(m.content) if m.role == me else HumanMessage(m.content) for m in history]


_ROLE_PREFIX = re.compile(r"^\s*(user|person|me|customer|agent|assistant)\s*:\s*", re.I)


class PlainAgent:
    """The paper's plain agent: its system prompt and the windowed conversation."""

    def __init__(self, client: RoleClient, system_prompt: str = prompts.AGENT_SYSTEM):
        self.client = client
        self.system_prompt = system_prompt

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        messages = [SystemMessage(self.system_prompt), *_as_chat(window(history), "agent")]
        text, call = await self.client.complete(messages, "agent:reply")
        return Reply(text.strip(), [call])


class SimulatedUser:
    """An LLM playing the asker: knows the original question, answers the agent's questions,
    reports what happened, never solves the problem itself. Turn 1 is the question itself."""

    def __init__(self, client: RoleClient):
        self.client = client

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        if turn_index == 1 or not history:
            return Reply(problem.question)
        messages = [SystemMessage(prompts.USER_SYSTEM.format(question=problem.question)),
                    *_as_chat(window(history), "user")]
        text, call = await self.client.complete(messages, "user:reply")
        return Reply(_ROLE_PREFIX.sub("", text.strip()) or text.strip(), [call])


class ScriptedUser:
    """Fixed follow-up messages (a test double and a replay tool).

    Turn 1 is the problem's question; turn *n* is ``script[n-2]``; when the script runs out
    the user ends the conversation. ``script`` is one list for every interaction, or a mapping
    from interaction id to its own list.
    """

    def __init__(self, script: Sequence[str] | Mapping[str, Sequence[str]]):
        self.script = script

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        if turn_index == 1:
            return Reply(problem.question)
        script = self.script.get(problem.interaction_id, ()) if isinstance(self.script, Mapping) else self.script
        i = turn_index - 2
        return Reply(script[i] if i < len(script) else None)


class ScriptedAgent:
    """Replays fixed agent replies: a human help-desk worker's answers (the human baseline)
    or a stored run's replies (re-judging). Reply *n* of an interaction is ``replies[id][n-1]``.

    ``calls`` optionally gives, per interaction, the original agent call of each reply (its
    tokens and model), recorded with purpose ``agent:replayed`` so cost and tokens carry over.
    """

    def __init__(self, replies: Mapping[str, Sequence[str]],
                 calls: Mapping[str, Sequence[LLMCall]] | None = None):
        self.replies = replies
        self.calls = calls or {}

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        n = sum(1 for m in history if m.role == "agent")
        replies = self.replies.get(problem.interaction_id, ())
        if n >= len(replies):
            raise ValueError(f"{problem.interaction_id}: no scripted agent reply for turn {n + 1} "
                             f"(the script has {len(replies)}); the user script is longer than the agent's.")
        original = self.calls.get(problem.interaction_id, ())
        return Reply(replies[n], [original[n]] if n < len(original) else [])
