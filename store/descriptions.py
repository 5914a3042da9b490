"""What every table and column of the store means, the queries people ask of it, and the facets
worth clicking: data for the Datasette browser (``deskbench browse``) and for docs/store.md.

``tests/test_store_browse.py`` checks that every table and column of :mod:`store.schema` is
described here and that every canned query runs on an empty store.
"""
from __future__ import annotations

TABLES: dict[str, dict] = {
    "meta": dict(
        title="Store metadata",
        description="Key-value facts about this file; schema_version is the store schema it was written with.",
        columns={"key": "Name of the fact (schema_version).", "value": "Its value, as text."},
    ),
    "runs": dict(
        title="Runs",
        description="One row per batch run, live-app run or imported transcript set: what was run, "
                    "with which models, prompts, scorer and method profile.",
        facets=["kind", "status", "prompt_version", "scorer_version"],
        sort_desc="created_at",
        columns={
            "id": "Run id (used by every deskbench command that takes RUN).",
            "name": "Name given with --name, if any.",
            "kind": "selfscore, ntb, live, import, ...: which benchmark or source made the run.",
            "status": "running, completed or interrupted (a resumable run).",
            "created_at": "When the run started (UTC, ISO 8601).",
            "finished_at": "When it finished (empty while running).",
            "config_json": "The whole effective configuration the run used (JSON).",
            "models_json": "The model of each role: agent, user, judge, complexity, extractor (JSON); for an agent under test its name and adapter, e.g. supportbot (http).",
            "dataset": "The task set it drew problems from (a path or a bundled name).",
            "dataset_sha256": "SHA-256 of the task set's file, so a run can be tied to its data.",
            "seed": "The run's random seed (sampled roles and problem order).",
            "code_version": "deskbench version and git commit that ran it.",
            "prompt_version": "Version of the judge prompts (selfscore-pN).",
            "scorer_version": "Version of the SelfScore scorer that computed the figures.",
            "stop_detail": "Why the run stopped early (an endpoint's breaker, Ctrl-C), if it did.",
            "source_run": "For a rejudged or rescored run: the run its conversations came from.",
            "profile_json": "The method profile (auto, paper, embedded) and every aid's value, source and version (JSON).",
        },
    ),
    "problems": dict(
        title="Problems",
        description="The tasks conversations are about, one row per task of a task set.",
        facets=["dataset"],
        columns={
            "id": "Problem id (dataset and task id).",
            "dataset": "The task set the problem belongs to.",
            "task_id": "The task's id inside its task set (the same task across runs).",
            "question": "The user's question or opening message as the task states it.",
            "reference_answer": "The known solution or accepted answer, when the task set has one.",
            "metadata_json": "Everything else the task set gives: source, licence, tags, expected calls (JSON).",
        },
    ),
    "preprocessing": dict(
        title="Preprocessing cache",
        description="The extractor's outputs (underlying problem, solution summary) cached per "
                    "problem, model and prompt version, shared by every run that uses them.",
        facets=["kind", "model", "prompt_version"],
        columns={
            "problem_id": "The problem it was extracted from.",
            "kind": "What was extracted (problem, summary).",
            "model": "The extractor model.",
            "prompt_version": "The extractor prompt's version.",
            "text": "The extracted text the user simulator and judges read.",
            "raw": "The model's raw answer before parsing.",
            "created_at": "When it was extracted (UTC).",
        },
    ),
    "interactions": dict(
        title="Conversations",
        description="One row per conversation: a problem played in a run, how it ended and why.",
        facets=["run_id", "status", "stop_reason", "problem_source", "trial", "persona"],
        columns={
            "id": "Conversation id: run id, a colon and the task id (and ':trial<k>' in a run of several trials).",
            "run_id": "The run it belongs to.",
            "problem_id": "The problem it is about.",
            "position": "Its place in the run's order.",
            "status": "running, completed, failed or abandoned (a live session left unfinished).",
            "stop_reason": "Why it ended: solved, max_turns, user_ended, agent_ended (the agent said "
                           "end), agent_error (the agent under test failed a turn for good), error ...",
            "summary": "The extractor's summary of the known solution the user simulator steers by.",
            "problem_statement": "The underlying problem the user simulator has in mind.",
            "n_turns": "How many turns it took.",
            "problem_source": "What the underlying problem was extracted from (solution, question, facts, task ...).",
            "started_at": "When it started (UTC).",
            "finished_at": "When it ended (UTC).",
            "error": "The error that failed it, if it failed (a resume retries it); for stop reason "
                     "agent_error, the agent under test's failure as JSON: adapter, agent, kind (timeout, "
                     "server_error, malformed ...), HTTP status, body excerpt, turn, attempts, the user's "
                     "unanswered message.",
            "script_json": "A scripted user's messages, when the user was scripted, and the trial's "
                           "seeds per sampled role and the persona (JSON).",
            "trial": "Which trial of its task it is (1 to the run's trials; 1 in a one-trial run).",
            "persona": "The simulated user's behaviour: cooperative, vague, impatient, mistaken, "
                       "tangential (empty where no simulated user played).",
        },
    ),
    "turns": dict(
        title="Turns",
        description="One row per turn: the user's message, the agent's reply, both helpfulness "
                    "scores (1-10), the solved verdict and the turn's cost, stored as it happens.",
        facets=["solved", "agent_helpfulness", "user_helpfulness"],
        columns={
            "id": "Row id.",
            "interaction_id": "The conversation the turn belongs to.",
            "turn_index": "Turn number, from 1.",
            "user_message": "What the user said (for voice: what the agent heard).",
            "agent_message": "What the agent replied (for voice: what the caller heard).",
            "user_helpfulness": "The judge's user-helpfulness score, 1-10, after any aid (judgments.judge_score keeps the judge's own).",
            "agent_helpfulness": "The judge's agent-helpfulness score, 1-10, after any aid.",
            "solved": "1 when the solved-check found the problem solved at this turn, 0 when not.",
            "quality": "SelfScore's running quality after this turn.",
            "input_tokens": "The agent's prompt tokens of the turn (empty: an agent under test that "
                            "reported no usage, never 0).",
            "output_tokens": "The agent's generated tokens of the turn (empty: not reported).",
            "cost": "The turn's cost in the configured currency (0 on the embedded model; empty: the "
                    "agent under test reported no usage).",
            "latency_ms": "The agent's reply time in milliseconds.",
            "created_at": "When the turn was stored (UTC).",
            "extra_json": "Tool calls, voice measures, manipulation flags and anything else a benchmark keeps "
                          "(JSON); agent: for a team's own agent its adapter, name, messages, n_messages, end, "
                          "usage (or \"not reported\"), trace (tool_calls, retrieved), latency_ms, ttft_ms, attempts.",
        },
    ),
    "judgments": dict(
        title="Judgments",
        description="Every judgment of every turn, by an LLM judge or a person: the score, the "
                    "judge's own answer before any aid, the reason and the raw answer.",
        facets=["kind", "status", "model", "prompt_version", "profile"],
        columns={
            "id": "Row id.",
            "interaction_id": "The conversation judged.",
            "turn_index": "The turn judged (empty for a judgment of the whole problem, e.g. complexity).",
            "kind": "What was judged: user_helpfulness, agent_helpfulness, solved, complexity, human_*, ntb_* ...",
            "status": "ok, or failed (the judge's answer could not be read after every attempt).",
            "score": "The score used, after the profile's aids.",
            "parsed_json": "The parsed answer: dimensions, the solved-check's evidence, what each aid did (JSON).",
            "reason": "The judge's written reason.",
            "raw_json": "The judge's raw answers, one per attempt (JSON).",
            "attempts": "How many times the judge was asked before its answer could be read.",
            "error": "Why the judgment failed, if it did.",
            "model": "The judge model.",
            "prompt_version": "The judge prompt's version.",
            "created_at": "When it was judged (UTC).",
            "rater": "For a person's judgment: their pseudonym (empty for an LLM).",
            "judge_score": "The judge's own score before any aid moved it.",
            "profile": "The method profile it was judged under (paper, embedded).",
            "aids_json": "The aids that ran on it: version, rule ids that fired, whether it moved the score (JSON).",
        },
    ),
    "llm_calls": dict(
        title="Model calls",
        description="Every model call: role, purpose, tokens, latency, cost and retries.",
        facets=["role", "model", "purpose"],
        columns={
            "id": "Row id.",
            "interaction_id": "The conversation the call was made for.",
            "turn_index": "The turn it was made in.",
            "role": "The role that called: agent, user, judge, complexity, extractor.",
            "purpose": "What the call was for (agent:reply, judge:solved:q1 ...; agent:http, agent:python ...: "
                       "a request to a team's own agent through that adapter).",
            "model": "The model called (a team's own agent: its name).",
            "input_tokens": "Prompt tokens (empty: an agent under test that reported no usage).",
            "output_tokens": "Generated tokens (empty: not reported).",
            "latency_ms": "Time to the whole answer in milliseconds.",
            "cost": "The call's cost (0 on the embedded model; empty: not reported).",
            "error": "The endpoint's error, for a failed call.",
            "created_at": "When it was made (UTC).",
            "cached_tokens": "Of the prompt tokens, those the server reused from its prompt cache.",
            "ttft_ms": "Time to the first streamed token (empty: the call did not stream).",
            "attempt": "Attempt number (1: first try).",
            "retry_after_s": "The server's Retry-After, when it sent one.",
            "backoff_s": "The wait before the next attempt after this one failed.",
            "contended_ms": "Milliseconds of this call during which another request of this run was in flight "
                            "on the same endpoint (empty: not measured).",
            "yielded_ms": "Milliseconds this call waited for, or gave up to, the agent's requests on its "
                          "endpoint (voice.judging = yield); 0 when it never yielded.",
            "rate_wait_ms": "Milliseconds this attempt waited for a place under its endpoint's rate limits "
                            "(requests_per_minute, tokens_per_minute, max_in_flight) or while a 429 paused "
                            "the endpoint (empty: not measured).",
        },
    ),
    "studies": dict(
        title="Studies",
        description="Studies an organiser set up in the live app.",
        facets=["status"],
        columns={
            "id": "Study id (the code participants join with).",
            "name": "The study's name.",
            "status": "open or closed.",
            "created_at": "When it was set up (UTC).",
            "config_json": "Its settings: task set, agents, sessions per participant (JSON).",
        },
    ),
    "participants": dict(
        title="Participants",
        description="Pseudonymous participants of studies (no names or addresses are stored).",
        facets=["study_id"],
        columns={
            "id": "The participant's pseudonym.",
            "study_id": "The study joined.",
            "created_at": "When they joined (UTC).",
            "consented_at": "When they gave consent (UTC).",
        },
    ),
    "live_sessions": dict(
        title="Live sessions",
        description="One row per conversation a person held in the live app; its turns are ordinary turn rows.",
        facets=["study_id", "mode", "agent", "status"],
        columns={
            "id": "Session id.",
            "study_id": "The study it belongs to (empty: a free session).",
            "participant_id": "The participant's pseudonym.",
            "run_id": "The run its conversation is stored under.",
            "interaction_id": "Its conversation (interactions.id).",
            "mode": "user (the person asks the agent) or agent (the person answers as the agent).",
            "agent": "The agent configuration: plain, rag, human, or a team's own agent's adapter (http, "
                     "python, openai, langgraph, a2a).",
            "task_id": "The drawn task, if one was drawn.",
            "status": "active, ended or abandoned.",
            "created_at": "When it started (UTC).",
            "ended_at": "When it ended (UTC).",
        },
    ),
    "scores": dict(
        title="Scores",
        description="SelfScore and NoisyToolBench figures per conversation, one row per scorer "
                    "version, formula and profile (a rescore adds rows, it never overwrites).",
        facets=["run_id", "scorer", "judge_model", "prompt_version", "profile", "formula"],
        columns={
            "id": "Row id.",
            "interaction_id": "The conversation scored.",
            "run_id": "Its run.",
            "scorer": "selfscore or ntb.",
            "scorer_version": "The scorer's version.",
            "formula": "The final-score formula (paper, ...).",
            "weights_json": "The complexity weights used (JSON).",
            "judge_model": "The helpfulness and solved judge.",
            "complexity_model": "The complexity judge.",
            "prompt_version": "The judge prompts' version.",
            "figures_json": "Every figure: complexity, helpfulness means, quality, final score, solved (JSON).",
            "created_at": "When it was computed (UTC).",
            "profile": "The profile the figures were computed on (paper, embedded, judge-only).",
            "aids_json": "Every aid's value and version for these figures (JSON).",
        },
    ),
}
"""Title, description, facets and column descriptions of every table."""

