"""Scale-out on Ray: the shards of one run as Ray tasks, progress gathered on the driver, the
shard stores merged into the driver's store at the end (docs/scale-out.md).

Where the shard stores live: each shard task works on a local SQLite file on the machine Ray
gives it (``worker_dir``, default the driver's shard folder path). On the driver's machine
that IS the shard store; from any other machine the task returns the file's bytes and the
driver writes them into its shard folder. Every shard is pinned (softly) to one node, so when
Ray retries a shard whose worker died, or whose interactions failed, the retry normally lands
on the same machine and resumes from the shard file: stored turns are never played again. If
that machine is gone, the retry starts the shard again from its seed on another node (or, where
the nodes share the disk that holds ``worker_dir``, resumes the file there). A file at the
worker path that another run or an earlier planning left (``ShardSpec.plan`` differs) is set
aside, never resumed. ``~`` and ``$VARIABLES`` in ``worker_dir`` are expanded on each machine.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.config import Config, ConfigError
from harness.models.circuit import CircuitOpenError
from harness.scale.shards import (ShardSpec, absorb_shards, create_run, default_shard_dir, plan_shards,
                            prepare_shard_file, progress_from_store, run_shard)
from harness.selfscore.runs import Progress
from harness.tasks.datasets import Dataset
from harness.tasks.jsonl import atomic_write
from store import StoreWriter
from store.merge import MergeReport, checkpoint, copy_interactions


class RayUnavailable(ConfigError):
    """Ray is not installed, or the cluster cannot be reached."""


def _ray():
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is an optional extra
        raise RayUnavailable("Scale-out needs Ray: `.venv/bin/pip install -e '.[scale]'`.") from exc
    return ray


class ShardError(RuntimeError):
    """A shard that did not finish; carries the shard's result (its store, from another
    machine), so the driver still merges what it did."""

    def __init__(self, message: str, result: "ShardResult"):
        super().__init__(message)
        self.result = result

    def __reduce__(self):
        return (type(self), (self.args[0], self.result))


class ShardIncomplete(ShardError):
    """Some interactions of a shard failed; Ray retries the shard, which resumes them."""


class ShardStopped(ShardError):
    """An endpoint of the shard is down for good (its circuit breaker opened); not retried:
    resume the run once the endpoint is back."""


@dataclass
class ShardResult:
    """What a shard task hands back to the driver."""

    index: int
    node_id: str
    work_path: str
    done: int
    failed: int
    turns: int
    data: bytes | None = None  # the shard store, when it was written on another machine
    seconds: float = 0.0  # spent running the shard (this try), without the worker's start-up


@dataclass
class ShardedProgress(Progress):
    """The run's combined figures plus each shard's state (attempts, node, counts)."""

    shards: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def retries(self) -> int:
        """Shard attempts beyond the first, over all shards."""
        return sum(max(s.get("attempts", 1) - 1, 0) for s in self.shards.values())


class ProgressBoard:
    """A Ray actor the shard tasks report to; the driver reads its snapshot."""

    def __init__(self):
        self.shards: dict[int, dict[str, Any]] = {}

    def started(self, index: int, node_id: str, pid: int) -> int:
        """Note that a shard's task started (on ``node_id``, as ``pid``); returns its attempt number."""
        s = self.shards.setdefault(index, {"attempts": 0})
        s.update(attempts=s["attempts"] + 1, node_id=node_id, pid=pid, state="running")
        return s["attempts"]

    def report(self, index: int, figures: dict[str, Any]) -> None:
        """Merge a shard's latest figures or state into its entry."""
        self.shards.setdefault(index, {"attempts": 1}).update(figures)

    def snapshot(self) -> dict[int, dict[str, Any]]:
        """Every shard's entry by index (attempts, node, state, figures)."""
        return self.shards


def _figures(p: Progress) -> dict[str, Any]:
    return {"total": p.total, "done": p.done, "failed": p.failed, "turns": p.turns,
            "solved": p.solved, "finals": list(p.finals)}


