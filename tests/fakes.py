"""Fake chat models for every role: deterministic, no network, real langchain interfaces.

They answer by role and by the task in the prompt, so the real judges parse real JSON and the
real graph runs end to end.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

Responder = Callable[[list[BaseMessage], dict[str, Any]], str]


class ScriptedChatModel(BaseChatModel):
    """A chat model whose reply is ``responder(messages, kwargs)``; counts its calls."""

    responder: Any
    calls: int = 0
    prompts: list = []

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        self.prompts.append(messages)
        text = self.responder(messages, kwargs)
        if isinstance(text, Exception):
            raise text
        metadata = {}
        if isinstance(text, AIMessage):  # a reply with response metadata (log-probabilities)
            text, metadata = str(text.content), dict(text.response_metadata or {})
        n_in = sum(len(str(m.content).split()) for m in messages)
        msg = AIMessage(text, response_metadata=metadata,
                        usage_metadata={"input_tokens": n_in, "output_tokens": len(text.split()),
                                        "total_tokens": n_in + len(text.split())})
        return ChatResult(generations=[ChatGeneration(message=msg)])


def agent_turns(messages: list[BaseMessage]) -> int:
    """How many AGENT messages the judged conversation holds (earlier ones and the latest)."""
    text = str(messages[-1].content)
    return len(re.findall(r"^AGENT:", text, re.M)) + text.count("The latest AGENT message")


def default_responder(solve_at: int | None = 2, user_first: int = 6, user_later: int = 5,
                      agent_score: int = 8, complexity=(6, 4, 5)) -> Callable[[str], Responder]:
    """Per-role responders: the agent numbers its steps, the judges return fixed scores and
    the solved-check says 'solved' once the conversation has ``solve_at`` agent messages."""

    def for_role(role: str) -> Responder:
        def respond(messages, kwargs):
            last = str(messages[-1].content)
            if role == "agent":
                n = sum(1 for m in messages if m.type == "ai") + 1
                return f"Step {n}: open the network settings and toggle the adapter."
            if role == "user":
                if "Answer Yes or No" in last:  # the outcome decision: the agent's fix never works
                    return "No"
                return "I tried that and looked at the wifi again."
            if role == "extractor":
                return "Summary: wifi drops." if "Dumb this question down" in last else "The wifi driver crashes."
            if role == "complexity":
                ct, eh, tk = complexity
                return json.dumps({"reason": "moderate", "critical_thinking": ct,
                                   "error_handling": eh, "topic_knowledge": tk})
            if "is the initial question" in last:
                return json.dumps({"reason": "clear", "score": user_first})
            if "rate the latest USER message" in last:
                return json.dumps({"reason": "ok", "score": user_later})
            if "the latest AGENT message is for solving" in last:
                return json.dumps({"reason": "good", "score": agent_score})
            if "Answer Yes or No" in last:
                # the solved-check's questions see the conversation up to the user's latest
                # message: this turn's agent reply is not in it
                solved = solve_at is not None and agent_turns(messages) + 1 >= solve_at
                if "this problem is now fixed" in last or "the problem is gone now" in last:
                    return "Yes" if solved else "No"
                if "contradicts these facts" in last:
                    return "No"
                # the evidence check's answer questions see the conversation up to this turn's reply
                if "tell the user how to fix exactly this problem" in last or "is this problem gone" in last:
                    return "Yes" if solve_at is not None and agent_turns(messages) >= solve_at else "No"
            if "actually solved" in last:
                solved = solve_at is not None and agent_turns(messages) >= solve_at
                return json.dumps({"reason": "checked", "solved": solved})
            raise AssertionError(f"unexpected prompt for {role}: {last[:200]}")
        return respond
    return for_role


def fake_factory(responders: Callable[[str], Responder], models: dict | None = None):
    """A ``ChatModelFactory`` for :class:`harness.compose.Runtime`; keeps the models it made."""
    made = {} if models is None else models

    def factory(role, spec):
        made[role] = ScriptedChatModel(responder=responders(role), prompts=[])
        return made[role]
    factory.models = made
    return factory
