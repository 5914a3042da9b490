"""The person's side of a live SelfScore session's graph: :class:`LiveUser` when the person is
the user, :class:`LiveAgent` when they are the help-desk worker. Each ``respond`` pauses the
graph with LangGraph's ``interrupt()`` until the person's message resumes it
(``Command(resume=...)``, see :meth:`harness.live.sessions.LiveSessions.send`).
"""
from __future__ import annotations

from typing import Sequence

from langgraph.types import interrupt

from graphs.protocols import Message, Problem, Reply


class LiveUser:
    """The user side played by a person: pauses the graph until their message arrives.
    Resuming with ``None`` ends the conversation (``user_ended``)."""

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        """Pause for the person's message; a dict resume is a spoken message (its
        transcript and its ``voice`` record), any other value the typed text."""
        value = interrupt({"awaiting": "user", "turn": turn_index})
        if isinstance(value, dict):  # a spoken message: its transcript and its audio
            return Reply(value["text"], extra={"live": True, "voice": value["voice"]})
        return Reply(value, extra={"live": True})


class LiveAgent:
    """The help-desk side played by a person (a live human baseline)."""

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """Pause for the person's reply to the simulated user; returns it as the agent's."""
        text = interrupt({"awaiting": "agent", "turn": sum(m.role == "agent" for m in history) + 1})
        return Reply(text, extra={"live": True})
