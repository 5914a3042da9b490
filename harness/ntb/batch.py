"""A NoisyToolBench batch: the 200 cases (or a selection) through the tool loop, resumable,
every step stored as it happens, every case scored from its stored steps."""
from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from graphs.toolloop import Outcome, build_tool_loop_graph, tool_loop_state
from harness.config import Config, NtbConfig
from harness.models.seeds import seeds_of_trial, trial_seeds
from harness.ntb import scoring
from harness.ntb.agent import PROTOCOL_VERSIONS, NativeToolAgent, TextProtocolAgent
from harness.ntb.apienv import ApiEnvironment
from harness.ntb.cases import Case, case_key, load_cases
from harness.ntb.user import SimulatedToolUser
from harness.selfscore.runs import Progress, ProgressFn, call_rows, finish_run, new_run, record_failure, run_all
from store import StoreReader, StoreWriter

if TYPE_CHECKING:  # the composition root builds the runtime and passes it in
    from harness.compose import Runtime

DATASET = "noisytoolbench"


class CaseEnvironment:
    """Implements ``graphs.toolloop.ToolEnvironment``: one offline API environment per case.

    Args:
        simulator: the ``api_simulator`` role's client, or None (no simulated responses).
        simulator_first: ask the simulator before the response example / template
            (``ntb.api_fallback = "simulator-first"``); the default order is recorded,
            example / template, simulator (/work/shared/NOISYTOOLBENCH.md).

    Every call step stores its ``source``; a simulated one also the simulator's model.
    """

    def __init__(self, simulator=None,
                 simulator_first: bool = NtbConfig.model_fields["api_fallback"].default == "simulator-first"):
        self.simulator = simulator
        self.simulator_first = simulator_first
        self._envs: dict[str, ApiEnvironment] = {}

    async def call(self, case: Case, name: str, arguments: Any) -> Outcome:
        """Run one API call in the case's environment (created on first use): its observation,
        its ``source`` and ``error`` (and the simulator's model when it was asked), its LLM calls."""
        env = self._envs.setdefault(case_key(case), ApiEnvironment(
            case, self.simulator, prefer_simulator=self.simulator_first))
        result = await env.call(name, arguments)
        detail = {"source": result.source, "error": result.error}
        if self.simulator is not None and (result.calls or result.source == "llm_simulated"):
            detail["simulator_model"] = self.simulator.model_name
        return Outcome(result.observation, detail, result.calls)


class StoreStepSink:
    """Implements ``graphs.toolloop.StepSink``: one turn row per step (the shared turn log)."""

    def __init__(self, writer: StoreWriter):
        self.writer = writer

    def save_step(self, interaction_id: str, index: int, step: dict[str, Any], calls) -> None:
        """Store one step as turn ``index``: the ask/answer text or the call as JSON, the reply or
        observation, the agent's tokens, the whole step in ``extra_json`` and its LLM calls."""
        action = (step.get("text") if step["type"] != "call"
                  else json.dumps({"name": step["name"], "arguments": step.get("arguments")}, ensure_ascii=False))
        came_back = step.get("observation") if step["type"] == "call" else step.get("reply")
        agent_calls = [c for c in calls if c.role == "agent"]
        self.writer.save_turn(
            {"interaction_id": interaction_id, "turn_index": index, "user_message": came_back,
             "agent_message": action, "input_tokens": sum(c.input_tokens for c in agent_calls),
             "output_tokens": sum(c.output_tokens for c in agent_calls),
             "extra_json": json.dumps(step, ensure_ascii=False)},
            [], call_rows(calls, interaction_id, index))


def selected_cases(config: Config) -> list[Case]:
    """The configured categories and case ids, at most ``per_category`` cases of each."""
    cases = load_cases(config.ntb.categories, config.ntb.ids)
    if not config.ntb.per_category:
        return cases
    taken: Counter[str] = Counter()
    kept = []
    for c in cases:
        if taken[c.category] < config.ntb.per_category:
            taken[c.category] += 1
            kept.append(c)
    return kept


