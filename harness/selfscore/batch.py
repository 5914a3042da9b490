"""A SelfScore batch: many interactions run concurrently through the turn loop, resumable.
Every interaction of a run is created in the store before any conversation starts, so
``--resume RUN`` needs nothing but the store: it finishes unfinished interactions from their
last stored turn and never redoes or duplicates a stored turn.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Sequence

from graphs.protocols import AGENT_FAILURE_STOPS, Judgment, LLMCall, Message, Problem, Reply, end_conversation
from graphs.selfscore import initial_state, recursion_limit
from harness.config import TEAM_AGENTS, Config
from harness.defence.manipulation import turn_record
from harness.models.seeds import seeds_of_trial, trial_seeds
from harness.models.traffic import yielding
from harness.selfscore import prompts
from harness.selfscore.figures import interaction_figures, score_row
from harness.selfscore.judges import judge_complexity
from harness.selfscore.judgment_rows import judgment_row
from harness.selfscore.preprocess import preprocessed_text
from harness.selfscore.runs import Progress, ProgressFn, call_rows, finish_run, new_run, record_failure, run_all
from harness.selfscore.scoring import SCORER_VERSION
from harness.tasks.datasets import Dataset, task_solution
from store import StoreReader, StoreWriter

if TYPE_CHECKING:  # the composition root builds the runtime and passes it in
    from harness.compose import Runtime


class StoreTurnSink:
    """Implements ``graphs.protocols.TurnSink`` over the store's writer."""

    def __init__(self, writer: StoreWriter):
        self.writer = writer

    def save_turn(self, interaction_id: str, turn_index: int, user: Reply, agent: Reply,
                  judgments: Sequence[Judgment], quality: float | None, cost: float,
                  latency_ms: float) -> None:
        """Commit one turn in one transaction: its turn row (scores, the agent's tokens, what the
        manipulation rules found in each message), its judgment rows and an ``llm_calls`` row per attempt."""
        by_kind = {j.kind: j for j in judgments}

        def score(kind):
            j = by_kind.get(kind)
            return j.value if j is not None and j.ok else None

        solved = score("solved")
        agent_calls = [c for c in agent.calls if c.role == "agent"]
        reported = all(c.usage_reported for c in agent_calls)  # an external agent may report none
        calls = [*user.calls, *agent.calls, *(c for j in judgments for c in j.calls)]
        extra = {k: v for k, v in (("user", user.extra), ("agent", agent.extra)) if v}
        # what the manipulation rules found in each message (the judges saw it neutralised
        # when the defence was on; the messages themselves are stored as written)
        extra["manipulation"] = turn_record(user.text, agent.text)
        self.writer.save_turn(
            {"interaction_id": interaction_id, "turn_index": turn_index,
             "user_message": user.text, "agent_message": agent.text,
             "user_helpfulness": score("user_helpfulness"),
             "agent_helpfulness": score("agent_helpfulness"),
             "solved": None if solved is None else int(solved), "quality": quality,
             "input_tokens": sum(c.input_tokens for c in agent_calls) if reported else None,
             "output_tokens": sum(c.output_tokens for c in agent_calls) if reported else None,
             "cost": cost, "latency_ms": latency_ms,
             "extra_json": json.dumps(extra)},
            [judgment_row(j, interaction_id, turn_index) for j in judgments],
            call_rows(calls, interaction_id, turn_index),
        )


def agent_error_text(failure) -> str | None:
    """The ``error`` an agent_error interaction stores: the failure's message, then its detail
    (kind, status, body excerpt, turn, the user's unanswered message) as JSON."""
    if failure is None:
        return None
    return json.dumps(failure.detail, ensure_ascii=False, default=str)


def failed_turn_calls(final: dict, interaction_id: str) -> list[dict]:
    """The ``llm_calls`` rows of a turn the agent failed: its failed attempts and the calls of the
    judgments already made of the user's message (the turn itself is not stored)."""
    failure = final.get("agent_failure")
    if failure is None:
        return []
    turn = final.get("turn_index")
    calls = [*(final.get("user_reply").calls if final.get("user_reply") else []), *failure.calls,
             *(c for j in final.get("judgments") or [] for c in j.calls)]
    return call_rows(calls, interaction_id, turn)


