"""Kill a running SelfScore batch with SIGKILL at random points, resume it, again and again.

The batch is the real ``deskbench run`` CLI (``harness.cli.main.main``) in its own process, talking
HTTP to a fake OpenAI server that lives in this process (so the server's request count says
how far the batch got). Two ways to start that process:

- ``fork``: ``os.fork()`` of the current process (already imported), then ``main(argv)``; a
  start costs milliseconds, so a unit test can afford dozens of kills;
- ``subprocess``: ``python -m harness.cli.main run ...``, exactly what a user runs (seconds per start).

Each attempt is killed once the server has seen a random number of its requests, plus a random
few milliseconds, so kills land in model calls, between turns and during SQLite commits alike.
After every kill the store's ``PRAGMA integrity_check`` must say ``ok``. When the planned kills
are spent the batch runs to the end (``--resume`` of the same run).

End-of-run kill points (:data:`KILL_POINTS`) are the moments after the last conversation
completed, while the run's status, the report and the exports are written; the request count
cannot aim at them (no model request is made there), so the batch process SIGKILLs itself when
it gets there: :func:`arm` wraps the function that starts that phase. ``end_kills`` of
:func:`crash_and_resume` names the points to die at, one attempt each, after the random kills;
an attempt that exits instead of dying at its point fails the session (the point was not
reached, e.g. because the resume before it failed). ``python -m tests.crash_harness --kill-at
POINT ARGV...`` is the CLI with a point armed, for ``subprocess`` mode.
"""
from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

ROLES = ("agent", "user", "judge", "complexity", "extractor")

# name: (what has happened when the process dies there, the functions it dies on entering)
KILL_POINTS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "before_run_status": ("every interaction finished; the run's final status not yet stored",
                          (("store.writer", "StoreWriter.set_run_status"),)),
    "before_merge": ("ray run/ntb: every shard finished; no shard store merged into the driver's yet",
                     (("harness.scale.ray_tasks", "copy_interactions"),)),
    "before_report": ("the run is completed; report.md not yet written",
                      (("harness.study.report", "write_report"),)),
    "before_exports": ("report.md written (SelfScore); no export written yet",
                       (("harness.study.export", "export_run"), ("harness.ntb.report", "export_run"))),
    "before_html": ("the exports written; report.html not yet", (("harness.study.html_report", "write_html_report"),)),
    "before_exit": ("everything written and printed; the process has not exited", ()),
}


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point: str) -> None:
    """Make this process SIGKILL itself on entering the phase ``point`` of :data:`KILL_POINTS`
    (``before_exit``: the caller dies after ``main`` returns). ``set_run_status`` dies only for
    a final status (not the ``running`` a batch starts with)."""
    import importlib

    for module_name, attribute in KILL_POINTS[point][1]:
        owner: object = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, _dying(getattr(owner, name), final_status_only=name == "set_run_status"))


def _dying(original: Callable, final_status_only: bool) -> Callable:
    def dying(*args, **kwargs):
        status = args[2] if len(args) > 2 else kwargs.get("status")  # (self, run_id, status, ...)
        if not final_status_only or status != "running":
            _die()
        return original(*args, **kwargs)
    return dying


def run_main(argv: list[str], kill_at: str | None = None) -> int:
    """``harness.cli.main.main(argv)`` with ``kill_at`` armed (see :func:`arm`)."""
    if kill_at:
        arm(kill_at)
    from harness.cli.main import main
    rc = main(argv)
    if kill_at == "before_exit":
        _die()
    return rc


def batch_argv(store: Path, tasks: Path, url: str, limit: int, max_turns: int, concurrency: int,
               resume: str | None = None) -> list[str]:
    """``deskbench run`` arguments for a batch whose every role is ``<role>-fake`` at ``url``."""
    if resume:
        return ["run", "--store", str(store), "--resume", resume, "--quiet", "--out", str(store.parent / "out")]
    roles = [f for r in ROLES for f in ("--role", f"{r}.base_url={url}", "--role", f"{r}.model={r}-fake")]
    return ["run", "--store", str(store), "--dataset", str(tasks), "--limit", str(limit),
            "--max-turns", str(max_turns), "--concurrency", str(concurrency), "--quiet",
            "--out", str(store.parent / "out"), *roles]


def integrity(store: Path) -> str:
    """``PRAGMA integrity_check`` of the store (``ok`` when sound)."""
    conn = sqlite3.connect(str(store))
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def run_id_in(store: Path) -> str | None:
    """The id of the one run in ``store``, or None before the run was created."""
    if not store.exists():
        return None
    conn = sqlite3.connect(str(store))
    try:
        row = conn.execute("SELECT id FROM runs ORDER BY created_at LIMIT 1").fetchone()
    except sqlite3.OperationalError:  # killed before the tables were created
        return None
    finally:
        conn.close()
    return row[0] if row else None


class _Fork:
    def __init__(self, argv: list[str], kill_at: str | None = None):
        pid = os.fork()
        if pid == 0:  # the batch: stdout/stderr to /dev/null, exit with the CLI's code
            rc = 70
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                sys.stdout = sys.stderr = open(os.devnull, "w")
                rc = run_main(argv, kill_at)
            finally:
                os._exit(rc)
        self.pid = pid
        self.rc: int | None = None

    def poll(self) -> int | None:
        if self.rc is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.rc = os.waitstatus_to_exitcode(status)
        return self.rc

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        if self.rc is None:
            _, status = os.waitpid(self.pid, 0)
            self.rc = os.waitstatus_to_exitcode(status)
        return self.rc


