"""A person's ratings of the agent's replies in a live session: helpfulness, solved, and the
voice of a spoken reply, stored beside the LLM judge's judgments (kinds ``human_*``).
"""
from __future__ import annotations

import json

from harness.live.guards import LiveError, anonymous_name
from harness.live.views import reply_spoken

HUMAN_RATING_VERSION = "human-rating-v1"


class HumanRatings:
    """Mixin of :class:`~harness.live.sessions.LiveSessions`; uses its ``_session``,
    ``reader`` and ``store``."""

    def rate(self, session_id: str, turn_index: int, helpfulness: int | None, solved: bool | None,
             rater: str | None = None, participant_id: str | None = None,
             naturalness: int | None = None, comprehensibility: int | None = None) -> None:
        """A person's rating of one agent reply, stored beside the LLM judge's. ``rater`` is
        the participant's pseudonym; without one (a free session) it is ``anon-`` + a hash of
        the session token, so exports never carry any part of a token. ``naturalness`` and
        ``comprehensibility`` (1-5, a mean-opinion-score scale) rate a spoken reply's voice.

        Raises:
            LiveError: a rating outside its scale, no such turn, a voice rating of a reply that
                was not spoken, or nothing to rate.
        """
        sess = self._session(session_id, participant_id)
        if sess["mode"] != "user":
            raise LiveError("Ratings are for the agent's replies; in this session you are the agent.")
        voice = {name: value for name, value in (("naturalness", naturalness),
                                                  ("comprehensibility", comprehensibility))
                 if value is not None}
        if helpfulness is None and solved is None and not voice:
            raise LiveError("Choose a helpfulness score (1-10) or whether the problem is solved.")
        if helpfulness is not None and not (isinstance(helpfulness, int) and 1 <= helpfulness <= 10):
            raise LiveError(f"Helpfulness must be a whole number from 1 to 10, not {helpfulness!r}.")
        for name, value in voice.items():
            if not (isinstance(value, int) and 1 <= value <= 5):
                raise LiveError(f"The voice's {name} must be a whole number from 1 (bad) to 5 "
                                f"(excellent), not {value!r}.")
        iid = sess["interaction_id"]
        rater = rater or anonymous_name(session_id)
        turn = next((t for t in self.reader.turns(iid) if t["turn_index"] == turn_index), None)
        if turn is None:
            raise LiveError(f"There is no reply {turn_index} to rate yet.")
        if voice and not reply_spoken(turn):
            raise LiveError(f"Reply {turn_index} was not spoken, so its voice cannot be rated; "
                            "rate its helpfulness instead.")
        rows = []
        base = {"interaction_id": iid, "turn_index": turn_index, "model": "human",
                "prompt_version": HUMAN_RATING_VERSION, "rater": rater, "attempts": 1}
        if helpfulness is not None:
            rows.append({**base, "kind": "human_agent_helpfulness", "score": helpfulness,
                         "parsed_json": json.dumps({"score": helpfulness})})
        if solved is not None:
            rows.append({**base, "kind": "human_solved", "score": int(bool(solved)),
                         "parsed_json": json.dumps({"solved": bool(solved)})})
        for name, value in voice.items():
            rows.append({**base, "kind": f"human_tts_{name}", "score": value,
                         "parsed_json": json.dumps({name: value})})
        self.store.save_human_judgments(rows)
