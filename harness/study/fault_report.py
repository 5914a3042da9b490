"""Simulator faults in the report and in ``compare`` (issue 42; docs/selfscore.md, "Simulator faults").

A conversation is *touched* by a simulator fault when one of its simulated user messages was
sent with a fault (``extra["simulator"]["faults"]["flagged"]``, stored by
``harness.simuser.faults``). The report says how many conversations a fault touched, of which
faults, and gives every figure over all scored conversations, without the touched ones and over
the touched ones only, side by side. ``compare`` warns when two runs differ more in the share of
touched conversations than in a compared figure (:func:`fault_warnings`). Read from the store;
no LLM calls.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Mapping, Sequence

from harness.selfscore.scoring import summarize
from store import StoreReader

#: the figures of the side-by-side table (summarize's keys; the counts and the cost left out)
FIGURES = ("solved_rate", "mean_final_score", "mean_avg_agent_helpfulness", "mean_avg_user_helpfulness",
           "mean_turns", "mean_quality", "mean_weighted_complexity")
#: the figures ``compare`` sets against the runs' fault shares: a share is compared in points, a
#: mean by its relative difference (:func:`figure_difference`)
COMPARED = (("solved_rate", "the solved rate"), ("mean_final_score", "the mean final score"))


def touched_conversations(reader: StoreReader, run_id: str) -> tuple[dict[str, Counter], int, int, int]:
    """(interaction id -> the faults of its flagged messages, counted), the simulated user
    messages with a fault record, the flagged ones, and the simulated user messages (with a
    record or not), over the run's completed conversations."""
    touched: dict[str, Counter] = {}
    checked = flagged = simulated = 0
    for interaction_id, turns in reader.turns_for_run(run_id).items():
        for t in turns:
            sim = (json.loads(t["extra_json"] or "{}").get("user") or {}).get("simulator") or {}
            simulated += bool(sim)
            record = sim.get("faults")
            if record is None:
                continue
            checked += 1
            if record.get("flagged"):
                flagged += 1
                touched.setdefault(interaction_id, Counter()).update({f["fault"] for f in record["found"]})
    return touched, checked, flagged, simulated


def fault_figures(reader: StoreReader, run_id: str) -> dict[str, Any]:
    """The run's fault figures: scored conversations, the touched ones and their share, the
    conversations touched by each fault, messages checked and flagged, and :func:`summarize`
    over all scored conversations, without the touched ones and over the touched ones only."""
    figures = [s["figures"] for s in reader.scores(run_id)]
    touched, checked, flagged, simulated = touched_conversations(reader, run_id)
    hit = [f for f in figures if f["interaction_id"] in touched]
    clean = [f for f in figures if f["interaction_id"] not in touched]
    by_fault: Counter = Counter()
    for f in hit:
        by_fault.update(set(touched[f["interaction_id"]]))
    return {"conversations": len(figures), "touched": len(hit),
            "share": len(hit) / len(figures) if figures and checked else None,
            "by_fault": dict(sorted(by_fault.items(), key=lambda kv: (-kv[1], kv[0]))),
            "messages_checked": checked, "messages_flagged": flagged, "messages_simulated": simulated,
            "all": summarize(figures), "without": summarize(clean), "touched_only": summarize(hit)}


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.0%}" if key == "solved_rate" else f"{value:.2f}"


def fault_headline(f: Mapping[str, Any]) -> str:
    """"Simulator faults: N of M conversations touched (kinds ...)" of :func:`fault_figures`."""
    kinds = ", ".join(f"{k} {n}" for k, n in f["by_fault"].items()) or "none"
    return (f"Simulator faults: {f['touched']} of {f['conversations']} conversations touched "
            f"({f['share']:.0%}; kinds: {kinds}); {f['messages_flagged']} of {f['messages_checked']} "
            "simulated user messages sent with a fault")


def fault_lines(reader: StoreReader, run_id: str) -> list[str]:
    """The report's "Simulator faults" section: the headline and every figure with and without
    the touched conversations; a note when the run's simulated user recorded no fault checks;
    nothing when the run has no scored conversation or no simulated user message."""
    f = fault_figures(reader, run_id)
    if not f["conversations"]:
        return []
    if not f["messages_checked"]:
        return ["", "## Simulator faults", "", "Simulator faults: not recorded (the run's simulated user "
                "predates the fault checks)"] if f["messages_simulated"] else []
    n_all, n_hit = f["conversations"], f["touched"]
    lines = ["", "## Simulator faults", "", fault_headline(f), "",
             "A conversation is touched when one of its simulated user messages was sent with a fault "
             "(docs/selfscore.md, \"Simulator faults\"); the figures below leave them out, or keep only them.",
             "", f"| figure | all ({n_all}) | without the touched ({n_all - n_hit}) | touched only ({n_hit}) |",
             "|---|---|---|---|"]
    for key in FIGURES:
        lines.append(f"| {key} | " + " | ".join(_cell(key, f[part].get(key)) for part in
                                                 ("all", "without", "touched_only")) + " |")
    return lines


def figure_difference(key: str, a: float | None, b: float | None) -> float | None:
    """How much two runs differ in figure ``key``: a share (``solved_rate``) in points (|a - b|),
    a mean by its relative difference (|a - b| / max(|a|, |b|); 0 when both are 0); None when
    either is missing."""
    if a is None or b is None:
        return None
    if key == "solved_rate":
        return abs(a - b)
    top = max(abs(a), abs(b))
    return abs(a - b) / top if top else 0.0


def fault_warnings(shares: Mapping[str, float | None], summaries: Mapping[str, Mapping[str, Any]],
                   compared: Sequence[tuple[str, str]] = COMPARED) -> list[str]:
    """A warning for each pair of runs and compared figure where the runs' shares of
    fault-touched conversations differ by more than the figure does (:func:`figure_difference`;
    the shares are compared in points): "Warning: the runs differ more in simulator faults (12%
    vs 40% of conversations) than in the solved rate (48% vs 52%): ...". A run without fault
    records (share None) gives a note instead."""
    names = list(shares)
    out = [f"Note: {n} has no simulator fault records; its share of fault-touched conversations is "
           "unknown." for n in names if shares[n] is None]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if shares[a] is None or shares[b] is None:
                continue
            gap = abs(shares[a] - shares[b])
            for key, label in compared:
                va, vb = summaries[a].get(key), summaries[b].get(key)
                diff = figure_difference(key, va, vb)
                if diff is not None and gap > diff:
                    out.append(f"Warning: {a} and {b} differ more in simulator faults ({shares[a]:.0%} vs "
                               f"{shares[b]:.0%} of conversations) than in {label} ({_cell(key, va)} vs "
                               f"{_cell(key, vb)}): the difference may be the simulator's.")
    return out