class _Subprocess:
    def __init__(self, argv: list[str], kill_at: str | None = None):
        root = Path(__file__).resolve().parent.parent
        entry = ["tests.crash_harness", "--kill-at", kill_at] if kill_at else ["harness.cli"]
        self.proc = subprocess.Popen([sys.executable, "-m", *entry, *argv], cwd=root,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def poll(self):
        return self.proc.poll()

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)

    def wait(self):
        return self.proc.wait()


@dataclass
class CrashReport:
    """What a crash-and-resume session did."""

    run_id: str | None = None
    kills: int = 0
    attempts: int = 0
    requests: int = 0
    seconds: float = 0.0
    kill_points: list[tuple[int, float]] = field(default_factory=list)  # (requests seen, extra s)
    end_kills: list[str] = field(default_factory=list)  # the end-of-run points it died at
    integrity: list[str] = field(default_factory=list)
    final_rc: int | None = None


class KillPointMissed(AssertionError):
    """An attempt armed with an end-of-run kill point exited instead of dying there."""


def die_at(point: str, argv: list[str], mode: str = "fork", timeout_s: float = 300.0) -> None:
    """Run the CLI with ``argv`` once, armed to die at the end-of-run ``point``; raise
    :class:`KillPointMissed` when it exits instead (the point was never reached)."""
    proc = {"fork": _Fork, "subprocess": _Subprocess}[mode](argv, kill_at=point)
    deadline = time.perf_counter() + timeout_s
    while proc.poll() is None:
        if time.perf_counter() > deadline:
            proc.kill()
            raise TimeoutError(f"the batch did not reach {point} before the deadline")
        time.sleep(0.005)
    if proc.wait() != -signal.SIGKILL:
        raise KillPointMissed(f"{' '.join(argv[:2])} exited with {proc.wait()} instead of dying at "
                              f"{point} ({KILL_POINTS[point][0]})")


def crash_and_resume(store: Path, tasks: Path, server, kills: int, seed: int = 0, mode: str = "fork",
                     limit: int = 6, max_turns: int = 4, concurrency: int = 2,
                     max_requests_before_kill: int = 25, timeout_s: float = 300.0,
                     end_kills: Sequence[str] = (),
                     argv: Callable[[str | None], list[str]] | None = None) -> CrashReport:
    """Run a batch to completion while SIGKILLing it ``kills`` times at random points, then once
    at each end-of-run point of ``end_kills`` (see :data:`KILL_POINTS`), resuming every time.

    Args:
        store: the SQLite store (a new file).
        tasks: the task set (JSONL).
        server: a running ``tests.fake_openai_server.FakeOpenAIServer``.
        kills: how many times to kill the batch at random before the end-of-run kills.
        seed: the kill points.
        mode: ``fork`` or ``subprocess`` (see the module docstring).
        max_requests_before_kill: an attempt is killed after 1..this many model requests.
        end_kills: end-of-run points, one attempt dies at each (in this order);
            :class:`KillPointMissed` when one exits instead.
        argv: the CLI arguments of an attempt given the run id to resume (None: a new run);
            default :func:`batch_argv` (``deskbench run``), else e.g. ``ntb run`` or ``ray run``.
    """
    starter = {"fork": _Fork, "subprocess": _Subprocess}[mode]
    argv_of = argv or (lambda run_id: batch_argv(store, tasks, server.base_url, limit, max_turns,
                                                 concurrency, run_id))
    rng = random.Random(seed)
    report = CrashReport()
    started = time.perf_counter()
    deadline = started + timeout_s
    first_request = len(server.requests)
    while True:
        report.run_id = run_id_in(store)
        before = len(server.requests)
        if report.kills >= kills and len(report.end_kills) < len(end_kills):
            point = end_kills[len(report.end_kills)]
            report.attempts += 1
            die_at(point, argv_of(report.run_id), mode, deadline - time.perf_counter())
            report.end_kills.append(point)
            report.integrity.append(integrity(store) if store.exists() else "ok")
            continue
        proc = starter(argv_of(report.run_id))
        report.attempts += 1
        if report.kills < kills:
            target, extra = rng.randint(1, max_requests_before_kill), rng.uniform(0.0, 0.03)
            while proc.poll() is None and len(server.requests) - before < target:
                if time.perf_counter() > deadline:
                    proc.kill()
                    raise TimeoutError("the batch made no progress before the deadline")
                time.sleep(0.002)
            time.sleep(extra)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
                report.kills += 1
                report.kill_points.append((len(server.requests) - before, round(extra, 4)))
                report.integrity.append(integrity(store) if store.exists() else "ok")
                continue
        report.final_rc = proc.wait()  # it ran to the end (or failed) on its own
        break
    report.run_id = run_id_in(store)
    report.requests = len(server.requests) - first_request
    report.seconds = time.perf_counter() - started
    return report


if __name__ == "__main__":  # python -m tests.crash_harness --kill-at POINT ARGV...
    if len(sys.argv) < 3 or sys.argv[1] != "--kill-at" or sys.argv[2] not in KILL_POINTS:
        sys.exit(f"usage: python -m tests.crash_harness --kill-at {{{','.join(KILL_POINTS)}}} ARGV...")
    sys.exit(run_main(sys.argv[3:], sys.argv[2]))
