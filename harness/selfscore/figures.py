"""SelfScore figures from the store, written back as traceable score rows.

Used after each interaction finishes and by ``rescore`` (no LLM call: only stored rows).
Each score row records the scorer and its version, the formula and weights, the judge and
complexity models, the prompt version that produced the judgments, and the method profile:
the run's own, or ``judge-only`` / ``bounded`` when ``rescore`` read the turn scores another
way (``harness.selfscore.aid_effects``).
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from harness.selfscore.aid_effects import turns_as
from harness.selfscore.scoring import SCORER_NAME, SCORER_VERSION, score_interaction
from store import StoreReader, StoreWriter


def interaction_figures(reader: StoreReader, interaction: dict[str, Any], run_config: dict[str, Any],
                        formula: str | None = None, variant: str = "stored",
                        judgments: Sequence[dict] | None = None) -> dict[str, Any]:
    """Figures of one interaction from its stored complexity judgment and turn rows, the turn
    scores read as ``variant`` (``stored``, ``judge-only`` or ``bounded``, from ``judgments``:
    the interaction's judgment rows, read from the store when not given)."""
    scoring = run_config.get("scoring", {})
    complexity = reader.complexity(interaction["id"])
    turns = reader.turns(interaction["id"])
    if variant != "stored":
        if judgments is None:
            judgments = [j for j in reader.judgments_for_run(interaction["run_id"])
                         if j["interaction_id"] == interaction["id"]]
        turns = turns_as(variant, turns, judgments, scoring.get("manipulation_defence") is not False)
    figures = score_interaction(
        complexity, turns, interaction.get("stop_reason"),
        formula or scoring.get("formula", "paper"), tuple(scoring.get("weights", (0.5, 0.4, 0.1))),
    )
    figures["interaction_id"] = interaction["id"]
    figures["task_id"] = interaction.get("task_id") or interaction["problem_id"].split(":", 1)[-1]
    figures["trial"] = interaction.get("trial") or 1
    figures["persona"] = interaction.get("persona")
    return figures


def profile_label(run: dict[str, Any], variant: str = "stored") -> str:
    """The profile a score row records: the run's (``paper``, ``embedded``, ``mixed``; runs stored
    before profiles: ``unrecorded``), or the rescore variant's."""
    if variant == "judge-only":
        return "judge-only"
    if variant == "bounded":
        return "bounded"
    return (run.get("profile") or {}).get("profile") or "unrecorded"


def score_row(figures: dict[str, Any], run: dict[str, Any], variant: str = "stored") -> dict[str, Any]:
    """The ``scores`` row of an interaction's ``figures`` in ``run``: the scorer and formula,
    the scoring weights, judge and complexity models and prompt version of the run's config."""
    roles = run["config"].get("roles", {})
    scoring = run["config"].get("scoring", {})
    aids = (run.get("profile") or {}).get("aids")
    if aids is not None and variant != "stored":  # what rescore undid or applied, and what stays
        aids = {**aids, "helpfulness_bounds": {**aids.get("helpfulness_bounds", {}),
                                               "on": variant == "bounded", "rescored": variant}}
    return {
        "interaction_id": figures["interaction_id"], "scorer": SCORER_NAME,
        "scorer_version": SCORER_VERSION, "formula": figures["formula"],
        "weights_json": json.dumps(scoring.get("weights", (0.5, 0.4, 0.1))),
        "judge_model": roles.get("judge", {}).get("model"),
        "complexity_model": roles.get("complexity", {}).get("model"),
        "prompt_version": run.get("prompt_version"), "figures_json": json.dumps(figures),
        "profile": profile_label(run, variant), "aids_json": json.dumps(aids) if aids is not None else None,
    }


def rescore_run(reader: StoreReader, writer: StoreWriter, run_ref: str,
                formula: str | None = None, variant: str = "stored") -> list[dict[str, Any]]:
    """Recompute every finished interaction's figures from stored rows (turn scores read as
    ``variant``) and store them in place of the run's score rows."""
    run = reader.run(run_ref)
    by_interaction: dict[str, list[dict]] = {}
    if variant != "stored":
        for j in reader.judgments_for_run(run["id"]):
            by_interaction.setdefault(j["interaction_id"], []).append(j)
    figures = [interaction_figures(reader, i, run["config"], formula, variant, by_interaction.get(i["id"], []))
               for i in reader.interactions(run["id"]) if i["status"] == "completed"]
    writer.replace_scores(run["id"], [score_row(f, run, variant) for f in figures])
    return figures
