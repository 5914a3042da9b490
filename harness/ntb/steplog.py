"""The step log of a NoisyToolBench case: its format check, its parts and the Steps count.

A case's step log, in order (what a run stores and a transcript holds)::

    {"type": "ask", "text": str, "reply": str?}         the agent asked the user
    {"type": "call", "name": str, "arguments": object | str | null, "observation": str?, "source": str?}
    {"type": "answer", "text": str}                      final answer, or the tools' limitation
    {"type": "think", "text": str}                       reasoning

**Steps** counts every step of the log (see :mod:`harness.ntb.scoring` for how this compares
with the official count).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.tasks.jsonl import json_type

STEP_TYPES = ("ask", "call", "answer", "think")
Step = Mapping[str, Any]


def validate_steps(steps: Any) -> list[str]:
    """What is wrong with a step log, as ``steps[i].field: problem`` texts (empty if valid).

    Checks the step types and the presence and JSON types of their fields; texts may be empty,
    a call's ``arguments`` may be null (no arguments) and other fields (``thought``,
    ``source``, ...) are allowed and ignored.
    """
    if not isinstance(steps, list):
        return [f"steps must be a list, got {json_type(steps)}"]
    if not steps:
        return ["steps is empty (a case needs at least one step)"]
    errors: list[str] = []
    for i, step in enumerate(steps):
        where = f"steps[{i}]"
        if not isinstance(step, dict):
            errors.append(f"{where} must be an object, got {json_type(step)}")
            continue
        kind = step.get("type")
        if kind not in STEP_TYPES:
            errors.append(f"{where}.type is {json_type(kind)}, must be one of {', '.join(STEP_TYPES)}")
            continue
        if kind == "call":
            errors += _check_text(step, "name", where, required=True)
            if "arguments" not in step:
                errors.append(f"{where}.arguments is missing (use {{}} or null for none)")
            elif not isinstance(step["arguments"], (dict, str, type(None))):
                errors.append(f"{where}.arguments must be an object, a JSON string or null, "
                              f"got {json_type(step['arguments'])}")
            for key in ("observation", "source"):
                errors += _check_text(step, key, where, required=False)
        else:
            errors += _check_text(step, "text", where, required=True)
            if kind == "ask":
                errors += _check_text(step, "reply", where, required=False)
    return errors


def step_counts(steps: Sequence[Step]) -> dict[str, int]:
    """Steps per type (``ask``, ``call``, ``answer``, ``think``) and their ``total``."""
    counts = {kind: sum(1 for s in steps if s.get("type") == kind) for kind in STEP_TYPES}
    counts["total"] = sum(counts[k] for k in STEP_TYPES)
    return counts


def asks_of(steps: Sequence[Step]) -> list[str]:
    """The texts of the agent's questions, in order."""
    return [s["text"] for s in steps if s.get("type") == "ask"]


def calls_of(steps: Sequence[Step]) -> list[Step]:
    """The API call steps, in order."""
    return [s for s in steps if s.get("type") == "call"]


def final_answer(steps: Sequence[Step]) -> str | None:
    """The text of the last ``answer`` step, or None when the agent never answered."""
    answers = [s["text"] for s in steps if s.get("type") == "answer"]
    return answers[-1] if answers else None


def _check_text(step: dict, key: str, where: str, required: bool) -> list[str]:
    """Strings may be empty: a small model's empty answer is scored, not rejected."""
    value = step.get(key)
    if value is None:
        return [f"{where}.{key} is missing"] if required else []
    if not isinstance(value, str):
        return [f"{where}.{key} must be a string, got {json_type(value)}"]
    return []
