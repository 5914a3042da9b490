"""Copy interactions between stores: merging shard stores into one, and seeding shard stores.

A sharded run keeps the SAME run id and interaction ids in every shard, so a merge is a
union of interactions. Each interaction moves whole: its row, its turns, judgments, LLM calls
and scores (integer ids are renumbered by the target; the order of rows is kept, so "the
latest judgment" stays the latest). Per interaction the store that got further wins:

- missing in the target: copied;
- the target's conversation is a prefix of the source's and the source holds more (turns,
  judgments, calls, a finished status, scores): the target's rows are replaced;
- the same progress: nothing is written (merging twice duplicates nothing);
- the target got further: the target is kept (reported as ``kept_newer``);
- the two conversations differ at some turn: refused, nothing written.

Every source is merged in one transaction, checked (row counts per interaction, SQLite's
integrity check) before it commits. A source that is not a store, has another schema version,
or holds a run whose configuration differs from the target's run of the same id is refused
with an error naming the file and the fix.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from store.schema import SCHEMA_VERSION, StoreError, open_db
from store.writer import now

CHILD_TABLES = ("turns", "judgments", "llm_calls", "scores")
# Fields that identify what a run is; two stores may only merge a run if these agree.
RUN_IDENTITY = ("name", "kind", "config_json", "models_json", "dataset", "dataset_sha256", "seed",
                "code_version", "prompt_version", "scorer_version", "source_run")
_STATUS_RANK = {"pending": 0, "running": 1, "failed": 2, "completed": 3}


class MergeError(StoreError):
    """Stores that cannot be merged; the message names the files, the reason and the fix."""


@dataclass
class MergeReport:
    """What one source contributed to the target."""

    source: str
    runs: list[str] = field(default_factory=list)
    copied: int = 0
    replaced: int = 0
    unchanged: int = 0
    kept_newer: int = 0
    rows: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        """The report as one line: runs, interactions copied, updated, unchanged or kept, rows written."""
        rows = ", ".join(f"{n} {t}" for t, n in self.rows.items() if n) or "no rows"
        return (f"{self.source}: run {', '.join(self.runs) or '-'}: {self.copied} interaction(s) copied, "
                f"{self.replaced} updated, {self.unchanged} unchanged, {self.kept_newer} kept (target "
                f"further); {rows} written")


def merge_stores(sources: Sequence[str | Path], target: str | Path) -> list[MergeReport]:
    """Merge every run of each source store into ``target`` (created if missing)."""
    return [copy_interactions(s, target) for s in sources]


def copy_interactions(source: str | Path, target: str | Path, run_id: str | None = None,
                      interaction_ids: Iterable[str] | None = None) -> MergeReport:
    """Copy the interactions of ``run_id`` (default: every run) of ``source`` into ``target``,
    only ``interaction_ids`` when given, in one checked transaction.

    Raises:
        MergeError: the source is not a store, has another schema version, holds a different
            run under the same id, or a conversation that differs from the target's.
    """
    source, target = Path(source), Path(target)
    if source.resolve() == target.resolve():
        raise MergeError(f"{source} is the target store itself; merge shard stores into another file.")
    src = _open_source(source)
    try:
        db = open_db(target)
        try:
            return _merge(src, db.conn, source, target, run_id, interaction_ids)
        finally:
            db.conn.close()
    finally:
        src.close()


def checkpoint(path: str | Path) -> None:
    """Fold the store's write-ahead log into its main file, so the file alone holds every row
    (before it is copied, sent to another machine or renamed)."""
    db = open_db(path)
    try:
        db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.conn.close()


def _open_source(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise MergeError(f"No store at {path}. Pass the shard stores a sharded run wrote "
                         "(shard-<k>.sqlite).")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout=10000")
        has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise MergeError(f"{path} is not a deskbench store ({exc}); nothing was merged.") from exc
    if not has_meta:
        conn.close()
        raise MergeError(f"{path} is not a deskbench store (no meta table); nothing was merged.")
    version = int(conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
    if version != SCHEMA_VERSION:
        conn.close()
        raise MergeError(f"{path} has store schema {version}, the target uses schema {SCHEMA_VERSION}; "
                         "open both with the same deskbench version (which upgrades older stores "
                         "when it opens them) and merge again.")
    return conn


def _rows(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    cur = conn.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info([{table}])")]


def _merge(src: sqlite3.Connection, dst: sqlite3.Connection, source: Path, target: Path,
           run_id: str | None, interaction_ids: Iterable[str] | None) -> MergeReport:
    report = MergeReport(str(source), rows={t: 0 for t in ("runs", "problems", "preprocessing",
                                                            "interactions", *CHILD_TABLES)})
    wanted = None if interaction_ids is None else set(interaction_ids)
    runs = _rows(src, "SELECT * FROM runs" + (" WHERE id=?" if run_id else ""), (run_id,) if run_id else ())
    if run_id and not runs:
        raise MergeError(f"{source} holds no run {run_id}; nothing was merged.")
    columns = {t: [c for c in _columns(dst, t) if c in set(_columns(src, t))]
               for t in ("runs", "problems", "preprocessing", "interactions", *CHILD_TABLES)}
    dst.execute("BEGIN IMMEDIATE")
    try:
        touched: list[str] = []
        for run in runs:
            report.runs.append(run["id"])
            _merge_run_row(dst, run, columns["runs"], source, target, report)
            rows = _rows(src, "SELECT * FROM interactions WHERE run_id=? ORDER BY position", (run["id"],))
            for row in rows:
                if wanted is not None and row["id"] not in wanted:
                    continue
                if _merge_interaction(src, dst, row, columns, source, target, report):
                    touched.append(row["id"])
            _set_run_status(dst, run["id"])
        _check(src, dst, touched, source)
    except BaseException:
        dst.execute("ROLLBACK")
        raise
    dst.execute("COMMIT")
    return report


def _insert(dst: sqlite3.Connection, table: str, row: dict, columns: list[str], verb: str = "INSERT") -> None:
    cols = [c for c in columns if c in row]
    dst.execute(f"{verb} INTO [{table}] ({', '.join(f'[{c}]' for c in cols)}) "
                f"VALUES ({', '.join('?' for _ in cols)})", tuple(row[c] for c in cols))


def _merge_run_row(dst, run: dict, columns: list[str], source: Path, target: Path, report: MergeReport) -> None:
    have = _rows(dst, "SELECT * FROM runs WHERE id=?", (run["id"],))
    if not have:
        _insert(dst, "runs", run, columns)
        report.rows["runs"] += 1
        return
    differ = [k for k in RUN_IDENTITY if k in have[0] and k in run and have[0][k] != run[k]]
    if differ:
        raise MergeError(
            f"{source} and {target} both hold run {run['id']} but with a different {', '.join(differ)}: "
            "they are not shards of the same run. Merge them into separate stores; nothing was merged.")


def _merge_interaction(src, dst, row: dict, columns: dict[str, list[str]], source: Path, target: Path,
                       report: MergeReport) -> bool:
    """Copy or replace one interaction; True when rows were written."""
    iid = row["id"]
    theirs = _progress(src, iid, row)
    have = _rows(dst, "SELECT * FROM interactions WHERE id=?", (iid,))
    if have:
        ours = _progress(dst, iid, have[0])
        _check_same_conversation(src, dst, iid, source, target)
        if theirs == ours:
            report.unchanged += 1
            return False
        if theirs < ours:
            report.kept_newer += 1
            return False
        for table in CHILD_TABLES:
            dst.execute(f"DELETE FROM [{table}] WHERE interaction_id=?", (iid,))
        report.replaced += 1
    else:
        report.copied += 1
    problem = _rows(src, "SELECT * FROM problems WHERE id=?", (row["problem_id"],))
    for p in problem:
        n = dst.total_changes
        _insert(dst, "problems", p, columns["problems"], "INSERT OR IGNORE")
        report.rows["problems"] += dst.total_changes - n
    for p in _rows(src, "SELECT * FROM preprocessing WHERE problem_id=?", (row["problem_id"],)):
        n = dst.total_changes
        _insert(dst, "preprocessing", p, columns["preprocessing"], "INSERT OR IGNORE")
        report.rows["preprocessing"] += dst.total_changes - n
    _insert(dst, "interactions", row, columns["interactions"], "INSERT OR REPLACE")
    report.rows["interactions"] += 1
    for table in CHILD_TABLES:
        renumbered = [c for c in columns[table] if c != "id"]
        for child in _rows(src, f"SELECT * FROM [{table}] WHERE interaction_id=? ORDER BY id", (iid,)):
            _insert(dst, table, child, renumbered)
            report.rows[table] += 1
    return True


def _progress(conn, iid: str, row: dict) -> tuple:
    """How far an interaction got in one store, compared between stores."""
    counts = [conn.execute(f"SELECT COUNT(*) FROM [{t}] WHERE interaction_id=?", (iid,)).fetchone()[0]
              for t in CHILD_TABLES]
    turns, judgments, calls, scores = counts
    return (turns, judgments, calls, _STATUS_RANK.get(row["status"], 0), scores)


def _check_same_conversation(src, dst, iid: str, source: Path, target: Path) -> None:
    sql = "SELECT turn_index, user_message, agent_message FROM turns WHERE interaction_id=? ORDER BY turn_index"
    a, b = src.execute(sql, (iid,)).fetchall(), dst.execute(sql, (iid,)).fetchall()
    for x, y in zip(a, b):
        if tuple(x) != tuple(y):
            raise MergeError(
                f"Interaction {iid} differs at turn {x[0]} between {source} and {target}: the same "
                "interaction was run twice independently. Keep one (merge the other into a separate "
                "store); nothing was merged.")


def _set_run_status(dst, run_id: str) -> None:
    counts = dict(dst.execute("SELECT status, COUNT(*) FROM interactions WHERE run_id=? GROUP BY status",
                              (run_id,)).fetchall())
    total, done, failed = sum(counts.values()), counts.get("completed", 0), counts.get("failed", 0)
    if total and done == total:
        status, detail = "completed", None
    else:
        status = "incomplete"
        detail = (f"{failed} interaction(s) failed, {total - done - failed} not finished; "
                  f"finish them with --resume {run_id}")
    dst.execute("UPDATE runs SET status=?, stop_detail=?, finished_at=CASE WHEN ?='completed' "
                "THEN COALESCE(finished_at, ?) END WHERE id=?", (status, detail, status, now(), run_id))


def _check(src, dst, touched: list[str], source: Path) -> None:
    """Before commit: every written interaction has exactly the source's rows; SQLite is sound."""
    for iid in touched:
        for table in CHILD_TABLES:
            sql = f"SELECT COUNT(*) FROM [{table}] WHERE interaction_id=?"
            want, got = src.execute(sql, (iid,)).fetchone()[0], dst.execute(sql, (iid,)).fetchone()[0]
            if want != got:
                raise MergeError(f"Merging {source}: interaction {iid} has {got} {table} rows in the target "
                                 f"but {want} in the source; the merge was rolled back.")
    result = dst.execute("PRAGMA integrity_check").fetchone()[0]
    if result != "ok":
        raise MergeError(f"Merging {source}: SQLite integrity check failed ({result}); rolled back.")
