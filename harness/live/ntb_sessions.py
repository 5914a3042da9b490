"""A person as the NoisyToolBench user, live: the batch's tool loop with a person answering.

A session plays one NoisyToolBench case. The person is shown the case's noisy instruction (what
they "typed") and, privately, what they really meant (the case's clarification, and what kind
of noise the instruction has). The configured agent variant runs the batch's own tool loop
(``graphs/toolloop.py``, built by :meth:`harness.ntb.batch.NtbBatch.graph`) against the offline
API environment; only the user differs: :class:`PersonToolUser` pauses the graph with
LangGraph's ``interrupt()`` at each clarifying question, and the person's answer resumes it
with ``Command(resume=text)`` on the session's thread id.

The store is the record, exactly as in a batch: every finished step is one ``turns`` row
written by the batch's ``StoreStepSink`` (an ask step also stores the question match against
the anticipated question, as the simulated user computes it, and ``person: true``), and when
the session ends its steps are scored by the batch's scorer (``NtbBatch.case_figures``: A1
against the anticipated question, A2, A3, Re, Steps, with the judge model, prompt version and
scorer version) into a ``scores`` row of scorer ``noisytoolbench``. Sessions of one agent
variant and configuration are collected in one run of kind ``live_noisytoolbench``.

If the app restarts, or a session leaves memory after ``app.idle_minutes``, its paused graph
is rebuilt from the stored steps (as ``ntb run --resume`` does): the agent acts again from
there, so a question that was shown but not answered may be asked anew; an answer sent from a
page that shows an older question is refused once, with the new question shown.

The session manager :class:`NtbLiveSessions` lives here; its tool loop is in ``ntb_loop``,
what the page shows (and the reading of the store) in ``ntb_views``.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import threading
import time
import uuid
from collections import defaultdict
from typing import Any, AsyncIterator, Callable, Sequence

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command, interrupt

from graphs.toolloop import Outcome
from harness.compose import Runtime
from harness.live.guards import LiveError, RateLimiter, clean_message
from harness.live.ntb_loop import NtbToolLoop
from harness.live.ntb_views import MODE, NtbSessionReads, NtbSessionView
from harness.ntb import scoring
from harness.ntb.agent import PROTOCOL_VERSIONS
from harness.ntb.batch import DATASET, NtbBatch, problem_row, scoring_data_sha
from harness.ntb.cases import Case, CaseError, load_case, load_cases
from harness.ntb.user import SimulatedToolUser
from harness.selfscore.runs import new_run
from store import StoreReader, StoreWriter
from store.live import LiveStore
from store.schema import StoreError

log = logging.getLogger(__name__)

RUN_KIND = "live_noisytoolbench"


class PersonToolUser:
    """Implements ``graphs.toolloop.AskedUser``: a person answers the agent's question.

    The graph pauses at ``interrupt()`` until the person's answer resumes it. The ask step
    stores what the simulated user would store about the question (``matcher.match``: the
    similarity with the anticipated question, ``matched``, ``redundant``, the settings), so
    the step row is a batch row; the reply is the person's own words."""

    def __init__(self, matcher: SimulatedToolUser):
        self.matcher = matcher

    async def reply(self, case: Case, question: str, steps: Sequence[dict[str, Any]],
                    thought: str | None = None) -> Outcome:
        """Pause for the person's answer to ``question``; returns it with the match
        record the simulated user would store (and ``person: true``)."""
        # interrupt() first: on resume the node runs again and the match is computed once
        text = interrupt({"awaiting": "answer", "question": question})
        return Outcome(text, {**self.matcher.match(case, question, steps, thought), "person": True})


