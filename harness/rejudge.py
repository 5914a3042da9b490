"""Re-judging a stored run's conversations with other judges, without re-running them.

The new run replays the stored messages (user script = the stored user messages, agent script
= the stored agent replies with their original tokens) through the same turn loop and judges,
with ``stop_on_solved`` off so that every stored turn is judged. Judge agreement and judge
reliability (the same judge K times) are computed from such runs.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.compose import run_name
from harness.config import Config
from harness.datasets import Dataset, Task
from store import StoreReader


def rejudge_config(source: dict[str, Any], role_overrides: dict[str, dict[str, Any]],
                   repeat: int = 0, n_turns: int = 1) -> Config:
    """The config of a re-judging run of ``source`` (a stored run row).

    ``repeat`` > 0 offsets the seed of the judging roles, so repeated re-judging at a
    temperature above 0 samples independent judgments.
    """
    tree = json.loads(json.dumps(source["config"]))
    for role, fields in role_overrides.items():
        tree["roles"].setdefault(role, {}).update(fields)
    for role in ("judge", "complexity"):
        spec = tree["roles"][role]
        spec["seed"] = (spec.get("seed") or 0) + repeat
    source_agent = tree["run"].get("agent", "plain")
    tree["run"].update(user="scripted", agent="replay", stop_on_solved=False, offset=0,
                       max_turns=max(n_turns, 1), name=None)
    config = Config.model_validate(tree)
    label = ("human" if source_agent == "human"
             else config.role("agent").label() + ("+rag" if source_agent == "rag" else ""))
    config.run.name = run_name(config, agent_label=label)
    return config


def replay_dataset(reader: StoreReader, run: dict[str, Any]) -> tuple[Dataset, dict[str, list[dict]]]:
    """The completed interactions of ``run`` as replay tasks, and each task's original agent calls.

    Raises:
        ValueError: when the run has no completed interaction to re-judge.
    """
    tasks: list[Task] = []
    calls: dict[str, list[dict]] = {}
    agent_model = run["models"].get("agent", "unknown")
    for i in reader.interactions(run["id"]):
        if i["status"] != "completed":
            continue
        turns = reader.turns(i["id"])
        if not turns:
            continue
        meta = json.loads(i["metadata_json"] or "{}")
        tasks.append(Task(
            id=i["task_id"], question=i["question"], reference_answer=i["reference_answer"],
            problem=meta.pop("problem", None) or i["problem_statement"],
            followups=[t["user_message"] for t in turns[1:]],
            agent_replies=[t["agent_message"] for t in turns], metadata=meta))
        calls[i["task_id"]] = [
            {"role": "agent", "purpose": "agent:replayed", "model": agent_model,
             "input_tokens": t["input_tokens"] or 0, "output_tokens": t["output_tokens"] or 0}
            for t in turns]
    if not tasks:
        raise ValueError(f"Run {run['id']} has no completed interaction with turns to re-judge.")
    return Dataset(run["dataset"], Path(reader.path), run["dataset_sha256"], tasks), calls
