"""Load benchmark: how fast ``deskbench run`` goes when the endpoint is fast (a script, not a
pytest test). Issue 44.

Run from the repository root (on a shared machine, under ``flock /tmp/model.lock``):

    .venv/bin/python -m tests.benchmarks.bench_load                      # C = 1, 16, 64, 128
    .venv/bin/python -m tests.benchmarks.bench_load --concurrency 1 64 256
    .venv/bin/python -m tests.benchmarks.bench_load --delay 1.0 --concurrency 1 256   # a provider's latency
    .venv/bin/python -m tests.benchmarks.bench_load --profile-at 64      # cProfile of the run at 64
    .venv/bin/python -m tests.benchmarks.bench_load --compare HEAD       # before (HEAD) and after (the tree)
    .venv/bin/python -m tests.benchmarks.bench_load --concurrency 64 --shards 1 2   # ray run, local shards
    .venv/bin/python -m tests.benchmarks.bench_load --concurrency 64 --endpoint-rpm 1200             # 429s
    .venv/bin/python -m tests.benchmarks.bench_load --concurrency 64 --endpoint-rpm 1200 --role-rpm 1100

Every role (agent, user, judge, complexity, extractor) points at one light asyncio fake endpoint
in its own process (``tests.benchmarks.load_endpoint``: each answer ``--delay`` seconds late,
the project's ``tests.fakes.default_responder`` answers, never solved, so every conversation
runs ``--max-turns`` turns). For each concurrency C one ``deskbench run --concurrency C``
subprocess plays ``--per-slot`` x C conversations (at least 8) over synthetic tasks. Printed per C:

- conversations, wall time of the subprocess, turns/s and LLM calls/s over the *busy window*
  (from the endpoint's first request to its last answer: start-up, imports and the report are
  left out), and the speed-up of turns/s over C=1;
- the harness's CPU per LLM call and per turn in the busy window (the child's utime+stime read
  from ``/proc/PID/stat`` every 20 ms) and, after "/", the whole process's CPU (its rusage at
  exit, start-up and report included) per call;
- the endpoint's own CPU (its process must stay far below one core, or it is the limit);
- ``ideal``: C conversations always waiting on the endpoint, i.e. turns/s at C=1 x C (capped by
  the conversations), and turns/s as a share of it.

With ``--shards N ...`` each concurrency is also run as ``deskbench ray run --shards N`` (each
shard ``C / N`` conversations at once) and a table gives turns/s against the number of
processes; their CPU is the machine's busy CPU less the endpoint's (other work on the machine
counts too). ``--endpoint-rpm R`` makes the endpoint a rate-limited provider (at most R
requests a minute and R/60 a second, HTTP 429 with Retry-After past it) and ``--role-rpm`` sets
every role's ``requests_per_minute``; the 429s and the seconds waited are printed per run.

With ``--compare REF`` the harness of git revision REF (``git archive``, imported through
``PYTHONPATH``) runs each concurrency right before the working tree's, on the same endpoint, and
a last table puts the two side by side: before/after figures from one command on one machine.

Always exits 0: the figures are informative.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROLES = ("agent", "user", "judge", "complexity", "extractor")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float | None:
    """utime + stime of process ``pid`` in seconds (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_cpu_s() -> float:
    """CPU seconds every core of the machine has spent busy since boot (``/proc/stat``)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    busy = sum(int(v) for i, v in enumerate(fields[:8]) if i not in (3, 4))  # all but idle, iowait
    return busy / TICK


def start_endpoint(delay: float, capture: str | None, rpm: int | None = None) -> tuple[subprocess.Popen, str]:
    """The fake endpoint's process and its base URL (``rpm``: it answers 429 past that rate)."""
    cmd = [sys.executable, "-m", "tests.benchmarks.load_endpoint", "--delay", str(delay)]
    if capture:
        cmd += ["--capture", capture]
    if rpm:
        cmd += ["--rpm", str(rpm)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"the fake endpoint did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1"


def endpoint_stats(url: str, reset: bool = False) -> dict:
    """The endpoint's counters (``GET /stats``; ``GET /reset`` zeroes them first)."""
    with urllib.request.urlopen(url + ("/reset" if reset else "/stats"), timeout=10) as resp:
        return json.loads(resp.read())


def write_tasks(path: Path, n: int) -> Path:
    """``n`` synthetic troubleshooting tasks, one JSON line each."""
    rows = [{"id": f"t{i:04d}", "question": f"Problem {i}: my laptop wifi drops every {i % 9 + 2} "
             f"minutes on Ubuntu 22.04 since the last kernel update ({i})."} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def export_tree(ref: str, into: Path) -> Path:
    """The harness of git revision ``ref`` (its tracked files) unpacked under ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run_command(url: str, store: Path, tasks: Path, n: int, concurrency: int, args,
                tree: Path = ROOT, shards: int = 0) -> list[str]:
    """The ``deskbench run`` command line of one measurement (``shards``: ``deskbench ray run``
    with that many local shards sharing the concurrency)."""
    cmd = [sys.executable]
    if args.profile_out:
        cmd += ["-m", "cProfile", "-o", args.profile_out]
    else:
        cmd += ["-m"]
    command = ["ray", "run", "--shards", str(shards)] if shards else ["run"]
    per_process = max(1, concurrency // shards) if shards else concurrency
    cmd += ["harness.cli.main", *command, "--store", str(store), "--dataset", str(tasks),
            "--limit", str(n), "--max-turns", str(args.max_turns), "--concurrency", str(per_process),
            "--quiet", "--name", f"load-c{concurrency}", "--profile", args.profile]
    for role in ROLES:
        cmd += ["--role", f"{role}.base_url={url}", "--role", f"{role}.model={role}-fake"]
        if args.role_rpm:
            cmd += ["--role", f"{role}.requests_per_minute={args.role_rpm}"]
    if args.profile_out:
        cmd[cmd.index("harness.cli.main")] = str(tree / "harness" / "cli" / "main.py")
    return cmd


def measure(url: str, concurrency: int, args, workdir: Path, tree: Path = ROOT, label: str = "",
            endpoint_pid: int = 0, shards: int = 0) -> dict:
    """One ``deskbench run`` (``shards``: ``ray run``) at ``concurrency`` with the harness in
    ``tree``: its figures (see the module docstring)."""
    n = max(8, args.per_slot * concurrency) if args.conversations is None else args.conversations
    tasks = write_tasks(workdir / f"tasks-{concurrency}.jsonl", n)
    label = f"{label}s{shards}-" if shards else label
    store = workdir / f"{label}c{concurrency}.sqlite"
    endpoint_stats(url, reset=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    log = workdir / f"{label}c{concurrency}.log"
    started = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(run_command(url, store, tasks, n, concurrency, args, tree, shards), cwd=workdir,
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    samples: list[tuple[float, float]] = []
    machine: list[tuple[float, float]] = []  # the machine's CPU less the endpoint's (ray's workers)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        cpu = cpu_s(proc.pid)
        if cpu is not None:
            samples.append((time.monotonic(), cpu))
        machine.append((time.monotonic(), machine_cpu_s() - (cpu_s(endpoint_pid) or 0.0)))
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        print(log.read_text()[-3000:], file=sys.stderr)
        raise RuntimeError(f"deskbench run at concurrency {concurrency} failed ({proc.returncode})")
    after = endpoint_stats(url)
    calls, turns = after["requests"], after["by_role"].get("agent", 0)
    first, last = after["first"], after["last"]
    window = max(1e-6, last - first)
    busy_cpu = _cpu_at(samples, last) - _cpu_at(samples, first)
    if shards:  # the work runs in ray's worker processes: the machine's CPU, less the endpoint's
        busy_cpu = _cpu_at(machine, last) - _cpu_at(machine, first)
    total_cpu = usage.ru_utime + usage.ru_stime
    waited = _rate_limit_totals(store)
    return {"concurrency": concurrency, "shards": shards, "conversations": n, "wall": wall, "window": window,
            "rate_limited": after.get("rate_limited", 0), "waited_s": waited["waited_s"],
            "backoff_s": waited["backoff_s"],
            "calls": calls, "turns": turns, "errors": after["errors"], "connections": after["connections"],
            "turns_s": turns / window, "calls_s": calls / window,
            "cpu_call_ms": 1000 * busy_cpu / max(1, calls), "cpu_turn_ms": 1000 * busy_cpu / max(1, turns),
            "total_cpu_call_ms": 1000 * total_cpu / max(1, calls), "busy_cpu": busy_cpu, "total_cpu": total_cpu}


def _rate_limit_totals(store: Path) -> dict:
    """429s and seconds waited of the run in ``store`` (zeros for a harness from before the
    rate limits, whose store has no ``rate_wait_ms``)."""
    import sqlite3

    from store import StoreReader
    try:
        reader = StoreReader(store)
        return reader.rate_limit_totals(reader.runs()[0]["id"])
    except sqlite3.OperationalError:
        return {"rate_limited": 0, "backoff_s": 0.0, "waited_s": 0.0}


def _cpu_at(samples: list[tuple[float, float]], at: float) -> float:
    """The child's CPU seconds at monotonic time ``at`` (the last sample at or before it)."""
    best = samples[0][1] if samples else 0.0
    for t, cpu in samples:
        if t > at:
            break
        best = cpu
    return best


def print_table(rows: list[dict], title: str = "") -> None:
    """The table (markdown) of one harness's runs."""
    base = rows[0]["turns_s"] / rows[0]["concurrency"] if rows else 0.0
    print(f"\n{title}\n" if title else "")
    print("| concurrency | conversations | wall | turns/s | LLM calls/s | harness CPU/call (busy / whole) "
          "| harness CPU/turn | speedup over C=1 | share of ideal |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ideal = base * min(r["concurrency"], r["conversations"])
        speedup = r["turns_s"] / rows[0]["turns_s"] if rows[0]["turns_s"] else 0.0
        print(f"| {r['concurrency']} | {r['conversations']} | {r['wall']:.1f} s | {r['turns_s']:.1f} "
              f"| {r['calls_s']:.1f} | {r['cpu_call_ms']:.2f} / {r['total_cpu_call_ms']:.2f} ms "
              f"| {r['cpu_turn_ms']:.1f} ms | {speedup:.1f}x | {r['turns_s'] / ideal if ideal else 0:.2f} |")
    errors = sum(r["errors"] for r in rows)
    if errors:
        print(f"\n{errors} requests answered with an error (an unexpected prompt)")


def _print_run(title: str, r: dict) -> None:
    print(f"{title}: {r['conversations']} conversations, {r['turns']} turns, {r['calls']} calls on "
          f"{r['connections']} connections in {r['window']:.1f} s busy ({r['wall']:.1f} s wall), harness CPU "
          f"{r['busy_cpu']:.1f} s busy / {r['total_cpu']:.1f} s whole, {r['rate_limited']} HTTP 429", flush=True)


def print_shards(single: list[dict], sharded: list[dict]) -> None:
    """turns/s of ``ray run`` against the number of local shards (the same concurrency in all)."""
    print("\n`ray run` with local shards (the concurrency shared among them; harness CPU: the machine's "
          "busy CPU less the endpoint's)\n")
    print("| concurrency | processes | turns/s | LLM calls/s | harness CPU/call | vs one process |")
    print("|---|---|---|---|---|---|")
    for r in sharded:
        one = next((x for x in single if x["concurrency"] == r["concurrency"]), None)
        ratio = f"{r['turns_s'] / one['turns_s']:.2f}x" if one and one["turns_s"] else "-"
        print(f"| {r['concurrency']} | {r['shards']} shard(s) | {r['turns_s']:.1f} | {r['calls_s']:.1f} "
              f"| {r['cpu_call_ms']:.2f} ms | {ratio} |")


def print_comparison(before: list[dict], after: list[dict], ref: str) -> None:
    """Before (``ref``) and after side by side, per concurrency."""
    print(f"\nbefore ({ref}) -> after (working tree)\n")
    print("| concurrency | turns/s | LLM calls/s | harness CPU/call (busy) | harness CPU/turn | wall |")
    print("|---|---|---|---|---|---|")
    for b, a in zip(before, after):
        print(f"| {a['concurrency']} | {b['turns_s']:.1f} -> {a['turns_s']:.1f} | {b['calls_s']:.1f} -> "
              f"{a['calls_s']:.1f} | {b['cpu_call_ms']:.2f} -> {a['cpu_call_ms']:.2f} ms | {b['cpu_turn_ms']:.1f} -> "
              f"{a['cpu_turn_ms']:.1f} ms | {b['wall']:.1f} -> {a['wall']:.1f} s |")


def main(argv: list[str] | None = None) -> int:
    """Command line: run every concurrency, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64, 128])
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer (default 0.2)")
    parser.add_argument("--max-turns", type=int, default=5)
    parser.add_argument("--per-slot", type=int, default=2, help="conversations per concurrent slot (default 2)")
    parser.add_argument("--conversations", type=int, default=None, help="the same number at every C")
    parser.add_argument("--profile", default="auto", help="deskbench's method profile (default: auto)")
    parser.add_argument("--profile-at", type=int, default=None,
                        help="run only this concurrency under cProfile and print the top entries")
    parser.add_argument("--compare", metavar="REF", default=None,
                        help="also run the harness of git revision REF before each run (before/after)")
    parser.add_argument("--capture", default=None, help="the endpoint appends every request here")
    parser.add_argument("--keep", action="store_true", help="keep the stores (their folder is printed)")
    parser.add_argument("--shards", type=int, nargs="+", default=[],
                        help="also run `ray run` with these numbers of local shards sharing each concurrency")
    parser.add_argument("--endpoint-rpm", type=int, default=None,
                        help="the endpoint answers HTTP 429 past this many requests a minute (a provider)")
    parser.add_argument("--role-rpm", type=int, default=None, help="every role's requests_per_minute")
    args = parser.parse_args(argv)
    args.profile_out = None
    workdir = Path(tempfile.mkdtemp(prefix="bench-load-"))
    if args.profile_at:
        args.concurrency, args.profile_out = [args.profile_at], str(workdir / "profile.out")
    trees = [("", ROOT)]
    if args.compare:
        trees.insert(0, ("before-", export_tree(args.compare, workdir / "before")))
    endpoint, url = start_endpoint(args.delay, args.capture, args.endpoint_rpm)
    rows: dict[str, list[dict]] = {label: [] for label, _ in trees}
    sharded: list[dict] = []
    try:
        for c in args.concurrency:
            for label, tree in trees:
                rows[label].append(measure(url, c, args, workdir, tree, label, endpoint.pid))
                _print_run(f"{label or 'tree-'}C={c}", rows[label][-1])
            for shards in args.shards:
                sharded.append(measure(url, c, args, workdir, ROOT, "", endpoint.pid, shards))
                _print_run(f"ray run, {shards} shard(s), C={c}", sharded[-1])
    finally:
        endpoint_cpu = cpu_s(endpoint.pid) or 0.0
        endpoint.terminate()
        endpoint.wait()
    print(f"\nfake endpoint: {args.delay * 1000:.0f} ms an answer; its own CPU over all runs {endpoint_cpu:.1f} s")
    if args.compare:
        print_table(rows["before-"], f"before: {args.compare}")
    print_table(rows[""], "working tree" if args.compare else "")
    if args.compare:
        print_comparison(rows["before-"], rows[""], args.compare)
    if sharded:
        print_shards(rows[""], sharded)
    if args.endpoint_rpm or args.role_rpm:
        print(f"\nendpoint limit: {args.endpoint_rpm or 'none'} requests/min; roles' requests_per_minute: "
              f"{args.role_rpm or 'none'}")
        for r in rows[""]:
            print(f"C={r['concurrency']}: {r['rate_limited']} answers were HTTP 429 ({r['backoff_s']:.1f} s of "
                  f"backoff after them); calls waited {r['waited_s']:.1f} s for the limits; "
                  f"{r['calls_s'] * 60:.0f} answered calls/min")
    if args.profile_out:
        import pstats
        print()
        pstats.Stats(args.profile_out).sort_stats("tottime").print_stats(30)
        print(f"profile: {args.profile_out}")
    if args.keep or args.profile_out:
        print(f"stores: {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