def failed_by_agent(row: dict) -> bool:
    """Whether a finished interaction ended because the agent under test failed a turn (a stop
    reason of ``AGENT_FAILURE_STOPS`` with the failure stored): a resume runs it again."""
    stop = row.get("stop_reason")
    return stop == "agent_error" or (stop in AGENT_FAILURE_STOPS and bool(row.get("error")))


def history_from_turns(turns: Sequence[dict]) -> list[Message]:
    """The conversation of stored turn rows, as the turn loop's history (for a resume)."""
    return [m for t in turns for m in (Message("user", t["user_message"]),
                                       Message("agent", t["agent_message"]))]


class SelfScoreBatch:
    """Creates, runs and resumes SelfScore runs in one store."""

    def __init__(self, runtime: Runtime, writer: StoreWriter, reader: StoreReader,
                 on_progress: ProgressFn | None = None):
        self.runtime = runtime
        self.config: Config = runtime.config
        self.writer = writer
        self.reader = reader
        self.on_progress = on_progress or (lambda p: None)

    # -- creating a run ------------------------------------------------------------------------
    def create_run(self, dataset: Dataset, kind: str | None = None,
                   agent_calls: dict[str, list[dict]] | None = None,
                   source_run: str | None = None) -> str:
        """Store the run, its problems and one pending interaction per selected task.

        Each interaction keeps its own scripts (the task's ``followups`` and ``agent_replies``,
        and for a replay the original agent calls), so a resume needs nothing but the store.
        """
        cfg = self.config
        self.runtime.check_models()
        kind = kind or ("human_baseline" if cfg.run.agent == "human" else "selfscore")
        tasks = dataset.tasks[cfg.run.offset: cfg.run.offset + cfg.run.limit]
        if not tasks:
            raise ValueError(f"Dataset {dataset.name} has {len(dataset.tasks)} tasks; offset "
                             f"{cfg.run.offset} selects none. Lower --offset.")
        if cfg.run.agent == "human":
            missing = [t.id for t in tasks if not t.agent_replies]
            if missing:
                raise ValueError(f"--agent human replays each task's 'agent_replies', but "
                                 f"{len(missing)} task(s) have none (first: {missing[0]}). Import "
                                 "human threads with `deskbench import` or use another agent.")
        problems = [{"id": f"{dataset.name}:{t.id}", "dataset": dataset.name, "task_id": t.id,
                     "question": t.question, "reference_answer": t.reference_answer,
                     "metadata_json": json.dumps({**t.metadata, "problem": t.problem, "facts": t.facts})}
                    for t in tasks]

        trials = cfg.run.trials

        def interactions(run_id: str) -> list[dict]:
            rows = []
            for t in tasks:
                persona = (t.persona or cfg.run.persona) if cfg.run.user == "llm" else None
                for trial in range(1, trials + 1):
                    rows.append({
                        "id": trial_interaction_id(run_id, t.id, trial, trials), "run_id": run_id,
                        "problem_id": f"{dataset.name}:{t.id}", "position": len(rows),
                        "status": "pending", "trial": trial, "persona": persona,
                        "script_json": json.dumps({
                            "followups": t.followups, "agent_replies": t.agent_replies,
                            "agent_calls": (agent_calls or {}).get(t.id, []), "persona": persona,
                            "seeds": seeds_of_trial(cfg.run.seed, sampled_roles(cfg), t.id, trial)})})
            return rows
        return new_run(self.writer, cfg, cfg.run.name or run_name(cfg), kind, dataset.name,
                       dataset.sha256, prompts.PROMPT_VERSION, SCORER_VERSION, source_run,
                       problems=problems, interactions=interactions,
                       profile=self.runtime.profile_record())

    # -- running -------------------------------------------------------------------------------
    async def run(self, run_id: str) -> Progress:
        """Run (or resume) every interaction of ``run_id`` that is not completed."""
        self.writer.set_run_status(run_id, "running")
        rows = self.reader.interactions(run_id)
        # a conversation the agent failed is finished but not done: a resume gives the agent its turn again
        todo = [r for r in rows if r["status"] != "completed" or failed_by_agent(r)]
        progress = Progress(total=len(rows), done=len(rows) - len(todo))
        for r in rows:
            if r["status"] == "completed" and r not in todo:
                progress.turns += r["n_turns"] or 0
        if not todo:  # killed after its last conversation: no client (nor engine) is started
            return await finish_run(self.writer, run_id, progress, self.on_progress)
        scripts = {r["id"]: json.loads(r["script_json"] or "{}") for r in rows}
        agent = self.runtime.agent({i: s.get("agent_replies", []) for i, s in scripts.items()},
                                   {i: [LLMCall(**c) for c in s.get("agent_calls", [])] for i, s in scripts.items()},
                                   {i: s["agent_traces"] for i, s in scripts.items() if s.get("agent_traces")})
        graph = self.runtime.selfscore_graph(
            self.runtime.user({i: s.get("followups", []) for i, s in scripts.items()},
                              {i: s["opening"] for i, s in scripts.items() if s.get("opening")}),
            agent, StoreTurnSink(self.writer))
        self._agent = agent
        run = self.reader.run(run_id)
        self.on_progress(progress)
        with yielding(getattr(self.runtime, "yields_to_agent", False)):  # a call's agent goes first
            return await run_all(self.writer, run_id, todo, self.config.run.concurrency, progress,
                                 lambda row: self._interaction(run, row, graph, progress),
                                 self.config.retry)

    async def _interaction(self, run: dict, row: dict, graph, progress: Progress) -> None:
        iid = row["id"]
        self.writer.update_interaction(iid, status="running", error=None)
        try:
            problem = await prepare_problem(self.runtime, self.reader, self.writer, row)
            turns = self.reader.turns(iid)
            stop, final = self._stop_reason_of_stored(turns), {}
            if stop is None:
                history = history_from_turns(turns)
                state = initial_state(problem, history, len(turns) + 1, self.config.run.max_turns)
                # trial 1 samples with the roles' own seeds; a later trial with its stored ones
                seeds = json.loads(row.get("script_json") or "{}").get("seeds") \
                    if (row.get("trial") or 1) > 1 else None
                try:
                    with trial_seeds(seeds):
                        final = await graph.ainvoke(
                            state, {"recursion_limit": recursion_limit(self.config.run.max_turns)})
                finally:  # a voice bot's call hangs up, whatever ended the conversation
                    await end_conversation(self._agent, problem, final.get("stop_reason"))
                stop = final["stop_reason"]
            failure = final.get("agent_failure") if stop in AGENT_FAILURE_STOPS else None
            figures = interaction_figures(self.reader, {**row, "stop_reason": stop}, run["config"])
            self.writer.finish_interaction(iid, "completed", stop, figures["turns"],
                                           error=agent_error_text(failure), calls=failed_turn_calls(final, iid),
                                           run_id=run["id"], scores=[score_row(figures, run)])
        except Exception as exc:  # the interaction fails; the batch goes on and can resume it
            record_failure(self.writer, self.reader, iid, exc, progress, self.on_progress)
            return
        progress.done += 1
        progress.agent_errors += int(stop in AGENT_FAILURE_STOPS and failure is not None)
        progress.turns += figures["turns"]
        progress.solved += int(bool(figures["solved"]))
        if figures["final_score"] is not None:
            progress.finals.append(figures["final_score"])
        self.on_progress(progress)

    def _stop_reason_of_stored(self, turns: list[dict]) -> str | None:
        if turns and turns[-1]["solved"] and self.config.run.stop_on_solved:
            return "solved"
        if len(turns) >= self.config.run.max_turns:
            return "max_turns"
        return None


