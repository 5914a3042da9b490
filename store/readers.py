"""Read-only queries over the store."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from store.schema import StoreError, open_db


class StoreReader:
    """Queries used by resume, scoring, reports and exports."""

    def __init__(self, path: str | Path, must_exist: bool = True):
        path = Path(path)
        if must_exist and not path.exists():
            raise StoreError(f"No store at {path}. Run a batch first or pass --store PATH.")
        self.path = path
        self.db = open_db(path)

    def _rows(self, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.query(sql, params)]

    # -- runs ------------------------------------------------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        """Every run, oldest first, with ``n_interactions`` and ``n_completed`` counts."""
        return self._rows(
            "SELECT r.*, (SELECT COUNT(*) FROM interactions i WHERE i.run_id=r.id) AS n_interactions, "
            "(SELECT COUNT(*) FROM interactions i WHERE i.run_id=r.id AND i.status='completed') "
            "AS n_completed FROM runs r ORDER BY r.created_at"
        )

    def run(self, ref: str) -> dict[str, Any]:
        """A run by id or by name (the latest run of that name).

        Raises:
            StoreError: naming the runs that exist when none matches.
        """
        rows = self._rows(
            "SELECT * FROM runs WHERE id=? OR name=? ORDER BY created_at DESC LIMIT 1", (ref, ref)
        )
        if not rows:
            known = ", ".join(r["id"] for r in self.runs()[-10:]) or "none"
            raise StoreError(f"No run '{ref}' in {self.path}. Runs here: {known}.")
        row = rows[0]
        row["config"] = json.loads(row["config_json"] or "{}")
        row["models"] = json.loads(row["models_json"] or "{}")
        row["profile"] = json.loads(row["profile_json"]) if row.get("profile_json") else None
        return row

    # -- problems and preprocessing --------------------------------------------------------
    def problem(self, problem_id: str) -> dict[str, Any] | None:
        """A problem row, or None."""
        rows = self._rows("SELECT * FROM problems WHERE id=?", (problem_id,))
        return rows[0] if rows else None

    def preprocessing(self, problem_id: str, kind: str, model: str, prompt_version: str) -> str | None:
        """The stored preprocessing text of a problem for this kind, model and prompt version,
        or None."""
        rows = self._rows(
            "SELECT text FROM preprocessing WHERE problem_id=? AND kind=? AND model=? "
            "AND prompt_version=?", (problem_id, kind, model, prompt_version),
        )
        return rows[0]["text"] if rows else None

    # -- interactions ----------------------------------------------------------------------
    def interactions(self, run_id: str) -> list[dict[str, Any]]:
        """A run's interactions in position order, each with its problem's question, task id,
        reference answer and metadata."""
        return self._rows(
            "SELECT i.*, p.question, p.task_id, p.reference_answer, p.metadata_json FROM interactions i "
            "JOIN problems p ON p.id=i.problem_id WHERE i.run_id=? ORDER BY i.position",
            (run_id,),
        )

    def interaction(self, interaction_id: str) -> dict[str, Any] | None:
        """An interaction row, or None."""
        rows = self._rows("SELECT * FROM interactions WHERE id=?", (interaction_id,))
        return rows[0] if rows else None

    def turns(self, interaction_id: str) -> list[dict[str, Any]]:
        """An interaction's turn rows in turn order."""
        return self._rows(
            "SELECT * FROM turns WHERE interaction_id=? ORDER BY turn_index", (interaction_id,)
        )

    def turns_for_run(self, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """A run's turn rows by interaction id, each list in turn order."""
        out: dict[str, list[dict[str, Any]]] = {}
        for row in self._rows(
            "SELECT t.* FROM turns t JOIN interactions i ON i.id=t.interaction_id "
            "WHERE i.run_id=? ORDER BY t.interaction_id, t.turn_index", (run_id,),
        ):
            out.setdefault(row["interaction_id"], []).append(row)
        return out

    def judgments_for_run(self, run_id: str) -> list[dict[str, Any]]:
        """Every judgment row of a run, by interaction, turn and id."""
        return self._rows(
            "SELECT j.* FROM judgments j JOIN interactions i ON i.id=j.interaction_id "
            "WHERE i.run_id=? ORDER BY j.interaction_id, j.turn_index, j.id", (run_id,),
        )

    def llm_call_totals(self, run_id: str, by_turn: bool = False) -> list[dict[str, Any]]:
        """Calls, prompt tokens (all, and those the server's cache reused), generated tokens,
        seconds, streamed calls and their mean ms to the first token, and errors of a run per
        role and model; ``by_turn``: per turn index as well
        (turn None: calls made before the first turn, e.g. problem extraction)."""
        turn = "c.turn_index AS turn_index, " if by_turn else ""
        group = ", c.turn_index" if by_turn else ""
        return self._rows(
            f"SELECT {turn}c.role, c.model, COUNT(*) AS calls, "
            "COUNT(DISTINCT c.interaction_id) AS interactions, SUM(c.input_tokens) AS input_tokens, "
            "SUM(COALESCE(c.cached_tokens, 0)) AS cached_tokens, "
            "SUM(c.output_tokens) AS output_tokens, SUM(c.latency_ms) AS latency_ms, "
            "COUNT(c.ttft_ms) AS streamed, AVG(c.ttft_ms) AS ttft_ms, "
            "SUM(c.error IS NOT NULL) AS errors FROM llm_calls c JOIN interactions i "
            f"ON i.id=c.interaction_id WHERE i.run_id=? GROUP BY c.role, c.model{group} "
            f"ORDER BY {'c.turn_index IS NOT NULL, c.turn_index, ' if by_turn else ''}c.role", (run_id,),
        )

    def rate_limit_totals(self, run_id: str) -> dict[str, Any]:
        """A run's answers that were HTTP 429 (``rate_limited``), the seconds waited after them
        (``backoff_s``) and the seconds calls waited for their endpoint's rate limits or a 429's
        pause before being sent (``waited_s``)."""
        rows = self._rows(
            "SELECT COALESCE(SUM(c.error LIKE 'rate_limited:%'), 0) AS rate_limited, "
            "COALESCE(SUM(CASE WHEN c.error LIKE 'rate_limited:%' THEN COALESCE(c.backoff_s, 0) END), 0) "
            "AS backoff_s, COALESCE(SUM(c.rate_wait_ms), 0) / 1000.0 AS waited_s FROM llm_calls c "
            "JOIN interactions i ON i.id=c.interaction_id WHERE i.run_id=?", (run_id,))
        return rows[0]

    def scores(self, run_id: str, scorer: str = "selfscore") -> list[dict[str, Any]]:
        """A run's score rows of ``scorer`` in interaction order, each with ``figures`` parsed."""
        rows = self._rows(
            "SELECT s.* FROM scores s JOIN interactions i ON i.id=s.interaction_id "
            "WHERE s.run_id=? AND s.scorer=? ORDER BY i.position, s.id", (run_id, scorer),
        )
        for r in rows:
            r["figures"] = json.loads(r["figures_json"])
        return rows

    def complexity(self, interaction_id: str) -> dict[str, Any] | None:
        """The latest successful complexity judgment of an interaction (parsed), or None."""
        rows = self._rows(
            "SELECT parsed_json, model, prompt_version FROM judgments WHERE interaction_id=? "
            "AND kind='complexity' AND status='ok' ORDER BY id DESC LIMIT 1", (interaction_id,),
        )
        if not rows:
            return None
        out = json.loads(rows[0]["parsed_json"])
        out["_model"], out["_prompt_version"] = rows[0]["model"], rows[0]["prompt_version"]
        return out

    def llm_calls(self, interaction_id: str) -> list[dict[str, Any]]:
        """An interaction's LLM call rows in the order they were written."""
        return self._rows("SELECT * FROM llm_calls WHERE interaction_id=? ORDER BY id", (interaction_id,))
