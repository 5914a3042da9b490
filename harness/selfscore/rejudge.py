"""Re-judging a stored run's conversations with other judges, without re-running them.

The new run replays each stored conversation (user script = its stored user messages, turn 1
included; agent script = its stored agent replies with their original tokens) through the same
turn loop and judges, with ``stop_on_solved`` off so that every stored turn is judged. Each
stored conversation becomes one interaction of the new run, named after its source
interaction, so that many conversations on one task (live sessions) all stay. Judge agreement
and judge reliability (the same judge K times) are computed from such runs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from harness.aids.profiles import AIDS
from harness.config import TEAM_AGENTS, Config
from harness.selfscore import prompts
from harness.selfscore.batch import SelfScoreBatch, new_run, run_name
from harness.selfscore.scoring import SCORER_VERSION
from store import StoreReader


def rejudge_config(source: dict[str, Any], role_overrides: dict[str, dict[str, Any]],
                   repeat: int = 0, n_turns: int = 1, profile: str | None = None,
                   aid_overrides: dict[str, dict[str, Any]] | None = None) -> Config:
    """The config of a re-judging run of ``source`` (a stored run row).

    ``repeat`` > 0 offsets the seed of the judging roles, so repeated re-judging at a
    temperature above 0 samples independent judgments. ``profile`` replaces the source's
    method profile (every aid setting it stored then follows the new profile);
    ``aid_overrides`` (``{section: {key: value}}``, from ``--aid``) set aids above it.
    """
    tree = json.loads(json.dumps(source["config"]))
    if profile is not None:
        tree.setdefault("scoring", {})["profile"] = profile
        for aid in AIDS:
            section, key = aid.setting.split(".")
            tree.setdefault(section, {})[key] = None
    for section, values in (aid_overrides or {}).items():
        tree.setdefault(section, {}).update(values)
    for role, fields in role_overrides.items():
        tree["roles"].setdefault(role, {}).update(fields)
    for role in ("judge", "complexity"):
        spec = tree["roles"][role]
        spec["seed"] = (spec.get("seed") or 0) + repeat
    source_agent = tree["run"].get("agent", "plain")
    tree["run"].update(user="scripted", agent="replay", stop_on_solved=False, offset=0, trials=1,
                       max_turns=max(n_turns, 1), name=None)
    config = Config.model_validate(tree)
    label = ("human" if source_agent == "human" else config.agent.label(source_agent)
             if source_agent in TEAM_AGENTS
             else config.role("agent").label() + ("+rag" if source_agent == "rag" else ""))
    config.run.name = run_name(config, agent_label=label)
    return config


@dataclass(frozen=True)
class Replay:
    """One stored conversation to judge again: the new interaction is ``<new run>:<key>``."""

    key: str         # the source interaction's id after ``<source run>:`` (unique in the run)
    problem_id: str  # the source interaction's problem (already in the store)
    script: dict[str, Any]  # ``script_json`` of the new interaction (see :func:`replays`)
    trial: int | None = None    # the source's trial of its task and the persona that played it,
    persona: str | None = None  # kept so that the re-judged run's trial figures pair the same way

    @property
    def n_turns(self) -> int:
        """The number of turns to replay: one per stored agent reply."""
        return len(self.script["agent_replies"])


def replays(reader: StoreReader, run: dict[str, Any]) -> list[Replay]:
    """Every completed interaction of ``run`` with stored turns, as it was said.

    One replay per stored conversation, however many share a task (live sessions on one drawn
    task, repeated tasks): each keeps its own user messages (turn 1 included: what the person
    typed or what speech recognition heard, not the task's question), agent replies, the
    original agent calls, and the problem statement it was judged against.

    Raises:
        ValueError: when the run has no completed interaction to re-judge.
    """
    out: list[Replay] = []
    source = run["config"].get("run", {}).get("agent", "plain")
    agent_model = (Config.model_validate(run["config"]).agent.label(source) if source in TEAM_AGENTS
                   else run["models"].get("agent", "unknown"))
    prefix = f"{run['id']}:"
    for i in reader.interactions(run["id"]):
        if i["status"] != "completed":
            continue
        turns = reader.turns(i["id"])
        if not turns:
            continue
        out.append(Replay(
            key=i["id"][len(prefix):] if i["id"].startswith(prefix) else i["id"],
            problem_id=i["problem_id"],
            script={"source_interaction": i["id"], "opening": turns[0]["user_message"],
                    "followups": [t["user_message"] for t in turns[1:]],
                    "agent_replies": [t["agent_message"] for t in turns],
                    "agent_calls": [
                        {"role": "agent", "purpose": "agent:replayed", "model": agent_model,
                         "input_tokens": t["input_tokens"] or 0, "output_tokens": t["output_tokens"] or 0,
                         # an agent under test that reported no usage stays "not reported" (NULL)
                         "usage_reported": t["input_tokens"] is not None}
                        for t in turns],
                    # an agent under test's trace of each reply (judge_sees_trace reads it again)
                    "agent_traces": [(json.loads(t["extra_json"] or "{}").get("agent") or {}).get("trace")
                                     for t in turns],
                    "problem_statement": i["problem_statement"],
                    "problem_source": i["problem_source"]},
            trial=i.get("trial"), persona=i.get("persona")))
    if not out:
        raise ValueError(f"Run {run['id']} has no completed interaction with turns to re-judge.")
    if len({r.key for r in out}) != len(out):
        raise ValueError(f"Run {run['id']} has interaction ids that clash once its run id is removed.")
    return out


def create_rejudge_run(batch: SelfScoreBatch, source: dict[str, Any], todo: Sequence[Replay]) -> str:
    """Store the re-judging run of ``source`` on ``batch``'s config (:func:`rejudge_config`),
    one pending interaction per replay, over the source's own problems; returns its id."""
    batch.runtime.check_models()
    cfg = batch.config

    def interactions(run_id: str) -> list[dict]:
        return [{"id": f"{run_id}:{r.key}", "run_id": run_id, "problem_id": r.problem_id,
                 "position": pos, "status": "pending", "script_json": json.dumps(r.script),
                 "trial": r.trial, "persona": r.persona}
                for pos, r in enumerate(todo)]
    return new_run(batch.writer, cfg, cfg.run.name or run_name(cfg), "rejudge", source["dataset"],
                   source["dataset_sha256"], prompts.PROMPT_VERSION, SCORER_VERSION,
                   source["id"], interactions=interactions, profile=batch.runtime.profile_record())
