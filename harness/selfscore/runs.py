"""Run bookkeeping shared by the SelfScore and NoisyToolBench batches: the run row and its
status, the ``llm_calls`` rows of a call's attempts, a failed interaction, and running the
interactions of a run concurrently so that an open circuit or Ctrl-C stops it cleanly.
"""
from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import subprocess
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from time import perf_counter
from typing import Any, Callable, Iterable, Iterator, Sequence

from graphs.protocols import LLMCall
from harness.config import TEAM_AGENTS, Config, RetryConfig
from harness.models.circuit import CircuitOpenError, ReliabilityScope, reliability_scope
from store import StoreReader, StoreWriter


def call_row(c: LLMCall, interaction_id: str, turn_index: int | None) -> dict[str, Any]:
    """The ``llm_calls`` row of one attempt (see :func:`call_rows` for a call's retries)."""
    return {"interaction_id": interaction_id, "turn_index": turn_index, "role": c.role,
            "purpose": c.purpose, "model": c.model,
            # an agent under test that reported no usage: NULL ("not reported"), never 0
            "input_tokens": c.input_tokens if c.usage_reported else None,
            "output_tokens": c.output_tokens if c.usage_reported else None, "cached_tokens": c.cached_tokens,
            "ttft_ms": c.ttft_ms, "latency_ms": c.latency_ms, "cost": c.cost if c.usage_reported else None, "error": c.error, "attempt": c.attempt, "retry_after_s": c.retry_after_s,
            "backoff_s": c.backoff_s, "contended_ms": c.contended_ms, "yielded_ms": c.yielded_ms,
            "rate_wait_ms": c.rate_wait_ms}


def call_rows(calls: Iterable[LLMCall], interaction_id: str, turn_index: int | None) -> list[dict[str, Any]]:
    """One ``llm_calls`` row per attempt of each call: its failed attempts, then itself."""
    return [call_row(a, interaction_id, turn_index) for c in calls for a in c.all_attempts()]


@dataclass
class Progress:
    """Running figures of a batch, handed to the progress callback after each event."""

    total: int
    done: int = 0
    failed: int = 0
    turns: int = 0
    solved: int = 0
    #: conversations that ended because the agent under test failed (stop reason agent_error)
    agent_errors: int = 0
    finals: list[float] = field(default_factory=list)
    started: float = field(default_factory=perf_counter)

    @property
    def mean_final(self) -> float | None:
        """The mean final score of the interactions finished so far that have one (None: none yet)."""
        return sum(self.finals) / len(self.finals) if self.finals else None

    @property
    def turns_per_s(self) -> float:
        """Turns played per second since the progress was created."""
        return self.turns / max(perf_counter() - self.started, 1e-9)


ProgressFn = Callable[[Progress], None]


def run_models(cfg: Config) -> dict[str, str]:
    """The model of each role a run stores; the agent under test's is its name and adapter
    (``supportbot (http)``): the agent role's model did not answer."""
    models = {r: s.model for r, s in cfg.roles.items()}
    if cfg.run.agent in TEAM_AGENTS:
        models["agent"] = f"{cfg.agent.label(cfg.run.agent)} ({cfg.run.agent})"
    return models


