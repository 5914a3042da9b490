"""SelfScore figures from the store, written back as traceable score rows.

Used after each interaction finishes and by ``rescore`` (no LLM call: only stored rows).
Each score row records the scorer and its version, the formula and weights, the judge and
complexity models and the prompt version that produced the judgments.
"""
from __future__ import annotations

import json
from typing import Any

from harness.selfscore.scoring import SCORER_NAME, SCORER_VERSION, score_interaction
from store import StoreReader, StoreWriter


def interaction_figures(reader: StoreReader, interaction: dict[str, Any], run_config: dict[str, Any],
                        formula: str | None = None) -> dict[str, Any]:
    """Figures of one interaction from its stored complexity judgment and turn rows."""
    scoring = run_config.get("scoring", {})
    complexity = reader.complexity(interaction["id"])
    figures = score_interaction(
        complexity, reader.turns(interaction["id"]), interaction.get("stop_reason"),
        formula or scoring.get("formula", "paper"), tuple(scoring.get("weights", (0.5, 0.4, 0.1))),
    )
    figures["interaction_id"] = interaction["id"]
    figures["task_id"] = interaction.get("task_id") or interaction["problem_id"].split(":", 1)[-1]
    return figures


def score_row(figures: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """The ``scores`` row of an interaction's ``figures`` in ``run``: the scorer and formula,
    the scoring weights, judge and complexity models and prompt version of the run's config."""
    roles = run["config"].get("roles", {})
    scoring = run["config"].get("scoring", {})
    return {
        "interaction_id": figures["interaction_id"], "scorer": SCORER_NAME,
        "scorer_version": SCORER_VERSION, "formula": figures["formula"],
        "weights_json": json.dumps(scoring.get("weights", (0.5, 0.4, 0.1))),
        "judge_model": roles.get("judge", {}).get("model"),
        "complexity_model": roles.get("complexity", {}).get("model"),
        "prompt_version": run.get("prompt_version"), "figures_json": json.dumps(figures),
    }


def rescore_run(reader: StoreReader, writer: StoreWriter, run_ref: str,
                formula: str | None = None) -> list[dict[str, Any]]:
    """Recompute every finished interaction's figures from stored rows and store them."""
    run = reader.run(run_ref)
    figures = [interaction_figures(reader, i, run["config"], formula)
               for i in reader.interactions(run["id"]) if i["status"] == "completed"]
    writer.replace_scores(run["id"], [score_row(f, run) for f in figures])
    return figures
