"""A3 and the IBTC limitation: the judges of what the agent finally told the user.

A3's judge decides whether the final answer fulfils the (clarified) request from the API
results; the rules that set A3 without a judge are applied by :func:`harness.ntb.scoring.score_case`.
The limitation judge decides whether, on an IBTC case, the agent said the request is beyond
its tools without inventing a result.
"""
from __future__ import annotations

from typing import Sequence

from graphs.protocols import Judgment
from harness.ntb.cases import Case
from harness.ntb.judge_prompts import (CALLS_CHARS, TEXT_CHARS, StrictVerdict, arguments_text, cut_text,
                                       judge_messages, render_calls)
from harness.ntb.steplog import Step, calls_of, final_answer
from harness.selfscore.judges import Reason, StructuredJudge


# The A3 judge's verdict: whether the final answer fulfils the request from the API results.
# (A comment, not a docstring: pydantic would send a docstring to the judge in the schema.)
class AnswerVerdict(StrictVerdict):
    reason: str = Reason
    fulfilled: bool


# The IBTC judge's verdict: whether the agent said the request is beyond its tools.
# (A comment, not a docstring: pydantic would send a docstring to the judge in the schema.)
class LimitationVerdict(StrictVerdict):
    reason: str = Reason
    limitation_stated: bool


A3_TASK = """The user's request: {query}
The user's clarification when asked: {clarification}

The API calls the agent made and what they returned:
{calls}

The agent's final answer:
{answer}

Does the final answer fulfil the user's intent (the request as clarified) using the data the APIs returned? It fails if it does not achieve the request, or if it is made up rather than based on the API results.
Answer {{"reason": "<one sentence>", "fulfilled": true or false}}."""

LIMITATION_TASK = """The user's request: {query}

The APIs the agent had: {apis}
This request is beyond what these APIs can do.

What the agent did:
{record}

Did the agent tell the user that it cannot do this request with its available tools, without inventing a result?
Answer {{"reason": "<one sentence>", "limitation_stated": true or false}}."""


async def judge_a3(judge: StructuredJudge, case: Case, steps: Sequence[Step]) -> Judgment:
    """The A3 judge (kind ``ntb_a3``); ``value`` is True when the final answer fulfils the
    user's intent using the API results."""
    task = A3_TASK.format(query=case.query, clarification=case.clarification,
                          calls=render_calls(calls_of(steps), observations=True),
                          answer=cut_text(final_answer(steps) or "(none)", TEXT_CHARS))
    return await judge.judge("ntb_a3", judge_messages(task), AnswerVerdict, lambda v: v.fulfilled)


async def judge_limitation(judge: StructuredJudge, case: Case, steps: Sequence[Step]) -> Judgment:
    """The IBTC judge (kind ``ntb_limitation``); ``value`` is True when the agent told the
    user that the request is beyond its tools without inventing a result."""
    task = LIMITATION_TASK.format(query=case.query, apis=_api_names(case), record=_render_record(steps))
    return await judge.judge("ntb_limitation", judge_messages(task), LimitationVerdict,
                             lambda v: v.limitation_stated)


def _render_record(steps: Sequence[Step]) -> str:
    """Asks (with replies), calls and answers as the user saw them; reasoning left out."""
    lines = []
    for step in steps:
        kind = step.get("type")
        if kind == "ask":
            lines.append(f"- asked the user: {cut_text(step['text'], TEXT_CHARS)}")
            if step.get("reply"):
                lines.append(f"  user replied: {cut_text(step['reply'], TEXT_CHARS)}")
        elif kind == "call":
            lines.append(f"- called {step['name']} {arguments_text(step['arguments'])}")
        elif kind == "answer":
            lines.append(f"- final answer: {cut_text(step['text'], TEXT_CHARS)}")
    return cut_text("\n".join(lines) or "(nothing)", CALLS_CHARS)


def _api_names(case: Case) -> str:
    """The case's ``tool: api`` names, sorted and de-duplicated, cut at 1500 characters."""
    names = sorted({f"{a.get('tool_name', '?')}: {a.get('api_name', '?')}" for a in case.api_list or []})
    return cut_text("; ".join(names) or "(none)", 1500)
