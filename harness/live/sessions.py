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
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import json
import threading
import time
import unicodedata
import uuid
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Sequence

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command, interrupt

from graphs.protocols import Message, Problem, Reply
from graphs.selfscore import initial_state, recursion_limit
from harness.selfscore import prompts
from harness.selfscore.batch import StoreTurnSink, history_from_turns, new_run, prepare_problem
from harness.models.circuit import CircuitOpenError
from harness.compose import Runtime
from harness.selfscore.batch import run_name
from harness.tasks.datasets import Task
from harness.selfscore.figures import interaction_figures, score_row
from harness.models.retry import ModelCallError
from harness.selfscore.scoring import SCORER_VERSION
from store import StoreReader, StoreWriter
from store.schema import StoreError
from store.live import LiveStore

log = logging.getLogger(__name__)

MODES = ("user", "agent")
HUMAN_RATING_VERSION = "human-rating-v1"


class LiveError(ValueError):
    """Something a person did that the app refuses; the message says what and what to do."""


def _anon(session_id: str) -> str:
    """A stable name for a session that reveals nothing of its token (logs, free raters)."""
    return "anon-" + hashlib.sha256(session_id.encode()).hexdigest()[:12]


# -- input checks ---------------------------------------------------------------------------
_KEEP_CONTROLS = {"\n", "\t"}


def reply_spoken(turn: dict[str, Any] | None) -> bool:
    """Whether a stored turn's agent reply was spoken (its audio referenced from the turn, as
    :meth:`LiveSessions.send_audio` records it), so that its voice can be rated."""
    if not turn:
        return False
    extra = json.loads(turn.get("extra_json") or "{}")
    return bool(((extra.get("agent") or {}).get("voice") or {}).get("audio"))


def clean_message(text: Any, max_chars: int) -> str:
    """The message a person typed, checked and cleaned for the conversation.

    Control characters (other than newline and tab) are removed; text that is mostly
    unprintable (binary data pasted in) and empty or oversized messages are refused.

    Raises:
        LiveError: naming the problem and the fix.
    """
    if text is None or not isinstance(text, str):
        raise LiveError("Type a message first: the message is empty.")
    if len(text) > max_chars:
        raise LiveError(f"Your message has {len(text):,} characters; the limit is {max_chars:,}. "
                        "Shorten it (or split it over several turns) and send again.")
    bad = sum(1 for ch in text if unicodedata.category(ch) in ("Cc", "Cs", "Co", "Cn")
              and ch not in _KEEP_CONTROLS) + text.count("\ufffd")
    if text and bad / len(text) > 0.1:
        raise LiveError("Your message looks like binary data, not text. Type or paste plain text.")
    cleaned = "".join(ch for ch in text if ch in _KEEP_CONTROLS
                      or unicodedata.category(ch) not in ("Cc", "Cs", "Co", "Cn"))
    cleaned = cleaned.replace("\ufffd", "").strip()
    if not cleaned:
        raise LiveError("Type a message first: the message is empty.")
    return cleaned


