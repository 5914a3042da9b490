"""Tables of the store and the schema version.

One SQLite file (WAL) holds runs, problems, cached preprocessing, interactions, turns,
judgments, LLM calls and computed scores. The same ``turns`` table serves SelfScore turns and
tool-using conversations: ``extra_json`` carries tool calls, questions and anything a
benchmark needs beyond the two messages of a turn.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

SCHEMA_VERSION = 1


class StoreError(RuntimeError):
    """A store that cannot be opened or has an incompatible schema."""


_TABLES: dict[str, dict] = {
    "runs": dict(
        columns={
            "id": str, "name": str, "kind": str, "status": str, "created_at": str,
            "finished_at": str, "config_json": str, "models_json": str, "dataset": str,
            "dataset_sha256": str, "seed": int, "code_version": str, "prompt_version": str,
            "scorer_version": str, "stop_detail": str, "source_run": str,
            # the method profile: its name and every aid's value, source and version
            "profile_json": str,
        },
        pk="id",
    ),
    "problems": dict(
        columns={
            "id": str, "dataset": str, "task_id": str, "question": str,
            "reference_answer": str, "metadata_json": str,
        },
        pk="id",
    ),
    # Cache of the extractor's outputs, shared by all runs that use the same model and prompt.
    "preprocessing": dict(
        columns={
            "problem_id": str, "kind": str, "model": str, "prompt_version": str,
            "text": str, "raw": str, "created_at": str,
        },
        pk=("problem_id", "kind", "model", "prompt_version"),
    ),
    "interactions": dict(
        columns={
            "id": str, "run_id": str, "problem_id": str, "position": int, "status": str,
            "stop_reason": str, "summary": str, "problem_statement": str, "n_turns": int,
            "problem_source": str,
            "started_at": str, "finished_at": str, "error": str, "script_json": str,
            # repeated trials of a task (1-based; 1 in a one-trial run) and the simulated
            # user's persona (None where no simulated user plays: a live person, a replay)
            "trial": int, "persona": str,
        },
        pk="id",
    ),
    "turns": dict(
        columns={
            "id": int, "interaction_id": str, "turn_index": int, "user_message": str,
            "agent_message": str, "user_helpfulness": int, "agent_helpfulness": int,
            "solved": int, "quality": float, "input_tokens": int, "output_tokens": int,
            "cost": float, "latency_ms": float, "created_at": str, "extra_json": str,
        },
        pk="id",
    ),
    "judgments": dict(
        columns={
            "id": int, "interaction_id": str, "turn_index": int, "kind": str, "status": str,
            "score": int, "parsed_json": str, "reason": str, "raw_json": str, "attempts": int,
            "error": str, "model": str, "prompt_version": str, "created_at": str,
            "rater": str,  # a person's pseudonym for human judgments (kind human_*); None for LLMs
            # the judge's own answer before any aid (``score`` is after them), the method
            # profile, and the aids that ran on this judgment: version, rule ids, whether it moved
            "judge_score": int, "profile": str, "aids_json": str,
        },
        pk="id",
    ),
    "llm_calls": dict(
        columns={
            "id": int, "interaction_id": str, "turn_index": int, "role": str, "purpose": str,
            "model": str, "input_tokens": int, "output_tokens": int, "latency_ms": float,
            "cost": float, "error": str, "created_at": str,
            # of input_tokens, those the server reused from its prompt cache (not evaluated)
            "cached_tokens": int,
            # milliseconds to the first streamed token (None: the call did not stream)
            "ttft_ms": float,
            # retries: the attempt number, the server's Retry-After and the wait after a failure
            "attempt": int, "retry_after_s": float, "backoff_s": float,
            # the harness's bookkeeping of its own requests on the endpoint (models/traffic.py):
            # time shared with another request in flight, time given up to the agent
            "contended_ms": float, "yielded_ms": float,
            # time waited for a place under the endpoint's rate limits or a 429's pause
            "rate_wait_ms": float,
        },
        pk="id",
    ),
    # The live app: studies an organiser sets up, their pseudonymous participants, and one
    # row per live session (a person's conversation; its turns are ordinary turn rows).
    "studies": dict(
        columns={
            "id": str, "name": str, "status": str, "created_at": str, "config_json": str,
        },
        pk="id",
    ),
    "participants": dict(
        columns={
            "id": str, "study_id": str, "created_at": str, "consented_at": str,
        },
        pk="id",
    ),
    "live_sessions": dict(
        columns={
            "id": str, "study_id": str, "participant_id": str, "run_id": str,
            "interaction_id": str, "mode": str, "agent": str, "task_id": str, "status": str,
            "created_at": str, "ended_at": str,
        },
        pk="id",
    ),
    "scores": dict(
        columns={
            "id": int, "interaction_id": str, "run_id": str, "scorer": str,
            "scorer_version": str, "formula": str, "weights_json": str, "judge_model": str,
            "complexity_model": str, "prompt_version": str, "figures_json": str,
            "created_at": str,
            # the profile the figures were computed on ("judge-only": rescored without the
            # post-processing aids) and every aid's value and version
            "profile": str, "aids_json": str,
        },
        pk="id",
    ),
}

_INDEXES = [
    ("turns", ["interaction_id", "turn_index"], True),
    ("judgments", ["interaction_id", "turn_index", "kind"], False),
    ("llm_calls", ["interaction_id", "turn_index"], False),
    ("interactions", ["run_id", "position"], False),
    ("scores", ["run_id", "interaction_id", "scorer", "scorer_version", "formula"], True),
    ("live_sessions", ["study_id", "participant_id"], False),
    ("live_sessions", ["study_id", "task_id", "agent"], False),
    ("participants", ["study_id"], False),
]


def table_columns() -> dict[str, list[str]]:
    """Every table of the store and its columns, in schema order (``meta`` included)."""
    return {"meta": ["key", "value"], **{name: list(spec["columns"]) for name, spec in _TABLES.items()}}


def open_db(path: str | Path) -> sqlite_utils.Database:
    """Open (and create or check) the store at ``path``.

    Raises:
        StoreError: when the file is not a SQLite database or was written by a newer schema.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA foreign_keys=ON")
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"{path} is not a deskbench store ({exc}). Point --store at a new file or an "
            "existing deskbench store."
        ) from exc
    db = sqlite_utils.Database(conn)
    _ensure_schema(db, path)
    return db


def _ensure_schema(db: sqlite_utils.Database, path: Path) -> None:
    if not db["meta"].exists():
        with db.conn:
            db["meta"].create({"key": str, "value": str}, pk="key")
            db["meta"].insert({"key": "schema_version", "value": str(SCHEMA_VERSION)})
    found = int(db["meta"].get("schema_version")["value"])
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has store schema {found}, this deskbench understands up to "
            f"{SCHEMA_VERSION}. Upgrade deskbench to read it."
        )
    with db.conn:
        for name, spec in _TABLES.items():
            if not db[name].exists():
                db[name].create(spec["columns"], pk=spec["pk"], not_null=_not_null(name))
            else:  # columns added after a store was created (additive, no data touched)
                missing = {c: t for c, t in spec["columns"].items() if c not in db[name].columns_dict}
                for column, col_type in missing.items():
                    db[name].add_column(column, col_type)
        for table, cols, unique in _INDEXES:
            db[table].create_index(cols, unique=unique, if_not_exists=True)


def _not_null(table: str) -> set[str]:
    return {
        "turns": {"interaction_id", "turn_index"},
        "judgments": {"kind", "status"},
        "interactions": {"run_id", "problem_id"},
    }.get(table, set())
