"""What the NoisyToolBench judges share: the system message, the verdict base and record text.

:data:`PROMPT_VERSION` versions every judge prompt of NoisyToolBench: this module's text and
the tasks in :mod:`harness.ntb.call_matching` (A2) and :mod:`harness.ntb.answer_judging` (A3,
the IBTC limitation); change any of them and bump it.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict

PROMPT_VERSION = "ntb-judge-p1"
OBSERVATION_CHARS = 600   # per API observation shown to a judge
CALLS_CHARS = 4000        # all calls shown to a judge together
TEXT_CHARS = 2000         # the final answer / one ask shown to a judge


class StrictVerdict(BaseModel):
    """Base of the judges' verdict schemas: a verdict with any field not in its schema is rejected."""

    model_config = ConfigDict(extra="forbid")


JUDGE_SYSTEM = ("You evaluate an AI agent that uses APIs to serve a user. Judge strictly from the "
                "record you are given. Answer with JSON only, following the schema.")


def judge_messages(task: str) -> list[BaseMessage]:
    """The judge's conversation: :data:`JUDGE_SYSTEM` then ``task`` as the user's message."""
    return [SystemMessage(JUDGE_SYSTEM), HumanMessage(task)]


def render_calls(calls: Sequence[Mapping[str, Any]], observations: bool) -> str:
    """Numbered ``name {arguments}`` lines, ``(none)`` when there is no call.

    With ``observations``, each call's response follows it, cut at :data:`OBSERVATION_CHARS`;
    the whole text is cut at :data:`CALLS_CHARS`.
    """
    if not calls:
        return "(none)"
    lines = []
    for i, call in enumerate(calls, 1):
        line = f"{i}. {call['name']} {arguments_text(call['arguments'])}"
        if observations:
            line += "\n   returned: " + cut_text(str(call.get("observation") or "(no response)"), OBSERVATION_CHARS)
        lines.append(line)
    return cut_text("\n".join(lines), CALLS_CHARS)


def arguments_text(arguments: Any) -> str:
    """Arguments as a judge reads them: ``{}`` for None, a string stripped, else sorted JSON."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        return arguments.strip()
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def cut_text(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, then a marker saying how many were left out."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"
