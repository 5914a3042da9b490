"""A judgment as the store's ``judgments`` row: the value after any aid, the judge's own answer,
the profile and the aids that shaped it."""
from __future__ import annotations

import json

from graphs.protocols import Judgment


def judgment_row(j: Judgment, interaction_id: str, turn_index: int | None) -> dict:
    """A ``judgments`` table row for a judgment: its value (after any aid) as ``score``, the
    judge's own answer as ``judge_score``, the profile and the aids that shaped it."""
    parsed = j.parsed or {}
    score = _as_score(j.value)
    return {"interaction_id": interaction_id, "turn_index": turn_index, "kind": j.kind,
            "status": j.status, "score": score,
            "parsed_json": json.dumps(j.parsed) if j.parsed is not None else None,
            "reason": j.reason, "raw_json": json.dumps(j.raw, ensure_ascii=False),
            "attempts": j.attempts, "error": j.error, "model": j.model,
            "prompt_version": j.prompt_version, "judge_score": _as_score(parsed.get("judge_value")),
            "profile": parsed.get("profile"),
            "aids_json": json.dumps(parsed["aids"]) if "aids" in parsed else None}


def _as_score(value) -> int | float | None:
    """A judge's own answer as the score column stores it (a verdict as 0/1, a read score as its
    expected value)."""
    if isinstance(value, bool):
        return int(value)
    return value if isinstance(value, (int, float)) else None
