"""What the aids did to a stored run: judge-only turn scores, re-applied bounds, per-aid and
per-rule counts. No LLM call: only stored judgments and messages.

Every helpfulness judgment keeps the judge's own score (``judge_score``) beside the score an
aid made of it, so the post-processing aid (``helpfulness_bounds``) can be undone or applied
again on any stored run. The other aids shape what the judge reads or decide before it is asked
(the manipulation defence, translation, the confirmation solved-check's rule vetoes, the reply
cap, the user's regenerations): undoing them needs new judgments (``deskbench rejudge``).
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from graphs.protocols import Message
from harness.aids.helpfulness_bounds import agent_reply_bounds, first_question_bounds, user_reply_bounds
from harness.selfscore.judge_input import neutralised_history

VARIANTS = ("stored", "judge-only", "bounded")
"""How ``rescore`` reads turn scores: ``stored`` (as the run's profile made them), ``judge-only``
(the judge's own scores: the post-processing aids undone), ``bounded`` (the helpfulness bounds
applied to the judge's own scores, on any run: the embedded profile's post-processing)."""
HELPFULNESS = ("user_helpfulness", "agent_helpfulness")


def judge_score_of(judgment: Mapping[str, Any]) -> int | None:
    """The judge's own score of a stored judgment: ``judge_score``, or for a row stored before
    that column the bounds' record of it, else the stored score (no aid moved it)."""
    if judgment.get("status") != "ok":
        return None
    if judgment.get("judge_score") is not None:
        return judgment["judge_score"]
    parsed = json.loads(judgment.get("parsed_json") or "{}")
    bounds = parsed.get("bounds") or {}
    return bounds.get("judge_score", judgment.get("score"))


def _latest_per_turn(judgments: Iterable[Mapping[str, Any]]) -> dict[tuple[int, str], Mapping[str, Any]]:
    out: dict[tuple[int, str], Mapping[str, Any]] = {}
    for j in judgments:
        if j.get("turn_index") is not None and j["kind"] in HELPFULNESS:
            out[(j["turn_index"], j["kind"])] = j  # rows come in id order: the last one stands
    return out


def turns_as(variant: str, turns: Sequence[Mapping[str, Any]], judgments: Iterable[Mapping[str, Any]],
             defence: bool = True) -> list[dict[str, Any]]:
    """``turns`` with their helpfulness scores as ``variant`` reads them (see :data:`VARIANTS`).

    Args:
        turns: the interaction's turn rows, in order.
        judgments: its judgment rows.
        defence: for ``bounded``: the rules read the messages with manipulation spans removed,
            as a defended judge reads them.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown rescore variant {variant!r}; one of {', '.join(VARIANTS)}")
    rows = [dict(t) for t in turns]
    if variant == "stored":
        return rows
    by_turn = _latest_per_turn(judgments)
    history: list[Message] = []
    for t in rows:
        for kind, role, text in (("user_helpfulness", "user", t.get("user_message") or ""),
                                 ("agent_helpfulness", "agent", t.get("agent_message") or "")):
            history.append(Message(role, text))
            j = by_turn.get((t["turn_index"], kind))
            own = judge_score_of(j) if j is not None else None
            if variant == "judge-only" or own is None:
                t[kind] = own if j is not None else t.get(kind)
                continue
            seen = neutralised_history(history)[0] if defence else list(history)
            t[kind] = bounds_for(kind, seen, first=t["turn_index"] == 1).apply(own)
    return rows


def bounds_for(kind: str, seen: Sequence[Message], first: bool):
    """The helpfulness bounds of the last message of ``seen`` (a ``kind`` judgment)."""
    text = seen[-1].content
    if kind == "agent_helpfulness":
        return agent_reply_bounds(text, seen)
    return first_question_bounds(text) if first else user_reply_bounds(text, seen)


def aid_counts(judgments: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per aid, how many judgments it ran on and how many it moved (changed the score or
    decided alone), and per rule id how many judgments it fired on."""
    ran: Counter = Counter()
    moved: Counter = Counter()
    rules: Counter = Counter()
    for j in judgments:
        aids = json.loads(j.get("aids_json") or "null") or {}
        for name, effect in aids.items():
            ran[name] += 1
            moved[name] += bool(effect.get("moved"))
            for rule in effect.get("rules") or []:
                rules[f"{name}:{rule}"] += 1
    return {"ran": dict(ran), "moved": dict(moved), "rule_hits": dict(rules.most_common())}
