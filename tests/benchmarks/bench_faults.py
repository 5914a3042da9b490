"""Throughput of a SelfScore batch through a flaky endpoint: 30% of calls failing vs none
(a script, not a pytest test).

Run from the repository root:

    .venv/bin/python -m tests.benchmarks.bench_faults
    .venv/bin/python -m tests.benchmarks.bench_faults --rate 0.5 --tasks 12 --turns 8 --delay 0.05

The batch runs in this process (``harness.compose.run_selfscore``, real ChatOpenAI clients) against
the deterministic fake OpenAI server behind the fault-injecting proxy (``tests.fault_proxy``,
the default fault mix: timeouts, 429 with Retry-After, 500/502/503, truncated and malformed JSON,
empty replies). The fault-free run goes through the same proxy at rate 0. Figures per rate:
wall time, turns per second, HTTP requests, failed attempts stored, interactions completed, and
whether the scores equal the fault-free run's. The retry waits are the script's ``--base``
and ``--max`` (seconds), the client timeout ``--timeout``; a timeout fault holds the request a
little longer than that.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROLES = ("agent", "user", "judge", "complexity", "extractor")


def one_run(folder: Path, name: str, tasks: Path, upstream: str, rate: float, args) -> dict:
    from harness.compose import run_selfscore
    from harness.config import load_config
    from harness.tasks.datasets import load_dataset
    from store import StoreReader
    from tests.fault_proxy import FaultProxy

    with FaultProxy(upstream, rate=rate, seed=args.seed, timeout_sleep_s=args.timeout + 0.2) as proxy:
        cfg = load_config(overrides={
            "store": str(folder / f"{name}.sqlite"),
            "roles": {r: {"base_url": proxy.base_url, "model": f"{r}-fake", "timeout_s": args.timeout}
                      for r in ROLES},
            "run": {"limit": args.tasks, "max_turns": args.turns, "concurrency": args.concurrency},
            "retry": {"max_attempts": args.attempts, "base_s": args.base, "max_s": args.max}})
        started = time.perf_counter()
        run_id, progress = run_selfscore(cfg, load_dataset(str(tasks)))
        seconds = time.perf_counter() - started
    reader = StoreReader(cfg.store)
    calls = [c for i in reader.interactions(run_id) for c in reader.llm_calls(i["id"])]
    return {"reader": reader, "run_id": run_id, "seconds": seconds, "turns": progress.turns,
            "done": progress.done, "failed": progress.failed, "requests": proxy.requests,
            "injected": dict(proxy.injected), "failed_attempts": sum(1 for c in calls if c["error"])}


def main(argv: list[str] | None = None) -> int:
    from tests.fake_openai_server import FakeOpenAIServer
    from tests.fakes import default_responder
    from tests.test_resume_and_failures import figures, snapshot

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=0.3)
    ap.add_argument("--tasks", type=int, default=6)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds per fake model answer")
    ap.add_argument("--timeout", type=float, default=0.5, help="client timeout (s)")
    ap.add_argument("--attempts", type=int, default=8)
    ap.add_argument("--base", type=float, default=0.05)
    ap.add_argument("--max", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    tasks = folder / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"t{i}", "question": f"Problem number {i}: my computer "
                                         f"misbehaves in way {i}."}) + "\n" for i in range(args.tasks)))
    server_kw = {"delay_s": args.delay} if args.delay else {}
    with FakeOpenAIServer(default_responder(solve_at=None), **server_kw) as upstream:
        base = one_run(folder, "clean", tasks, upstream.base_url, 0.0, args)
        faulty = one_run(folder, "faulty", tasks, upstream.base_url, args.rate, args)
    same = (snapshot(base["reader"], base["run_id"]) == snapshot(faulty["reader"], faulty["run_id"])
            and figures(base["reader"], base["run_id"]) == figures(faulty["reader"], faulty["run_id"]))
    print(f"batch: {args.tasks} interactions x {args.turns} turns, concurrency {args.concurrency}, "
          f"fake model {args.delay:g} s/answer, client timeout {args.timeout:g} s, retries: "
          f"{args.attempts} attempts, backoff {args.base:g}..{args.max:g} s full jitter")
    print(f"{'fault rate':<11}{'wall s':>8}{'turns/s':>9}{'requests':>10}{'failed attempts':>17}"
          f"{'completed':>11}")
    for rate, r in ((0.0, base), (args.rate, faulty)):
        print(f"{rate:<11.0%}{r['seconds']:>8.2f}{r['turns'] / r['seconds']:>9.2f}{r['requests']:>10}"
              f"{r['failed_attempts']:>17}{r['done']:>6}/{r['done'] + r['failed']}")
    print(f"throughput at {args.rate:.0%} faults: {faulty['turns'] / faulty['seconds'] / (base['turns'] / base['seconds']):.2f}"
          f" x the fault-free run; extra requests +{faulty['requests'] - base['requests']} "
          f"({100 * (faulty['requests'] - base['requests']) / base['requests']:.1f}%)")
    print("injected:", ", ".join(f"{k} {v}" for k, v in sorted(faulty["injected"].items())))
    print("scores equal the fault-free run's" if same else "MISMATCH with the fault-free run")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
