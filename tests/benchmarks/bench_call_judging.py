"""The caller's wait with the judges on and off the agent's critical path: ``deskbench call
simulate`` run as a user runs it, once per layout, and the agent's time to first audio, its
uncontended share and the batch's wall time read back from each store.

    .venv/bin/python tests/benchmarks/bench_call_judging.py [--limit 2] [--max-turns 3]
        [--layouts inline,yield,judge_server] [--duplex] [--out /tmp/bench_call_judging]

Layouts: ``inline`` (``voice.judging = inline``: the judges and the simulated caller share the
embedded server with the agent, as before), ``yield`` (the default: they yield it to the
agent), ``judge_server`` (``yield`` and ``engine.judge_server``: every role but the agent on a
second embedded server). Each run: ``--telephone --snr 20``; ``--duplex`` adds ``--duplex
--caller interrupting`` and the barge-in yield latency. Run nothing else meanwhile: on 2 cores
another model job beside a call batch changes every figure.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from time import perf_counter

from harness.study.call_report import contention_figures, duplex_measures
from harness.study.statistics import summarize_measures
from store import StoreReader

LAYOUTS = {"inline": {"DESKBENCH_VOICE__JUDGING": "inline"},
           "yield": {"DESKBENCH_VOICE__JUDGING": "yield"},
           "judge_server": {"DESKBENCH_VOICE__JUDGING": "yield", "DESKBENCH_ENGINE__JUDGE_SERVER": "true"}}


def pct(values: list[float], q: int) -> float | None:
    """p50 or p95 as the report computes them (``summarize_measures``); None without values."""
    return summarize_measures({"v": values})["v"][f"p{q}"]


def run_layout(name: str, args: argparse.Namespace, out: Path) -> dict:
    store = out / f"{name}.sqlite"
    store.unlink(missing_ok=True)
    cmd = [str(Path(sys.executable).parent / "deskbench"), "call", "simulate", "--limit", str(args.limit),
           "--max-turns", str(args.max_turns), "--telephone", "--snr", "20", "--quiet",
           "--store", str(store), "--out", str(out / f"{name}.report")]
    if args.duplex:
        cmd += ["--duplex", "--caller", "interrupting"]
    started = perf_counter()
    done = subprocess.run(cmd, env={**os.environ, **LAYOUTS[name]}, capture_output=True, text=True)
    wall = perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{name}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    reader = StoreReader(store)
    (run,) = reader.runs()
    by_iid = reader.turns_for_run(run["id"])
    figures = contention_figures(by_iid)
    duplex = duplex_measures(by_iid)
    return {"layout": name, "wall_s": wall, **figures, "yield_ms": duplex.get("barge_in.yield_ms", [])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--layouts", default="inline,yield,judge_server")
    parser.add_argument("--duplex", action="store_true")
    parser.add_argument("--out", default="/tmp/bench_call_judging")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [run_layout(name, args, out) for name in args.layouts.split(",")]
    print(f"call simulate --limit {args.limit} --max-turns {args.max_turns} --telephone --snr 20"
          + (" --duplex --caller interrupting" if args.duplex else ""))
    print("| layout | replies | TTFA p50 ms | TTFA p95 ms | uncontended | uncontended TTFA p50 ms | "
          "mean share | yield p50 ms | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")

    def ms(v):
        return "-" if v is None else f"{v:,.0f}"
    for r in rows:
        share = "-" if r["mean_share"] is None else f"{r['mean_share']:.2f}"
        print(f"| {r['layout']} | {r['replies']} | {ms(pct(r['time_to_first_audio_ms'], 50))} | "
              f"{ms(pct(r['time_to_first_audio_ms'], 95))} | {r['uncontended']}/{r['replies']} | "
              f"{ms(pct(r['uncontended_time_to_first_audio_ms'], 50))} | "
              f"{share} | {ms(pct(r['yield_ms'], 50))} | "
              f"{r['wall_s']:.0f} |")
    base = next((r for r in rows if r["layout"] == "inline"), None)
    for r in rows:
        if base is not r and base and pct(base["time_to_first_audio_ms"], 50) and pct(r["time_to_first_audio_ms"], 50):
            print(f"{r['layout']}: TTFA p50 {pct(r['time_to_first_audio_ms'], 50) / pct(base['time_to_first_audio_ms'], 50):.2f}x "
                  f"of inline, wall {r['wall_s'] / base['wall_s']:.2f}x")


if __name__ == "__main__":
    main()
