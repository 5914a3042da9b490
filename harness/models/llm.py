"""Roles to chat models: a :class:`ModelSpec` becomes a ``langchain_openai.ChatOpenAI``.

:class:`RoleClient` is what users, agents and judges call: it bounds the output, measures
latency and tokens and returns an :class:`LLMCall` record with every completion. It is also the
one place that retries failed calls (``harness.models.retry``; the OpenAI client's own retries are off
so that every attempt is visible and stored) and that trips the endpoint's circuit breaker
(``harness.models.circuit``).
"""
from __future__ import annotations

import asyncio
import os
from time import perf_counter
from typing import Any, Callable, NoReturn, Sequence

import httpx2  # the OpenAI SDK's HTTP client
import openai
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables.config import RunnableConfig, ensure_config
from langchain_openai import ChatOpenAI

from graphs.protocols import LLMCall
from harness.config import ConfigError, ModelSpec
from harness.models.circuit import CircuitBreaker, CircuitOpenError, ReliabilityScope, current_scope
from harness.models.openai_body import PlainBodyChatOpenAI
from harness.models.rate_limits import Limits, estimate_tokens, limiter_for
from harness.models.retry import EmptyReplyError, Failure, ModelCallError, RetryPolicy, classify
from harness.models.seeds import seed_for
from harness.models.traffic import on_endpoint


def chat_model_for(spec: ModelSpec, base_url: str, pool_size: int | None = None) -> ChatOpenAI:
    """The ChatOpenAI client of a role at ``base_url`` (a :class:`PlainBodyChatOpenAI`: the
    same requests without the OpenAI SDK's per-request transformation of the body).

    ``pool_size``: the role gets a connection pool of its own that keeps that many idle
    connections open (a batch passes a few per conversation it runs at once). Without it the
    role shares ``langchain-openai``'s default pool, which keeps 100: past that a batch closes
    connections as replies arrive and opens new ones for the next requests, and every request
    scans one pool holding every role's connections.

    Raises:
        ConfigError: when the spec names an API-key variable that is not set.
    """
    api_key = "not-needed"
    if spec.api_key_env:
        api_key = os.environ.get(spec.api_key_env, "")
        if not api_key:
            raise ConfigError(f"Environment variable {spec.api_key_env} (api_key_env of model "
                              f"{spec.model}) is not set. Export it or change api_key_env.")
    pool = {}
    if pool_size:
        limits = httpx2.Limits(max_connections=max(1000, pool_size), max_keepalive_connections=pool_size,
                              keepalive_expiry=5.0)
        pool["http_async_client"] = openai.DefaultAsyncHttpxClient(timeout=spec.timeout_s, limits=limits)
    return PlainBodyChatOpenAI(
        base_url=base_url, model=spec.model, api_key=api_key, temperature=spec.temperature,
        seed=spec.seed, max_tokens=spec.max_tokens, timeout=spec.timeout_s, max_retries=0,  # RoleClient retries
        stream_usage=True,  # token counts also when a live session streams the agent's reply
        **pool,
    )