def shard_task(spec: ShardSpec, seed: bytes, worker_dir: str | None, driver_node: str, board) -> ShardResult:
    """The body of one Ray task: seed the local shard store if it is not there yet (a retry
    finds it and resumes), run the shard, hand back its figures (and the file, off the driver's
    machine). Raises :class:`ShardIncomplete` when interactions failed, so Ray retries it."""
    ray = _ray()
    node = ray.get_runtime_context().get_node_id()
    board.started.remote(spec.index, node, os.getpid())  # not awaited: the board may still be starting
    # ~ and $VARIABLES of worker_dir are this machine's (e.g. each worker's own home or scratch disk)
    work = Path(os.path.expandvars(os.path.expanduser(worker_dir))) / spec.name if worker_dir else Path(spec.path)
    prepare_shard_file(spec, work, seed)
    here = node == driver_node and work.resolve() == Path(spec.path).resolve()
    started = time.perf_counter()
    try:
        progress = run_shard(spec, work, lambda p: board.report.remote(spec.index, _figures(p)))
    except CircuitOpenError as exc:  # a BaseException: turn it into an error Ray hands back
        checkpoint(work)
        result = ShardResult(spec.index, node, str(work), 0, 0, 0, None if here else work.read_bytes())
        board.report.remote(spec.index, {"state": "stopped"})
        raise ShardStopped(f"shard {spec.index} stopped: {exc}", result) from None
    result = ShardResult(spec.index, node, str(work), progress.done, progress.failed, progress.turns,
                         None if here else work.read_bytes(), time.perf_counter() - started)
    board.report.remote(spec.index, {**_figures(progress), "state": "finished" if not progress.failed
                                     else f"{progress.failed} failed"})
    if progress.failed:
        raise ShardIncomplete(f"shard {spec.index}: {progress.failed} interaction(s) failed", result)
    return result


@dataclass
class ShardedRun:
    """The outcome of :func:`run_on_ray`: run id, progress read back from the store, merge
    reports, shard specs, shard problems, and seconds per phase."""
    run_id: str
    progress: Progress
    merges: list[MergeReport]
    shards: list[ShardSpec]
    errors: list[str]
    seconds: dict[str, float]


def _nodes(ray) -> list[str]:
    return [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]


def _combined(base: Progress, board: dict[int, dict[str, Any]], started: float) -> ShardedProgress:
    p = ShardedProgress(total=base.total, done=base.done, turns=base.turns, solved=base.solved,
                        finals=list(base.finals), started=started, shards=board)
    for s in board.values():
        p.done += s.get("done", 0)
        p.failed += s.get("failed", 0)
        p.turns += s.get("turns", 0)
        p.solved += s.get("solved", 0)
        p.finals += s.get("finals", [])
    return p


