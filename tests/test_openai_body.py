"""``PlainBodyChatOpenAI`` sends what ``ChatOpenAI`` sends, byte for byte, and returns the same
messages (harness/models/openai_body.py, issue 44): every kind of request the roles make,
captured at the HTTP transport of both clients."""
import asyncio
import json

import httpx2
import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_openai import ChatOpenAI
from openai.types.chat import ChatCompletion

from harness.config import ModelSpec
from harness.models.llm import chat_model_for
from harness.models.openai_body import PlainBodyChatOpenAI, as_dumped, plain_payload
from harness.selfscore.judges import HelpfulnessVerdict, response_format

URL = "http://fake.test/v1"
COMPLETION = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                           "message": {"role": "assistant", "content": "{\"reason\": \"ok\", \"score\": 7}"}}],
              "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
                        "prompt_tokens_details": {"cached_tokens": 4}}}


#: a llama.cpp-style reply to a Yes/No question: no id, no system_fingerprint, log-probabilities
#: without ``bytes``, an extra key of the server's own; read as JSON it must give the same message
YES_NO = {"object": "chat.completion", "created": 0, "model": "m", "timings": {"predicted_ms": 3.5},
          "choices": [{"index": 0, "finish_reason": "length",
                       "message": {"role": "assistant", "content": "Yes"},
                       "logprobs": {"content": [{"token": "Yes", "logprob": -0.1,
                                                 "top_logprobs": [{"token": "Yes", "logprob": -0.1},
                                                                  {"token": "No", "logprob": -2.4}]}]}}],
          "usage": {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31}}


def chunks() -> bytes:
    base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": w}, "finish_reason": None}]}
              for w in ("Step", " 1.")]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({**base, "choices": [], "usage": COMPLETION["usage"]})
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"


def capturing(cls, seen: list):
    """A ``cls`` client whose transport records each request and answers it."""
    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append((request.method, str(request.url), list(request.headers.multi_items()), request.content))
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, content=chunks(), headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=YES_NO if json.loads(request.content).get("logprobs") else COMPLETION)
    return cls(base_url=URL, model="judge-fake", api_key="not-needed", temperature=0.0, seed=3,
               max_tokens=64, timeout=30, max_retries=0, stream_usage=True,
               http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(answer)),
               http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))


MESSAGES = [SystemMessage("You judge help-desk replies."), HumanMessage("My wifi drops. \u00e9\u00e8 \u2713"),
            AIMessage("", tool_calls=[{"id": "c1", "name": "ping", "args": {"host": "8.8.8.8"}}]),
            ToolMessage("64 bytes from 8.8.8.8", tool_call_id="c1"),
            AIMessage("Step 1: toggle the adapter."), HumanMessage("rate the latest AGENT message")]
TOOL = {"type": "function", "function": {"name": "ping", "description": "Ping a host.",
                                         "parameters": {"type": "object", "properties": {"host": {"type": "string"}}}}}
CASES = {
    "plain": {},
    "structured": {"response_format": response_format(HelpfulnessVerdict)},
    "yes-no": {"max_tokens": 1, "logprobs": True, "top_logprobs": 10, "temperature": 0.0},
    "trial-seed": {"seed": 12345, "temperature": 0.8},
    "tools": {"tools": [TOOL], "tool_choice": "auto"},
    "json-object": {"response_format": {"type": "json_object"}},
}


async def both(case: str, stream: bool = False):
    """(requests, messages) of ChatOpenAI and of PlainBodyChatOpenAI for one case."""
    out = []
    for cls in (ChatOpenAI, PlainBodyChatOpenAI):
        seen: list = []
        runnable = capturing(cls, seen).bind(**CASES[case])
        if stream:
            parts = [c async for c in runnable.astream(MESSAGES)]
            message = parts[0]
            for part in parts[1:]:
                message += part
        else:
            message = await runnable.ainvoke(MESSAGES)
        out.append((seen, message))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_request_and_message_as_chatopenai(case):
    (sent, msg), (plain_sent, plain_msg) = asyncio.run(both(case))
    assert len(sent) == len(plain_sent) == 1
    assert plain_sent == sent  # method, URL, headers in order and body byte for byte
    assert plain_msg.content == msg.content and plain_msg.additional_kwargs == msg.additional_kwargs
    assert plain_msg.usage_metadata == msg.usage_metadata
    assert plain_msg.response_metadata == msg.response_metadata
    assert plain_msg.tool_calls == msg.tool_calls