class RateLimiter:
    """At most ``per_minute`` events per key in any 60-second window."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic):
        self.per_minute = per_minute
        self.clock = clock
        self._events: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._calls = 0

    def check(self, key: str) -> None:
        """Count one event for ``key``.

        Raises:
            LiveError: when ``key`` already had ``per_minute`` events in the last minute.
        """
        with self._lock:
            now, events = self.clock(), self._events[key]
            while events and now - events[0] >= 60.0:
                events.popleft()
            if len(events) >= self.per_minute:
                wait = 60.0 - (now - events[0])
                raise LiveError(f"You are sending messages too fast (at most {self.per_minute} a "
                                f"minute). Wait {wait:.0f} s and send again.")
            events.append(now)
            self._calls += 1
            if self._calls % 1000 == 0:  # drop keys idle for a minute (bounded memory)
                for k in [k for k, e in self._events.items() if not e or now - e[-1] >= 60.0]:
                    del self._events[k]

    def forget(self, key: str) -> None:
        with self._lock:
            self._events.pop(key, None)


# -- the person's side of the graph ---------------------------------------------------------
@contextlib.asynccontextmanager
async def dropping_failed_work(checkpointer, session_id: str, log_message: str, advice: str):
    """Around a live session's model work: a model that fails for good (after its retries) or
    an open circuit breaker drops the paused graph of ``session_id`` from ``checkpointer`` (the
    store keeps what was finished) and becomes a :class:`LiveError` naming the failure, then
    ``advice``; any other error is logged with ``log_message`` first. A LiveError passes."""
    try:
        yield
    except LiveError:
        raise
    except (CircuitOpenError, Exception) as exc:  # CircuitOpenError is a BaseException
        if not isinstance(exc, (ModelCallError, CircuitOpenError)):
            log.exception(log_message, _anon(session_id))
        checkpointer.delete_thread(session_id)
        raise LiveError("The model did not answer (" + str(exc).splitlines()[0][:200] + "). "
                        + advice) from None


class LiveUser:
    """The user side played by a person: pauses the graph until their message arrives.
    Resuming with ``None`` ends the conversation (``user_ended``)."""

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        value = interrupt({"awaiting": "user", "turn": turn_index})
        if isinstance(value, dict):  # a spoken message: its transcript and its audio
            return Reply(value["text"], extra={"live": True, "voice": value["voice"]})
        return Reply(value, extra={"live": True})


class LiveAgent:
    """The help-desk side played by a person (a live human baseline)."""

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        text = interrupt({"awaiting": "agent", "turn": sum(m.role == "agent" for m in history) + 1})
        return Reply(text, extra={"live": True})


# -- what the app shows ---------------------------------------------------------------------
@dataclass
class SessionView:
    """Everything the page shows of one session (no model objects, no secrets of others)."""

    session_id: str
    mode: str
    agent: str
    status: str  # active | ended | abandoned
    scenario: str | None
    messages: list[Message]
    awaiting: str | None  # "user" or "agent" while the graph waits for the person
    stop_reason: str | None
    turns: list[dict[str, Any]] = field(default_factory=list)  # stored turns with LLM judgments
    max_turns: int = 0

    @property
    def last_turn(self) -> int:
        return self.turns[-1]["turn_index"] if self.turns else 0


@dataclass
class LiveUpdate:
    """One step of a streamed reply: the agent's text so far, then the final view."""

    partial: str | None = None
    view: SessionView | None = None
    audio: str | None = None  # the spoken reply's WAV (voice messages)
    chunk: Any = None  # voice.streaming: one spoken chunk of the reply as soon as its audio is
    #                    ready (harness.voice.streaming.SpokenChunk), to play while the rest comes


