"""The SelfScore conversation state."""
from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from graphs.protocols import Judgment, Message, Problem, Reply


class TurnLoopState(TypedDict, total=False):
    """State of one SelfScore interaction.

    ``history`` is owned by the benchmark (not the agent) and grows by reducer; the per-turn
    fields are overwritten every turn and cleared by the record step.
    """

    problem: Problem
    history: Annotated[list[Message], operator.add]
    turn_index: int              # the turn being played, 1-based
    max_turns: int
    turn_started: float          # perf_counter at the start of the turn
    user_reply: Reply | None
    agent_reply: Reply | None
    judgments: list[Judgment]    # this turn's judgments, in the order they were made
    solved: bool | None
    stop_reason: str | None      # solved | max_turns | user_ended | agent_ended | agent_error
    agent_failure: Any           # graphs.protocols.AgentFailure of a turn the agent failed
    extra: dict[str, Any]