@pytest.mark.parametrize("case", ["plain", "tools"])
def test_a_streamed_reply_is_the_same_request_and_message(case):
    (sent, msg), (plain_sent, plain_msg) = asyncio.run(both(case, stream=True))
    assert plain_sent == sent and json.loads(sent[0][3])["stream"] is True
    assert plain_msg.content == msg.content == "Step 1." and plain_msg.usage_metadata == msg.usage_metadata


def test_sync_invoke_is_the_same_request():
    requests = []
    for cls in (ChatOpenAI, PlainBodyChatOpenAI):
        seen: list = []
        capturing(cls, seen).bind(**CASES["structured"]).invoke(MESSAGES)
        requests.append(seen)
    assert requests[0] == requests[1] and len(requests[0]) == 1


def test_the_body_fields_go_as_extra_body_in_the_sdks_order():
    payload = {"model": "m", "stream": False, "temperature": 0.0, "seed": 1, "messages": [{"role": "user", "content": "x"}],
               "max_completion_tokens": 5, "response_format": {"type": "json_object"}, "extra_body": {"top_k": 4}}
    call = plain_payload(payload)
    # nothing typed for the SDK to walk: every body field goes as extra_body, in the SDK's order
    assert call["messages"] is openai.omit and call["model"] is openai.omit and "stream" not in call
    assert list(call["extra_body"]) == ["model", "stream", "messages", "max_completion_tokens", "response_format",
                                        "seed", "temperature", "top_k"]
    assert call["extra_headers"] == {"X-Stainless-Helper-Method": "chat.completions.parse"}
    # the Responses API and a streamed structured output keep ChatOpenAI's own path
    assert plain_payload({"model": "m", "input": []}) == {"model": "m", "input": []}
    streamed = {"model": "m", "stream": True, "messages": [], "response_format": {"type": "json_object"}}
    assert plain_payload(streamed) is streamed
    # a streamed request keeps the typed fields the SDK streams by, in front
    call = plain_payload({"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}], "seed": 1})
    assert call["model"] == "m" and call["stream"] is True and call["messages"] == []
    assert list(call["extra_body"]) == ["model", "stream", "messages", "seed"]


def test_a_reply_read_as_json_is_the_dump_of_the_typed_reply():
    typed = ChatCompletion.model_validate(YES_NO | {"id": "x"})
    assert as_dumped(YES_NO | {"id": "x"}) == typed.model_dump(warnings=False)


def test_roles_get_the_plain_body_client():
    spec = ModelSpec(model="judge-fake", base_url=URL)
    assert isinstance(chat_model_for(spec, URL), PlainBodyChatOpenAI)


def test_a_batch_gives_each_role_a_pool_of_its_own_sized_to_its_conversations():
    from harness.compose import POOL_PER_CONVERSATION, Runtime
    from harness.config import Config

    spec = ModelSpec(model="judge-fake", base_url=URL)
    own, shared = chat_model_for(spec, URL, pool_size=512), chat_model_for(spec, URL)
    pool = own.root_async_client._client._transport._pool
    assert pool._max_keepalive_connections == 512 and pool._max_connections >= 512
    assert own.root_async_client._client is not chat_model_for(spec, URL, pool_size=512).root_async_client._client
    assert shared.root_async_client._client is chat_model_for(spec, URL).root_async_client._client  # langchain's shared pool
    config = Config()
    config.run.concurrency = 200
    config.roles["judge"] = spec
    with Runtime(config) as runtime:
        judge = runtime._default_chat_model("judge", spec)
    assert judge.root_async_client._client._transport._pool._max_keepalive_connections == POOL_PER_CONVERSATION * 200
