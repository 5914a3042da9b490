"""Exports of a stored run: per-interaction JSONL and CSV, per-turn JSONL."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from harness.selfscore.batch import failed_by_agent
from harness.selfscore.scoring import EXPORT_FIELDS
from harness.study.agent_report import failure_detail, turn_agent_extra
from harness.study.trials import trial_summary
from harness.tasks.jsonl import atomic_write, write_jsonl
from store import StoreReader

INTERACTION_EXTRA = ("task_id", "trial", "persona", "formula", "judge_model", "complexity_model", "prompt_version",
                     "scorer_version", "profile", "aids_on", "failed_user_judgments", "failed_agent_judgments")
AGENT_TURN_FIELDS = {"agent_adapter": "adapter", "agent_name": "agent", "agent_messages": "messages",
                     "agent_n_messages": "n_messages", "agent_end": "end", "agent_usage": "usage",
                     "agent_trace": "trace", "agent_latency_ms": "latency_ms", "agent_ttft_ms": "ttft_ms",
                     "agent_attempts": "attempts"}
"""The per-turn export's columns of a team's own agent (``extra_json`` -> ``agent``): its messages,
usage (or "not reported"), trace, latency, time to first token and attempts."""


def _aids_on(score: dict[str, Any]) -> str | None:
    """The aids a score row's figures were computed with, as ``name@version`` joined by ``;``."""
    aids = json.loads(score.get("aids_json") or "null")
    if aids is None:
        return None
    return ";".join(f"{n}@{a.get('version')}" for n, a in aids.items() if a.get("on"))


def interaction_rows(reader: StoreReader, run_id: str) -> list[dict[str, Any]]:
    """One row per scored interaction: the export fields, then provenance; in a run where the
    agent under test failed a conversation, ``agent_error`` (the failure's detail as JSON: kind,
    status, body excerpt, turn) on every row (empty where it did not fail)."""
    failed = {i["id"]: i for i in reader.interactions(run_id) if failed_by_agent(i)}
    rows = []
    for s in reader.scores(run_id):
        f = s["figures"]
        row = {k: f.get(k) for k in EXPORT_FIELDS}
        row.update({k: f.get(k, s.get(k)) for k in INTERACTION_EXTRA})
        row["aids_on"] = _aids_on(s)
        if failed:
            i = failed.get(s["interaction_id"])
            row["agent_error"] = json.dumps(failure_detail(i), ensure_ascii=False) if i else None
        rows.append(row)
    return rows


def agent_turn_fields(turn: dict[str, Any]) -> dict[str, Any]:
    """The :data:`AGENT_TURN_FIELDS` of a turn a team's own agent answered ({} for other turns);
    NoisyToolBench steps add ``agent_tool_calls``."""
    extra = turn_agent_extra(turn)
    if extra is None:
        return {}
    out = {column: extra.get(key) for column, key in AGENT_TURN_FIELDS.items()}
    if "tool_calls" in extra:
        out["agent_tool_calls"] = extra["tool_calls"]
    return out


def turn_rows(reader: StoreReader, run_id: str) -> list[dict[str, Any]]:
    """One row per stored turn, with each judgment's reason, status, the judge's own answer
    (``*_judge``) and the aids that ran on it (``*_aids``, JSON); a turn a team's own agent
    answered adds its trace, usage, latency and messages (:func:`agent_turn_fields`)."""
    judgments: dict[tuple, dict] = {}
    for j in reader.judgments_for_run(run_id):
        judgments[(j["interaction_id"], j["turn_index"], j["kind"])] = j
    rows = []
    for iid, turns in reader.turns_for_run(run_id).items():
        for t in turns:
            row = {k: t[k] for k in ("interaction_id", "turn_index", "user_message", "agent_message",
                                     "user_helpfulness", "agent_helpfulness", "solved", "quality",
                                     "input_tokens", "output_tokens", "cost", "latency_ms")}
            row["solved"] = None if t["solved"] is None else bool(t["solved"])
            for kind in ("user_helpfulness", "agent_helpfulness", "solved"):
                j = judgments.get((iid, t["turn_index"], kind))
                row[f"{kind}_reason"] = j["reason"] if j else None
                row[f"{kind}_status"] = j["status"] if j else None
                # the judge's own answer before any aid, and the aids that moved it
                row[f"{kind}_judge"] = j.get("judge_score") if j else None
                row[f"{kind}_aids"] = j.get("aids_json") if j else None
            row.update(agent_turn_fields(t))
            rows.append(row)
    return rows


def task_rows(figures: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per task over its trials (solved count and pass^k per k; mean, SD, min and max
    of every figure of ``harness.study.trials.SPREAD_FIGURES``), and the run-level summary
    (pass^k, pass@k, flip share, each figure's run mean, interval and noise floor)."""
    s = trial_summary(figures)
    rows = []
    for task, p in sorted(s["solved"]["per_task"].items()):
        row: dict[str, Any] = {"task_id": task, "trials": p["n"], "solved": p["c"]}
        for key, sp in s["spread"].items():
            t = sp["tasks"].get(task) or {}
            row.update({f"{key}_{stat}": t.get(stat) for stat in ("mean", "sd", "min", "max")})
        rows.append(row)
    run = {"trials": s["trials"],
           "solved": {k: v for k, v in s["solved"].items() if k != "per_task"},
           "spread": {k: {x: y for x, y in sp.items() if x != "tasks"} for k, sp in s["spread"].items()}}
    return rows, run


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rows as CSV with a header from the first row's keys (an empty file for no rows), atomically."""
    with atomic_write(path) as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def export_run(reader: StoreReader, run_id: str, out_dir: Path, formats=("jsonl", "csv")) -> list[Path]:
    """Write ``interactions.jsonl``/``.csv``, ``turns.jsonl``, ``tasks.jsonl`` (per task over its
    trials) and ``trials.json`` (pass^k, flip share, noise floors) into ``out_dir``."""
    inter = interaction_rows(reader, run_id)
    tasks, over_trials = task_rows([s["figures"] for s in reader.scores(run_id)])
    written = []
    if "jsonl" in formats:
        write_jsonl(out_dir / "interactions.jsonl", inter)
        write_jsonl(out_dir / "turns.jsonl", turn_rows(reader, run_id))
        write_jsonl(out_dir / "tasks.jsonl", tasks)
        with atomic_write(out_dir / "trials.json") as f:
            json.dump(over_trials, f, indent=2)
        written += [out_dir / "interactions.jsonl", out_dir / "turns.jsonl", out_dir / "tasks.jsonl",
                    out_dir / "trials.json"]
    if "csv" in formats:
        write_csv(out_dir / "interactions.csv", inter)
        written.append(out_dir / "interactions.csv")
    return written
