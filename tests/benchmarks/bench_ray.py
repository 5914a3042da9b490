"""Scale-out benchmark: one SelfScore batch in one process vs the same batch as Ray shards on
local workers (a script, not a pytest test).

Run from the repository root:

    .venv/bin/python -m tests.benchmarks.bench_ray                    # 24 interactions, 50 ms a call
    .venv/bin/python -m tests.benchmarks.bench_ray --latency 0        # instant models: CPU-bound
    .venv/bin/python -m tests.benchmarks.bench_ray --interactions 48 --shards 2 --concurrency 4

Every role is served by the real local OpenAI-compatible HTTP fake (``tests.fake_openai_server``)
answering after a fixed latency per call, so the figures measure the harness and Ray, not a
model. Three runs of the same tasks:

1. one process, ``--concurrency C`` conversations at once;
2. one process, ``--concurrency C x shards`` (the same total concurrency as the Ray run);
3. Ray: ``--shards S`` tasks on a local instance with S CPUs, each with ``--concurrency C``,
   merged into the driver's store (the merge time is shown on its own), first on fresh worker
   processes (they import the harness), then again on the same, now warm, workers.

It prints wall time, turns/s, the speed-up over run 1, Ray's start-up and merge time, and
checks that the merged scores equal run 1's. With a real embedded model each Ray worker has
its own llama.cpp server, so the speed-up of run 3 over run 1 is what more machines give;
run 2 shows what more concurrency alone gives on one endpoint that never slows down.
Always exits 0: the figures are informative.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.compose import run_selfscore
from harness.config import ROLES, load_config
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder


def slow(responders, seconds: float):
    """The same answers, each after ``seconds`` (a model's latency per call)."""
    def for_role(role):
        inner = responders(role)

        def respond(messages, body):
            time.sleep(seconds)
            return inner(messages, body)
        return respond
    return for_role


def write_tasks(path: Path, n: int) -> Path:
    rows = [{"id": f"t{i:03d}", "question": f"Problem {i}: my laptop wifi drops every {i + 2} minutes."}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def config_for(store: Path, url: str, n: int, turns: int, concurrency: int):
    roles = {r: {"base_url": url, "model": f"{r}-fake"} for r in ROLES}
    return load_config(overrides={"store": str(store), "roles": roles,
                                  "run": {"limit": n, "max_turns": turns, "concurrency": concurrency}})


def figures(store: Path, run_id: str) -> dict:
    return {s["interaction_id"].split(":", 1)[1]: {k: v for k, v in s["figures"].items() if k != "interaction_id"}
            for s in StoreReader(store).scores(run_id)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--interactions", type=int, default=24)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    ap.add_argument("--concurrency", type=int, default=4, help="conversations at once per process")
    ap.add_argument("--shards", type=int, default=2)
    args = ap.parse_args(argv)
    import ray
    from harness.scale.ray_tasks import run_on_ray

    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    dataset = load_dataset(str(write_tasks(tmp / "tasks.jsonl", args.interactions)))
    rows = []
    with FakeOpenAIServer(slow(default_responder(solve_at=None), args.latency)) as server:
        single = {}
        for label, conc in (("1 process", args.concurrency),
                            (f"1 process, concurrency x{args.shards}", args.concurrency * args.shards)):
            cfg = config_for(tmp / f"single-{conc}.sqlite", server.base_url, args.interactions, args.turns, conc)
            t = time.perf_counter()
            run_id, progress = run_selfscore(cfg, dataset)
            wall = time.perf_counter() - t
            single.setdefault("figures", figures(Path(cfg.store), run_id))
            rows.append((label, conc, wall, progress.turns, {}))
        t = time.perf_counter()
        ray.init(num_cpus=args.shards, include_dashboard=False, log_to_driver=False)
        ray_init = time.perf_counter() - t
        same = []
        try:
            for label in ("Ray, fresh workers", "Ray, warm workers"):  # the 2nd run reuses Ray's worker processes
                cfg = config_for(tmp / f"{label[5:10]}.sqlite", server.base_url, args.interactions, args.turns,
                                 args.concurrency)
                t = time.perf_counter()
                result = run_on_ray(cfg, "selfscore", args.shards, dataset=dataset)
                wall = time.perf_counter() - t
                same.append(figures(Path(cfg.store), result.run_id) == single["figures"])
                rows.append((f"{label} ({args.shards})", f"{args.concurrency} x {args.shards}", wall,
                             result.progress.turns, result.seconds))
        finally:
            ray.shutdown()
        n_calls = len(server.requests)

    base = rows[0][2]
    print(f"{args.interactions} interactions x {args.turns} turns, {args.latency * 1000:.0f} ms per model call, "
          f"{n_calls} calls in all; Ray start-up {ray_init:.1f} s (not in the Ray wall time)")
    print(f"{'run':36} {'concurrency':>12} {'wall s':>8} {'turns':>6} {'turns/s':>8} {'speed-up':>9}")
    for label, conc, wall, turns, _ in rows:
        print(f"{label:36} {conc!s:>12} {wall:8.2f} {turns:6d} {turns / wall:8.2f} {base / wall:8.2f}x")
    for label, _, _, _, parts in rows[2:]:
        print(f"{label} split: " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
    print(f"merged scores identical to the 1-process run: {'yes' if all(same) else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
