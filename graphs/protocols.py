"""What the turn loop needs from its collaborators, and the records they return."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence


@dataclass(slots=True)
class LLMCall:
    """One model call: who made it, for what, tokens, latency, error if it failed.

    A call that needed retries is the record of its last attempt (``attempt`` > 1); the failed
    attempts before it are ``earlier_attempts`` (each with its ``error``, the server's
    ``retry_after_s`` and the ``backoff_s`` waited after it), so each one can be stored.
    """

    role: str
    purpose: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cost: float = 0.0
    error: str | None = None
    attempt: int = 1
    retry_after_s: float | None = None
    backoff_s: float | None = None
    earlier_attempts: list["LLMCall"] = field(default_factory=list)
    #: prompt tokens the server reused from its prompt cache (llama.cpp ``cache_n``, OpenAI and
    #: vLLM ``usage.prompt_tokens_details.cached_tokens``); evaluated = input_tokens - this
    cached_tokens: int = 0
    #: milliseconds from the request to the first streamed token; None when the call did not
    #: stream (batch calls do not; a live session's agent reply does)
    ttft_ms: float | None = None
    #: milliseconds of the call during which another request was in flight on the same
    #: endpoint (the harness's own bookkeeping, ``harness.models.traffic``); None: not measured
    contended_ms: float | None = None
    #: milliseconds the call waited for, or gave up to, the agent's requests on its endpoint
    #: (``voice.judging = "yield"``); 0 when it never yielded
    yielded_ms: float | None = None
    #: milliseconds the call waited for a place under its endpoint's rate limits or after a 429
    #: paused the endpoint (``harness.models.rate_limits``); None: not measured
    rate_wait_ms: float | None = None
    #: False when the agent under test reported no token counts (an external agent): its
    #: tokens and cost are stored as "not reported" (NULL), never as 0
    usage_reported: bool = True

    def all_attempts(self) -> list["LLMCall"]:
        """The failed attempts, then this one."""
        return [*self.earlier_attempts, self]


@dataclass(slots=True)
class Reply:
    """A message from the user or the agent. ``text`` None means the user ended the session."""

    text: str | None
    calls: list[LLMCall] = field(default_factory=list)
    extra: dict[str, Any] | None = None


@dataclass(slots=True)
class Judgment:
    """A validated judgment, or a failed one (``status='failed'``, ``value`` None).

    ``raw`` keeps every attempt's raw model output so that a judgment can be audited.
    """

    kind: str
    status: str
    value: Any
    model: str
    prompt_version: str
    reason: str | None = None
    raw: list[str] = field(default_factory=list)
    attempts: int = 1
    error: str | None = None
    parsed: dict[str, Any] | None = None
    calls: list[LLMCall] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the judgment is valid (``status`` is ``ok``), so ``value`` can be used."""
        return self.status == "ok"


@dataclass(slots=True)
class Message:
    """One message of the benchmark-owned conversation history."""

    role: str  # "user" or "agent"
    content: str
    #: an agent under test's trace of this reply (tool calls, retrieved passages): never shown to
    #: the user; the judges see it with ``agent.judge_sees_trace`` (harness.selfscore.trace_judges)
    trace: dict[str, Any] | None = None


@dataclass(slots=True)
class Problem:
    """What the loop knows of the problem of one interaction."""

    interaction_id: str
    question: str
    summary: str | None
    problem_statement: str | None
    reference_answer: str | None = None
    #: the thread's solution the problem statement was extracted from (reference answer, or the
    #: helpers' messages of a real thread); hidden from the agent, shown to the simulated user
    solution: str | None = None
    #: where ``problem_statement`` came from: task, solution, question (docs/selfscore.md)
    problem_source: str | None = None
    #: what the real asker said later in the thread (hidden scenario of the simulated user)
    facts: tuple[str, ...] = ()
    #: how the simulated user behaves (``harness.simuser.personas``): cooperative, vague,
    #: impatient, mistaken, tangential; chosen per run or per task and stored with the interaction
    persona: str = "cooperative"
    #: where the conversation belongs (``run_id``, ``task_id``, ``trial``): the metadata of the
    #: request an agent under test gets (``harness.adapters``)
    context: dict[str, Any] = field(default_factory=dict)
    #: whether ``solution`` is a known fix (a reference answer, a thread's labelled fix turns);
    #: False when it is only every helper message of a real thread without a labelled fix, which
    #: the simulated user's outcome decision must not take for the fix (docs/simcheck.md)
    fix_known: bool = True


