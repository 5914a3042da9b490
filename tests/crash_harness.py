"""Kill a running SelfScore batch with SIGKILL at random points, resume it, again and again.

The batch is the real ``deskbench run`` CLI (``harness.cli.main``) in its own process, talking
HTTP to a fake OpenAI server that lives in this process (so the server's request count says
how far the batch got). Two ways to start that process:

- ``fork``: ``os.fork()`` of the current process (already imported), then ``main(argv)``; a
  start costs milliseconds, so a unit test can afford dozens of kills;
- ``subprocess``: ``python -m harness.cli run ...``, exactly what a user runs (seconds per start).

Each attempt is killed once the server has seen a random number of its requests, plus a random
few milliseconds, so kills land in model calls, between turns and during SQLite commits alike.
After every kill the store's ``PRAGMA integrity_check`` must say ``ok``. When the planned kills
are spent the batch runs to the end (``--resume`` of the same run).
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

ROLES = ("agent", "user", "judge", "complexity", "extractor")


def batch_argv(store: Path, tasks: Path, url: str, limit: int, max_turns: int, concurrency: int,
               resume: str | None = None) -> list[str]:
    """``deskbench run`` arguments for a batch whose every role is ``<role>-fake`` at ``url``."""
    if resume:
        return ["run", "--store", str(store), "--resume", resume, "--quiet"]
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
    def __init__(self, argv: list[str]):
        pid = os.fork()
        if pid == 0:  # the batch: stdout/stderr to /dev/null, exit with the CLI's code
            rc = 70
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                sys.stdout = sys.stderr = open(os.devnull, "w")
                from harness.cli import main
                rc = main(argv)
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
    def __init__(self, argv: list[str]):
        root = Path(__file__).resolve().parent.parent
        self.proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *argv], cwd=root,
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
    integrity: list[str] = field(default_factory=list)
    final_rc: int | None = None


def crash_and_resume(store: Path, tasks: Path, server, kills: int, seed: int = 0, mode: str = "fork",
                     limit: int = 6, max_turns: int = 4, concurrency: int = 2,
                     max_requests_before_kill: int = 25, timeout_s: float = 300.0) -> CrashReport:
    """Run a batch to completion while SIGKILLing it ``kills`` times at random points.

    Args:
        store: the SQLite store (a new file).
        tasks: the task set (JSONL).
        server: a running ``tests.fake_openai_server.FakeOpenAIServer``.
        kills: how many times to kill the batch before letting it finish.
        seed: the kill points.
        mode: ``fork`` or ``subprocess`` (see the module docstring).
        max_requests_before_kill: an attempt is killed after 1..this many model requests.
    """
    starter = {"fork": _Fork, "subprocess": _Subprocess}[mode]
    rng = random.Random(seed)
    report = CrashReport()
    started = time.perf_counter()
    deadline = started + timeout_s
    first_request = len(server.requests)
    while True:
        report.run_id = run_id_in(store)
        argv = batch_argv(store, tasks, server.base_url, limit, max_turns, concurrency, report.run_id)
        before = len(server.requests)
        proc = starter(argv)
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
