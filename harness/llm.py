"""Roles to chat models: a :class:`ModelSpec` becomes a ``langchain_openai.ChatOpenAI``.

:class:`RoleClient` is what users, agents and judges call: it bounds the output, measures
latency and tokens and returns an :class:`LLMCall` record with every completion.
"""
from __future__ import annotations

import os
from time import perf_counter
from typing import Any, Callable, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_openai import ChatOpenAI

from graphs.protocols import LLMCall
from harness.config import ConfigError, ModelSpec


def chat_model_for(spec: ModelSpec, base_url: str) -> ChatOpenAI:
    """The ChatOpenAI client of a role at ``base_url``.

    Raises:
        ConfigError: when the spec names an API-key variable that is not set.
    """
    api_key = "not-needed"
    if spec.api_key_env:
        api_key = os.environ.get(spec.api_key_env, "")
        if not api_key:
            raise ConfigError(f"Environment variable {spec.api_key_env} (api_key_env of model "
                              f"{spec.model}) is not set. Export it or change api_key_env.")
    return ChatOpenAI(
        base_url=base_url, model=spec.model, api_key=api_key, temperature=spec.temperature,
        seed=spec.seed, max_tokens=spec.max_tokens, timeout=spec.timeout_s, max_retries=2,
        stream_usage=True,  # token counts also when a live session streams the agent's reply
    )


class RoleClient:
    """One role's model with call accounting."""

    def __init__(self, role: str, spec: ModelSpec, model: BaseChatModel):
        self.role = role
        self.spec = spec
        self.model = model

    @property
    def model_name(self) -> str:
        return self.spec.model

    async def invoke(self, messages: Sequence[BaseMessage], purpose: str,
                     **bind: Any) -> tuple[AIMessage, LLMCall]:
        """One model call with optional bound request arguments (``response_format``,
        ``tools``); returns the model's message and the call record.

        Raises whatever the client raises after its own retries; the exception carries the
        failed call record as ``exc.llm_call`` so callers that record failures can keep it.
        """
        runnable = self.model.bind(**bind) if bind else self.model
        started = perf_counter()
        try:
            msg: AIMessage = await runnable.ainvoke(list(messages))
        except Exception as exc:
            exc.llm_call = LLMCall(self.role, purpose, self.spec.model,
                                   latency_ms=(perf_counter() - started) * 1000,
                                   error=f"{type(exc).__name__}: {exc}"[:500])
            raise
        usage = msg.usage_metadata or {}
        tin, tout = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
        call = LLMCall(
            self.role, purpose, self.spec.model, tin, tout, (perf_counter() - started) * 1000,
            cost=(tin * self.spec.input_price_per_mtok + tout * self.spec.output_price_per_mtok) / 1e6,
        )
        return msg, call

    async def complete(self, messages: Sequence[BaseMessage], purpose: str,
                       response_format: dict[str, Any] | None = None) -> tuple[str, LLMCall]:
        """Complete ``messages``; returns the text and the call record (see :meth:`invoke`)."""
        msg, call = await (self.invoke(messages, purpose, response_format=response_format)
                           if response_format else self.invoke(messages, purpose))
        text = msg.content if isinstance(msg.content, str) else str(msg.content)
        return text, call


RoleFactory = Callable[[str], RoleClient]
