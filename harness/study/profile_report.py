"""The report's method-profile section: which aids were on (value, version, why), the figures
with the judge's own scores beside the stored ones, how many scores each aid moved, and how
often each rule fired. No LLM call: the judgments keep the judge's own answers."""
from __future__ import annotations

from typing import Any

from harness.selfscore.aid_effects import aid_counts
from harness.selfscore.figures import interaction_figures
from harness.selfscore.scoring import summarize
from store import StoreReader

_COMPARED = ("mean_avg_user_helpfulness", "mean_avg_agent_helpfulness", "mean_quality",
             "mean_final_score", "solved_rate")


def _fmt(v: Any) -> str:
    return "n/a" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def judge_only_comparison(reader: StoreReader, run_id: str) -> dict[str, dict[str, Any]]:
    """The run's summary figures from the stored turn scores and from the judge's own scores
    (``{"stored": summary, "judge-only": summary}``)."""
    run = reader.run(run_id)
    by_interaction: dict[str, list[dict]] = {}
    for j in reader.judgments_for_run(run["id"]):
        by_interaction.setdefault(j["interaction_id"], []).append(j)
    done = [i for i in reader.interactions(run["id"]) if i["status"] == "completed"]
    return {variant: summarize([interaction_figures(reader, i, run["config"], None, variant,
                                                    by_interaction.get(i["id"], [])) for i in done])
            for variant in ("stored", "judge-only")}


READINGS = {
    "sampled": "the judge's written verdict (a reason, then the score: the paper's)",
    "probabilities": "the expected score over the score tokens' probabilities (the score asked for alone)"}


def score_reading_line(reading: dict | None) -> str:
    """How the run's helpfulness and complexity scores were read (a run stored before the
    setting: sampled), and whether reasons were written."""
    reading = reading or {"reading": "sampled"}
    mode = reading.get("reading", "sampled")
    line = f"Scores read: **{mode}**, {READINGS.get(mode, mode)}"
    if reading.get("version"):
        line += f", version {reading['version']}"
    if mode == "probabilities":
        line += "; written reasons " + ("on (after the score)" if reading.get("reasons") else "off")
    return line + " (docs/selfscore.md#scores-read-from-probabilities)."


def profile_lines(reader: StoreReader, run_id: str) -> list[str]:
    """The ``## Method profile`` section of a run's report."""
    run = reader.run(run_id)
    record = run.get("profile")
    lines = ["", "## Method profile", ""]
    if not record:
        return lines + ["Not recorded (a run stored before method profiles): its config_json "
                        "holds the aid settings it ran with."]
    lines += [f"Profile **{record['profile']}** (asked: {record.get('requested')}); "
              "docs/selfscore.md#method-profiles.", "",
              "| aid | role | on | value | version | why |", "|---|---|---|---|---|---|"]
    for name, aid in record.get("aids", {}).items():
        lines.append(f"| {name} | {aid.get('role')} | {'yes' if aid.get('on') else 'no'} | "
                     f"{aid.get('value')} | {aid.get('version') or '-'} | {aid.get('source')} |")
    lines += ["", score_reading_line(record.get("score_reading"))]
    judgments = reader.judgments_for_run(run["id"])
    counts = aid_counts(judgments)
    if counts["ran"]:
        lines += ["", "| aid | judgments it ran on | scores or verdicts it moved |", "|---|---|---|"]
        lines += [f"| {name} | {n} | {counts['moved'].get(name, 0)} |" for name, n in sorted(counts["ran"].items())]
    if any(aid.get("on") and name == "helpfulness_bounds" for name, aid in record.get("aids", {}).items()):
        compared = judge_only_comparison(reader, run_id)
        lines += ["", "The same run with the judge's own helpfulness scores (the bounds undone; "
                  "`deskbench rescore RUN --raw` stores these):", "",
                  "| figure | stored (aided) | judge-only |", "|---|---|---|"]
        lines += [f"| {k} | {_fmt(compared['stored'][k])} | {_fmt(compared['judge-only'][k])} |" for k in _COMPARED]
    if counts["rule_hits"]:
        lines += ["", "Rules that fired (judgments per rule id):", "", "| rule | hits |", "|---|---|"]
        lines += [f"| {rule} | {n} |" for rule, n in counts["rule_hits"].items()]
    return lines
