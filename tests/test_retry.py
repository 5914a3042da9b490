"""Retry policy, error classification and the circuit breaker, through a real ChatOpenAI client
talking HTTP to the fault-injecting proxy in front of the fake OpenAI server."""
import asyncio
import random
from email.utils import formatdate
from time import time

import pytest
from langchain_core.messages import HumanMessage

from harness.config import ModelSpec, RetryConfig
from harness.models.circuit import CircuitBreaker, CircuitOpenError, ReliabilityScope, reliability_scope
from harness.models.llm import RoleClient, chat_model_for
from harness.models.retry import Failure, ModelCallError, RetryPolicy, classify, parse_retry_after
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.fault_proxy import FaultProxy


@pytest.fixture
def upstream():
    with FakeOpenAIServer(default_responder()) as server:
        yield server


def client_at(url: str, timeout_s: float = 5.0) -> RoleClient:
    spec = ModelSpec(base_url=url, model="user-fake", timeout_s=timeout_s)
    return RoleClient("user", spec, chat_model_for(spec, url))


class Sleeps:
    """An injected sleep: records what was asked and returns at once."""

    def __init__(self):
        self.asked: list[float] = []

    async def __call__(self, seconds):
        self.asked.append(seconds)


def call(client, scope):
    async def go():
        with reliability_scope(scope):
            return await client.complete([HumanMessage("hello")], "test")
    return asyncio.run(go())


def scope_of(sleeps=None, **retry):
    return ReliabilityScope(RetryConfig(**retry), {"sleep": sleeps or Sleeps(), "rng": random.Random(1)})


@pytest.mark.parametrize("kind,expected", [
    ("429", "rate_limited"), ("500", "server_error"), ("502", "server_error"), ("503", "server_error"),
    ("truncated", "connection"), ("malformed", "malformed"), ("empty_choices", "empty"),
    ("empty_content", "empty"), ("timeout", "timeout"),
])
def test_each_injected_fault_is_classified_retried_and_recorded(upstream, kind, expected):
    with FaultProxy(upstream.base_url, fault_for=lambda body: None, timeout_sleep_s=1.8) as proxy:
        proxy.fault_for = lambda body, n=iter(range(2)): kind if next(n, None) is not None else None
        sleeps = Sleeps()
        text, record = call(client_at(proxy.base_url, timeout_s=1.5), scope_of(sleeps, max_attempts=4))
    assert text == "I tried that and looked at the wifi again."
    assert proxy.injected[kind] == 2 and record.attempt == 3 and len(sleeps.asked) == 2
    assert [a.attempt for a in record.all_attempts()] == [1, 2, 3]
    assert all(a.error.startswith(expected + ":") for a in record.earlier_attempts)
    assert record.error is None and record.output_tokens > 0
    assert [a.backoff_s for a in record.earlier_attempts] == sleeps.asked


def test_retry_after_seconds_and_http_date_are_honoured_and_capped(upstream):
    with FaultProxy(upstream.base_url, retry_after="7") as proxy:
        seen = iter(range(1))
        proxy.fault_for = lambda body: "429" if next(seen, None) is not None else None
        sleeps = Sleeps()
        _, record = call(client_at(proxy.base_url), scope_of(sleeps, max_s=30))
        assert sleeps.asked == [7.0] and record.earlier_attempts[0].retry_after_s == 7.0

        proxy.retry_after = formatdate(time() + 20, usegmt=True)
        seen = iter(range(1))
        proxy.fault_for = lambda body: "429" if next(seen, None) is not None else None
        sleeps = Sleeps()
        call(client_at(proxy.base_url), scope_of(sleeps, max_s=30))
        assert 17.0 <= sleeps.asked[0] <= 20.0

        seen = iter(range(1))
        proxy.fault_for = lambda body: "429" if next(seen, None) is not None else None
        proxy.retry_after = "120"
        sleeps = Sleeps()
        call(client_at(proxy.base_url), scope_of(sleeps, max_s=2.5))
        assert sleeps.asked == [2.5]


@pytest.mark.parametrize("status,fix", [("401", "api_key_env"), ("404", "base_url"), ("400", "response_format")])
def test_client_errors_are_not_retried_and_name_the_fix(upstream, status, fix):
    with FaultProxy(upstream.base_url, rate=1.0, mix={status: 1}) as proxy:
        sleeps = Sleeps()
        with pytest.raises(ModelCallError) as info:
            call(client_at(proxy.base_url), scope_of(sleeps))
    assert proxy.requests == 1 and sleeps.asked == []
    assert "not retryable" in str(info.value) and fix in str(info.value) and f"HTTP {status}" in str(info.value)
    assert len(info.value.llm_calls) == 1 and info.value.llm_call.error.startswith("client_error")


def test_exhausted_retries_raise_with_every_attempt_attached(upstream):
    with FaultProxy(upstream.base_url, rate=1.0, mix={"503": 1}) as proxy:
        with pytest.raises(ModelCallError) as info:
            call(client_at(proxy.base_url), scope_of(max_attempts=3, breaker_failures=10))
    assert proxy.requests == 3 and "after 3 attempts" in str(info.value)
    assert [c.attempt for c in info.value.llm_calls] == [1, 2, 3]
    assert info.value.llm_call.earlier_attempts == info.value.llm_calls[:2]