_LATEST_SCORE = ("(select figures_json from scores s where s.interaction_id = i.id "
                 "and s.scorer = 'selfscore' order by s.id desc limit 1)")

CANNED_QUERIES: dict[str, dict] = {
    "conversation": dict(
        title="A run's conversations, turn by turn",
        description="Every turn of a run with both helpfulness scores and the solved verdict. "
                    "Run ids: the runs table or `deskbench runs`.",
        sql="""select i.id as conversation, p.task_id, t.turn_index, t.user_message, t.agent_message,
       t.user_helpfulness, t.agent_helpfulness,
       case t.solved when 1 then 'solved' when 0 then 'not solved' end as solved,
       i.stop_reason
from turns t join interactions i on i.id = t.interaction_id
left join problems p on p.id = i.problem_id
where i.run_id = :run
order by i.position, t.turn_index""",
    ),
    "lowest_agent_turns": dict(
        title="The lowest-scored agent turns",
        description="Agent replies with the lowest agent helpfulness, with the judge's own score "
                    "and reason (leave run empty for every run).",
        sql="""select t.interaction_id as conversation, t.turn_index, t.agent_helpfulness,
       j.judge_score, j.reason, t.user_message, t.agent_message, i.run_id
from turns t join interactions i on i.id = t.interaction_id
left join judgments j on j.interaction_id = t.interaction_id and j.turn_index = t.turn_index
     and j.kind = 'agent_helpfulness'
where t.agent_helpfulness is not null and (:run = '' or i.run_id = :run)
order by t.agent_helpfulness, t.interaction_id, t.turn_index
limit 100""",
    ),
    "failed_judgments": dict(
        title="Judgments that failed",
        description="Judgments whose answer could not be read after every attempt, newest first.",
        sql="""select j.interaction_id as conversation, j.turn_index, j.kind, j.attempts, j.error,
       j.model, j.prompt_version, j.raw_json, j.created_at
from judgments j
where j.status != 'ok'
order by j.created_at desc""",
    ),
    "task_across_runs": dict(
        title="One task across runs",
        description="Every conversation about one task id, run by run: models, turns, how it ended "
                    "and its latest SelfScore figures.",
        sql=f"""select r.id as run, r.name, r.created_at, json_extract(r.models_json, '$.agent') as agent,
       json_extract(r.models_json, '$.judge') as judge, r.prompt_version,
       i.id as conversation, i.n_turns, i.stop_reason,
       json_extract({_LATEST_SCORE}, '$.final_score') as final_score,
       json_extract({_LATEST_SCORE}, '$.quality') as quality
from interactions i join runs r on r.id = i.run_id
join problems p on p.id = i.problem_id
where p.task_id = :task
order by r.created_at""",
    ),
    "study_sessions": dict(
        title="A study's live sessions",
        description="Every session people held in one study: participant, mode, agent, turns, "
                    "how it ended and the mean agent helpfulness the judge gave.",
        sql="""select ls.id as session, ls.participant_id, ls.mode, ls.agent, ls.task_id, ls.status,
       i.n_turns, i.stop_reason,
       (select round(avg(t.agent_helpfulness), 2) from turns t
        where t.interaction_id = ls.interaction_id) as mean_agent_helpfulness,
       ls.created_at, ls.ended_at, ls.interaction_id as conversation
from live_sessions ls left join interactions i on i.id = ls.interaction_id
where ls.study_id = :study
order by ls.created_at""",
    ),
    "agent_errors": dict(
        title="Agent errors",
        description="Conversations a team's own agent ended by failing a turn for good (stop reason "
                    "agent_error): the turn, the kind of failure, the HTTP status, the body excerpt and "
                    "the user's unanswered message (leave run empty for every run).",
        sql="""select i.run_id, i.id as conversation, p.task_id, i.n_turns,
       json_extract(i.error, '$.adapter') as adapter, json_extract(i.error, '$.agent') as agent,
       json_extract(i.error, '$.turn') as turn, json_extract(i.error, '$.kind') as kind,
       json_extract(i.error, '$.status') as status, json_extract(i.error, '$.attempts') as attempts,
       json_extract(i.error, '$.body') as body, json_extract(i.error, '$.user_message') as user_message,
       i.finished_at
from interactions i left join problems p on p.id = i.problem_id
where i.stop_reason = 'agent_error' and json_valid(i.error) and (:run = '' or i.run_id = :run)
order by i.finished_at desc""",
    ),
    "agent_tool_calls": dict(
        title="Agent tool calls per turn",
        description="Each turn a team's own agent answered: how many tools it called and which, the "
                    "passages it retrieved, its latency and whether it reported usage (its trace; leave "
                    "run empty for every run).",
        sql="""select t.interaction_id as conversation, t.turn_index,
       json_extract(t.extra_json, '$.agent.adapter') as adapter,
       json_extract(t.extra_json, '$.agent.agent') as agent,
       coalesce(json_array_length(t.extra_json, '$.agent.trace.tool_calls'), 0) as tool_calls,
       (select group_concat(json_extract(c.value, '$.name'), ', ')
        from json_each(t.extra_json, '$.agent.trace.tool_calls') c) as tools,
       coalesce(json_array_length(t.extra_json, '$.agent.trace.retrieved'), 0) as retrieved,
       json_extract(t.extra_json, '$.agent.n_messages') as messages,
       json_extract(t.extra_json, '$.agent.latency_ms') as latency_ms,
       t.input_tokens, t.output_tokens, t.user_message, t.agent_message, i.run_id
from turns t join interactions i on i.id = t.interaction_id
where json_valid(t.extra_json) and json_extract(t.extra_json, '$.agent.adapter') is not null
  and (:run = '' or i.run_id = :run)
order by i.run_id, i.position, t.turn_index""",
    ),
}
"""Named, parameterised read-only queries (``:run``, ``:task``, ``:study``)."""