def new_run(writer: StoreWriter, cfg: Config, name: str, kind: str, dataset: str, dataset_sha256: str,
            prompt_version: str, scorer_version: str, source_run: str | None = None,
            run_id: str | None = None, problems: Sequence[dict] = (),
            interactions: Callable[[str], Sequence[dict]] = lambda run_id: (),
            profile: dict | None = None) -> str:
    """Store a new run row (status running) with everything needed to trace its figures,
    together with its ``problems`` and ``interactions(run_id)`` in one transaction (a crash
    leaves no run or a whole one). ``run_id`` defaults to ``<name>-<UTC timestamp>``;
    ``profile`` is the method profile's record (``harness.aids.profiles.Profile.record``)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")[:-3]
    run_id = run_id or f"{name}-{stamp}"
    row = {
        "id": run_id, "name": name, "kind": kind, "config_json": cfg.model_dump_json(),
        "models_json": json.dumps(run_models(cfg)),
        "dataset": dataset, "dataset_sha256": dataset_sha256, "seed": cfg.run.seed,
        "code_version": code_version(), "prompt_version": prompt_version,
        "scorer_version": scorer_version, "source_run": source_run,
        "profile_json": json.dumps(profile) if profile is not None else None,
    }
    writer.create_run(row, problems, interactions(run_id))
    return run_id


async def run_all(writer: StoreWriter, run_id: str, todo: Sequence[dict], concurrency: int,
                  progress: Progress, worker: Callable[[dict], Any],
                  retry: RetryConfig | None = None) -> Progress:
    """Run ``worker`` on every interaction row of ``todo``, ``concurrency`` at a time, and
    leave the run's status as completed, incomplete (some failed) or interrupted.

    Model calls retry and trip circuit breakers by ``retry`` (``harness.models.circuit``). When one
    worker raises anything that is not an ordinary failure (an open circuit, Ctrl-C), no new
    interaction starts, the ones in flight are cancelled (a turn is one transaction: nothing
    half-written), the run is marked interrupted and the exception propagates.
    """
    semaphore = asyncio.Semaphore(concurrency)

    async def one(row):
        async with semaphore:
            await worker(row)

    with reliability_scope(ReliabilityScope(retry or RetryConfig())):
        tasks = [asyncio.ensure_future(one(r)) for r in todo]
    try:
        with batch_gc():
            await _first_error(tasks)
    except BaseException as exc:
        if isinstance(exc, CircuitOpenError):
            exc.run_id = run_id
            detail = f"{exc}; nothing half-written; resume with --resume {run_id} once it is back"
        else:
            detail = f"{type(exc).__name__}: {exc}"
        writer.set_run_status(run_id, "interrupted", detail[:500])
        raise
    detail = None if not progress.failed else (
        f"{progress.failed} interaction(s) failed; finish them with --resume {run_id}")
    writer.set_run_status(run_id, "completed" if not progress.failed else "incomplete", detail)
    return progress


#: the youngest generation's collection threshold during a batch (Python's default: 700)
BATCH_GC_THRESHOLD = 10_000
_gc_lock = threading.Lock()
_gc_batches: list[tuple[int, int, int]] = []  # the thresholds before the outermost batch, per batch


@contextlib.contextmanager
def batch_gc() -> Iterator[None]:
    """While a batch runs, the cyclic garbage collector leaves alone what lived before it.

    The objects alive when the batch starts (modules, clients, schemas: most of the heap) are
    frozen out of the collector (``gc.freeze``) and its youngest generation is collected every
    :data:`BATCH_GC_THRESHOLD` allocations instead of 700: with the defaults a fast endpoint's
    batch spent a sixth of its CPU in full collections walking that heap again and again
    (issue 44). Nothing a batch computes depends on when garbage is collected. The settings
    come back when the last of the batches running at once ends."""
    with _gc_lock:
        if not _gc_batches:
            gc.freeze()
            before = gc.get_threshold()
            gc.set_threshold(BATCH_GC_THRESHOLD, *before[1:])
        else:
            before = _gc_batches[0]
        _gc_batches.append(before)
    try:
        yield
    finally:
        with _gc_lock:
            _gc_batches.pop()
            if not _gc_batches:
                gc.set_threshold(*before)
                gc.unfreeze()


async def finish_run(writer: StoreWriter, run_id: str, progress: Progress,
                     on_progress: ProgressFn | None = None) -> Progress:
    """A resume with no interaction left to play (the batch was killed after its last
    conversation, while the run's status, report or exports were written): report the
    progress once and mark the run completed, as :func:`run_all` does at its end. The caller
    then writes the report and exports again (docs/reliability.md)."""
    if on_progress:
        on_progress(progress)
    return await run_all(writer, run_id, [], 1, progress, lambda row: None)


async def _first_error(tasks: list[asyncio.Future]) -> None:
    """Wait for every task; on the first exception cancel the others, wait for them, raise it."""
    if not tasks:  # asyncio.wait refuses an empty set
        return
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:  # this coroutine itself was cancelled or interrupted
        done, pending = set(), {t for t in tasks if not t.done()}
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        raise
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for t in tasks:
        if t in done and not t.cancelled() and t.exception() is not None:
            raise t.exception()


def record_failure(writer: StoreWriter, reader: StoreReader, interaction_id: str, exc: Exception,
                   progress: Progress, on_progress: ProgressFn) -> None:
    """Mark an interaction failed (its stored turns stay; ``--resume`` continues it).

    The failed call's attempts (``exc.llm_call``, see ``harness.models.llm.RoleClient.invoke``) are
    stored with it, under the turn that was in flight.
    """
    n_turns = len(reader.turns(interaction_id))
    failed = getattr(exc, "llm_call", None)
    writer.finish_interaction(interaction_id, "failed", None, n_turns,
                              error=f"{type(exc).__name__}: {exc}"[:1000],
                              calls=call_rows([failed] if failed else [], interaction_id, n_turns + 1))
    progress.failed += 1
    on_progress(progress)


def code_version() -> str:
    """The checkout's ``git describe --always --dirty``, else the installed ``deskbench``
    version, else ``unknown``."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=5, cwd=Path(__file__).parent)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("deskbench")
    except PackageNotFoundError:
        return "unknown"
