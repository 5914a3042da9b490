"""Studies, participants and live sessions of the live app, over the one writer.

A live session's conversation is an ordinary interaction with ordinary turn rows; this module
keeps what only the app needs: which study and participant a session belongs to, its mode
(a person as the user, or a person as the agent) and its status. Human ratings are ordinary
judgment rows of kind ``human_*`` with the rater's pseudonym.
"""
from __future__ import annotations

import json
import secrets
from typing import Any, Iterable, Mapping

from store.readers import StoreReader
from store.writer import StoreWriter, now


class LiveStore:
    """Reads and writes the live app's tables. Writes go through ``writer`` (one lock)."""

    def __init__(self, writer: StoreWriter, reader: StoreReader):
        self.writer = writer
        self.reader = reader

    # -- writes ----------------------------------------------------------------------------
    def create_study(self, study_id: str, name: str, config: Mapping[str, Any]) -> None:
        """Insert an open study with its config (stored as JSON)."""
        with self.writer._transaction():
            self.writer._insert("studies", {"id": study_id, "name": name, "status": "open",
                                            "created_at": now(), "config_json": json.dumps(config)})

    def set_study_status(self, study_id: str, status: str) -> None:
        """Set a study's status."""
        with self.writer._transaction():
            self.writer._conn.execute("UPDATE studies SET status=? WHERE id=?", (status, study_id))

    def add_participant(self, participant_id: str, study_id: str) -> None:
        """Record a participant (idempotent) and the time they accepted the consent text."""
        with self.writer._transaction():
            self.writer._insert("participants", {"id": participant_id, "study_id": study_id,
                                                 "created_at": now(), "consented_at": now()},
                                verb="INSERT OR IGNORE")

    def create_session(self, row: Mapping[str, Any]) -> str:
        """Insert a live session (status ``active`` unless ``row`` sets one); returns its id,
        ``row["id"]`` or a new random token."""
        session_id = row.get("id") or secrets.token_urlsafe(16)
        with self.writer._transaction():
            self.writer._insert("live_sessions", {"status": "active", "created_at": now(),
                                                  **row, "id": session_id})
        return session_id

    def end_session(self, session_id: str, status: str = "ended") -> None:
        """Set a session's status (default ``ended``) and its end time."""
        with self.writer._transaction():
            self.writer._conn.execute("UPDATE live_sessions SET status=?, ended_at=? WHERE id=?",
                                      (status, now(), session_id))

    def merge_turn_extra(self, interaction_id: str, turn_index: int, side: str,
                         values: Mapping[str, Any]) -> None:
        """Add ``values`` under ``extra_json[side]`` of a stored turn (e.g. the spoken reply's
        audio file and timings, known only after the turn is recorded)."""
        with self.writer._transaction():
            row = self.writer._conn.execute(
                "SELECT extra_json FROM turns WHERE interaction_id=? AND turn_index=?",
                (interaction_id, turn_index)).fetchone()
            if row is None:
                raise KeyError(f"no turn {turn_index} of {interaction_id}")
            extra = json.loads(row[0] or "{}")
            extra[side] = {**(extra.get(side) or {}), **values}
            self.writer._conn.execute(
                "UPDATE turns SET extra_json=? WHERE interaction_id=? AND turn_index=?",
                (json.dumps(extra), interaction_id, turn_index))

    def save_human_judgments(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """A person's ratings of one turn; a new rating of the same turn and kind by the same
        rater replaces the earlier one (in one transaction)."""
        rows = list(rows)
        with self.writer._transaction():
            for r in rows:
                self.writer._conn.execute(
                    "DELETE FROM judgments WHERE interaction_id=? AND turn_index=? AND kind=? "
                    "AND rater=?", (r["interaction_id"], r["turn_index"], r["kind"], r["rater"]))
                self.writer._insert("judgments", {"created_at": now(), "status": "ok", **r})

    # -- reads -----------------------------------------------------------------------------
    def _rows(self, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
        return self.reader._rows(sql, params)

    def study(self, study_id: str) -> dict[str, Any] | None:
        """A study row with its config parsed (``config``), or None."""
        rows = self._rows("SELECT * FROM studies WHERE id=?", (study_id,))
        if not rows:
            return None
        row = rows[0]
        row["config"] = json.loads(row["config_json"] or "{}")
        return row

    def studies(self) -> list[dict[str, Any]]:
        """Every study, oldest first, with its config parsed (``config``)."""
        rows = self._rows("SELECT * FROM studies ORDER BY created_at")
        for r in rows:
            r["config"] = json.loads(r["config_json"] or "{}")
        return rows

    def participant(self, participant_id: str) -> dict[str, Any] | None:
        """A participant row, or None."""
        rows = self._rows("SELECT * FROM participants WHERE id=?", (participant_id,))
        return rows[0] if rows else None

    def session(self, session_id: str) -> dict[str, Any] | None:
        """A live session row, or None."""
        rows = self._rows("SELECT * FROM live_sessions WHERE id=?", (session_id,))
        return rows[0] if rows else None

    def interaction_with_problem(self, interaction_id: str) -> dict[str, Any] | None:
        """One interaction joined with its problem (the shape ``prepare_problem`` takes)."""
        rows = self._rows(
            "SELECT i.*, p.question, p.task_id, p.reference_answer, p.metadata_json FROM interactions i "
            "JOIN problems p ON p.id=i.problem_id WHERE i.id=?", (interaction_id,))
        return rows[0] if rows else None

    def count_interactions(self, run_id: str) -> int:
        """The number of interactions of a run."""
        return self._rows("SELECT COUNT(*) AS n FROM interactions WHERE run_id=?", (run_id,))[0]["n"]

    def sessions_of(self, study_id: str, participant_id: str) -> list[dict[str, Any]]:
        """A participant's sessions in a study, oldest first."""
        return self._rows("SELECT * FROM live_sessions WHERE study_id=? AND participant_id=? "
                          "ORDER BY created_at", (study_id, participant_id))

    def coverage(self, study_id: str) -> dict[tuple[str, str], int]:
        """(task id, agent) -> sessions started (active or ended) in the study."""
        rows = self._rows("SELECT task_id, agent, COUNT(*) AS n FROM live_sessions WHERE "
                          "study_id=? AND status != 'abandoned' GROUP BY task_id, agent", (study_id,))
        return {(r["task_id"], r["agent"]): r["n"] for r in rows}

    def sessions_of_study(self, study_id: str) -> list[dict[str, Any]]:
        """Every session of a study, oldest first."""
        return self._rows("SELECT * FROM live_sessions WHERE study_id=? ORDER BY created_at",
                          (study_id,))

    def human_judgments(self, interaction_id: str) -> list[dict[str, Any]]:
        """An interaction's human ratings (judgments of kind ``human_*``), by turn."""
        return self._rows("SELECT * FROM judgments WHERE interaction_id=? AND kind LIKE 'human_%' "
                          "ORDER BY turn_index, id", (interaction_id,))

    def judgments(self, interaction_id: str) -> list[dict[str, Any]]:
        """Every judgment of an interaction (LLM and human), by turn."""
        return self._rows("SELECT * FROM judgments WHERE interaction_id=? ORDER BY turn_index, id",
                          (interaction_id,))

    def sessions_for_export(self, run_id: str) -> list[dict[str, Any]]:
        """A run's sessions without their tokens (a token grants access to its session)."""
        return self._rows(
            "SELECT interaction_id, study_id, participant_id, mode, agent, task_id, status, "
            "created_at, ended_at FROM live_sessions WHERE run_id=? ORDER BY created_at", (run_id,))

    def human_ratings_of_run(self, run_id: str) -> list[dict[str, Any]]:
        """Every human rating of a run: interaction, turn, kind, score, rater and time."""
        return self._rows(
            "SELECT j.interaction_id, j.turn_index, j.kind, j.score, j.rater, j.created_at FROM "
            "judgments j JOIN interactions i ON i.id=j.interaction_id WHERE i.run_id=? AND "
            "j.kind LIKE 'human_%' ORDER BY j.interaction_id, j.turn_index", (run_id,))

    def human_vs_llm(self, run_id: str) -> list[dict[str, Any]]:
        """Per rated turn of a run: the human's and the LLM judge's helpfulness and solved."""
        return self._rows(
            "SELECT t.interaction_id, t.turn_index, t.agent_helpfulness AS llm_helpfulness, "
            "t.solved AS llm_solved, "
            "(SELECT AVG(score) FROM judgments j WHERE j.interaction_id=t.interaction_id AND "
            " j.turn_index=t.turn_index AND j.kind='human_agent_helpfulness') AS human_helpfulness, "
            "(SELECT AVG(score) FROM judgments j WHERE j.interaction_id=t.interaction_id AND "
            " j.turn_index=t.turn_index AND j.kind='human_solved') AS human_solved "
            "FROM turns t JOIN interactions i ON i.id=t.interaction_id WHERE i.run_id=? "
            "ORDER BY t.interaction_id, t.turn_index", (run_id,))