def run_on_ray(config: Config, benchmark: str, shards: int, *, dataset: Dataset | None = None,
               resume: str | None = None, address: str | None = None, shard_dir: str | Path | None = None,
               worker_dir: str | None = None, max_retries: int = 2, cpus_per_shard: float = 1.0,
               on_progress: Callable[[ShardedProgress], None] | None = None,
               poll_s: float = 0.5) -> ShardedRun:
    """Create (or resume) a run in ``config.store``, run it as ``shards`` Ray tasks and merge the
    shard stores back into ``config.store``.

    Args:
        address: a running cluster (``auto``, ``HOST:PORT``); None starts a local Ray instance
            (unless this process already connected one, which is then used as it is).
        shard_dir: the driver's shard folder (default ``<store dir>/shards/<run id>``).
        worker_dir: where shard tasks keep their store on other machines (default: the same
            absolute path as ``shard_dir``).
        max_retries: how often Ray re-runs a shard whose worker died or whose interactions failed.
    """
    ray = _ray()
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    if resume:
        from store import StoreReader
        run_id = StoreReader(config.store).run(resume)["id"]
    else:
        run_id = create_run(config, benchmark, dataset)
    folder = Path(shard_dir) if shard_dir else default_shard_dir(config.store, run_id)
    earlier = absorb_shards(config.store, folder) if folder.exists() else []
    specs = plan_shards(config.store, run_id, shards, folder, benchmark, config.agent.headers)
    base = progress_from_store(config.store, run_id)
    seconds["plan"] = time.perf_counter() - t0
    if not specs:  # nothing left to play (killed after its last conversation or its merges): no Ray
        writer = StoreWriter(config.store)
        writer.set_run_status(run_id, "completed")
        writer.close()
        return ShardedRun(run_id, base, list(earlier), specs, [], seconds)
    owned = not ray.is_initialized()
    if owned:
        t = time.perf_counter()
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, ray.exceptions.AuthenticationError) as exc:
            raise RayUnavailable(
                f"Cannot join the Ray cluster at {address} ({str(exc)[:300]}). Start it with `ray start "
                "--head` (docs/scale-out.md), copy its token (~/.ray/auth_token) to this machine, or "
                "leave out --address for a local Ray instance.") from exc
        seconds["ray_init"] = time.perf_counter() - t
    errors: list[str] = []
    try:
        writer = StoreWriter(config.store)
        writer.set_run_status(run_id, "running", f"sharded over {len(specs)} Ray task(s)")
        writer.close()
        t = time.perf_counter()
        results = _run_tasks(ray, specs, worker_dir, max_retries, cpus_per_shard, base, on_progress,
                             poll_s, errors)
        seconds["shards"] = time.perf_counter() - t
    finally:
        if owned:
            ray.shutdown()
    t = time.perf_counter()
    merges = list(earlier)
    for spec in specs:
        result = results.get(spec.index)
        if result is not None and result.data is not None:
            with atomic_write(Path(spec.path), "wb") as f:
                f.write(result.data)
        if result is None and Path(spec.path).exists():
            errors.append(f"shard {spec.index}: merging what its store on this machine holds")
        merges.append(copy_interactions(spec.path, config.store, run_id))
    seconds["merge"] = time.perf_counter() - t
    if results:
        seconds["slowest_shard_inside_worker"] = max(r.seconds for r in results.values())
    return ShardedRun(run_id, progress_from_store(config.store, run_id), merges, specs, errors, seconds)


def _run_tasks(ray, specs: list[ShardSpec], worker_dir, max_retries, cpus_per_shard, base: Progress,
               on_progress, poll_s, errors: list[str]) -> dict[int, ShardResult]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    driver_node = ray.get_runtime_context().get_node_id()
    # on the driver's node, always (left to Ray, or pinned softly, it often went to a worker
    # node, whose loss then ended the whole run): a lost worker machine must not take it along
    board = ray.remote(ProgressBoard).options(
        num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(driver_node, soft=False)).remote()
    task = ray.remote(shard_task)
    nodes = _nodes(ray) or [driver_node]
    pending = {}
    for spec in specs:
        strategy = NodeAffinitySchedulingStrategy(nodes[spec.index % len(nodes)], soft=True)
        ref = task.options(max_retries=max_retries, retry_exceptions=[ShardIncomplete],
                           num_cpus=cpus_per_shard, scheduling_strategy=strategy,
                           name=f"deskbench-{spec.name}").remote(
            spec, Path(spec.path).read_bytes(), worker_dir, driver_node, board)
        pending[ref] = spec
    results: dict[int, ShardResult] = {}
    started = time.perf_counter()
    snapshot: dict[int, dict[str, Any]] = {}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=poll_s)
        for ref in ready:
            spec = pending.pop(ref)
            try:
                results[spec.index] = ray.get(ref)
            except ShardError as exc:  # retries used up, or an endpoint is down: keep what it did
                results[spec.index] = exc.result
                errors.append(str(exc) if isinstance(exc, ShardStopped) else f"{exc} (after {max_retries + 1} tries)")
            except Exception as exc:  # the worker died every time, or the shard could not start
                errors.append(f"shard {spec.index} ({spec.name}): {type(exc).__name__}: {str(exc)[:300]}")
        if on_progress:
            try:
                snapshot = ray.get(board.snapshot.remote())
            except ray.exceptions.RayActorError:  # the board is gone: the shards' results still come
                pass
            on_progress(_combined(base, snapshot, started))
    return results
