"""What the live app shows of a NoisyToolBench session (a person as the user):
:class:`NtbSessionView`, what is wrong with each category's instructions (:data:`NOISE`), and
the reading part of :class:`harness.live.ntb_sessions.NtbLiveSessions` (the session row, its
stored steps and scores, the page's view), which calls no model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.live.guards import LiveError
from harness.ntb import scoring

MODE = "ntb_user"
"""The ``live_sessions.mode`` of a session in which a person is the NoisyToolBench user."""

NOISE = {
    "IMKI": "Your instruction leaves out a piece of information the APIs need.",
    "IMR": "Your instruction can be read in more than one way: it could refer to more than one thing.",
    "IwE": "Your instruction contains an error (a wrong value or name).",
    "IBTC": "Your instruction asks for something the offered APIs cannot do.",
}
"""What is wrong with the instruction of each category (shown to the person, privately)."""


@dataclass
class NtbSessionView:
    """Everything the page shows of one session."""

    session_id: str
    case: str                 # e.g. "IMKI/2"
    category: str
    instruction: str          # the noisy instruction: what the person "typed"
    meaning: str              # private: what they really meant (the case's clarification)
    noise: str                # private: what is wrong with the instruction
    status: str               # active | ended | abandoned
    steps: list[dict[str, Any]]   # the stored steps, in order
    question: str | None      # the agent's question waiting for the person's answer
    paused: bool              # active, nothing waiting in memory: continue() lets the agent go on
    stop_reason: str | None   # answered | max_steps | max_model_calls | user_ended
    scores: dict[str, Any] | None  # the stored score figures, once ended
    agent_variant: str
    max_steps: int


class NtbSessionReads:
    """Mixin of :class:`~harness.live.ntb_sessions.NtbLiveSessions`: reads the store and the
    paused loop, calls no model; uses its ``store``, ``reader``, ``config``, ``_locks``,
    ``_case_of`` and ``_pending``."""

    def _session(self, session_id: str, participant_id: str | None = None) -> dict[str, Any]:
        sess = self.store.session(session_id) if session_id else None
        if sess is None or sess["mode"] != MODE or (
                participant_id is not None and sess["participant_id"] != participant_id):
            raise LiveError("No such NoisyToolBench session for you. Start a case.")
        return sess

    def _active(self, session_id: str, participant_id: str | None = None) -> dict[str, Any]:
        sess = self._session(session_id, participant_id)
        if sess["status"] != "active":
            raise self._ended_error(sess)
        return sess

    def _ended_error(self, sess: dict[str, Any]) -> LiveError:
        row = self.reader.interaction(sess["interaction_id"]) or {}
        why = {"answered": "the agent gave its final answer", "max_steps": "the step limit was reached",
               "max_model_calls": "the agent's call limit was reached",
               "user_ended": "you ended it"}.get(row.get("stop_reason"), row.get("stop_reason") or "it was ended")
        return LiveError(f"This NoisyToolBench session has already ended ({why}) and is scored. "
                         "Start a new case to play again.")

    def _steps(self, interaction_id: str) -> list[dict[str, Any]]:
        return [json.loads(t["extra_json"]) for t in self.reader.turns(interaction_id)]

    def scores(self, interaction_id: str) -> dict[str, Any] | None:
        """The session's stored NoisyToolBench figures (None before it is scored)."""
        rows = self.store._rows("SELECT figures_json FROM scores WHERE interaction_id=? AND scorer=? "
                                "ORDER BY id DESC LIMIT 1", (interaction_id, scoring.SCORER_NAME))
        return json.loads(rows[0]["figures_json"]) if rows else None

    async def view(self, session_id: str, participant_id: str | None = None) -> NtbSessionView:
        """The session as the page shows it (reads only; calls no model)."""
        sess = self._session(session_id, participant_id)
        case = self._case_of(sess["task_id"])
        iid = sess["interaction_id"]
        steps = self._steps(iid)
        question, paused = None, False
        if sess["status"] == "active":
            pending = await self._pending(session_id)
            question = pending.text if pending else None
            working = session_id in self._locks and self._locks[session_id].locked()
            ending = bool(steps) and bool(steps[-1].get("unanswered"))
            paused = pending is None and not working and not ending
        row = self.reader.interaction(iid) or {}
        return NtbSessionView(
            session_id, case.key, case.category, case.query, case.clarification, NOISE[case.category],
            sess["status"], steps, question, paused, row.get("stop_reason"),
            self.scores(iid) if sess["status"] == "ended" else None,
            sess["agent"], self.config.ntb.max_steps)
