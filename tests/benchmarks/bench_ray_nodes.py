"""Scale-out over Ray nodes: the same SelfScore batch on 1, 2 and 3 worker nodes of a
multi-node Ray cluster on this machine (a script, not a pytest test).

Run from the repository root:

    .venv/bin/python -m tests.benchmarks.bench_ray_nodes                        # 12 tasks x 3 turns, 0.3 s a call
    .venv/bin/python -m tests.benchmarks.bench_ray_nodes --latency 0.05 --tasks 24 --nodes 1 2 4

The cluster is Ray's own multi-node test cluster (``ray.cluster_utils.Cluster``): a head node
with no CPU, where the driver runs, and worker nodes of one CPU each, every one its own raylet
and worker processes, as separate machines would be (they share this machine's cores and disk).
Every role is the HTTP fake endpoint (``tests.fake_openai_server``) answering after a fixed
latency per call, so the figures show how the harness and Ray spread the work over nodes, not
a model. For each node count N the batch runs as N shards (one per node, ``--concurrency``
conversations at once in each), after a warm-up run so each node's worker process has
imported the harness (a fresh worker takes 7-10 s for that, paid once per node); the wall
time is ``run_on_ray`` from planning to the merged store. A one-process run at the same
per-process concurrency is the reference row. Checks that every merged store has the scores
of the one-process run. Always exits 0: the figures are informative.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.compose import run_selfscore
from harness.tasks.datasets import load_dataset
from tests.benchmarks.bench_ray import config_for, figures, write_tasks
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.3, help="seconds per model call")
    ap.add_argument("--concurrency", type=int, default=2, help="conversations at once per shard")
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3], help="worker node counts, rising")
    args = ap.parse_args(argv)
    import ray
    from ray.cluster_utils import Cluster

    from harness.scale.ray_tasks import run_on_ray

    tmp = Path(tempfile.mkdtemp(prefix="bench-ray-nodes-"))
    dataset = load_dataset(str(write_tasks(tmp / "tasks.jsonl", args.tasks)))
    warm_tasks = load_dataset(str(write_tasks(tmp / "warm.jsonl", max(args.nodes))))
    rows, same = [], []
    with FakeOpenAIServer(default_responder(solve_at=None), delay_s=args.latency) as server:
        cfg = config_for(tmp / "one-process.sqlite", server.base_url, args.tasks, args.turns, args.concurrency)
        t = time.perf_counter()
        run_id, progress = run_selfscore(cfg, dataset)
        rows.append(("1 process, no Ray", "-", args.concurrency, time.perf_counter() - t, progress.turns, {}))
        reference = figures(Path(cfg.store), run_id)

        t = time.perf_counter()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
        ray.init(address=cluster.address, log_to_driver=False)
        startup = {"head": time.perf_counter() - t}
        try:
            added = 0
            for n in sorted(args.nodes):
                t = time.perf_counter()
                while added < n:
                    cluster.add_node(num_cpus=1)
                    added += 1
                cluster.wait_for_nodes()
                startup[f"{n} node{'s' if n > 1 else ''} up"] = time.perf_counter() - t
                t = time.perf_counter()  # warm-up: one 1-turn shard per node imports the harness there
                warm = config_for(tmp / f"warm-{n}.sqlite", server.base_url, n, 1, 1)
                run_on_ray(warm, "selfscore", n, dataset=warm_tasks)
                startup[f"warm-up {n}"] = time.perf_counter() - t

                cfg = config_for(tmp / f"nodes-{n}.sqlite", server.base_url, args.tasks, args.turns, args.concurrency)
                t = time.perf_counter()
                result = run_on_ray(cfg, "selfscore", n, dataset=dataset)
                wall = time.perf_counter() - t
                same.append(figures(Path(cfg.store), result.run_id) == reference and not result.errors)
                rows.append((f"Ray, {n} worker node{'s' if n > 1 else ''}", n, f"{args.concurrency} x {n}", wall,
                             result.progress.turns, result.seconds))
        finally:
            ray.shutdown()
            cluster.shutdown()
        n_calls = len(server.requests)

    one_node = next((r[3] for r in rows if r[1] == 1), rows[1][3] if len(rows) > 1 else rows[0][3])
    print(f"{args.tasks} tasks x {args.turns} turns, {args.latency * 1000:.0f} ms per model call, "
          f"{n_calls} calls in all (warm-ups included)")
    print(f"{'run':24} {'shards':>6} {'concurrency':>12} {'wall s':>8} {'turns':>6} {'turns/s':>8} "
          f"{'vs 1 process':>13} {'vs 1 node':>10}")
    for label, shards, conc, wall, turns, _ in rows:
        print(f"{label:24} {shards!s:>6} {conc!s:>12} {wall:8.2f} {turns:6d} {turns / wall:8.2f} "
              f"{rows[0][3] / wall:12.2f}x {one_node / wall:9.2f}x")
    for label, _, _, _, _, parts in rows[1:]:
        print(f"{label} split: " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
    print("cluster start-up (not in the wall times): " + ", ".join(f"{k} {v:.1f} s" for k, v in startup.items()))
    print(f"merged scores identical to the 1-process run: {'yes' if same and all(same) else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