class NtbBatch:
    """Creates, runs and resumes NoisyToolBench runs in one store."""

    def __init__(self, runtime: Runtime, writer: StoreWriter, reader: StoreReader,
                 on_progress: ProgressFn | None = None):
        self.runtime = runtime
        self.config = runtime.config
        self.writer, self.reader = writer, reader
        self.on_progress = on_progress or (lambda p: None)

    def protocol(self) -> str:
        """``ntb.protocol``, with ``auto`` resolved: ``text`` for an embedded agent, else ``native``."""
        p = self.config.ntb.protocol
        return ("text" if self.config.role("agent").embedded else "native") if p == "auto" else p

    def create_run(self, cases: list[Case]) -> str:
        """Store a new run of ``cases`` (one pending interaction each) and return its id.

        The embedding model and the models of :meth:`roles_used` are checked first, so a missing
        one fails before anything is stored.

        Raises:
            ValueError: no case selected.
        """
        if not cases:
            raise ValueError("No NoisyToolBench cases selected; check --category and --case.")
        cfg = self.config
        from harness.models.embeddings import check_embedder
        check_embedder(cfg.ntb.embedding_model)  # a missing model fails before anything is stored
        self.runtime.check_models(self.roles_used())
        name = cfg.run.name or self.default_name()
        problems = [problem_row(c) for c in cases]
        return new_run(self.writer, cfg, name, "noisytoolbench", DATASET, scoring_data_sha(),
                       PROTOCOL_VERSIONS[cfg.ntb.agent_variant], scoring.SCORER_VERSION, problems=problems,
                       interactions=lambda run_id: self._interactions(run_id, cases))

    def _interactions(self, run_id: str, cases: list[Case]) -> list[dict]:
        """One pending interaction per case and trial (``run.trials``), each trial with the seeds
        of its sampled roles (``harness.models.seeds``) in ``script_json``."""
        cfg, rows = self.config, []
        roles = {r: (cfg.role(r).temperature, cfg.role(r).seed) for r in self.roles_used()}
        for c in cases:
            for trial in range(1, cfg.run.trials + 1):
                key = case_key(c)
                rows.append({"id": f"{run_id}:{key}" + (f":trial{trial}" if cfg.run.trials > 1 else ""),
                             "run_id": run_id, "problem_id": f"{DATASET}:{key}", "position": len(rows),
                             "status": "pending", "trial": trial,
                             "script_json": json.dumps({"seeds": seeds_of_trial(cfg.run.seed, roles, key, trial)})})
        return rows

    def default_name(self) -> str:
        """``<agent>[+variant]_ntb_<judge>``."""
        cfg = self.config
        variant = "" if cfg.ntb.agent_variant == "current" else f"+{cfg.ntb.agent_variant}"
        return f"{cfg.role('agent').label()}{variant}_ntb_{cfg.role('judge').label()}"

    def roles_used(self) -> list[str]:
        """The roles this run calls: agent, judge, and user / api_simulator when configured."""
        ntb = self.config.ntb
        return ["agent", "judge", *(["user"] if ntb.user == "llm" else []),
                *(["api_simulator"] if ntb.api_simulator else [])]

    def graph(self, user=None, checkpointer=None):
        """The tool loop over the configured agent and API environment; ``user`` defaults to
        :meth:`tool_user` (a live session passes a person, with a ``checkpointer``)."""
        cfg = self.config
        agent_client = self.runtime.client("agent")
        variant = cfg.ntb.agent_variant
        agent = (TextProtocolAgent(agent_client, cfg.run.judge_retries, variant) if self.protocol() == "text"
                 else NativeToolAgent(agent_client, variant))
        env = CaseEnvironment(self.runtime.client("api_simulator") if cfg.ntb.api_simulator else None,
                              simulator_first=cfg.ntb.api_fallback == "simulator-first")
        return build_tool_loop_graph(agent, env, user or self.tool_user(), StoreStepSink(self.writer),
                                     checkpointer=checkpointer)

    def tool_user(self, paraphrase: bool = True) -> SimulatedToolUser:
        """The simulated user (its question match is also what a live ask step stores);
        ``paraphrase``: the user role words the clarification when ``ntb.user = "llm"``."""
        cfg = self.config
        embedder = self.embedder()
        return SimulatedToolUser(embedder, cfg.ntb.threshold, scoring.embedder_id(embedder),
                                 self.runtime.client("user") if paraphrase and cfg.ntb.user == "llm" else None,
                                 cfg.ntb.ask_match)

    def embedder(self):
        """The configured ``ntb.embedding_model``'s embedder (texts -> vectors)."""
        from harness.models.embeddings import embedder_for
        return embedder_for(self.config.ntb.embedding_model)

    async def run(self, run_id: str) -> Progress:
        """Play and score every case of the run not yet completed (resuming from its stored
        steps), ``run.concurrency`` at a time, and set the run's status; returns the progress."""
        self.writer.set_run_status(run_id, "running")
        rows = self.reader.interactions(run_id)
        todo = [r for r in rows if r["status"] != "completed"]
        progress = Progress(total=len(rows), done=len(rows) - len(todo))
        if not todo:  # killed after its last case: no client (nor engine) is started
            return await finish_run(self.writer, run_id, progress, self.on_progress)
        cases = {case_key(c): c for c in load_cases()}
        graph = self.graph()
        run = self.reader.run(run_id)
        self.on_progress(progress)
        return await run_all(self.writer, run_id, todo, self.config.run.concurrency, progress,
                             lambda row: self._case(run, row, cases[row["task_id"]], graph, progress),
                             self.config.retry)

    async def _case(self, run: dict, row: dict, case: Case, graph, progress: Progress) -> None:
        iid, cfg = row["id"], self.config
        self.writer.update_interaction(iid, status="running", error=None)
        try:
            stored = self.reader.turns(iid)
            steps = [json.loads(t["extra_json"]) for t in stored]
            stop = ("answered" if steps and steps[-1]["type"] == "answer"
                    else "max_steps" if len(steps) >= cfg.ntb.max_steps else None)
            if stop is None:
                model_calls = self._model_calls(iid)
                trial = row.get("trial") or 1  # trial 1 samples with the roles' own seeds
                with trial_seeds(json.loads(row.get("script_json") or "{}").get("seeds") if trial > 1 else None):
                    final = await graph.ainvoke(
                        tool_loop_state(iid, case, steps, model_calls, cfg.ntb.max_steps, cfg.ntb.max_model_calls),
                        {"recursion_limit": 3 * cfg.ntb.max_steps + 10})
                stop, steps = final["stop_reason"], final["steps"]
            figures = await self.case_figures(case, steps, trial=row.get("trial") or 1)
            self.writer.finish_interaction(iid, "completed", stop, len(steps), run_id=run["id"],
                                           scores=[score_row(iid, figures)])
        except Exception as exc:  # the case fails; the batch goes on and can resume it
            record_failure(self.writer, self.reader, iid, exc, progress, self.on_progress)
            return
        progress.done += 1
        progress.turns += len(steps)
        self.on_progress(progress)

    def _model_calls(self, iid: str) -> int:
        """Agent calls that returned (failed attempts are stored too, but the loop counts calls)."""
        return sum(1 for c in self.reader.llm_calls(iid) if c["role"] == "agent" and c["error"] is None)

    async def case_figures(self, case: Case, steps: list[dict], trial: int = 1) -> dict[str, Any]:
        """A case's stored figures: :meth:`score` plus the agent variant, the protocol, the case
        and the trial (a live session is trial 1 of its case)."""
        return {**await self.score(case, steps), "agent_variant": self.config.ntb.agent_variant,
                "protocol": self.protocol(), "task_id": case_key(case), "trial": trial}

    async def score(self, case: Case, steps: list[dict]) -> dict[str, Any]:
        """:func:`harness.ntb.scoring.score_case` of the steps with the configured settings and judge."""
        judge = self.runtime.structured_judge("judge")
        ntb = self.config.ntb
        return await scoring.score_case(case, steps, embedder=self.embedder(), threshold=ntb.threshold,
                                        a2_method=ntb.a2_method, judge=judge, ask_match=ntb.ask_match)


