"""The run report: summary figures, per-interaction table, model usage, judge sanity."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from harness.selfscore.scoring import summarize
from harness.study.agent_report import NOT_REPORTED, agent_figures, agent_lines
from harness.study.conversation_report import conversation_lines
from harness.study.fault_report import fault_lines
from harness.study.profile_report import profile_lines
from harness.study.solved_check_trust import trust_line
from harness.study.trial_report import persona_lines, trial_lines
from harness.study.statistics import bootstrap_ci
from harness.study.usage_report import usage_lines
from harness.study.voice_report import voice_lines
from store import StoreReader


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def report_markdown(reader: StoreReader, run_id: str, sanity_lines: list[str] | None = None) -> str:
    """The Markdown report of a stored run: its settings, summary figures with a bootstrap CI of
    the mean final score, the simulator faults (every figure with and without the conversations
    a fault touched), how the conversations went, the agent under test (a team's own agent:
    its failures, latency, trace and usage), failed interactions and judgments, the
    figures over trials (pass^k, spread, noise floor) and by persona, one table row per interaction, model calls, voice figures (if any), and ``sanity_lines`` (a
    judge sanity check's output) when given."""
    run = reader.run(run_id)
    figures = [s["figures"] for s in reader.scores(run_id)]
    interactions = reader.interactions(run_id)
    summary = summarize(figures)
    failed = [i for i in interactions if i["status"] == "failed"]
    models = run["models"]
    lines = [
        f"# SelfScore run {run['id']}", "",
        f"- name: `{run['name']}` (agent_complexity_judge)",
        f"- dataset: {run['dataset']} (sha256 {run['dataset_sha256'][:12]}), "
        f"{len(interactions)} interactions, status {run['status']}",
        "- models: " + ", ".join(f"{r}={m}" for r, m in models.items()),
        f"- prompt version {run['prompt_version']}, scorer version {run['scorer_version']}, "
        f"formula {run['config'].get('scoring', {}).get('formula', 'paper')}, code {run['code_version']}",
        f"- method profile {(run.get('profile') or {}).get('profile', 'unrecorded')}, scores computed on "
        + ", ".join(sorted({s.get('profile') or 'unrecorded' for s in reader.scores(run_id)}) or ["-"]),
        "", "## Summary", "",
        "| figure | value |", "|---|---|",
    ]
    agent = agent_figures(reader, run_id)
    for key, value in summary.items():
        # an agent under test that reported no usage: its cost is "not reported", never 0
        unreported = value is None or (agent is not None and agent["usage"] == NOT_REPORTED)
        shown = NOT_REPORTED if key == "total_cost" and figures and unreported else _fmt(value)
        lines.append(f"| {key} | {shown} |")
    ci = bootstrap_ci([f.get("final_score") for f in figures])
    lines.append("| mean_final_score 95% CI (bootstrap over interactions) | "
                 + (f"[{_fmt(ci['low'])}, {_fmt(ci['high'])}] |" if ci["low"] is not None
                    else f"n/a ({ci['reason']}) |"))
    if "solved_rate" in summary:
        lines += ["", trust_line(run)]
    lines += fault_lines(reader, run_id)
    lines += conversation_lines(reader, run_id)
    lines += agent_lines(reader, run_id, agent) if agent else []
    if failed:
        lines += ["", f"{len(failed)} interaction(s) failed and are not scored; "
                  f"finish them with `deskbench run --resume {run_id}`:"]
        lines += [f"- {i['task_id']}: {i['error']}" for i in failed]
    failed_judgments = Counter(j["kind"] for j in reader.judgments_for_run(run_id) if j["status"] == "failed")
    if failed_judgments:
        lines += ["", f"{sum(failed_judgments.values())} failed judgment(s) excluded from every mean "
                  "(never replaced by a default): "
                  + ", ".join(f"{kind} {n}" for kind, n in sorted(failed_judgments.items()))]
    if run.get("stop_detail"):
        lines += ["", f"Run status {run['status']}: {run['stop_detail']}"]
    lines += trial_lines(figures)
    lines += persona_lines(figures)
    lines += ["", "## Interactions", "",
              "| task | trial | persona | turns | stop | solved | CT | EH | TK | WC | user h. | agent h. "
              "| quality | final |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for f in figures:
        lines.append("| " + " | ".join(_fmt(f.get(k)) for k in (
            "task_id", "trial", "persona", "turns", "stop_reason", "solved", "critical_thinking", "error_handling",
            "topic_knowledge", "weighted_complexity", "avg_user_helpfulness",
            "avg_agent_helpfulness", "quality", "final_score")) + " |")
    lines += profile_lines(reader, run_id)
    lines += usage_lines(reader, run_id)
    lines += voice_lines(reader, run_id)
    if sanity_lines:
        lines += ["", "## Judge sanity", "", "```", *sanity_lines, "```"]
    return "\n".join(lines) + "\n"


def write_report(reader: StoreReader, run_id: str, out_dir: Path,
                 sanity_lines: list[str] | None = None) -> Path:
    """Write :func:`report_markdown` to ``out_dir/report.md`` (folder created) and return that path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.md"
    path.write_text(report_markdown(reader, run_id, sanity_lines), encoding="utf-8")
    return path
