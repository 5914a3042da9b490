"""The scripted agent: fixed replies replayed (the human baseline, re-judging a stored run)."""
from __future__ import annotations

from typing import Mapping, Sequence

from graphs.protocols import LLMCall, Message, Problem, Reply


class ScriptedAgent:
    """Replays fixed agent replies: a human help-desk worker's answers (the human baseline)
    or a stored run's replies (re-judging). Reply *n* of an interaction is ``replies[id][n-1]``.

    ``calls`` optionally gives, per interaction, the original agent call of each reply (its
    tokens and model), recorded with purpose ``agent:replayed`` so cost and tokens carry over;
    ``traces`` an agent under test's stored trace of each reply (the judges may be shown it).
    """

    def __init__(self, replies: Mapping[str, Sequence[str]],
                 calls: Mapping[str, Sequence[LLMCall]] | None = None,
                 traces: Mapping[str, Sequence[dict | None]] | None = None):
        self.replies = replies
        self.calls = calls or {}
        self.traces = traces or {}

    def _next(self, problem: Problem, history: Sequence[Message]) -> tuple[int, Sequence[str]]:
        """The index of the next reply, and the interaction's replies."""
        return sum(1 for m in history if m.role == "agent"), self.replies.get(problem.interaction_id, ())

    def has_reply(self, problem: Problem, history: Sequence[Message]) -> bool:
        """Whether the script holds a reply to the next user message (an LLM-simulated user can
        outlast the real thread; the turn loop then ends the conversation, ``agent_ended``)."""
        n, replies = self._next(problem, history)
        return n < len(replies)

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """The interaction's next scripted reply, with its original agent call when one is given.

        Raises:
            ValueError: the script has no reply left for this turn."""
        n, replies = self._next(problem, history)
        if n >= len(replies):
            raise ValueError(f"{problem.interaction_id}: no scripted agent reply for turn {n + 1} "
                             f"(the script has {len(replies)}); the user script is longer than the agent's.")
        original = self.calls.get(problem.interaction_id, ())
        traces = self.traces.get(problem.interaction_id, ())
        trace = traces[n] if n < len(traces) else None
        return Reply(replies[n], [original[n]] if n < len(original) else [], {"trace": trace} if trace else None)
