"""What every adapter of a team's own agent shares: the turn's request, a per-turn timeout,
retries with backoff (connection errors, timeouts, 429 and 5xx, honouring ``Retry-After``; none
on other 4xx or a malformed response), and the reply with the agent's own trace, usage and
latency as the store keeps it. A failure that outlasts the retries is an
:class:`graphs.protocols.AgentFailure`: the conversation ends with stop reason ``agent_error``.

An adapter subclasses :class:`ExternalAgent` and implements :meth:`ExternalAgent.send` (one
attempt: the request in, an :class:`~harness.adapters.contract.AgentResponse` out, or
:class:`AttemptError`).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Sequence

from graphs.protocols import AgentFailure, LLMCall, Message, Problem, Reply
from harness.adapters.contract import CONTRACT_VERSION, AgentResponse, ContractError, build_request
from harness.models.retry import RetryPolicy, classify

NOT_REPORTED = "not reported"
EXCERPT_CHARS = 300


class AttemptError(Exception):
    """One failed attempt: what failed, whether another attempt may help, the HTTP status and
    the server's ``Retry-After`` where there was one."""

    def __init__(self, message: str, retryable: bool, status: int | None = None,
                 retry_after_s: float | None = None, kind: str = "error", body: str | None = None):
        super().__init__(message)
        self.retryable, self.status, self.retry_after_s, self.kind = retryable, status, retry_after_s, kind
        self.body = None if body is None else body[:EXCERPT_CHARS]


def status_error(status: int, body: str, retry_after_s: float | None = None) -> AttemptError:
    """The attempt error of an HTTP status: 429 and 5xx retryable, other 4xx not."""
    retryable = status == 429 or status >= 500
    kind = "rate_limited" if status == 429 else "server_error" if status >= 500 else "client_error"
    return AttemptError(f"HTTP {status}: {body[:EXCERPT_CHARS]!r}", retryable, status, retry_after_s, kind, body)


def attempt_error(exc: BaseException) -> AttemptError:
    """Any exception of one attempt as an :class:`AttemptError` (timeouts and connection errors
    retryable; a contract violation not; others as ``harness.models.retry.classify`` sorts them)."""
    if isinstance(exc, AttemptError):
        return exc
    if isinstance(exc, ContractError):
        return AttemptError(f"malformed response: {exc}", False, kind="malformed")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return AttemptError("timed out", True, kind="timeout")
    failure = classify(exc)
    return AttemptError(failure.message, failure.retryable, failure.status, failure.retry_after_s, failure.kind)


@dataclass(slots=True)
class Sent:
    """One successful attempt: the response, and the time to its first token where it streamed."""

    response: AgentResponse
    ttft_ms: float | None = None


class ExternalAgent:
    """The ``Agent`` protocol over an adapter's :meth:`send`.

    Args:
        kind: the adapter (``http``, ``python``, ...), stored with every reply.
        name: the agent's name (run names, the ``model`` of its ``llm_calls`` rows).
        timeout_s: each attempt's limit.
        policy: attempts and backoff (``retry`` section).
        prices: input and output price per million tokens (the agent role's), used for a cost
            when the agent reports tokens but no cost.
    """

    kind = "external"

    def __init__(self, name: str, timeout_s: float = 120.0, policy: RetryPolicy | None = None,
                 prices: tuple[float, float] = (0.0, 0.0)):
        self.name, self.timeout_s = name, timeout_s
        self.policy = policy or RetryPolicy()
        self.prices = prices

    async def send(self, request: dict[str, Any], problem: Problem) -> Sent:
        """One attempt at the turn (adapters implement it).

        Raises:
            AttemptError: or any exception, sorted by :func:`attempt_error`."""
        raise NotImplementedError

    def request(self, problem: Problem, history: Sequence[Message]) -> dict[str, Any]:
        """The contract's request of this turn (``turn`` counts the user's messages)."""
        turn = sum(1 for m in history if m.role == "user")
        meta = {"run_id": problem.context.get("run_id"), "task_id": problem.context.get("task_id"),
                "trial": problem.context.get("trial"), "persona": problem.persona}
        return build_request(problem.interaction_id, turn, history, meta)

    async def respond(self, problem: Problem, history: Sequence[Message],
                      request: dict[str, Any] | None = None) -> Reply:
        """The agent's reply to the turn, after retries; raises :class:`AgentFailure` when none came.

        ``request`` replaces the turn's request (:meth:`request`): a benchmark that extends the
        contract (NoisyToolBench's tools and tool results) builds its own."""
        request = request if request is not None else self.request(problem, history)
        failed: list[LLMCall] = []
        for attempt in range(1, self.policy.max_attempts + 1):
            started = perf_counter()
            try:
                sent = await asyncio.wait_for(self.send(request, problem), self.timeout_s)
            except Exception as exc:  # noqa: BLE001 - every failure of the agent is sorted and recorded
                error = attempt_error(exc)
                if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
                    error = AttemptError(f"no reply within {self.timeout_s:g} s (agent.timeout_s)", True, kind="timeout")
                call = self._call(perf_counter() - started, attempt, error=error)
                last = attempt == self.policy.max_attempts or not error.retryable
                if not last:
                    call.backoff_s = self.policy.delay(attempt, error.retry_after_s)
                failed.append(call)
                if last:
                    raise self._failure(error, request, failed) from exc
                await self.policy.sleep(call.backoff_s)
                continue
            return self._reply(sent, perf_counter() - started, attempt, failed)
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(self, seconds: float, attempt: int, error: AttemptError | None = None,
              sent: Sent | None = None) -> LLMCall:
        usage = sent.response.usage if sent else None
        call = LLMCall("agent", f"agent:{self.kind}", self.name, latency_ms=seconds * 1000.0,
                       attempt=attempt, usage_reported=usage is not None,
                       error=None if error is None else f"{error.kind}: {error}",
                       retry_after_s=None if error is None else error.retry_after_s,
                       ttft_ms=sent.ttft_ms if sent else None)
        if usage:
            call.input_tokens = int(usage.get("input_tokens") or 0)
            call.output_tokens = int(usage.get("output_tokens") or 0)
            reported = usage.get("cost")
            call.cost = float(reported) if reported is not None else (
                call.input_tokens * self.prices[0] + call.output_tokens * self.prices[1]) / 1e6
        return call

    def _reply(self, sent: Sent, seconds: float, attempt: int, failed: list[LLMCall]) -> Reply:
        call = self._call(seconds, attempt, sent=sent)
        call.earlier_attempts = failed
        r = sent.response
        extra = {"adapter": self.kind, "agent": self.name, "contract_version": CONTRACT_VERSION,
                 "messages": r.messages, "n_messages": len(r.messages), "end": r.end,
                 "usage": r.usage if r.usage is not None else NOT_REPORTED, "trace": r.trace,
                 "latency_ms": round(call.latency_ms, 1), "ttft_ms": sent.ttft_ms, "attempts": attempt}
        if r.tool_calls:
            extra["tool_calls"] = r.tool_calls
        return Reply(r.text, [call], extra)

    def _failure(self, error: AttemptError, request: dict, failed: list[LLMCall]) -> AgentFailure:
        detail = {"adapter": self.kind, "agent": self.name, "kind": error.kind, "status": error.status,
                  "body": error.body, "turn": request["turn"], "attempts": len(failed),
                  "user_message": request["message"]}
        return AgentFailure(f"agent {self.name} ({self.kind}) failed turn {request['turn']} after "
                            f"{len(failed)} attempt(s): {error.kind}: {error}", detail, failed)

    async def aclose(self) -> None:
        """Release the adapter's connections (adapters with a client override it)."""