class LiveSessions:
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
            if mode == "user":
                user, helper = LiveUser(), self.runtime.llm_agent(agent)
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
                    dataset, dataset_sha256, prompts.PROMPT_VERSION, SCORER_VERSION, run_id=run_id)
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
        if agent not in ("plain", "rag"):
            raise LiveError(f"Unknown agent {agent!r}; use 'plain' or 'rag'.")
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

    # -- memory: idle conversations leave it and are rebuilt from the store ----------------
    def _touch(self, session_id: str) -> None:
        now = self._touched[session_id] = self.clock()
        if now - self._last_sweep >= 60.0:
            self._last_sweep = now
            self.evict_idle()

    def evict_idle(self) -> list[str]:
        """Drop the paused graphs of conversations idle for ``app.idle_minutes`` (none with a
        turn in flight); returns their ids. Nothing stored is touched: the next message, or a
        view of an agent-mode session, rebuilds the graph from the stored turns."""
        cutoff = self.clock() - self.app.idle_minutes * 60.0
        evicted = []
        for session_id, last in list(self._touched.items()):
            lock = self._locks.get(session_id)
            if last <= cutoff and (lock is None or not lock.locked()):
                evicted.append(session_id)
        if evicted:
            self._forget(*evicted)
            log.info("live sessions: %d idle conversation(s) left memory", len(evicted))
        return evicted

    def _forget(self, *session_ids: str) -> None:
        """Drop these sessions' paused graphs, locks and rate-limit entries."""
        self._delete_threads(set(session_ids))
        for session_id in session_ids:
            self._touched.pop(session_id, None)
            self._locks.pop(session_id, None)
            self.limiter.forget(session_id)

    def _delete_threads(self, thread_ids: set[str]) -> None:
        """``InMemorySaver.delete_thread`` for many threads in one pass: it scans every
        thread's writes and blobs per call, so a sweep of n idle threads would cost n^2.
        (Its tables, like :meth:`in_memory`'s ``storage``, are those of langgraph 1.2.)"""
        saver = self.checkpointer
        for thread_id in thread_ids:
            saver.storage.pop(thread_id, None)
        for table in (saver.writes, saver.blobs):
            for key in [k for k in table if k[0] in thread_ids]:
                del table[key]

    def in_memory(self) -> int:
        """Conversations whose paused graph is held in memory."""
        return sum(1 for spaces in self.checkpointer.storage.values() if any(spaces.values()))

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
            if ended:  # the graph ended: solved or max turns
                await self._finish(sess, snapshot.values.get("stop_reason"))
        yield LiveUpdate(view=await self.view(session_id))

    # -- voice -----------------------------------------------------------------------------
    def _voice(self):
        """Speech to text, text to speech and the audio files (models load on first use)."""
        if self._speech is None:
            from harness.voice.audiostore import AudioStore
            from harness.voice.stt import Transcriber
            from harness.voice.tts import Speaker
            self._speech = (Transcriber(), Speaker(), AudioStore(self.config.store))
        return self._speech

    async def transcribe(self, audio: Any) -> str:
        """The words of a recording, nothing stored (to open a session by voice).

        Raises:
            LiveError: broken or silent audio, or no words recognised.
        """
        from harness.voice.audio import AudioError, load_audio
        if audio is None:
            raise LiveError("No recording: record your message (or upload an audio file) first.")
        try:
            samples = load_audio(audio)
        except AudioError as exc:
            raise LiveError(str(exc)) from exc
        heard = await self._voice()[0].atranscribe(samples)
        if not heard.text.strip():
            raise LiveError("No words were recognised in the recording. Speak closer to the "
                            "microphone (or type your message) and send again.")
        return heard.text

    async def send_audio(self, session_id: str, audio: Any, participant_id: str | None = None,
                         rate_key: str | None = None) -> AsyncIterator[LiveUpdate]:
        """A spoken message (a recording from the browser, any format): kept as a WAV,
        transcribed, sent as the person's turn; the agent's reply is spoken and its audio file
        referenced from the turn (``extra_json`` -> ``agent`` -> ``voice``). The last update
        carries ``audio``, the reply's WAV.

        With ``voice.streaming`` (the default) the reply is spoken sentence by sentence while
        it streams: updates with ``chunk`` carry each sentence's audio as soon as it is ready,
        and the stored WAV is the chunks joined, with the pipeline's stage times
        (:mod:`harness.live.speech`). Without it the whole stored reply is spoken after
        the turn, as one file.

        Raises:
            LiveError: no recording, broken or silent audio, or no words recognised (nothing
                is stored), and everything :meth:`send` refuses.
        """
        from harness.voice.audio import AudioError
        from harness.voice.tts import SpeechError

        received = time.perf_counter()
        sess = self._session(session_id, participant_id)
        if sess["mode"] != "user" or sess["status"] != "active":
            raise LiveError("Speaking is for an active conversation in which you are the user.")
        if audio is None:
            raise LiveError("No recording: record your message (or upload an audio file) first.")
        self.limiter.check(rate_key or participant_id or session_id)
        stt, tts, files = self._voice()
        iid, run_id = sess["interaction_id"], sess["run_id"]
        turn = len(self.reader.turns(iid)) + 1
        try:
            ref, samples = files.save_recording(audio, run_id, iid, turn, "user")
        except AudioError as exc:
            raise LiveError(str(exc)) from exc
        heard = await stt.atranscribe(samples)
        if not heard.text.strip():
            files.path(ref).unlink(missing_ok=True)
            raise LiveError("No words were recognised in the recording. Speak closer to the "
                            "microphone (or type your message) and send again.")
        voice = {"audio": ref, "stt_ms": heard.ms, "audio_s": heard.seconds, "heard_text": heard.text}
        if self.config.voice.streaming:
            from harness.live.speech import speak_while_streaming
            async for update in speak_while_streaming(
                    self, session_id, heard.text, voice, turn, tts, files, received,
                    participant_id=participant_id, rate_key=rate_key):
                yield update
            return
        last = None
        async for update in self.send(session_id, heard.text, participant_id, rate_key, voice=voice):
            if update.view is None:
                yield update
            last = update
        view = last.view
        stored = next((t for t in view.turns if t["turn_index"] == turn), None)
        if stored is None or not stored["agent_message"]:
            yield last
            return
        out = files.path(files.relative(run_id, iid, turn, "agent"))
        try:
            speech = await tts.aspeak(stored["agent_message"], out)
        except SpeechError as exc:  # nothing speakable (e.g. only code): the text stands
            self.store.merge_turn_extra(iid, turn, "agent", {"voice": {"tts_error": str(exc)}})
            yield LiveUpdate(view=await self.view(session_id))
            return
        self.store.merge_turn_extra(iid, turn, "agent", {"voice": {
            "audio": files.relative(run_id, iid, turn, "agent"), "tts_ms": speech.ms,
            "tts_first_audio_ms": speech.first_audio_ms, "spoken_text": speech.cleaned_text}})
        yield LiveUpdate(view=await self.view(session_id), audio=str(out))

    async def end(self, session_id: str, participant_id: str | None = None) -> SessionView:
        """The person ends the conversation; it is scored from its stored turns."""
        sess = self._session(session_id, participant_id)
        async with self._locks[session_id]:
            sess = self._session(session_id, participant_id)
            if sess["status"] == "active":
                await self._finish(sess, "user_ended" if sess["mode"] == "user" else "agent_ended")
        return await self.view(session_id)

    async def _finish(self, sess: dict[str, Any], stop_reason: str | None) -> None:
        iid = sess["interaction_id"]
        n_turns = len(self.reader.turns(iid))
        if n_turns == 0:
            self.writer.finish_interaction(iid, "abandoned", stop_reason, 0,
                                           error="ended before the first turn")
            self.store.end_session(sess["id"], "abandoned")
        else:
            self.writer.finish_interaction(iid, "completed", stop_reason, n_turns)
            self.store.end_session(sess["id"], "ended")
            run = self.reader.run(sess["run_id"])
            row = {**self.reader.interaction(iid), "stop_reason": stop_reason,
                   "task_id": sess["task_id"]}
            self.writer.replace_scores(run["id"], [score_row(
                interaction_figures(self.reader, row, run["config"]), run)])
        self._forget(sess["id"])
        self._restored_unseen.discard(sess["id"])

    # -- ratings ---------------------------------------------------------------------------
    def rate(self, session_id: str, turn_index: int, helpfulness: int | None, solved: bool | None,
             rater: str | None = None, participant_id: str | None = None,
             naturalness: int | None = None, comprehensibility: int | None = None) -> None:
        """A person's rating of one agent reply, stored beside the LLM judge's. ``rater`` is
        the participant's pseudonym; without one (a free session) it is ``anon-`` + a hash of
        the session token, so exports never carry any part of a token. ``naturalness`` and
        ``comprehensibility`` (1-5, a mean-opinion-score scale) rate a spoken reply's voice.

        Raises:
            LiveError: a rating outside its scale, no such turn, a voice rating of a reply that
                was not spoken, or nothing to rate.
        """
        sess = self._session(session_id, participant_id)
        if sess["mode"] != "user":
            raise LiveError("Ratings are for the agent's replies; in this session you are the agent.")
        voice = {name: value for name, value in (("naturalness", naturalness),
                                                  ("comprehensibility", comprehensibility))
                 if value is not None}
        if helpfulness is None and solved is None and not voice:
            raise LiveError("Choose a helpfulness score (1-10) or whether the problem is solved.")
        if helpfulness is not None and not (isinstance(helpfulness, int) and 1 <= helpfulness <= 10):
            raise LiveError(f"Helpfulness must be a whole number from 1 to 10, not {helpfulness!r}.")
        for name, value in voice.items():
            if not (isinstance(value, int) and 1 <= value <= 5):
                raise LiveError(f"The voice's {name} must be a whole number from 1 (bad) to 5 "
                                f"(excellent), not {value!r}.")
        iid = sess["interaction_id"]
        rater = rater or _anon(session_id)
        turn = next((t for t in self.reader.turns(iid) if t["turn_index"] == turn_index), None)
        if turn is None:
            raise LiveError(f"There is no reply {turn_index} to rate yet.")
        if voice and not reply_spoken(turn):
            raise LiveError(f"Reply {turn_index} was not spoken, so its voice cannot be rated; "
                            "rate its helpfulness instead.")
        rows = []
        base = {"interaction_id": iid, "turn_index": turn_index, "model": "human",
                "prompt_version": HUMAN_RATING_VERSION, "rater": rater, "attempts": 1}
        if helpfulness is not None:
            rows.append({**base, "kind": "human_agent_helpfulness", "score": helpfulness,
                         "parsed_json": json.dumps({"score": helpfulness})})
        if solved is not None:
            rows.append({**base, "kind": "human_solved", "score": int(bool(solved)),
                         "parsed_json": json.dumps({"solved": bool(solved)})})
        for name, value in voice.items():
            rows.append({**base, "kind": f"human_tts_{name}", "score": value,
                         "parsed_json": json.dumps({name: value})})
        self.store.save_human_judgments(rows)

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
        return SessionView(session_id, sess["mode"], sess["agent"], sess["status"], scenario,
                           messages, awaiting, row.get("stop_reason"), turns, self.app.max_turns)
