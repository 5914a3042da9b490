"""Shards of one run: planned in the driver's store, each run by the existing batch code.

The driver creates the run and all its pending interactions in its own store (exactly as a
single-process run does), then copies the run row, the problems and a slice of the unfinished
interactions into one store file per shard (``shard-<k>.sqlite``). Every shard therefore has
the SAME run id and interaction ids, runs with ``--resume``'s code path (``arun_selfscore`` /
``arun_ntb`` with ``resume=run_id``) on its own store, and merging the shard stores back is a
union (``store.merge``). Nothing here knows about Ray: ``harness.scale.ray_tasks`` runs the shards.
"""
from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from harness.config import Config
from harness.models import Limits
from harness.selfscore.batch import failed_by_agent
from harness.selfscore.runs import Progress, ProgressFn
from harness.tasks.datasets import Dataset
from harness.tasks.jsonl import atomic_write
from store import StoreReader, StoreWriter
from store.merge import MergeReport, checkpoint, copy_interactions

BENCHMARKS = ("selfscore", "ntb")


@dataclass(frozen=True)
class ShardSpec:
    """Everything one shard needs, picklable: which run, which interactions, which config."""

    index: int
    benchmark: str
    run_id: str
    config_json: str  # the run's frozen config; its store is replaced by the shard's file
    interaction_ids: tuple[str, ...]
    path: str  # the shard store on the driver's machine
    plan: str = ""  # the planning that made this shard, also in the shard store (``plan_of``)
    #: the agent under test's headers as given (``${VAR}`` unexpanded): a run never stores their
    #: values, so they travel with the spec, in memory, to the shard that calls the agent
    agent_headers: tuple[tuple[str, str], ...] = ()
    #: the shards of the plan, running at once: each keeps 1/shares of every endpoint rate limit
    shares: int = 1

    @property
    def name(self) -> str:
        """The shard store's file name (``shard-<k>.sqlite``)."""
        return Path(self.path).name


def create_run(config: Config, benchmark: str, dataset: Dataset | None = None) -> str:
    """Create the run and one pending interaction per task (or NTB case) in ``config.store``,
    with the batch classes' own ``create_run``; no model is called."""
    from harness.compose import Runtime
    from harness.ntb.batch import NtbBatch, selected_cases
    from harness.selfscore.batch import SelfScoreBatch

    if benchmark not in BENCHMARKS:
        raise ValueError(f"Unknown benchmark {benchmark!r}; choose one of {', '.join(BENCHMARKS)}.")
    writer, reader = StoreWriter(config.store), StoreReader(config.store, must_exist=False)
    try:
        with Runtime(config) as runtime:  # builds role clients lazily: nothing starts here
            if benchmark == "ntb":
                return NtbBatch(runtime, writer, reader).create_run(selected_cases(config))
            if dataset is None:
                raise ValueError("A new SelfScore run needs a dataset (--dataset).")
            return SelfScoreBatch(runtime, writer, reader).create_run(dataset)
    finally:
        writer.close()


def split_evenly(items: Sequence[str], n: int) -> list[list[str]]:
    """``items`` in at most ``n`` contiguous slices whose sizes differ by at most one."""
    if n < 1:
        raise ValueError(f"--shards must be at least 1 (got {n}).")
    n = min(n, len(items))
    size, extra = divmod(len(items), n) if n else (0, 0)
    out, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return out


def default_shard_dir(store: str | Path, run_id: str) -> Path:
    """The driver's default shard folder: ``<store dir>/shards/<run id>``."""
    return Path(store).parent / "shards" / run_id


def absorb_shards(store: str | Path, shard_dir: Path) -> list[MergeReport]:
    """Merge shard stores left by an earlier sharded attempt into ``store`` and rename each to
    ``shard-<k>.sqlite.merged``, so a re-plan can give their interactions to other shards."""
    reports = []
    for path in sorted(shard_dir.glob("shard-*.sqlite")):
        checkpoint(path)
        reports.append(copy_interactions(path, store))
        path.rename(path.with_name(path.name + ".merged"))
    return reports


