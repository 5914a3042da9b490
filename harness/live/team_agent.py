"""A team's own agent in the live app (``python app.py --agent http --agent-url URL``): people
chat with it through the same turn loop as a batch, and when it fails a turn for good (an
:class:`graphs.protocols.AgentFailure`: retries spent, a timeout, a malformed response) the
conversation ends with stop reason ``agent_error``, as in a batch, and the person is told
what failed instead of being shown a crash.

The paused graph's checkpointer keeps only the text of an exception, so
:class:`FailureKeeper` keeps the failure itself (its detail and failed attempts) for the store,
by conversation, until the session manager collects it.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from graphs.protocols import Agent, AgentFailure, Message, Problem, Reply


class FailureKeeper:
    """Wraps the agent of a live graph: a failure is kept by interaction id and raised on to the
    turn loop (which ends the conversation); everything else is the wrapped agent's."""

    def __init__(self, inner: Agent):
        self.inner = inner
        self.failures: dict[str, AgentFailure] = {}

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """The wrapped agent's reply; its :class:`AgentFailure` is kept, then raised on."""
        try:
            return await self.inner.respond(problem, history)
        except AgentFailure as failure:
            self.failures[problem.interaction_id] = failure
            raise

    def pop(self, interaction_id: str) -> AgentFailure | None:
        """The failure that ended ``interaction_id`` (once), or None."""
        return self.failures.pop(interaction_id, None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def agent_error_message(detail: Mapping[str, Any] | None) -> str:
    """What the person is told when the agent under test failed: which agent, which turn, the
    kind of failure (and HTTP status), and what to do."""
    detail = detail or {}
    who = detail.get("agent") or "the agent under test"
    adapter = f" ({detail['adapter']})" if detail.get("adapter") else ""
    kind = str(detail.get("kind") or "error").replace("_", " ")
    status = f", HTTP {detail['status']}" if detail.get("status") else ""
    attempts = f" after {detail['attempts']} attempt(s)" if detail.get("attempts") else ""
    turn = f" at turn {detail['turn']}" if detail.get("turn") else ""
    return (f"The agent under test failed{turn}: {who}{adapter} gave no reply ({kind}{status}){attempts}. "
            "This conversation has ended and is recorded as an agent error; start a new one to try again.")
