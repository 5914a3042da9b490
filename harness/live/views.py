"""What the live app shows of a SelfScore session: :class:`SessionView` (everything the page
shows), :class:`LiveUpdate` (one step of a streamed reply) and :func:`reply_spoken` (whether a
stored reply was spoken, so that its voice can be rated).

Plain data, importing nothing of the session manager, so the manager
(:mod:`harness.live.sessions`) and the streamed speech (:mod:`harness.live.speech`) both build
on it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from graphs.protocols import Message


def reply_spoken(turn: dict[str, Any] | None) -> bool:
    """Whether a stored turn's agent reply was spoken (its audio referenced from the turn, as
    :meth:`LiveSessions.send_audio` records it), so that its voice can be rated."""
    if not turn:
        return False
    extra = json.loads(turn.get("extra_json") or "{}")
    return bool(((extra.get("agent") or {}).get("voice") or {}).get("audio"))


@dataclass
class SessionView:
    """Everything the page shows of one session (no model objects, no secrets of others)."""

    session_id: str
    mode: str
    agent: str
    status: str  # active | ended | abandoned
    scenario: str | None
    messages: list[Message]
    awaiting: str | None  # "user" or "agent" while the graph waits for the person
    stop_reason: str | None
    turns: list[dict[str, Any]] = field(default_factory=list)  # stored turns with LLM judgments
    max_turns: int = 0
    #: stop reason agent_error: what the team's agent under test failed with (adapter, agent, kind,
    #: status, turn, attempts; ``harness.live.team_agent.agent_error_message`` words it)
    agent_error: dict[str, Any] | None = None

    @property
    def last_turn(self) -> int:
        """The index of the last stored turn (0 before the first)."""
        return self.turns[-1]["turn_index"] if self.turns else 0


@dataclass
class LiveUpdate:
    """One step of a streamed reply: the agent's text so far, then the final view."""

    partial: str | None = None
    view: SessionView | None = None
    audio: str | None = None  # the spoken reply's WAV (voice messages)
    chunk: Any = None  # voice.streaming: one spoken chunk of the reply as soon as its audio is
    #                    ready (harness.voice.streaming.SpokenChunk), to play while the rest comes