def problem_row(case: Case) -> dict[str, Any]:
    """The ``problems`` row of a case (shared by every run that plays it)."""
    return {"id": f"{DATASET}:{case_key(case)}", "dataset": DATASET, "task_id": case_key(case),
            "question": case.query, "reference_answer": None,
            "metadata_json": json.dumps({"category": case.category, "query_id": case.query_id})}


def score_row(interaction_id: str, figures: dict[str, Any]) -> dict[str, Any]:
    """The ``scores`` row of a case's figures: scorer, versions, the A2 method as ``formula``, the
    scoring settings as ``weights_json`` and the figures themselves as ``figures_json``."""
    return {"interaction_id": interaction_id, "scorer": "noisytoolbench",
            "scorer_version": figures.get("scorer_version"), "formula": figures.get("a2_method"),
            "weights_json": json.dumps({"threshold": figures.get("threshold"),
                                        "embedding_model": figures.get("embedding_model"),
                                        "ask_match": figures.get("ask_match"),
                                        "agent_variant": figures.get("agent_variant")}),
            "judge_model": figures.get("judge_model"), "complexity_model": None,
            "prompt_version": figures.get("prompt_version"), "figures_json": json.dumps(figures, default=str)}


def scoring_data_sha() -> str:
    """The run's data hash: :func:`harness.ntb.cases.data_sha256` of the shipped NoisyToolBench files."""
    from harness.ntb.cases import data_sha256
    return data_sha256()


async def arun_ntb(runtime: Runtime, resume: str | None = None,
                   on_progress: ProgressFn | None = None) -> tuple[str, Progress]:
    """Create a run of the configured cases, or resume run ``resume``, and play it to the end.

    Returns:
        ``(run_id, progress)``.
    """
    config = runtime.config
    writer, reader = StoreWriter(config.store), StoreReader(config.store, must_exist=False)
    try:
        batch = NtbBatch(runtime, writer, reader, on_progress)
        run_id = reader.run(resume)["id"] if resume else batch.create_run(selected_cases(config))
        return run_id, await batch.run(run_id)
    finally:
        writer.close()
