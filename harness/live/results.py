"""What the app's results pages show: runs, a run's summary and plots, conversations turn by
turn with every judgment and its reasoning, comparisons and exports.

Pure reads of the store (plus files written into an output folder); the UI only lays them out.
Exports of live runs add the sessions (participant pseudonyms, never codes or session tokens)
and the human ratings.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.study.agent_report import failure_detail, turn_agent_extra
from harness.study.agreement import human_llm_agreement
from harness.study.export import export_run, write_csv
from harness.study.report import report_markdown
from harness.study.report_plots import run_distributions_png
from harness.tasks.jsonl import write_jsonl
from store import StoreReader
from store.live import LiveStore


def runs_table(reader: StoreReader) -> list[list[Any]]:
    """Rows for the runs list: id, name, kind, status, completed/total, dataset, created."""
    return [[r["id"], r["name"], r["kind"], r["status"], f"{r['n_completed']}/{r['n_interactions']}",
             r["dataset"], r["created_at"]] for r in reversed(reader.runs())]


def agreement_markdown(live: LiveStore, run_id: str) -> str:
    """Human-vs-LLM judge agreement of a run, as a markdown section ('' when nobody rated)."""
    rows = live.human_vs_llm(run_id)
    if not any(r["human_helpfulness"] is not None or r["human_solved"] is not None for r in rows):
        return ""
    a = human_llm_agreement(rows)
    h, s = a["helpfulness"], a["solved"]

    def f(v, d=2):
        return "n/a" if v is None else f"{v:.{d}f}"
    lines = ["## Human ratings vs the LLM judge", "",
             "| agent helpfulness | value |", "|---|---|",
             f"| rated turns | {h['n']} |", f"| Pearson r | {f(h['pearson_r'])} |",
             f"| Spearman rho | {f(h['spearman_rho'])} |",
             f"| Krippendorff's alpha (interval) | {f(h['krippendorff_alpha'])} |",
             f"| mean difference (human - LLM) | {f(h['mean_difference'])} |",
             f"| mean absolute difference | {f(h['mean_abs_difference'])} |", "",
             "| solved | value |", "|---|---|", f"| rated turns | {s['n']} |",
             f"| agreement | {f(s['percent_agreement'])} |", f"| Cohen's kappa | {f(s['cohen_kappa'])} |"]
    if h.get("note"):
        lines += ["", f"Note: {h['note']}."]
    return "\n".join(lines) + "\n"


def run_summary(reader: StoreReader, live: LiveStore, run_id: str, out_dir: Path) -> tuple[str, Path]:
    """The run's report (markdown, with human agreement when rated) and its distributions PNG."""
    run = reader.run(run_id)
    text = report_markdown(reader, run["id"])
    agreement = agreement_markdown(live, run["id"])
    if agreement:
        text += "\n" + agreement
    figures = [s["figures"] for s in reader.scores(run["id"])]
    png = run_distributions_png(run["name"], figures, out_dir / f"{_safe(run['id'])}.png")
    return text, png


def conversations(reader: StoreReader, run_id: str) -> list[tuple[str, str]]:
    """(label, interaction id) choices for the conversation viewer."""
    return [(f"{i['position'] + 1}. {i['task_id']} ({i['status']}, {i['n_turns'] or 0} turns)", i["id"])
            for i in reader.interactions(run_id)]


def conversation_markdown(reader: StoreReader, live: LiveStore, interaction_id: str) -> str:
    """A conversation turn by turn, each message followed by its judgments and their reasoning."""
    interaction = reader.interaction(interaction_id)
    if interaction is None:
        return "No such conversation."
    problem = reader.problem(interaction["problem_id"]) or {}
    judgments = live.judgments(interaction_id)
    by_turn: dict[Any, list[dict]] = {}
    for j in judgments:
        by_turn.setdefault(j["turn_index"], []).append(j)
    lines = [f"### {problem.get('task_id', interaction['problem_id'])}",
             f"status {interaction['status']}, stop reason {interaction['stop_reason']}, "
             f"{interaction['n_turns'] or 0} turns", "",
             f"**Problem statement:** {interaction.get('problem_statement') or 'n/a'}", ""]
    if interaction["stop_reason"] == "agent_error":
        d = failure_detail(interaction)
        lines += [f"**The agent under test failed** at turn {d.get('turn')}: {d.get('kind')} "
                  f"(HTTP {d.get('status') or '-'}, {d.get('attempts')} attempt(s)): "
                  f"{d.get('body') or d.get('error')}", ""]
    for j in by_turn.get(None, []):
        lines.append(f"- {_judgment(j)}")
    for t in reader.turns(interaction_id):
        lines += ["", f"#### Turn {t['turn_index']}", "", f"**User:** {t['user_message']}", "",
                  f"**Agent:** {t['agent_message']}", ""]
        lines += [f"- {_judgment(j)}" for j in by_turn.get(t["turn_index"], [])]
        latency = "n/a" if t["latency_ms"] is None else f"{t['latency_ms']:.0f} ms"  # None: a NoisyToolBench step
        cost = "not reported" if t["cost"] is None and turn_agent_extra(t) else t["cost"]
        lines.append(f"- quality {t['quality']}, cost {cost}, latency {latency}")
        lines += _agent_trace_lines(t)
    return "\n".join(lines) + "\n"


def _agent_trace_lines(turn: dict[str, Any]) -> list[str]:
    """What a team's own agent reported of the turn: its tool calls and retrieved passages."""
    extra = turn_agent_extra(turn)
    trace = (extra or {}).get("trace")
    if not isinstance(trace, dict):
        return []
    calls = [c for c in trace.get("tool_calls") or [] if isinstance(c, dict)]
    passages = [p for p in trace.get("retrieved") or [] if isinstance(p, dict)]
    out = [f"- tool call **{c.get('name')}** {json.dumps(c.get('arguments'), ensure_ascii=False)[:200]}"
           + (f" -> {str(c.get('result'))[:200]}" if c.get("result") is not None else "") for c in calls]
    out += [f"- retrieved {p.get('id')} (score {p.get('score')}): {str(p.get('text') or '')[:200]}" for p in passages]
    return out


def _judgment(j: dict[str, Any]) -> str:
    who = f"person {j['rater']}" if j.get("rater") else f"{j['model']} ({j['prompt_version']})"
    value = j["score"] if j["status"] == "ok" else f"FAILED: {j['error']}"
    if j["kind"] == "complexity" and j["parsed_json"]:
        value = ", ".join(f"{k} {v}" for k, v in json.loads(j["parsed_json"]).items() if k != "reason")
    reason = f" — {j['reason']}" if j.get("reason") else ""
    return f"**{j['kind']}** {value} by {who}{reason}"


def export_with_sessions(reader: StoreReader, live: LiveStore, run_id: str, out_dir: Path) -> list[Path]:
    """The run's exports, plus ``sessions.jsonl`` and ``human_ratings.csv`` for live runs.

    Participants appear only by pseudonym; session tokens (which grant access) never appear.
    """
    run = reader.run(run_id)
    paths = export_run(reader, run["id"], out_dir)
    sessions = live.sessions_for_export(run["id"])
    if sessions:
        write_jsonl(out_dir / "sessions.jsonl", sessions)
        write_csv(out_dir / "human_ratings.csv", live.human_ratings_of_run(run["id"]))
        paths += [out_dir / "sessions.jsonl", out_dir / "human_ratings.csv"]
    return paths


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:120]
