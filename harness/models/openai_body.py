"""``ChatOpenAI`` with request bodies the OpenAI SDK sends as they are, and replies read as JSON.

Every chat-completion request of ``openai``'s client is first *transformed* against the
request's ``TypedDict`` types (``openai._utils._transform``): each message is walked against
the six message types of the union, a ``response_format`` against its three, the model name
against a ``Literal`` of every OpenAI model (hashed anew on each lookup), the whole body twice
when ``ChatOpenAI`` sends a structured-output request through ``chat.completions.parse``. That
walk renames aliased keys, formats dates and base64 files and dumps pydantic models; the bodies
``langchain-openai`` builds are already plain JSON (strings, numbers, lists, dicts), so it leaves
them unchanged while costing, with the parse path, about half the client's CPU per call
(issue 44). Each reply is then built into the SDK's pydantic ``ChatCompletion``, dumped back to a
dict by ``ChatOpenAI`` and turned into a message in a worker thread.

:class:`PlainBodyChatOpenAI` hands the SDK the body fields as ``extra_body``, which it merges
into the body without walking it, and reads a reply's JSON as the dict that ``ChatOpenAI`` would
have dumped (:func:`as_dumped`: the SDK's declared fields that the server left out set to None)
on the event loop. What goes on the wire is the same request, key for key and in the same
order (the SDK's: ``model``, ``stream``, ``service_tier``, ``messages``, then the others by
name); the message is the same, ``parsed`` (None for a JSON-schema dict, as ``parse`` gives it)
and ``refusal`` included. A structured-output request goes through ``create`` with the header
``parse`` adds. Streaming, the Responses API and a streamed structured output keep
``ChatOpenAI``'s own path. ``tests/test_openai_body.py`` compares both clients request by
request and message by message; ``langchain-openai`` is pinned (pyproject) because the error
handling reuses its private helpers.
"""
from __future__ import annotations

import json
import typing
from functools import lru_cache
from typing import Any

import openai
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models.base import (_add_gateway_metadata, _handle_openai_api_error,
                                               _handle_openai_bad_request)
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

#: the typed arguments kept for a streamed request: how the SDK picks the response class
TYPED = ("model", "stream", "service_tier")
#: the SDK's order of the body's first fields (the others follow by name)
LEADING = ("model", "stream", "service_tier", "messages")
#: arguments of ``create`` that are options of the client, not fields of the body
CLIENT_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")
PARSE_HEADER = {"X-Stainless-Helper-Method": "chat.completions.parse"}


def plain_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """``ChatOpenAI``'s chat-completion ``payload`` (the keyword arguments of
    ``chat.completions.create`` or ``parse``) rewritten so that the SDK merges the body fields
    without transforming them, for ``create``. A payload without messages (the Responses API)
    or a streamed structured output is returned unchanged."""
    if "messages" not in payload or ("response_format" in payload and payload.get("stream")):
        return payload
    call = {key: payload[key] for key in CLIENT_OPTIONS if key in payload}
    fields = {key: value for key, value in payload.items() if key not in call}
    ordered = {key: fields.pop(key) for key in LEADING if key in fields}
    body = {**ordered, **dict(sorted(fields.items())), **(call.get("extra_body") or {})}
    if payload.get("stream"):  # the SDK must know it streams: the typed fields stay in front
        call.update({key: body[key] for key in TYPED if key in body}, messages=[])
    else:  # nothing typed: the SDK has nothing to walk
        call.update(model=openai.omit, messages=openai.omit)
    call["extra_body"] = body
    if "response_format" in payload:
        call["extra_headers"] = {**PARSE_HEADER, **(call.get("extra_headers") or {})}
    return call


@lru_cache(maxsize=None)
def _declared(model: type[BaseModel]) -> tuple[tuple[str, type[BaseModel] | None, bool], ...]:
    """(name, nested model or None, is a list of it) of each field ``model`` declares."""
    out = []
    for name, info in model.model_fields.items():
        nested, many, kind = None, False, info.annotation
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if typing.get_origin(kind) is typing.Union and len(args) == 1:
            kind = args[0]
        if typing.get_origin(kind) is list and typing.get_args(kind):
            kind, many = typing.get_args(kind)[0], True
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            nested = kind
        out.append((name, nested, many))
    return tuple(out)


def as_dumped(data: Any, model: type[BaseModel] = ChatCompletion) -> Any:
    """A reply's JSON as ``model.construct``'s ``model_dump`` gives it: every field ``model`` (and
    the models nested in it, through optional and list fields) declares, None where the server
    left it out, the server's extra keys kept, in the model's order."""
    if not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    for name, nested, many in _declared(model):
        value = data.get(name)
        if nested is not None and value is not None:
            value = [as_dumped(v, nested) for v in value] if many and isinstance(value, list) \
                else value if many else as_dumped(value, nested)
        out[name] = value
    out.update((key, value) for key, value in data.items() if key not in out)
    return out


class PlainBodyChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose chat-completion requests skip the SDK's transformation of the body
    and whose replies are read as JSON on the event loop (see the module docstring); the
    requests, replies and messages are the same."""

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
        return plain_payload(super()._get_request_payload(input_, stop=stop, **kwargs))

    async def _agenerate(self, messages: Any, stop: list[str] | None = None, run_manager: Any = None,
                         **kwargs: Any) -> Any:
        structured = "response_format" in {**self.model_kwargs, **kwargs}
        payload = self._get_request_payload(messages, stop=stop, **kwargs)
        if payload.get("model") is not openai.omit:  # not rewritten: ChatOpenAI's own path
            result = await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
            return _as_parsed(result, structured)
        raw = None
        try:
            raw = await self.async_client.with_raw_response.create(**payload)
            response = as_dumped(json.loads(raw.http_response.content))
        except openai.BadRequestError as e:
            _handle_openai_bad_request(e)
        except openai.APIError as e:
            _handle_openai_api_error(e)
        except Exception as e:
            if raw is not None:
                e.response = raw.http_response  # type: ignore[attr-defined]
            raise
        info: dict[str, Any] = {"headers": dict(raw.headers)} if self.include_response_headers else {}
        _add_gateway_metadata(info, raw)
        result = self._create_chat_result(response, info)
        if result.generations and response.get("choices"):  # what a typed reply adds
            result.generations[0].message.additional_kwargs["refusal"] = \
                (response["choices"][0].get("message") or {}).get("refusal")
        return _as_parsed(result, structured)

    def _generate(self, messages: Any, stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        return _as_parsed(result, "response_format" in {**self.model_kwargs, **kwargs})


def _as_parsed(result: Any, structured: bool) -> Any:
    """A structured-output result (``structured``: the call asked for a ``response_format``) as
    ``parse`` returns it: ``parsed`` in each message's ``additional_kwargs`` (None: a JSON-schema
    dict is not parsed into an object)."""
    if structured:
        for generation in result.generations:
            generation.message.additional_kwargs = {"parsed": None, **generation.message.additional_kwargs}
    return result