class RoleClient:
    """One role's model with call accounting, retries and the endpoint's circuit breaker.

    The retry policy and breaker come from the batch's ``harness.models.circuit.reliability_scope``
    (the run's ``RetryConfig``, breakers shared by every role on the same endpoint); outside a
    scope the client uses default settings and a breaker of its own.
    """

    def __init__(self, role: str, spec: ModelSpec, model: BaseChatModel,
                 heal: Callable[[], bool] | None = None):
        self.role = role
        self.spec = spec
        self.model = model
        #: restarts the role's embedded server if it died (``EngineManager.heal``); asked once a
        #: call is refused or cut off, before the retry
        self.heal = heal
        self._own_scope: ReliabilityScope | None = None
        #: the endpoint's limits as this role sets them (``harness.models.rate_limits``)
        self.limits = Limits.of(spec)

    @property
    def model_name(self) -> str:
        """The role's model name (``spec.model``)."""
        return self.spec.model

    @property
    def server(self) -> str:
        """The role's base URL: the server its requests share with every role that names it."""
        return self.spec.base_url or getattr(self.model, "openai_api_base", None) or "embedded"

    @property
    def endpoint(self) -> str:
        """``base_url model`` of this role (the circuit breaker's key)."""
        return f"{self.server} {self.spec.model}"

    def _guards(self) -> tuple[RetryPolicy, CircuitBreaker]:
        scope = current_scope()
        if scope is None:
            scope = self._own_scope = self._own_scope or ReliabilityScope()
        return scope.policy(), scope.breaker(self.endpoint)

    async def invoke(self, messages: Sequence[BaseMessage], purpose: str,
                     **bind: Any) -> tuple[AIMessage, LLMCall]:
        """One model call with optional bound request arguments (``response_format``,
        ``tools``); returns the model's message and the call record.

        Retryable failures (``harness.models.retry.classify``) are retried with backoff; the returned
        record holds the failed attempts as ``earlier_attempts``.

        Raises:
            ModelCallError: the call failed for good (retries exhausted or a non-retryable
                answer); ``exc.llm_call`` is the last attempt's record, ``exc.llm_calls`` all.
            CircuitOpenError: the endpoint's breaker is (or just became) open.
            Exception: an unclassified error (a bug, not the endpoint), with ``llm_call(s)``.
        """
        trial_seed = seed_for(self.role, self.spec.seed, bind.get("seed"))
        if trial_seed is not None:  # a trial after the first samples with its own seed
            bind = {**bind, "seed": trial_seed}
        runnable = self.model.bind(**bind) if bind else self.model
        # a model that never streams (``disable_streaming``: every role but the agent) never
        # reports a first token: no handler to notify of each call's events
        streams = getattr(self.model, "disable_streaming", False) is not True
        policy, breaker = self._guards()
        estimate = estimate_tokens(sum(len(str(m.content)) for m in messages),
                                   int(bind.get("max_tokens") or self.spec.max_tokens))
        earlier: list[LLMCall] = []
        for attempt in range(1, policy.max_attempts + 1):
            breaker.check()
            limiter = limiter_for(self.server, self.limits)
            waited_ms = round(await limiter.acquire(estimate) * 1000, 1)
            started, first, used = perf_counter(), _FirstToken(), None
            try:
                msg, shared = await on_endpoint(
                    self.server, self.role, lambda: runnable.ainvoke(list(messages), _with_handler(first, streams)))
                if not msg.content and not msg.tool_calls:
                    raise EmptyReplyError("the endpoint returned an empty reply")
                usage = msg.usage_metadata or {}
                used = int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0)) if usage else None
            except BaseException as exc:
                limiter.release(estimate, None)
                if not isinstance(exc, Exception):  # cancelled
                    raise
                failure = classify(exc)
                call = LLMCall(self.role, purpose, self.spec.model,
                               latency_ms=(perf_counter() - started) * 1000,
                               error=f"{failure.kind}: {type(exc).__name__}: {exc}"[:500],
                               attempt=attempt, retry_after_s=failure.retry_after_s, rate_wait_ms=waited_ms)
                breaker.attempt_failed(failure)
                if failure.kind in ("refused", "connection") and self.heal is not None:
                    try:
                        if await asyncio.to_thread(self.heal):
                            call.error += " (the embedded server had died; restarted)"
                    except Exception as heal_error:  # the call fails as refused, with the reason
                        call.error += f" (restarting the embedded server failed: {heal_error})"[:600]
                if failure.retryable and attempt < policy.max_attempts and not breaker.is_open:
                    call.backoff_s = policy.delay(attempt, failure.retry_after_s)
                    if failure.kind == "rate_limited":  # every role on the endpoint holds back
                        limiter.pause(call.backoff_s)
                    earlier.append(call)
                    await policy.sleep(call.backoff_s)
                    continue
                call.earlier_attempts = earlier
                self._give_up(exc, failure, call, breaker)
            limiter.release(estimate, used)
            breaker.succeeded()
            tin, tout = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
            cached = int((usage.get("input_token_details") or {}).get("cache_read") or 0)
            call = LLMCall(
                self.role, purpose, self.spec.model, tin, tout, (perf_counter() - started) * 1000,
                cost=(tin * self.spec.input_price_per_mtok + tout * self.spec.output_price_per_mtok) / 1e6,
                attempt=attempt, earlier_attempts=earlier, cached_tokens=min(cached, tin),
                ttft_ms=None if first.at is None else (first.at - started) * 1000,
                contended_ms=shared.contended_ms, yielded_ms=shared.yielded_ms, rate_wait_ms=waited_ms,
            )
            return msg, call
        raise AssertionError("unreachable: the loop returns or raises")

    def _give_up(self, exc: Exception, failure: Failure, call: LLMCall, breaker: CircuitBreaker) -> NoReturn:
        """Raise what a call that failed for good raises (see :meth:`invoke`), ``call`` its record."""
        if failure.kind == "unknown":
            exc.llm_call, exc.llm_calls = call, call.all_attempts()  # type: ignore[attr-defined]
            raise exc
        breaker.call_failed(failure)
        if breaker.is_open:
            raise CircuitOpenError(breaker.endpoint, breaker.open_reason) from exc
        how = (f"after {call.attempt} attempts" if failure.retryable else "not retryable")
        err = ModelCallError(f"{self.role} call to {self.endpoint} failed ({how}): {failure.message}", failure)
        err.llm_call, err.llm_calls = call, call.all_attempts()
        raise err from exc

    async def complete(self, messages: Sequence[BaseMessage], purpose: str,
                       response_format: dict[str, Any] | None = None) -> tuple[str, LLMCall]:
        """Complete ``messages``; returns the text and the call record (see :meth:`invoke`)."""
        msg, call = await (self.invoke(messages, purpose, response_format=response_format)
                           if response_format else self.invoke(messages, purpose))
        text = msg.content if isinstance(msg.content, str) else str(msg.content)
        return text, call


