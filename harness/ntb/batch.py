"""A NoisyToolBench batch: the 200 cases (or a selection) through the tool loop, resumable,
every step stored as it happens, every case scored from its stored steps."""
from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from graphs.protocols import AgentFailure
from graphs.toolloop import Outcome, build_tool_loop_graph, tool_loop_state
from harness.config import EXTERNAL_AGENTS, Config, NtbConfig
from harness.models.seeds import seeds_of_trial, trial_seeds
from harness.ntb import scoring
from harness.ntb.agent import PROTOCOL_VERSIONS, NativeToolAgent, TextProtocolAgent
from harness.ntb.apienv import ApiEnvironment
from harness.ntb.cases import Case, case_key, load_cases
from harness.ntb.external_agent import EXTERNAL_PROTOCOL_VERSION, ExternalToolAgent, check_ntb_adapter, conversation
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
        reported = all(c.usage_reported for c in agent_calls)  # an agent under test may report none
        self.writer.save_turn(
            {"interaction_id": interaction_id, "turn_index": index, "user_message": came_back,
             "agent_message": action,
             "input_tokens": sum(c.input_tokens for c in agent_calls) if reported else None,
             "output_tokens": sum(c.output_tokens for c in agent_calls) if reported else None,
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

    @property
    def external(self) -> bool:
        """Whether the agent under test is the team's own (``run.agent`` an external adapter)."""
        return self.config.run.agent in EXTERNAL_AGENTS

    def protocol(self) -> str:
        """``ntb.protocol``, with ``auto`` resolved: ``text`` for an embedded agent, else ``native``;
        ``external`` for the team's own agent (the contract with tools, docs/agents.md)."""
        if self.external:
            return "external"
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
        if self.external:
            check_ntb_adapter(cfg.run.agent)
        self.runtime.check_models(self.roles_used())  # builds and reaches an external agent
        if self.external:
            self.tool_agent()  # an adapter that cannot play (a compiled graph) fails before anything is stored
        name = cfg.run.name or self.default_name()
        problems = [problem_row(c) for c in cases]
        return new_run(self.writer, cfg, name, "noisytoolbench", DATASET, scoring_data_sha(),
                       self.prompt_version(), scoring.SCORER_VERSION, problems=problems,
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

    def prompt_version(self) -> str:
        """The run's prompt version: the agent variant's, or the external protocol's."""
        return EXTERNAL_PROTOCOL_VERSION if self.external else PROTOCOL_VERSIONS[self.config.ntb.agent_variant]

    def default_name(self) -> str:
        """``<agent>[+variant]_ntb_<judge>``; the team's agent by its name (``agent.label``)."""
        cfg = self.config
        if self.external:
            return f"{cfg.agent.label(cfg.run.agent)}_ntb_{cfg.role('judge').label()}"
        variant = "" if cfg.ntb.agent_variant == "current" else f"+{cfg.ntb.agent_variant}"
        return f"{cfg.role('agent').label()}{variant}_ntb_{cfg.role('judge').label()}"

    def roles_used(self) -> list[str]:
        """The roles this run calls: agent (not when the team's own agent plays), judge, and user /
        api_simulator when configured."""
        ntb = self.config.ntb
        return [*([] if self.external else ["agent"]), "judge", *(["user"] if ntb.user == "llm" else []),
                *(["api_simulator"] if ntb.api_simulator else [])]

    def graph(self, user=None, checkpointer=None):
        """The tool loop over the configured agent and API environment; ``user`` defaults to
        :meth:`tool_user` (a live session passes a person, with a ``checkpointer``)."""
        cfg = self.config
        agent = self.tool_agent()
        env = CaseEnvironment(self.runtime.client("api_simulator") if cfg.ntb.api_simulator else None,
                              simulator_first=cfg.ntb.api_fallback == "simulator-first")
        return build_tool_loop_graph(agent, env, user or self.tool_user(), StoreStepSink(self.writer),
                                     checkpointer=checkpointer)

    def tool_agent(self):
        """The tool loop's agent: the team's own (:class:`ExternalToolAgent`), or the built-in one
        of ``ntb.protocol`` and ``ntb.agent_variant`` on the agent role.

        Raises:
            ConfigError: the team's agent cannot be built, reached, or play NoisyToolBench."""
        cfg = self.config
        if self.external:
            return ExternalToolAgent(self.runtime.external_agent)
        agent_client, variant = self.runtime.client("agent"), cfg.ntb.agent_variant
        return (TextProtocolAgent(agent_client, cfg.run.judge_retries, variant) if self.protocol() == "text"
                else NativeToolAgent(agent_client, variant))

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
        # a case the agent under test failed (agent_error) is finished but not done: a resume
        # gives the agent its step again
        todo = [r for r in rows if r["status"] != "completed" or r.get("stop_reason") == "agent_error"]
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
        iid = row["id"]
        self.writer.update_interaction(iid, status="running", error=None)
        failure: AgentFailure | None = None
        try:
            try:
                stop, steps = await self._play(run, row, case, graph)
            except AgentFailure as exc:  # the agent under test's result, not a crash: the case ends here
                failure, stop, steps = exc, "agent_error", self._stored_steps(iid)
            scores = []
            if steps:  # a case the agent failed before its first step has nothing to score
                figures = await self.case_figures(case, steps, trial=row.get("trial") or 1)
                if failure is not None:
                    figures.update(stop_reason="agent_error", agent_error=str(failure))
                scores = [score_row(iid, figures)]
            self.writer.finish_interaction(
                iid, "completed", stop, len(steps), run_id=run["id"], scores=scores,
                error=None if failure is None else json.dumps(failure.detail, ensure_ascii=False, default=str),
                calls=[] if failure is None else call_rows(failure.calls, iid, len(steps) + 1))
        except Exception as exc:  # the case fails; the batch goes on and can resume it
            record_failure(self.writer, self.reader, iid, exc, progress, self.on_progress)
            return
        progress.done += 1
        progress.agent_errors += int(failure is not None)
        progress.turns += len(steps)
        self.on_progress(progress)

    def _stored_steps(self, iid: str) -> list[dict]:
        return [json.loads(t["extra_json"]) for t in self.reader.turns(iid)]

    async def _play(self, run: dict, row: dict, case: Case, graph) -> tuple[str, list[dict]]:
        """Play the case on from its stored steps; its stop reason and steps.

        Raises:
            AgentFailure: the agent under test failed a step (the steps before it are stored)."""
        iid, cfg = row["id"], self.config
        steps = self._stored_steps(iid)
        stop = ("answered" if steps and steps[-1]["type"] == "answer"
                else "max_steps" if len(steps) >= cfg.ntb.max_steps else None)
        if stop is not None:
            return stop, steps
        model_calls = self._model_calls(iid)
        trial = row.get("trial") or 1  # trial 1 samples with the roles' own seeds
        with trial_seeds(json.loads(row.get("script_json") or "{}").get("seeds") if trial > 1 else None), \
                conversation(iid, run["id"], trial):
            final = await graph.ainvoke(
                tool_loop_state(iid, case, steps, model_calls, cfg.ntb.max_steps, cfg.ntb.max_model_calls),
                {"recursion_limit": 3 * cfg.ntb.max_steps + 10})
        return final["stop_reason"], final["steps"]

    def _model_calls(self, iid: str) -> int:
        """Agent calls that returned (failed attempts are stored too, but the loop counts calls)."""
        return sum(1 for c in self.reader.llm_calls(iid) if c["role"] == "agent" and c["error"] is None)

    async def case_figures(self, case: Case, steps: list[dict], trial: int = 1) -> dict[str, Any]:
        """A case's stored figures: :meth:`score` plus the agent variant (``external:<adapter>``
        for the team's agent), the protocol, the case and the trial (a live session is trial 1 of
        its case)."""
        cfg = self.config
        variant = f"external:{cfg.run.agent}" if self.external else cfg.ntb.agent_variant
        return {**await self.score(case, steps), "agent_variant": variant,
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
        if "external_agent" in vars(runtime):  # the team's agent was built: close its connections
            from harness.adapters import close_agent
            await close_agent(runtime.external_agent)
