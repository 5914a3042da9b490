"""The paper's plain agent: its system prompt and the windowed conversation."""
from __future__ import annotations

from typing import Sequence

from langchain_core.messages import SystemMessage

from graphs.protocols import Message, Problem, Reply
from harness.agents.history import as_chat, window
from harness.models.llm import RoleClient
from harness.agents import prompts


class PlainAgent:
    """The paper's plain agent: its system prompt and the windowed conversation."""

    def __init__(self, client: RoleClient, system_prompt: str = prompts.AGENT_SYSTEM):
        self.client = client
        self.system_prompt = system_prompt

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """The agent's reply to the windowed conversation (:func:`window`) under its system prompt."""
        messages = [SystemMessage(self.system_prompt), *as_chat(window(history), "agent")]
        text, call = await self.client.complete(messages, "agent:reply")
        return Reply(text.strip(), [call])