class NtbLiveSessions(NtbToolLoop, NtbSessionReads):
    """Starts, continues and ends live NoisyToolBench sessions; one per process (one writer)."""

    def __init__(self, runtime: Runtime, writer: StoreWriter, reader: StoreReader,
                 clock: Callable[[], float] = time.monotonic):
        self.runtime = runtime
        self.config = runtime.config
        self.writer, self.reader = writer, reader
        self.store = LiveStore(writer, reader)
        self.batch = NtbBatch(runtime, writer, reader)
        # the paused graph's state holds the loop's own records and the case: allow exactly those
        self.checkpointer = InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=[
            ("graphs.toolloop", "Action"), ("graphs.toolloop", "Outcome"),
            ("graphs.protocols", "LLMCall"), ("harness.ntb.cases", "Case")]))
        self.limiter = RateLimiter(self.config.app.messages_per_minute, clock)
        self.clock = clock
        self._matcher: SimulatedToolUser | None = None
        self._cases: dict[str, Case] = {}
        self._graphs: dict[str, Any] = {}      # session -> its tool loop (its own API environment)
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._touched: dict[str, float] = {}
        self._last_sweep = clock()
        self._run_id: str | None = None
        self._create_lock = threading.Lock()

    # -- the run ----------------------------------------------------------------------------
    def run_id(self) -> str:
        """The run that collects this configuration's sessions (created, after checking the
        models, on first use). Its id names the agent variant and a digest of everything that
        changes the figures (the agent, judge and API-simulator models, the protocol, the step
        caps and the scoring settings), so sessions under another configuration never mix."""
        if self._run_id:
            return self._run_id
        cfg, ntb = self.config, self.config.ntb
        settings = {role: cfg.role(role).model_dump(mode="json") for role in ("agent", "judge", "api_simulator")}
        settings["ntb"] = ntb.model_dump(mode="json", exclude={"categories", "ids", "per_category", "user"})
        settings["protocol"] = self.batch.protocol()
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
        run_id = f"live-ntb-{ntb.agent_variant}-{digest}"
        with self._create_lock:
            try:
                self.reader.run(run_id)
            except StoreError:  # not there yet: check the models before storing anything
                from harness.models.embeddings import EmbeddingModelMissing, check_embedder
                from harness.models.model_files import ModelFileError
                try:
                    check_embedder(ntb.embedding_model)
                    self.runtime.check_models([r for r in self.batch.roles_used() if r != "user"])
                except (EmbeddingModelMissing, ModelFileError) as exc:  # they name the install command
                    raise LiveError(f"NoisyToolBench sessions cannot start: {exc}") from exc
                new_run(self.writer, cfg, "live-ntb:" + self.batch.default_name(), RUN_KIND, DATASET,
                        scoring_data_sha(), PROTOCOL_VERSIONS[ntb.agent_variant], scoring.SCORER_VERSION,
                        run_id=run_id)
            self._run_id = run_id
        return run_id

    @property
    def matcher(self) -> SimulatedToolUser:
        """The similarity scorer of the agent's questions (the simulated user without
        paraphrasing), built on first use."""
        if self._matcher is None:
            self._matcher = self.batch.tool_user(paraphrase=False)
        return self._matcher

    def _graph(self, session_id: str):
        if session_id not in self._graphs:
            self._graphs[session_id] = self.batch.graph(PersonToolUser(self.matcher), self.checkpointer)
        return self._graphs[session_id]

    # -- cases ------------------------------------------------------------------------------
    @staticmethod
    def case(key: str | None) -> Case:
        """The case ``key`` names (``IMKI/3``; the category's letter case does not matter), or
        a random one of the 200 when ``key`` is empty.

        Raises:
            LiveError: a malformed or unknown case id, naming the valid form.
        """
        text = (key or "").strip()
        if not text:
            return secrets.choice(load_cases())
        cat, sep, number = text.partition("/")
        canonical = {c.lower(): c for c in scoring.CATEGORIES}.get(cat.strip().lower())
        try:
            if sep and canonical is not None:
                return load_case(f"{canonical}/{number.strip()}")
        except CaseError:
            pass
        raise LiveError(f"Unknown NoisyToolBench case {text!r}. Enter a case id as "
                        "CATEGORY/NUMBER, e.g. IMKI/3 (categories IMKI, IMR, IwE, IBTC; "
                        "numbers 1-50), or leave it empty for a random case.")

    def _case_of(self, key: str) -> Case:
        """A stored session's case (parsed once per process)."""
        if key not in self._cases:
            self._cases[key] = load_case(key)
        return self._cases[key]

    # -- sessions ---------------------------------------------------------------------------
    async def start(self, case_key: str | None = None, participant_id: str | None = None,
                    study_id: str = "free") -> AsyncIterator[NtbSessionView]:
        """:meth:`open` a session and :meth:`begin` it (yields a view after each step)."""
        session_id = self.open(case_key, participant_id, study_id)
        async for view in self.begin(session_id):
            yield view

    def open(self, case_key: str | None = None, participant_id: str | None = None,
             study_id: str = "free") -> str:
        """Store a new session on case ``case_key`` (empty: a random case): its problem (the
        batch's row), interaction and session rows. No model is called. Returns its token.

        Raises:
            LiveError: an unknown case id, or a model that is not installed.
        """
        case = self.case(case_key)
        run_id = self.run_id()
        with self._create_lock:
            self.writer.upsert_problems([problem_row(case)])
            iid = f"{run_id}:{case.key}:{uuid.uuid4().hex[:8]}"
            self.writer.start_interaction({
                "id": iid, "run_id": run_id, "problem_id": f"{DATASET}:{case.key}",
                "position": self.store.count_interactions(run_id), "status": "running"})
            return self.store.create_session({
                "study_id": study_id, "participant_id": participant_id, "run_id": run_id,
                "interaction_id": iid, "mode": MODE, "agent": self.config.ntb.agent_variant,
                "task_id": case.key})

    async def begin(self, session_id: str, participant_id: str | None = None) -> AsyncIterator[NtbSessionView]:
        """Run the agent until it asks the person, answers or hits a cap; yields the session
        after each stored step (the API calls and observations as they happen)."""
        async for view in self.proceed(session_id, participant_id):
            yield view

    async def proceed(self, session_id: str, participant_id: str | None = None) -> AsyncIterator[NtbSessionView]:
        """Let the agent go on from the stored steps when its loop is not in memory (a new
        session, after an app restart, an idle period or a model failure); yields the session
        after each stored step, then once more.

        Raises:
            LiveError: no such session, an ended session, or a model that did not answer.
        """
        self._active(session_id, participant_id)  # before a lock is made for the id
        async with self._locks[session_id]:
            sess = self._active(session_id, participant_id)
            async with self._model_failures(session_id):
                async for _ in self._rebuild(sess):
                    yield await self.view(session_id)
        yield await self.view(session_id)

    async def answer(self, session_id: str, text: Any, participant_id: str | None = None,
                     question: str | None = None) -> AsyncIterator[NtbSessionView]:
        """The person's answer to the agent's waiting question; yields the session after each
        step the agent then takes (and stores), then once more. ``question``: the question the
        page showed; an answer to another question is refused (the session was restored and
        the agent asked anew), and so is one sent right after a restore without ``question``.

        Raises:
            LiveError: an empty or bad answer, the rate limit, no such session, an ended
                session, no question waiting, or a model that did not answer.
        """
        if text is None or (isinstance(text, str) and not text.strip()):
            raise LiveError("Type your answer to the agent's question first: the answer is empty.")
        text = clean_message(text, self.config.app.max_message_chars)
        self._active(session_id, participant_id)
        self.limiter.check(participant_id or session_id)
        async with self._locks[session_id]:
            sess = self._active(session_id, participant_id)
            async with self._model_failures(session_id):
                rebuilt = False
                async for _ in self._rebuild(sess):
                    rebuilt = True
                pending = await self._pending(session_id)
                if pending is None:
                    sess = self._session(session_id)
                    if sess["status"] != "active":
                        raise self._ended_error(sess)
                    raise LiveError("The agent is not asking you anything right now (it is "
                                    "working, or waits to be continued): wait for its question, "
                                    "or press Continue.")
                if (question is not None and question.strip() != pending.text.strip()) or \
                        (question is None and rebuilt):
                    raise LiveError("The agent's question has changed (the session was restored "
                                    "and the agent asked anew, or this page was out of date). Read "
                                    "its new question and send your answer again.")
                async for _ in self._stream(sess, Command(resume=text)):
                    yield await self.view(session_id)
        yield await self.view(session_id)

    async def end(self, session_id: str, participant_id: str | None = None) -> NtbSessionView:
        """The person ends the session; it is scored from its stored steps (the batch's
        scorer). A question waiting for an answer is stored as an unanswered ask step (it
        was asked: it counts in A1, Re and Steps as in a batch).

        Raises:
            LiveError: no such session, an ended session, or a judge that did not answer.
        """
        self._active(session_id, participant_id)  # before a lock is made for the id
        async with self._locks[session_id]:
            sess = self._active(session_id, participant_id)
            async with self._model_failures(session_id):
                pending = await self._pending(session_id)
                if pending is not None:
                    self._store_unanswered(sess, pending)
                    self.checkpointer.delete_thread(session_id)
                await self._finish(sess, "user_ended")
        return await self.view(session_id)

    # -- memory -----------------------------------------------------------------------------
    def _touch(self, session_id: str) -> None:
        now = self._touched[session_id] = self.clock()
        if now - self._last_sweep >= 60.0:
            self._last_sweep = now
            self.evict_idle()

    def evict_idle(self) -> list[str]:
        """Drop the paused loops of sessions idle for ``app.idle_minutes`` (none with a step in
        flight); returns their ids. The next request rebuilds a loop from the store."""
        cutoff = self.clock() - self.config.app.idle_minutes * 60.0
        idle = [s for s, last in list(self._touched.items())
                if last <= cutoff and not (s in self._locks and self._locks[s].locked())]
        for session_id in idle:
            self._forget(session_id)
        return idle

    def _forget(self, session_id: str) -> None:
        self.checkpointer.delete_thread(session_id)
        self._graphs.pop(session_id, None)
        self._locks.pop(session_id, None)
        self._touched.pop(session_id, None)
        self.limiter.forget(session_id)
