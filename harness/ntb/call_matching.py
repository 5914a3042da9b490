"""A2: were the expected API calls made with correct arguments?

``exact-set`` compares the sets of :func:`call_key` keys (deterministic, the scoring recipe);
``llm-judge`` asks a judge (the official code). IBTC cases, which expect no call, get the
official convention's A2 from :func:`ibtc_official_a2`. See :mod:`harness.ntb.scoring`.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from graphs.protocols import Judgment
from harness.ntb.arguments import normalise_arguments
from harness.ntb.cases import Case, resolve_api_name
from harness.ntb.judge_prompts import StrictVerdict, cut_text, judge_messages, render_calls
from harness.ntb.steplog import Step
from harness.selfscore.judges import Reason, StructuredJudge

A2_METHODS = ("exact-set", "llm-judge")


def call_key(name: str, arguments: Mapping[str, Any] | str | None,
             case: Case | None = None) -> tuple[str, str]:
    """The comparison key of a call: ``(name, normalise_arguments(arguments))``.

    The name is the case's callable name it resolves to (:func:`harness.ntb.cases.resolve_api_name`: case,
    punctuation, ToolBench's 64-character cut, an ``endswith`` match) when ``case`` is given
    and it resolves, else the name lower-cased and stripped. Arguments that cannot be parsed
    keep their text (so they match nothing that parses).
    """
    resolved = resolve_api_name(case, name) if case is not None else None
    try:
        args = normalise_arguments(arguments)
    except (ValueError, TypeError):
        args = "<unparsed> " + (arguments if isinstance(arguments, str) else repr(arguments)).strip()
    return resolved or name.strip().lower(), args


def a2_exact_set(expected_calls: Sequence[Mapping[str, Any]], made_calls: Sequence[Mapping[str, Any]],
                 case: Case | None = None) -> tuple[int, str]:
    """A2 by the scoring recipe: the set of expected calls equals the set of made calls
    (keys of :func:`call_key`; order and repeats ignored, an extra call fails).

    Returns:
        ``(1 or 0, reason)``; the reason lists missing and unexpected calls.
    """
    expected = {call_key(c["name"], c["arguments"], case) for c in expected_calls}
    made = {call_key(c["name"], c["arguments"], case) for c in made_calls}
    if expected == made:
        return 1, f"exact-set: the {len(made)} distinct call(s) made are the expected ones"
    parts = []
    if expected - made:
        parts.append("missing " + "; ".join(f"{n}({a})" for n, a in sorted(expected - made)))
    if made - expected:
        parts.append("unexpected " + "; ".join(f"{n}({a})" for n, a in sorted(made - expected)))
    return 0, cut_text("exact-set: " + " | ".join(parts), 600)


def ibtc_official_a2(made_calls: Sequence[Step], a2_method: str) -> tuple[int, str]:
    """A2 of an IBTC case under the official convention (see :mod:`harness.ntb.scoring`)."""
    if a2_method == "llm-judge":
        return 1, "IBTC: no expected call, so none is missing (extra calls allowed)"
    if not made_calls:
        return 1, "IBTC exact-set: no call expected, none made"
    return 0, f"IBTC exact-set: no call expected, {len(made_calls)} made"


# The A2 judge's verdict: whether every expected call was made with correct arguments.
# (A comment, not a docstring: pydantic would send a docstring to the judge in the schema.)
class CallsVerdict(StrictVerdict):
    reason: str = Reason
    all_expected_calls_made: bool


A2_TASK = """The user's request: {query}
The user's clarification when asked: {clarification}

Expected API calls (what a correct agent calls, given the clarification):
{expected}

API calls the agent made:
{made}

Were ALL the expected API calls made with correct arguments?
Rules: the order of calls does not matter; extra calls are allowed; extra optional arguments are allowed; an API name may be truncated or spelt slightly differently and argument names may differ slightly, so match by meaning; argument VALUES must have the same meaning (for example "beaches in Hawaii" for "Hawaii" is fine), but a wrong value or a misspelt value (for example "Hawii" for "Hawaii", or another id) is a failure.
Answer {{"reason": "<one sentence>", "all_expected_calls_made": true or false}}."""


async def judge_a2(judge: StructuredJudge, case: Case, made_calls: Sequence[Step]) -> Judgment:
    """The official-style A2 judge (kind ``ntb_a2``); ``value`` is True when all expected calls
    were made with correct arguments."""
    task = A2_TASK.format(query=case.query, clarification=case.clarification,
                          expected=render_calls(case.expected_calls, observations=False),
                          made=render_calls(made_calls, observations=False))
    return await judge.judge("ntb_a2", judge_messages(task), CallsVerdict, lambda v: v.all_expected_calls_made)
