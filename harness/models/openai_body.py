"""``ChatOpenAI`` with request bodies the OpenAI SDK sends as they are.

Every chat-completion request of ``openai``'s client is first *transformed* against the
request's ``TypedDict`` types (``openai._utils._transform``): each message is walked against
the six message types of the union, a ``response_format`` against its three, the whole body
twice when ``ChatOpenAI`` sends a structured-output request through ``chat.completions.parse``.
That walk renames aliased keys, formats dates and base64 files and dumps pydantic models; the
bodies ``langchain-openai`` builds are already plain JSON (strings, numbers, lists, dicts), so
it leaves them unchanged while costing, with the parse path, about half the client's CPU per
call (issue 44).

:class:`PlainBodyChatOpenAI` hands the SDK those plain fields as ``extra_body``, which it
merges into the body without walking it. What goes on the wire is the same request, key for
key and in the same order: ``model``, ``stream`` and ``service_tier`` stay typed arguments,
``messages`` is given as an empty list (so it keeps its place) that ``extra_body`` replaces, and
the other fields follow in the SDK's order (by name). A structured-output request goes through
``create`` instead of ``parse``, with the header ``parse`` adds; its message gets the
``parsed`` entry (None for a JSON-schema dict) that ``parse`` gives it. Streaming, the
Responses API and a streamed structured output keep ``ChatOpenAI``'s own path.
"""
from __future__ import annotations

from typing import Any

from langchain_openai import ChatOpenAI

#: the typed arguments kept: how the SDK picks the response class, and the fields before messages
TYPED = ("model", "stream", "service_tier")
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
    call = {key: payload[key] for key in (*TYPED, *CLIENT_OPTIONS) if key in payload}
    call["messages"] = []  # keeps the field's place in the body; extra_body gives its value
    fields = {key: value for key, value in payload.items() if key not in call}
    extra = {"messages": payload["messages"], **dict(sorted(fields.items())), **(call.get("extra_body") or {})}
    call["extra_body"] = extra
    if "response_format" in payload:
        call["extra_headers"] = {**PARSE_HEADER, **(call.get("extra_headers") or {})}
    return call


class PlainBodyChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose chat-completion requests skip the SDK's transformation of the body
    (see the module docstring); the requests, replies and messages are the same."""

    def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
        return plain_payload(super()._get_request_payload(input_, stop=stop, **kwargs))

    async def _agenerate(self, messages: Any, stop: list[str] | None = None, run_manager: Any = None,
                         **kwargs: Any) -> Any:
        result = await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
        return _as_parsed(result, {**self.model_kwargs, **kwargs})

    def _generate(self, messages: Any, stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        return _as_parsed(result, {**self.model_kwargs, **kwargs})


def _as_parsed(result: Any, kwargs: dict[str, Any]) -> Any:
    """A structured-output result as ``parse`` returns it: ``parsed`` in each message's
    ``additional_kwargs`` (None: a JSON-schema dict is not parsed into an object)."""
    if "response_format" in kwargs:
        for generation in result.generations:
            generation.message.additional_kwargs = {"parsed": None, **generation.message.additional_kwargs}
    return result