def thread_solution(row: dict) -> str | None:
    """The solution of an interaction row's thread (:func:`harness.tasks.datasets.task_solution`):
    the task's reference answer, else the helpers' messages the human baseline replays."""
    return task_solution(row.get("reference_answer"),
                         json.loads(row.get("script_json") or "{}").get("agent_replies") or [])


async def prepare_problem(runtime: Runtime, reader: StoreReader, writer: StoreWriter,
                          row: dict) -> Problem:
    """Summary, extracted problem (cached per problem) and complexity (once per interaction)
    of an interaction row joined with its problem (``StoreReader.interactions``).

    The underlying problem comes, as in the paper, from the thread's solution
    (:func:`thread_solution`); from the question only when the thread has none; a task's own
    ``problem`` wins over both, and a replay's (``harness.selfscore.rejudge``) over all. Which source was
    used is stored as ``problem_source``.
    """
    iid, pid = row["id"], row["problem_id"]
    meta = json.loads(row["metadata_json"] or "{}")
    script = json.loads(row.get("script_json") or "{}")
    extractor = runtime.client("extractor")
    guard = runtime.profile.value("preprocessing_guard")
    summary, calls = await preprocessed_text("summary", pid, row["question"], extractor,
                                             reader, writer, guard=guard)
    solution = thread_solution(row)
    if script.get("problem_statement"):  # a replay keeps the statement its source was judged on
        statement, source = script["problem_statement"], script.get("problem_source") or "task"
    else:
        statement, source = meta.get("problem"), "task"
    if not statement:
        source = "solution" if solution else "question"
        statement, more = await preprocessed_text("problem", pid, row["question"], extractor,
                                                  reader, writer, solution=solution, guard=guard)
        calls += more
    writer.update_interaction(iid, summary=summary, problem_statement=statement,
                              problem_source=source)
    if reader.complexity(iid) is None:
        judgment = await judge_complexity(runtime.structured_judge("complexity"), summary)
        writer.save_judgments([judgment_row(judgment, iid, None)],
                              call_rows(calls + judgment.calls, iid, None))
    elif calls:
        writer.save_judgments([], call_rows(calls, iid, None))
    return Problem(iid, row["question"], summary, statement, row.get("reference_answer"),
                   solution=solution, problem_source=source,
                   fix_known=bool((row.get("reference_answer") or "").strip()),
                   facts=tuple(f for f in meta.get("facts") or () if isinstance(f, str)),
                   persona=row.get("persona") or script.get("persona") or "cooperative",
                   context={"run_id": row.get("run_id"), "task_id": row.get("task_id"),
                            "trial": row.get("trial") or 1})