RoleFactory = Callable[[str], RoleClient]


class _FirstToken(AsyncCallbackHandler):
    """Notes when a streamed completion's first token arrives. It does not make a call stream:
    a call streams when the caller streams (a live session's ``graph.astream``), and only then
    does ``on_llm_new_token`` fire."""

    def __init__(self) -> None:
        self.at: float | None = None

    async def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        if self.at is None and token:
            self.at = perf_counter()


def _with_handler(handler: AsyncCallbackHandler, add: bool = True) -> RunnableConfig | None:
    """The current run's config (a LangGraph node's callbacks, which stream its messages) with
    ``handler`` added: a config's callbacks replace the inherited ones, so they are copied.
    None (the call inherits the run's config as it is) when not ``add``."""
    if not add:
        return None
    callbacks = ensure_config().get("callbacks")
    if callbacks is None:
        callbacks = [handler]
    elif isinstance(callbacks, list):
        callbacks = [*callbacks, handler]
    else:  # a callback manager
        callbacks = callbacks.copy()
        callbacks.add_handler(handler, inherit=False)
    return {"callbacks": callbacks}


YES_TOKENS = ("yes",)
NO_TOKENS = ("no",)


def yes_probability(msg: AIMessage) -> tuple[float, str]:
    """P(yes) / (P(yes) + P(no)) of a one-token Yes/No answer, from its first token's
    alternatives (``logprobs.content[0].top_logprobs``, as llama.cpp, vLLM and OpenAI return
    them), and the token the model wrote.

    Without log-probabilities (an endpoint that ignores ``logprobs``) the written word decides:
    1.0 for yes, 0.0 for no.

    Raises:
        ValueError: neither a log-probability for yes or no nor a yes/no word came back.
    """
    import math

    text = (msg.content if isinstance(msg.content, str) else str(msg.content)).strip()
    content = ((msg.response_metadata or {}).get("logprobs") or {}).get("content") or []
    p_yes = p_no = 0.0
    if content:
        first = content[0]
        alternatives = first.get("top_logprobs") or [first]
        for alt in alternatives:
            word = str(alt.get("token", "")).strip().lower()
            p = math.exp(float(alt.get("logprob", -1e9)))
            if word in YES_TOKENS:
                p_yes += p
            elif word in NO_TOKENS:
                p_no += p
    if p_yes + p_no > 0:
        return p_yes / (p_yes + p_no), text
    word = text.split()[0].strip(".,!:;\"'").lower() if text else ""
    if word in YES_TOKENS:
        return 1.0, text
    if word in NO_TOKENS:
        return 0.0, text
    raise ValueError(f"expected a Yes or No answer, got {text[:60]!r}")


async def ask_yes_no(client: "RoleClient", messages: Sequence[BaseMessage],
                     purpose: str) -> tuple[float, str, LLMCall]:
    """One constrained Yes/No question: a single generated token with its top alternatives.

    Returns:
        (P(yes) among yes/no, the token written, the call record).
    """
    # temperature 0: the probabilities are read, never sampled (a role's own temperature, e.g.
    # the simulated user's 0.7, would make the written token and a logprob-less verdict random)
    msg, call = await client.invoke(messages, purpose, max_tokens=1, logprobs=True, top_logprobs=10,
                                    temperature=0.0)
    p, token = yes_probability(msg)
    return p, token, call