def plan_shards(store: str | Path, run_id: str, shards: int, shard_dir: Path,
                benchmark: str, agent_headers: dict[str, str] | None = None) -> list[ShardSpec]:
    """Split the run's unfinished interactions (and those its agent under test failed,
    ``agent_error``) over ``shards`` new shard stores in ``shard_dir``."""
    reader = StoreReader(store)
    run = reader.run(run_id)
    todo = [r["id"] for r in reader.interactions(run["id"])
            if r["status"] != "completed" or failed_by_agent(r)]
    plan = uuid.uuid4().hex[:12]
    specs = []
    chunks = split_evenly(todo, shards) if todo else []
    for k, ids in enumerate(chunks):
        path = shard_dir / f"shard-{k}.sqlite"
        if path.exists():
            raise ValueError(f"{path} exists already: a shard store from another attempt. Merge it "
                             f"with `deskbench ray merge {path} --into {store}` and move it away first.")
        copy_interactions(store, path, run["id"], ids)
        _mark_plan(path, plan)
        checkpoint(path)
        specs.append(ShardSpec(k, benchmark, run["id"], run["config_json"], tuple(ids), str(path), plan,
                               tuple((agent_headers or {}).items()), shares=len(chunks)))
    return specs


def run_shard(spec: ShardSpec, store: str | Path, on_progress: ProgressFn | None = None,
              chat_models=None) -> Progress:
    """Run (or resume) one shard on the store file ``store`` with the ordinary batch code;
    at the end the file alone (no write-ahead log) holds the shard.

    ``chat_models`` replaces how role clients are built (in-process tests pass fakes).
    """
    from harness.compose import Runtime
    from harness.ntb.batch import arun_ntb
    from harness.selfscore.batch import arun_selfscore

    config = Config.model_validate_json(spec.config_json)
    config.store = str(store)
    if spec.agent_headers:
        config.agent.headers = dict(spec.agent_headers)
    share_rate_limits(config, spec.shares)
    run = arun_ntb if spec.benchmark == "ntb" else arun_selfscore
    with Runtime(config, chat_models) as runtime:
        _, progress = asyncio.run(run(runtime, resume=spec.run_id, on_progress=on_progress))
    checkpoint(store)
    return progress


def share_rate_limits(config: Config, shares: int) -> None:
    """Each role's endpoint rate limits divided among ``shares`` processes running at once (a
    limit holds per process, ``harness.models.rate_limits``), so that the shards together keep
    the endpoint's limits."""
    if shares <= 1:
        return
    for role, spec in config.roles.items():
        limits = Limits.of(spec)
        if limits.any:
            config.roles[role] = spec.model_copy(update=asdict(limits.divided(shares)))


def progress_from_store(store: str | Path, run_id: str) -> Progress:
    """The run's figures as a :class:`Progress` (turns of completed interactions, as a batch
    counts them), read back from the (merged) store."""
    reader = StoreReader(store)
    rows = reader.interactions(run_id)
    progress = Progress(total=len(rows))
    for r in rows:
        progress.failed += r["status"] == "failed"
        if r["status"] == "completed":
            progress.done += 1
            progress.turns += r["n_turns"] or 0
    for s in reader.scores(run_id):
        progress.solved += int(bool(s["figures"].get("solved")))
        if s["figures"].get("final_score") is not None:
            progress.finals.append(s["figures"]["final_score"])
    return progress


_PLAN_KEY = "shard_plan"


def _mark_plan(path: Path, plan: str) -> None:
    conn = sqlite3.connect(str(path))
    try:
        with conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (_PLAN_KEY, plan))
    finally:
        conn.close()


def plan_of(path: str | Path) -> str | None:
    """The planning a shard store was made by (``ShardSpec.plan``); None when the file holds
    none (not a shard store, or not a store at all)."""
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key=?", (_PLAN_KEY,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return row[0] if row else None


def set_aside(path: str | Path) -> Path:
    """Rename a store file with its write-ahead log and shared-memory files (which belong to
    it; the log first, so no log is ever left next to another file of that name) to
    ``<name>.<time>-<random>.stale``; what it holds can still be merged by hand."""
    path = Path(path)
    stale = path.with_name(f"{path.name}.{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}.stale")
    for suffix in ("-wal", "-shm", ""):
        part = path.with_name(path.name + suffix)
        if part.exists():
            part.rename(stale.with_name(stale.name + suffix))
    return stale


def prepare_shard_file(spec: ShardSpec, work: Path, seed: bytes) -> bool:
    """Make ``work`` the store of shard ``spec`` on the machine a shard task runs on: a file of
    this planning found there is kept (a retry resumes it: True); a file of another run or of an
    earlier planning (a worker folder used again, ``ray run --resume`` re-planning) is set aside
    (:func:`set_aside`) and, like a missing one, replaced by the seed (False)."""
    if work.exists() and (not spec.plan or plan_of(work) == spec.plan):
        return True
    if any(work.with_name(work.name + s).exists() for s in ("", "-wal", "-shm")):
        set_aside(work)
    work.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(work, "wb") as f:
        f.write(seed)
    return False