async def arun_selfscore(runtime: Runtime, dataset: Dataset | None = None, resume: str | None = None,
                         on_progress: ProgressFn | None = None) -> tuple[str, Progress]:
    """Create and run a SelfScore batch (or resume ``resume``) on ``runtime``'s models."""
    config = runtime.config
    writer, reader = StoreWriter(config.store), StoreReader(config.store, must_exist=False)
    try:
        batch = SelfScoreBatch(runtime, writer, reader, on_progress)
        run_id = reader.run(resume)["id"] if resume else batch.create_run(dataset)
        return run_id, await batch.run(run_id)
    finally:
        writer.close()


def trial_interaction_id(run_id: str, task_id: str, trial: int, trials: int) -> str:
    """``<run id>:<task id>`` in a one-trial run (as before trials), else with ``:trial<k>``."""
    return f"{run_id}:{task_id}" if trials == 1 else f"{run_id}:{task_id}:trial{trial}"


def sampled_roles(config: Config) -> dict[str, tuple[float, int | None]]:
    """The conversation's roles with their (temperature, seed): the roles a trial reseeds."""
    return {r: (config.role(r).temperature, config.role(r).seed) for r in ("agent", "user", "judge",
                                                                         "complexity", "extractor")}


def run_name(config: Config, agent_label: str | None = None) -> str:
    """The paper's ``<agent model>_<complexity model>_<judge model>`` (``human_...`` for a
    human baseline)."""
    if agent_label is None and config.run.agent in TEAM_AGENTS:
        agent_label = config.agent.label(config.run.agent)
    agent = agent_label or ("human" if config.run.agent == "human" else config.role("agent").label()
                            + ("+rag" if config.run.agent == "rag" else ""))
    return "_".join([agent, config.role("complexity").label(), config.role("judge").label()])
