"""NoisyToolBench results from the store: tables, exports, and the paired comparison of runs."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from statsmodels.stats.contingency_tables import mcnemar

from harness.ntb import scoring
from harness.tasks.jsonl import write_jsonl
from store import StoreReader

METRICS = ("A1", "A2", "A3")


def run_rows(reader: StoreReader, run_id: str) -> list[dict[str, Any]]:
    """The stored per-case score rows of a NoisyToolBench run."""
    return [s["figures"] for s in reader.scores(run_id, scoring.SCORER_NAME)]


def text_tables(rows: Sequence[dict[str, Any]]) -> str:
    """Per-category, IBTC and overall means for the terminal and report."""
    t = scoring.tables(rows)
    head = f"{'':14} {'n':>4} {'A1':>6} {'A2':>6} {'A3':>6} {'Re':>6} {'Steps':>6}"
    lines = [head]

    def line(name, s):
        def f(v):
            return "   n/a" if v is None else f"{v:6.3f}"
        lines.append(f"{name:14} {s['n']:>4} {f(s['A1'])} {f(s['A2'])} {f(s['A3'])} {f(s['Re'])} {f(s['Steps'])}")
    for cat, s in t["per_category"].items():
        line(cat, s)
    if t["ibtc"]:
        line("IBTC", t["ibtc"])
        lim = t["ibtc"].get("limitation_stated")
        lines.append(f"  IBTC: limitation stated in {'n/a' if lim is None else f'{lim:.3f}'} of cases "
                     "(excluded from A2/A3 overall)")
    line("overall", t["overall"]["ibtc-excluded"])
    line("overall (off.)", t["overall"]["official"])
    lines.append("overall: IBTC excluded from A2/A3 (ours); overall (off.): IBTC included as the "
                 "official code does. Steps = every agent action (ask, call, answer).")
    prov = t["provenance"]
    lines.append("settings: " + "; ".join(
        f"{key} {', '.join(str(v) for v in prov.get(key) or []) or 'n/a'}"
        for key in ("agent_variant", "embedding_model", "threshold", "ask_match")))
    return "\n".join(lines)


def agent_error_lines(reader: StoreReader, run_id: str) -> list[str]:
    """The run's cases that the agent under test failed (stop reason ``agent_error``), one line
    each with its stored error; empty when there are none."""
    failed = [i for i in reader.interactions(run_id) if i.get("stop_reason") == "agent_error"]
    if not failed:
        return []
    lines = [f"agent errors: {len(failed)} case(s) ended with stop reason agent_error (the agent under test "
             "failed; scored from the steps before the failure, a case with none is not in the tables; "
             "--resume gives them their step again)"]
    for i in failed:
        try:
            error = json.loads(i["error"] or "{}").get("error") or i["error"]
        except (ValueError, AttributeError):
            error = i["error"]
        lines.append(f"  {i.get('task_id') or i['id']}: {str(error)[:300]}")
    return lines


def export_run(reader: StoreReader, run_id: str, out_dir: Path) -> list[Path]:
    """``cases.csv`` (official columns + category), ``transcripts.jsonl`` (the step logs, in
    the format ``score noisytoolbench`` reads) and ``summary.json`` (the tables)."""
    rows = run_rows(reader, run_id)
    out_dir.mkdir(parents=True, exist_ok=True)
    scoring.write_csv(rows, out_dir / "cases.csv")
    transcripts = []
    for i in reader.interactions(run_id):
        meta = json.loads(i["metadata_json"] or "{}")
        steps = [_portable(json.loads(t["extra_json"])) for t in reader.turns(i["id"])]
        if not steps:  # nothing was played (a live session ended before the agent's first step)
            continue
        transcripts.append({"category": meta["category"], "query_id": meta["query_id"], "steps": steps})
    write_jsonl(out_dir / "transcripts.jsonl", transcripts)
    (out_dir / "summary.json").write_text(json.dumps(scoring.tables(rows), indent=1, default=str))
    return [out_dir / "cases.csv", out_dir / "transcripts.jsonl", out_dir / "summary.json"]


def _portable(step: dict[str, Any]) -> dict[str, Any]:
    # an ask's thought is part of its message (ask_match "message"); a limitation answer scores A3 = 0
    keep = {"ask": ("type", "text", "thought", "reply"),
            "call": ("type", "name", "arguments", "observation", "source"),
            "answer": ("type", "text", "limitation"), "think": ("type", "text")}[step["type"]]
    return {k: step[k] for k in keep if k in step}


def compare_runs(rows_a: Sequence[dict], rows_b: Sequence[dict]) -> list[dict[str, Any]]:
    """Per metric: both runs' rates on the cases they share and McNemar's exact test on the
    paired 0/1 outcomes (cases where either value is missing are left out and counted)."""
    a = {r["case"]: r for r in rows_a}
    b = {r["case"]: r for r in rows_b}
    shared = sorted(set(a) & set(b))
    out = []
    for metric in METRICS:
        pairs = [(a[k][metric], b[k][metric]) for k in shared
                 if a[k][metric] is not None and b[k][metric] is not None]
        row: dict[str, Any] = {"metric": metric, "n": len(pairs), "excluded": len(shared) - len(pairs)}
        if pairs:
            table = [[sum(1 for x, y in pairs if x == 1 and y == 1), sum(1 for x, y in pairs if x == 1 and y == 0)],
                     [sum(1 for x, y in pairs if x == 0 and y == 1), sum(1 for x, y in pairs if x == 0 and y == 0)]]
            row.update(rate_a=sum(x for x, _ in pairs) / len(pairs), rate_b=sum(y for _, y in pairs) / len(pairs),
                       only_a=table[0][1], only_b=table[1][0])
            result = mcnemar(table, exact=True)
            row.update(statistic=float(result.statistic), p=float(result.pvalue))
        out.append(row)
    rb = [r["redundant_asking"] for r in rows_b]
    ra = [r["redundant_asking"] for r in rows_a]
    out.append({"metric": "Re", "mean_a": sum(ra) / len(ra) if ra else None,
                "mean_b": sum(rb) / len(rb) if rb else None})
    return out
