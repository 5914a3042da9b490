"""The one writer of the store.

Every write is its own transaction; a turn is written together with its judgments and LLM
calls, so a crash loses at most the turn in flight and never leaves half a turn behind.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from store.schema import open_db


def now() -> str:
    """UTC timestamp in ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def to_json(value: Any) -> str | None:
    """JSON text for a column, or None."""
    return None if value is None else json.dumps(value, ensure_ascii=False, default=str)


class StoreWriter:
    """Writes runs, interactions, turns, judgments, calls and scores.

    Safe to share between threads (one lock) and between the conversations of one event loop.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.db = open_db(self.path)
        self._conn: sqlite3.Connection = self.db.conn
        self._lock = threading.Lock()
        self._sql: dict[tuple, str] = {}

    # -- low level -------------------------------------------------------------------------
    def _insert(self, table: str, row: Mapping[str, Any], verb: str = "INSERT") -> int:
        keys = tuple(row)
        sql = self._sql.get((verb, table, keys))
        if sql is None:
            cols = ", ".join(f"[{k}]" for k in keys)
            marks = ", ".join("?" for _ in keys)
            sql = f"{verb} INTO [{table}] ({cols}) VALUES ({marks})"
            self._sql[(verb, table, keys)] = sql
        return self._conn.execute(sql, tuple(row.values())).lastrowid

    def _transaction(self):
        return _Transaction(self._conn, self._lock)

    # -- runs and problems -----------------------------------------------------------------
    def create_run(self, row: Mapping[str, Any], problems: Iterable[Mapping[str, Any]] = (),
                   interactions: Iterable[Mapping[str, Any]] = ()) -> None:
        """Insert a run row (``id`` required), refusing to overwrite an existing run, with its
        problems (upserted) and pending interactions in the same transaction: a crash leaves
        either no run or a run with every interaction, so a resume can never miss one."""
        with self._transaction():
            self._insert("runs", {"status": "running", "created_at": now(), **row})
            for problem in problems:
                self._insert("problems", problem, verb="INSERT OR REPLACE")
            for interaction in interactions:
                self._insert("interactions", {"status": "running", "started_at": now(), **interaction},
                             verb="INSERT OR IGNORE")

    def set_run_status(self, run_id: str, status: str, detail: str | None = None) -> None:
        """Set a run's status and ``stop_detail``; any status but ``running`` also sets
        ``finished_at`` (``running`` clears it)."""
        with self._transaction():
            self._conn.execute(
                "UPDATE runs SET status=?, finished_at=?, stop_detail=? WHERE id=?",
                (status, now() if status != "running" else None, detail, run_id),
            )

    def upsert_problems(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Insert or replace problem rows, in one transaction."""
        with self._transaction():
            for row in rows:
                self._insert("problems", row, verb="INSERT OR REPLACE")

    def put_preprocessing(self, row: Mapping[str, Any]) -> None:
        """Insert or replace one preprocessing row (a problem's text for a kind, model and prompt
        version)."""
        with self._transaction():
            self._insert("preprocessing", {"created_at": now(), **row}, verb="INSERT OR REPLACE")

    # -- interactions ----------------------------------------------------------------------
    def start_interaction(self, row: Mapping[str, Any]) -> None:
        """Create the interaction row unless it exists (resume keeps the old one)."""
        with self._transaction():
            self._insert(
                "interactions", {"status": "running", "started_at": now(), **row},
                verb="INSERT OR IGNORE",
            )

    def update_interaction(self, interaction_id: str, **fields: Any) -> None:
        """Set the given columns of an interaction row."""
        sets = ", ".join(f"[{k}]=?" for k in fields)
        with self._transaction():
            self._conn.execute(
                f"UPDATE interactions SET {sets} WHERE id=?", (*fields.values(), interaction_id)
            )

    def finish_interaction(
        self, interaction_id: str, status: str, stop_reason: str | None, n_turns: int,
        error: str | None = None, calls: Iterable[Mapping[str, Any]] = (),
        run_id: str | None = None, scores: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        """Set the interaction's final status, in one transaction with the LLM calls of a
        failure (``calls``) and its score rows (``scores``, for ``run_id``), so that a crash
        never leaves a completed interaction without its scores."""
        with self._transaction():
            self._conn.execute(
                "UPDATE interactions SET status=?, stop_reason=?, n_turns=?, finished_at=?, "
                "error=? WHERE id=?",
                (status, stop_reason, n_turns, now(), error, interaction_id),
            )
            self._write_judgments_and_calls((), calls)
            self._write_scores(run_id, scores)

    def save_judgments(self, judgments: Iterable[Mapping[str, Any]],
                       calls: Iterable[Mapping[str, Any]] = ()) -> None:
        """Store judgments outside a turn (complexity) with their LLM calls, atomically."""
        with self._transaction():
            self._write_judgments_and_calls(judgments, calls)

    def save_turn(self, turn: Mapping[str, Any], judgments: Iterable[Mapping[str, Any]],
                  calls: Iterable[Mapping[str, Any]]) -> None:
        """Store one completed turn with its judgments and LLM calls in one transaction.

        Raises:
            sqlite3.IntegrityError: if this turn of this interaction is already stored.
        """
        with self._transaction():
            self._insert("turns", {"created_at": now(), **turn})
            self._write_judgments_and_calls(judgments, calls)

    def _write_judgments_and_calls(self, judgments, calls) -> None:
        stamp = now()
        for j in judgments:
            self._insert("judgments", {"created_at": stamp, **j})
        for c in calls:
            self._insert("llm_calls", {"created_at": stamp, **c})

    # -- scores ----------------------------------------------------------------------------
    def replace_scores(self, run_id: str, rows: Iterable[Mapping[str, Any]]) -> int:
        """Write computed scores; a row for the same interaction, scorer, version and formula
        replaces the older one. Returns the number written."""
        with self._transaction():
            return self._write_scores(run_id, rows)

    def _write_scores(self, run_id: str | None, rows: Iterable[Mapping[str, Any]]) -> int:
        n = 0
        for row in rows:
            self._insert("scores", {"created_at": now(), "run_id": run_id, **row},
                         verb="INSERT OR REPLACE")
            n += 1
        return n

    def close(self) -> None:
        """Close the store's connection."""
        self._conn.close()


class _Transaction:
    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock):
        self.conn, self.lock = conn, lock

    def __enter__(self):
        self.lock.acquire()
        self.conn.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self.lock.release()
        return False
