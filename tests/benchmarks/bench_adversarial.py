"""Judge robustness: mean score shift of adversarial messages against their clean twins, per category.

    .venv/bin/python tests/benchmarks/bench_adversarial.py [--pairs 24] [--concurrency 2] [--no-defence]
        [--role judge.base_url=... --role judge.model=...] [--json now.json] [--baseline before.json]

Judges the shipped suite (harness/data/adversarial/suite.jsonl) with the configured judge role
(default: the embedded Qwen2.5-Coder-1.5B) and prints, per attack category and side, the mean
and mean absolute shift (attacked - clean helpfulness), the flipped solved verdicts, failed
judgments, copied injected verdicts, and the wall time. ``--baseline`` takes the ``--json`` of
an earlier run (e.g. an earlier prompt version, or ``--no-defence``: the judges read the twins
as written instead of neutralised by ``harness.defence.manipulation``) and prints both mean shifts side
by side.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from time import perf_counter

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.cli.common import role_overrides
from harness.compose import Runtime
from harness.config import load_config
from harness.selfscore.adversarial import load_suite, run_robustness
from harness.selfscore.judges import SelfScoreJudges


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, help="first N pairs (balanced over categories; default all)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--role", action="append", metavar="ROLE.KEY=VALUE")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--baseline", help="figures (--json) of an earlier run, printed beside these")
    ap.add_argument("--no-defence", action="store_true", help="judge the twins as written (no manipulation defence)")
    args = ap.parse_args()

    pairs = load_suite()[: args.pairs]
    config = load_config(overrides={"store": "runs/bench-adversarial.sqlite",
                                    **({"roles": role_overrides(args.role)} if args.role else {})})
    started = perf_counter()
    with Runtime(config) as runtime:
        judges = SelfScoreJudges(runtime.structured_judge("judge"), manipulation_defence=not args.no_defence)
        report = asyncio.run(run_robustness(judges, pairs, args.concurrency))
    seconds = perf_counter() - started
    print(report.markdown())
    judgments = sum(len(r.judgments) for r in report.results)
    print(f"{len(pairs)} pairs, {judgments} judgments in {seconds:.0f} s ({seconds / max(1, judgments):.1f} s "
          "per judgment, engine start included)")
    figures = {"judge_model": report.judge_model, "prompt_version": report.prompt_version,
               "manipulation_defence": report.defence, "rows": report.rows(), "sides": report.side_rows(), "seconds": seconds}
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    if args.baseline:
        base = json.loads(Path(args.baseline).read_text())
        before = {r["name"]: r for r in base["rows"] + base.get("sides", [])}
        print(f"\n| category | mean shift {base['prompt_version']} | mean shift {report.prompt_version} | "
              "failed before | failed now |\n|---|---|---|---|---|")
        for r in report.rows()[:-1] + report.side_rows() + report.rows()[-1:]:
            b = before.get(r["name"], {})
            print(f"| {r['name']} | {_fmt(b.get('mean_shift'))} | {_fmt(r['mean_shift'])} | "
                  f"{b.get('failed', '-')} | {r['failed']} |")
    return 0


def _fmt(value) -> str:
    return "-" if value is None else f"{value:+.2f}"


if __name__ == "__main__":
    sys.exit(main())
