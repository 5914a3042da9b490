"""``deskbench browse`` start-up and page times (a script, not a pytest test).

    .venv/bin/python -m tests.benchmarks.bench_browse                      # a store of 200 conversations
    .venv/bin/python -m tests.benchmarks.bench_browse --conversations 2000

Writes a store through the real writer (``store.StoreWriter``: a run, its problems, its
conversations of 4 turns each, two judgments a turn), starts ``deskbench browse --port 0`` as a
subprocess, and prints: the time from the command's start to its first served page (the
database page with the canned queries), then the median time of the canned conversation query
of one run (as HTML), of the lowest-scored agent turns over the whole store, and of the
``interactions`` table page with its facets, each over 5 requests. Always exits 0."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from store import StoreWriter
from tests.test_store_browse import start_browse


def build_store(path: Path, conversations: int) -> str:
    """A store with one run of ``conversations`` finished 4-turn conversations; its run id."""
    writer = StoreWriter(path)
    run_id = "bench-run"
    problems = [{"id": f"bench:{k}", "dataset": "bench", "task_id": str(k), "question": f"Problem {k}"}
                for k in range(conversations)]
    interactions = [{"id": f"{run_id}:{k}", "run_id": run_id, "problem_id": f"bench:{k}", "position": k}
                    for k in range(conversations)]
    writer.create_run({"id": run_id, "kind": "selfscore", "name": "bench", "prompt_version": "selfscore-p10"},
                      problems, interactions)
    with writer.db.conn:
        for k in range(conversations):
            iid = f"{run_id}:{k}"
            writer.db["turns"].insert_all(
                [{"interaction_id": iid, "turn_index": t, "user_message": f"user message {k}.{t} " * 8,
                  "agent_message": f"agent reply {k}.{t} " * 30, "user_helpfulness": 1 + (k + t) % 10,
                  "agent_helpfulness": 1 + (k * t) % 10, "solved": int(t == 4)} for t in range(1, 5)])
            writer.db["judgments"].insert_all(
                [{"interaction_id": iid, "turn_index": t, "kind": kind, "status": "ok", "score": 5,
                  "judge_score": 5, "model": "bench", "prompt_version": "selfscore-p10", "attempts": 1,
                  "created_at": "2026-12-04T00:00:00"}
                 for t in range(1, 5) for kind in ("agent_helpfulness", "user_helpfulness")])
            writer.db["interactions"].update(iid, {"status": "completed", "n_turns": 4, "stop_reason": "solved"})
    writer.close()
    return run_id


def timed_get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        r.read()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "bench.sqlite"
        run_id = build_store(store, args.conversations)
        started = time.perf_counter()
        proc, url, _ = start_browse(store, Path(tmp))
        try:
            timed_get(url)
            first_page = time.perf_counter() - started
            figures = {"command start -> first page served (s)": first_page}
            for name, path in [("conversation query, one run (ms)", f"/conversation?run={run_id}"),
                               ("lowest agent turns, whole store (ms)", "/lowest_agent_turns?run="),
                               ("interactions table page with facets (ms)", "/interactions")]:
                figures[name] = 1000 * statistics.median(timed_get(url + path) for _ in range(5))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"store: {args.conversations} conversations, {4 * args.conversations} turns")
    for name, value in figures.items():
        print(f"{name:45s} {value:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