class User(Protocol):
    """The user side: an LLM-simulated user, a scripted user, or a live person."""

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        """The user's message of turn ``turn_index`` (1-based) after ``history``; ``text`` None ends the session."""
        ...


AGENT_FAILURE_STOPS = ("agent_error", "bot_error", "bot_timeout", "bot_hung_up")
"""Stop reasons of a conversation the agent under test failed (an ``AgentFailure``); a resume
gives the agent its turn again when the interaction stored the failure (its ``error``)."""


class AgentFailure(Exception):
    """The agent under test failed a turn for good (retries spent, a timeout, a malformed
    response): a result of the agent, not a crash of the harness. The turn loop ends the
    conversation with ``stop_reason`` (``agent_error``; a voice bot's ``bot_error``,
    ``bot_timeout``, ``bot_hung_up``); ``detail`` (kind, status, body excerpt, turn) and the
    failed attempts' ``calls`` are stored with it."""

    def __init__(self, message: str, detail: dict[str, Any] | None = None,
                 calls: Sequence[LLMCall] = (), stop_reason: str = "agent_error"):
        super().__init__(message)
        self.detail = {"error": message, **(detail or {})}
        self.calls = list(calls)
        self.stop_reason = stop_reason


class Agent(Protocol):
    """The help-desk side. An agent with a finite script (a replayed human help-desk worker) may
    also define ``has_reply(problem, history) -> bool``: the turn loop ends the conversation
    (``agent_ended``) when it returns False for the user's next message, which is not stored."""

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        """The agent's reply to the conversation so far (``history`` ends with the user's message)."""
        ...


async def end_conversation(agent: Agent, problem: Problem, stop_reason: str | None) -> None:
    """Tell an agent that keeps something open per conversation (a voice bot's call) that the
    conversation is over; nothing for the others (no ``end_conversation`` method)."""
    end = getattr(agent, "end_conversation", None)
    if end is not None:
        await end(problem.interaction_id, stop_reason)


def agent_has_reply(agent: Agent, problem: Problem, history: Sequence[Message]) -> bool:
    """Whether ``agent`` can answer the next user message (True for an agent without a script)."""
    has_reply = getattr(agent, "has_reply", None)
    return True if has_reply is None else bool(has_reply(problem, history))


class TurnJudges(Protocol):
    """Per-turn judgments of SelfScore."""

    async def user_helpfulness(self, problem: Problem, history: Sequence[Message],
                               first_turn: bool) -> Judgment:
        """How helpful the user's last message is (``first_turn``: the initial question's rubric)."""
        ...

    async def agent_helpfulness(self, problem: Problem, history: Sequence[Message]) -> Judgment:
        """How helpful the agent's last reply is."""
        ...

    async def solved(self, problem: Problem, history: Sequence[Message]) -> Judgment:
        """Whether the conversation so far has solved the problem (``value`` a bool)."""
        ...


class TurnCost(Protocol):
    """Prices one turn from its LLM calls."""

    def turn_cost(self, calls: Sequence[LLMCall]) -> float:
        """The cost of a turn whose LLM calls are ``calls``."""
        ...


class TurnSink(Protocol):
    """Durably records each completed turn (the store's writer behind an adapter)."""

    def save_turn(self, interaction_id: str, turn_index: int, user: Reply, agent: Reply,
                  judgments: Sequence[Judgment], quality: float | None, cost: float,
                  latency_ms: float) -> None:
        """Commit one finished turn: both messages, its judgments, quality, cost and latency."""
        ...