def test_breaker_opens_after_consecutive_failed_calls_and_then_refuses_without_calling(upstream):
    with FaultProxy(upstream.base_url, rate=1.0, mix={"500": 1}) as proxy:
        scope = scope_of(max_attempts=2, breaker_failures=3)
        client = client_at(proxy.base_url)
        for _ in range(2):
            with pytest.raises(ModelCallError):
                call(client, scope)
        with pytest.raises(CircuitOpenError) as info:
            call(client, scope)
        assert proxy.requests == 6
        assert proxy.base_url in str(info.value) and "3 calls in a row" in str(info.value)
        with pytest.raises(CircuitOpenError):
            call(client, scope)
        assert proxy.requests == 6  # an open breaker makes no request


def test_a_success_resets_the_breaker(upstream):
    with FaultProxy(upstream.base_url, rate=1.0, mix={"500": 1}) as proxy:
        scope = scope_of(max_attempts=1, breaker_failures=2)
        client = client_at(proxy.base_url)
        with pytest.raises(ModelCallError):
            call(client, scope)
        proxy.rate = 0.0
        call(client, scope)
        proxy.rate = 1.0
        with pytest.raises(ModelCallError):
            call(client, scope)  # one failure since the success: still closed
        assert not scope.breaker(client.endpoint).is_open


def test_breaker_opens_when_the_endpoint_refuses_connections_long_enough():
    import socket
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens here: connections are refused
    sleeps = []

    async def real_sleep(s):
        sleeps.append(s)
        await asyncio.sleep(s)
    scope = ReliabilityScope(RetryConfig(max_attempts=50, base_s=0.02, max_s=0.05, breaker_refused_s=0.3),
                             {"sleep": real_sleep})
    with pytest.raises(CircuitOpenError) as info:
        call(client_at(f"http://127.0.0.1:{port}/v1"), scope)
    assert "refused connections" in str(info.value) and 3 <= len(sleeps) < 49


def test_backoff_is_exponential_with_full_jitter_and_capped():
    policy = RetryPolicy(max_attempts=8, base_s=1.0, max_s=10.0, rng=random.Random(3))
    waits = [[policy.delay(a) for _ in range(300)] for a in range(1, 7)]
    for attempt, ws in enumerate(waits, 1):
        ceiling = min(10.0, 2 ** (attempt - 1))
        assert all(0 <= w <= ceiling for w in ws)
        assert max(ws) > 0.9 * ceiling and min(ws) < 0.1 * ceiling  # spread over the whole range
    assert RetryPolicy(base_s=1.0, max_s=10.0, jitter=False).delay(3) == 4.0
    assert RetryPolicy(base_s=1.0, max_s=10.0, jitter=False).delay(9) == 10.0
    assert RetryPolicy(max_s=10.0).delay(1, retry_after_s=3.0) == 3.0


def test_parse_retry_after():
    assert parse_retry_after("5") == 5.0 and parse_retry_after("0.25") == 0.25
    assert parse_retry_after("-3") == 0.0 and parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after(formatdate(1000.0 + 30, usegmt=True), now=1000.0) == 30.0
    assert parse_retry_after(formatdate(1000.0 - 30, usegmt=True), now=1000.0) == 0.0


def test_unclassified_errors_are_bugs_not_endpoint_failures():
    f = classify(KeyError("x"))
    assert f == Failure("unknown", False, "KeyError: 'x'") and not f.endpoint_failure
    assert classify(ConnectionRefusedError()).kind == "refused"
    assert classify(TimeoutError()).kind == "timeout"
    breaker = CircuitBreaker("e", failures=1)
    breaker.call_failed(f)
    assert not breaker.is_open


def test_time_to_first_token_is_recorded_when_the_caller_streams_and_only_then(upstream):
    """A live session streams the agent's reply through ``graph.astream(stream_mode="messages")``:
    the call record gets the time to the first token, and the stream still reaches the caller. A
    plain call (a batch) does not stream and has none."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    client = client_at(upstream.base_url)

    class State(TypedDict, total=False):
        calls: list

    async def node(state: State) -> State:
        _, record = await client.invoke([HumanMessage("My printer is offline.")], "agent:reply")
        return {"calls": [record]}

    builder = StateGraph(State)
    builder.add_node("reply", node)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile()

    async def streamed():
        chunks, final = [], None
        async for mode, chunk in graph.astream({}, stream_mode=["messages", "values"]):
            if mode == "messages":
                chunks.append(chunk[0].content)
            else:
                final = chunk
        return chunks, final["calls"][0]

    chunks, record = asyncio.run(streamed())
    assert len([c for c in chunks if c]) > 1          # the reply still streams to the caller
    assert upstream.requests[-1].get("stream") is True
    assert record.ttft_ms is not None and 0 < record.ttft_ms <= record.latency_ms
    assert record.output_tokens > 0                   # usage of a streamed call is counted too

    _, plain = asyncio.run(client.invoke([HumanMessage("My printer is offline.")], "agent:reply"))
    assert not upstream.requests[-1].get("stream") and plain.ttft_ms is None
