"""Live sessions: a person holds a help-desk conversation through the same turn loop.

A live session runs the SelfScore graph of ``graphs/selfscore.py`` with a checkpointer. The
person's side is a participant whose ``respond`` calls LangGraph's ``interrupt()``: the graph
pauses there, the app shows the conversation, and the person's message resumes it with
``Command(resume=text)`` on the session's thread id. Judges, the solved-check, cost and the
store are the batch's own code: each finished turn is committed before the graph pauses again.

Two modes:

- ``user``: the person is the user (free text, or a task shown as a scenario) and the
  configured agent (plain or RAG) answers; its reply streams token by token.
- ``agent``: the person is the help-desk worker answering the LLM-simulated user on a task;
  their replies are judged like an agent's (a live human baseline).

Sessions are identified by an unguessable token; the app keeps only ids per browser.

The session manager :class:`LiveSessions` lives here; its parts are beside it: the person's
side of the graph (``person``), idle memory (``memory``), spoken messages
(``voice_messages``) and ratings (``ratings``); what the page shows is in ``views``, the input
checks and errors in ``guards``.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
import uuid
from collections import defaultdict
from typing import Any, AsyncIterator, Callable

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command

from graphs.selfscore import initial_state, recursion_limit
from harness.compose import Runtime
from harness.live.guards import LiveError, RateLimiter, clean_message, dropping_failed_work
from harness.live.memory import IdleMemory
from harness.live.person import LiveAgent, LiveUser
from harness.live.ratings import HumanRatings
from harness.live.team_agent import FailureKeeper
from harness.live.views import LiveUpdate, SessionView
from harness.live.voice_messages import SpokenMessages
from harness.models.traffic import yielding
from harness.selfscore import prompts
from harness.selfscore.batch import (StoreTurnSink, agent_error_text, failed_turn_calls, history_from_turns,
                                     new_run, prepare_problem, run_name)
from harness.selfscore.figures import interaction_figures, score_row
from harness.selfscore.scoring import SCORER_VERSION
from harness.study.agent_report import failure_detail
from harness.tasks.datasets import Task
from store import StoreReader, StoreWriter
from store.live import LiveStore
from store.schema import StoreError

MODES = ("user", "agent")


def agent_choices(app_agents) -> tuple[str, ...]:
    """The agents a session may name: plain and rag, and those the app serves (``app.agents``:
    a team's own agent, ``python app.py --agent http --agent-url URL``)."""
    return tuple(dict.fromkeys(("plain", "rag", *app_agents)))


class LiveSessions(IdleMemory, SpokenMessages, HumanRatings):
    """Starts, continues, rates and ends live sessions; one per process (one store writer)."""

    def __init__(self, runtime: Runtime, writer: StoreWriter, reader: StoreReader,
                 clock: Callable[[], float] = time.monotonic):
        self.runtime = runtime
        self.config = runtime.config
        self.app = runtime.config.app
        self.writer, self.reader = writer, reader
        self.store = LiveStore(writer, reader)
        # The paused graph's state holds the turn loop's own records; allow exactly those.
        self.checkpointer = InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=[
            ("graphs.protocols", name) for name in ("Problem", "Message", "Reply", "Judgment", "LLMCall")]))
        self.limiter = RateLimiter(self.app.messages_per_minute, clock)
        self._graphs: dict[tuple[str, str], Any] = {}
        self._keepers: dict[tuple[str, str], FailureKeeper] = {}  # the agent of each user-mode graph
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._runs: dict[tuple[str, str, str], str] = {}
        self._create_lock = threading.Lock()
        self._speech = None
        self.clock = clock
        self._touched: dict[str, float] = {}  # session -> last activity, while its graph is in memory
        self._last_sweep = clock()
        self._restored_unseen: set[str] = set()  # agent-mode sessions whose customer message was rewritten

    # -- graphs and runs -------------------------------------------------------------------
    def _graph(self, mode: str, agent: str):
        key = (mode, agent)
        if key not in self._graphs:
            if mode == "user":  # a team's own agent's failure is kept for the store (team_agent)
                user = LiveUser()
                helper = self._keepers[key] = FailureKeeper(self.runtime.llm_agent(agent))
            else:
                user, helper = self.runtime.simulated_user(), LiveAgent()
            self._graphs[key] = self.runtime.selfscore_graph(
                user, helper, StoreTurnSink(self.writer), checkpointer=self.checkpointer)
        return self._graphs[key]

    def run_for(self, study_id: str, mode: str, agent: str, dataset: str = "live",
                dataset_sha256: str = "") -> str:
        """The run that collects a study's sessions of one mode and agent (created once)."""
        key = (study_id, mode, agent)
        if key in self._runs:
            return self._runs[key]
        run_id = f"live-{study_id}-{mode}-{agent}"
        try:
            self.reader.run(run_id)
        except StoreError:  # not there yet
            cfg = self.config.model_copy(deep=True)
            cfg.run.agent = agent if mode == "user" else "human"
            cfg.run.max_turns = self.app.max_turns
            label = "human-live" if mode == "agent" else None
            name = f"live-{study_id}:" + run_name(cfg, label)
            new_run(self.writer, cfg, name, "live" if mode == "user" else "live_human_agent",
                    dataset, dataset_sha256, prompts.PROMPT_VERSION, SCORER_VERSION, run_id=run_id,
                    profile=self.runtime.profile_record())
        self._runs[key] = run_id
        return run_id

    # -- sessions --------------------------------------------------------------------------
    async def start(self, *, mode: str, agent: str = "plain", study_id: str = "free",
                    participant_id: str | None = None, task: Task | None = None,
                    dataset: str = "live", dataset_sha256: str = "",
                    question: str | None = None) -> SessionView:
        """:meth:`open` a session and :meth:`begin` it."""
        session_id = self.open(mode=mode, agent=agent, study_id=study_id,
                               participant_id=participant_id, task=task, dataset=dataset,
                               dataset_sha256=dataset_sha256, question=question)
        return await self.begin(session_id)

    def open(self, *, mode: str, agent: str = "plain", study_id: str = "free",
             participant_id: str | None = None, task: Task | None = None,
             dataset: str = "live", dataset_sha256: str = "", question: str | None = None) -> str:
        """Store a new session (its problem, interaction and session rows); returns its token.

        ``mode='user'``: ``task`` (shown as a scenario) or ``question`` (the person's own
        problem, their first message). ``mode='agent'``: ``task`` is required. No model is
        called here, so a caller may hold a lock around assignment and creation.

        Raises:
            LiveError: unknown mode or agent, or no problem to talk about.
        """
        if mode not in MODES:
            raise LiveError(f"Unknown mode {mode!r}; use 'user' (you ask) or 'agent' (you answer).")
        allowed = agent_choices(self.app.agents)
        if agent not in allowed:
            raise LiveError(f"Unknown agent {agent!r}; use {' or '.join(repr(a) for a in allowed)}.")
        if task is None:
            if mode == "agent":
                raise LiveError("Answering as the agent needs a task: draw one from the task set.")
            question = clean_message(question, self.app.max_message_chars)
            digest = hashlib.sha256(question.encode()).hexdigest()[:16]
            task = Task(id=f"live-{digest}", question=question)
            dataset = "live"
        run_id = self.run_for(study_id, mode, agent, dataset, dataset_sha256)
        problem_id = f"{dataset}:{task.id}"
        with self._create_lock:
            self.writer.upsert_problems([{
                "id": problem_id, "dataset": dataset, "task_id": task.id, "question": task.question,
                "reference_answer": task.reference_answer,
                "metadata_json": json.dumps({**task.metadata, "problem": task.problem})}])
            iid = f"{run_id}:{uuid.uuid4().hex[:12]}"
            position = self.store.count_interactions(run_id)
            self.writer.start_interaction({"id": iid, "run_id": run_id, "problem_id": problem_id,
                                           "position": position, "status": "running",
                                           "script_json": None})
            return self.store.create_session({
                "study_id": study_id, "participant_id": participant_id, "run_id": run_id,
                "interaction_id": iid, "mode": mode, "agent": agent, "task_id": task.id})

    async def begin(self, session_id: str) -> SessionView:
        """Prepare the problem (summary, problem statement, complexity) and run the graph to
        the first point where the person acts (mode ``agent``: after the simulated user's
        first message and its judgment)."""
        async with self._locks[session_id]:
            sess = self._session(session_id)
            async with self._model_failures(session_id):
                await self._ensure_thread(sess, self._graph(sess["mode"], sess["agent"]))
            self._restored_unseen.discard(session_id)  # a new session: nothing was shown before
        return await self.view(session_id)

    def _model_failures(self, session_id: str):
        """A model that fails for good (after its retries) or an open circuit breaker: the
        turn in flight is dropped (nothing of it was stored) and the paused graph is rebuilt
        from the store on the next message; the person is told to send again."""
        return dropping_failed_work(self.checkpointer, session_id, "live session %s: a turn failed",
                                    "Your conversation is kept up to the last answered message: send "
                                    "your message again in a moment.")

    def _thread(self, session_id: str) -> dict:
        return {"configurable": {"thread_id": session_id},
                "recursion_limit": recursion_limit(self.app.max_turns)}

    def _session(self, session_id: str, participant_id: str | None = None) -> dict[str, Any]:
        sess = self.store.session(session_id) if session_id else None
        if sess is None or (participant_id is not None and sess["participant_id"] != participant_id):
            raise LiveError("No such session for you. Start a new conversation.")
        return sess

    async def _ensure_thread(self, sess: dict[str, Any], graph) -> bool:
        """Rebuild a session's paused graph from the store (after an app restart, or after it
        left memory while idle); returns whether it was rebuilt. In mode ``agent`` a rebuild
        has the simulated customer write its pending message anew, so the session is marked
        until the person has been shown it (see :meth:`send`)."""
        self._touch(sess["id"])
        cfg = self._thread(sess["id"])
        snapshot = await graph.aget_state(cfg)
        if snapshot.next:
            return False
        row = self.store.interaction_with_problem(sess["interaction_id"])
        problem = await prepare_problem(self.runtime, self.reader, self.writer, row)
        turns = self.reader.turns(sess["interaction_id"])
        async for _ in graph.astream(initial_state(problem, history_from_turns(turns), len(turns) + 1,
                                                   self.app.max_turns), cfg):
            pass
        if sess["mode"] == "agent":
            self._restored_unseen.add(sess["id"])
        return True

    async def send(self, session_id: str, text: Any, participant_id: str | None = None,
                   rate_key: str | None = None, voice: dict[str, Any] | None = None,
                   on_resume: Callable[[], None] | None = None) -> AsyncIterator[LiveUpdate]:
        """The person's next message (their own in mode ``user``, their reply as the agent in
        mode ``agent``). Yields the agent's reply as it streams, then the final view.
        ``voice``: the spoken message's audio reference and timings (see :meth:`send_audio`).
        ``on_resume``: called just before the paused graph resumes with the message (the
        agent's request follows at once): where a spoken reply's stage times start.

        Raises:
            LiveError: bad message, rate limit, a session that is not the caller's or has ended.
        """
        text = clean_message(text, self.app.max_message_chars)
        sess = self._session(session_id, participant_id)
        if voice is None:
            self.limiter.check(rate_key or participant_id or session_id)
        resume = {"text": text, "voice": voice} if voice else text
        async with self._locks[session_id]:
            sess = self._session(session_id, participant_id)
            if sess["status"] != "active":
                raise LiveError("This conversation has ended. Start a new one.")
            graph = self._graph(sess["mode"], sess["agent"])
            async with self._model_failures(session_id):
                await self._ensure_thread(sess, graph)
                if session_id in self._restored_unseen:
                    # the customer's message was written anew: never store a reply to a
                    # message the person has not read
                    self._restored_unseen.discard(session_id)
                    raise LiveError("This conversation was paused and has been restored; the "
                                    "customer's latest message is shown again. Read it and send "
                                    "your reply once more.")
                partial, call = "", None
                if on_resume is not None:
                    on_resume()
                # a spoken message: judges anywhere in the app yield the endpoint to the agent
                with yielding(voice is not None and self.config.voice.judging == "yield"):
                    async for mode, chunk in graph.astream(Command(resume=resume), self._thread(session_id),
                                                           stream_mode=["messages", "updates"]):
                        if mode != "messages":
                            continue
                        msg, meta = chunk
                        if meta.get("langgraph_node") == "agent_turn" and isinstance(msg.content, str) \
                                and msg.content:
                            if msg.id != call:  # a new model call (a retry after a failed stream)
                                partial, call = "", msg.id
                            partial += msg.content
                            yield LiveUpdate(partial=partial)
            snapshot = await graph.aget_state(self._thread(session_id))
            ended = not snapshot.next
            if ended:  # the graph ended: solved, max turns, the agent ended it or failed
                stop = snapshot.values.get("stop_reason")
                keeper = self._keepers.get((sess["mode"], sess["agent"]))
                failure = keeper.pop(sess["interaction_id"]) if keeper and stop == "agent_error" else None
                await self._finish(sess, stop, {**snapshot.values, "agent_failure": failure})
        yield LiveUpdate(view=await self.view(session_id))

    async def end(self, session_id: str, participant_id: str | None = None) -> SessionView:
        """The person ends the conversation; it is scored from its stored turns."""
        sess = self._session(session_id, participant_id)
        async with self._locks[session_id]:
            sess = self._session(session_id, participant_id)
            if sess["status"] == "active":
                await self._finish(sess, "user_ended" if sess["mode"] == "user" else "agent_ended")
        return await self.view(session_id)

    async def _finish(self, sess: dict[str, Any], stop_reason: str | None,
                      final: dict[str, Any] | None = None) -> None:
        """End the session's conversation; ``final``: the graph's last state, whose
        ``agent_failure`` (a team's agent failed a turn) is stored like a batch's."""
        iid = sess["interaction_id"]
        n_turns = len(self.reader.turns(iid))
        failure = (final or {}).get("agent_failure")
        if n_turns == 0 and failure is None:
            self.writer.finish_interaction(iid, "abandoned", stop_reason, 0,
                                           error="ended before the first turn")
            self.store.end_session(sess["id"], "abandoned")
        else:
            self.writer.finish_interaction(iid, "completed", stop_reason, n_turns, error=agent_error_text(failure),
                                           calls=failed_turn_calls(final, iid) if failure else ())
            self.store.end_session(sess["id"], "ended")
            run = self.reader.run(sess["run_id"])
            row = {**self.reader.interaction(iid), "stop_reason": stop_reason,
                   "task_id": sess["task_id"]}
            self.writer.replace_scores(run["id"], [score_row(
                interaction_figures(self.reader, row, run["config"]), run)])
        self._forget(sess["id"])
        self._restored_unseen.discard(sess["id"])

    # -- reading ---------------------------------------------------------------------------
    async def view(self, session_id: str, participant_id: str | None = None) -> SessionView:
        """The session as the page shows it: stored turns plus a message still in flight."""
        sess = self._session(session_id, participant_id)
        turns = self.reader.turns(sess["interaction_id"])
        messages = history_from_turns(turns)
        awaiting = None
        if sess["status"] == "active":
            # the person acts next; a paused graph may hold a message not yet in a stored turn.
            # One lost in an app restart or left idle is rebuilt on the next message, or now in
            # mode agent, where the person must see the customer's message before answering.
            awaiting = sess["mode"]
            graph = self._graph(sess["mode"], sess["agent"])
            if sess["mode"] == "agent":
                async with self._locks[session_id], self._model_failures(session_id):
                    await self._ensure_thread(sess, graph)
            snapshot = await graph.aget_state(self._thread(session_id))
            history = (snapshot.values.get("history") or []) if snapshot.next else []
            if len(history) >= len(messages):
                messages = list(history) or messages
        row = self.store.interaction_with_problem(sess["interaction_id"])
        scenario = None if sess["task_id"].startswith("live-") else row["question"]
        failed = failure_detail(row) if row.get("stop_reason") == "agent_error" else None
        return SessionView(session_id, sess["mode"], sess["agent"], sess["status"], scenario,
                           messages, awaiting, row.get("stop_reason"), turns, self.app.max_turns, failed)
