"""The persona sanity cases: the real simulated user plays each scenario of
``harness/data/sanity/personas.jsonl`` turn by turn, and each reply is read for the act the
persona's schedule expects on that turn and for a broken grounding rule.

One scenario per persona (``harness.simuser.personas``), the cooperative one included: there the
check is that no deviation appears (no request for a human, no end, no claim of a step done
before, no unrelated matter, and the fact given when asked), so a user that deviates everywhere
fails it as one that never deviates fails the other four. The method imports no ``simuser``: the
user it is handed reads its own replies (``SimulatedUser.read_reply``).
"""
from __future__ import annotations

from graphs.protocols import Message, Problem
from harness.selfscore.sanity_report import PersonaCase, PersonaTurn


def persona_problem(case: dict) -> Problem:
    """The case's hidden scenario as the simulated user gets it."""
    return Problem(f"sanity:{case['id']}", case["question"], None, case["problem"], solution=case["solution"],
                   problem_source="solution", facts=tuple(case["facts"]), persona=case["persona"])


def appeared(expected: str | None, act: str | None, text: str | None, read: dict) -> bool:
    """Whether the reply shows what the turn expects: ``None`` no deviation at all, ``gives_fact``
    a fact told and no deviation (``tells``: the same, the vague user's act), ``withholds`` no
    detail named (neither a fact nor one made up), ``ends`` no reply, else the act recorded and
    seen in the words. ``read`` is the user's reading of the reply (``read_reply``)."""
    shown = read["shown"]
    if expected == "ends" or text is None:
        return expected == "ends" and text is None
    if expected is None:
        return act is None and not shown
    if expected in ("gives_fact", "tells"):  # a cooperative user asked once; a vague one asked again
        return act == (None if expected == "gives_fact" else "tells") and bool(read["told"]) and not shown
    if expected == "withholds":
        return act == "withholds" and not read["named"]
    return act == expected and expected in shown


async def play_persona_case(user, case: dict) -> PersonaCase:
    """Play the case's agent messages one after another with ``user`` (a ``SimulatedUser``),
    each reply added to the conversation, and read every reply (``PersonaCase``)."""
    problem = persona_problem(case)
    history = [Message("user", case["question"])]
    turns: list[PersonaTurn] = []
    for k, (agent, expected) in enumerate(zip(case["agent"], case["expect"])):
        history.append(Message("agent", agent))
        before = list(history)
        reply = await user.respond(problem, before, k + 2)
        sim = (reply.extra or {}).get("simulator") or {}
        record = sim.get("persona")
        if case["persona"] == "cooperative" and record is not None:
            act = "recorded"  # the cooperative user records no persona at all
        else:
            act = (record or {}).get("act")
        read = user.read_reply(problem, before, reply.text, sim.get("outcome") == "fixed")
        turns.append(PersonaTurn(k + 2, expected, act, reply.text, appeared(expected, act, reply.text, read),
                                 read["broken"], sim.get("outcome", "")))
        if reply.text is None:
            break
        history.append(Message("user", reply.text))
    return PersonaCase(case["id"], case["persona"], turns, expected_turns=len(case["agent"]))
