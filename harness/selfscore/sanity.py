"""Judge sanity check: can the configured judge tell a clearly helpful reply from a useless one,
an easy problem from a hard one, a solved conversation from an unsolved one, and can the simulated
user tell a fix of its true problem from a reply that is not one?

Hand-written pairs (not from any dataset): each has a user question, a clearly helpful agent
reply and a clearly useless one (vague, off-topic or refusing). The judge passes a pair when it
scores the helpful reply strictly higher. Complexity pairs hold an easy and a hard problem;
the judge passes when the hard one gets the higher weighted complexity. A judge that fails
these makes every SelfScore figure meaningless, so the demo prints this report.

The solved-check set (``data/sanity/solved_check.jsonl``, 26 conversations) and the simulated
user's outcome set (``data/sanity/user_outcome.jsonl``, 22 scenarios) are half yes and half no,
so a judge that always says "solved" or a user that always says "it works" gets half of them
wrong; both are reported per class.

The turn-helpfulness set (``data/sanity/turn_helpfulness.jsonl``, 15 pairs) judges a message deep
in a conversation: an agent's next step against a repeat of its last message or "contact the
system administrator", a user's report of what a step did against "ok" or an off-topic rant, a
detailed first question against a vague one. Each pair passes when the helpful version scores
strictly higher, so a judge that gives every message the same score fails them all.

The stability set (:data:`STABILITY_CASES`, 4 messages) judges the same message several times at
once, at temperature 0, and reports the spread of the judge's own scores. The pair sets judge each
message once and cannot see a judge that is unstable: under a layout tried for ``selfscore-p11``
"Try closing some tabs and see if it helps." scored 8, 1, 1, 1, 1, 8, 1 and passed every pair
set. A constant judge is stable and fails the pair sets, so the two are read together.

The persona set (``data/sanity/personas.jsonl``, 5 scenarios) plays one scenario per simulated-user
persona turn by turn and reads each reply for the act the persona's schedule expects there
(``harness.selfscore.sanity_personas``); its cooperative scenario passes only when no deviation
appears, so a user that deviates everywhere fails it.

The simulator-fault cases (``data/sanity/user_faults.jsonl``) are read by the simulated user's own
fault rules (``SimulatedUser.fault_kinds``), with no model: a case is right when the rules find
its kind exactly when the case says the message has it.

The sets are in ``harness.selfscore.sanity_sets``, the report in ``harness.selfscore.sanity_report``;
this module judges them.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from graphs.protocols import Message, Problem
from harness.aids.cues import claims_success
from harness.selfscore.judges import SelfScoreJudges, StructuredJudge, judge_complexity
from harness.selfscore.sanity_personas import play_persona_case
from harness.selfscore.sanity_report import PersonaCase, SanityReport, StabilityCase, TurnPair, Verdict
from harness.selfscore.sanity_sets import (COMPLEXITY_PAIRS, HELPFULNESS_PAIRS, STABILITY_CASES, STABILITY_REPEATS,
                                           balanced, fault_cases, outcome_cases, persona_cases, solved_cases, turn_case_group,
                                           turn_helpfulness_cases)
from harness.selfscore.scoring import weighted_complexity


WITH_OUTCOME = -1  # run_sanity's default for the persona scenarios: all of them with the whole outcome set


def complexity_pairs_for(helpful_pairs: int) -> int:
    """How many complexity pairs go with ``helpful_pairs`` helpfulness pairs: all of them with
    the whole helpfulness set, else half as many (at least one)."""
    return len(COMPLEXITY_PAIRS) if helpful_pairs >= len(HELPFULNESS_PAIRS) else max(1, helpful_pairs // 2)


def _solved_problem(case: dict) -> tuple[Problem, list[Message]]:
    history = [Message(m["role"], m["content"]) for m in case["conversation"]]
    return Problem(f"sanity:{case['id']}", history[0].content, None, case["problem"]), history


def _outcome_problem(case: dict) -> tuple[Problem, list[Message]]:
    problem = Problem(f"sanity:{case['id']}", case["question"], None, case["problem"],
                      solution=case["solution"], problem_source="solution", facts=tuple(case["facts"]))
    return problem, [Message("user", case["question"]), Message("agent", case["agent"])]



class _CaseJudge:
    """Judges one case of each sanity set, at most ``concurrency`` judgments (or user replies) at once."""

    def __init__(self, judges: SelfScoreJudges, complexity_judge: StructuredJudge, user, concurrency: int):
        self.judges = judges
        self.complexity_judge = complexity_judge
        self.user = user
        self.semaphore = asyncio.Semaphore(concurrency)

    async def helpfulness(self, question: str, reply: str) -> int | None:
        """The agent-helpfulness score of ``reply`` to a first ``question`` (None: failed)."""
        async with self.semaphore:
            j = await self.judges.agent_helpfulness(
                Problem("sanity", question, None, None), [Message("user", question), Message("agent", reply)])
        return j.value if j.ok else None

    async def turn_score(self, case: dict, text: str) -> tuple[int | None, int | None]:
        """(score, the judge's own score before the rubric bounds) of ``text`` as the case's next message."""
        history = [Message(m["role"], m["content"]) for m in case["conversation"]] + [Message(case["role"], text)]
        problem = Problem(f"sanity:{case['id']}", history[0].content, None, None)
        async with self.semaphore:
            if case["role"] == "agent":
                j = await self.judges.agent_helpfulness(problem, history)
            else:
                j = await self.judges.user_helpfulness(problem, history, first_turn=case["first"])
        if not j.ok:
            return None, None
        return j.value, ((j.parsed or {}).get("bounds") or {}).get("judge_score", j.value)

    async def stability_score(self, messages: tuple[tuple[str, str], ...]) -> int | None:
        """The judge's own score (before the rubric bounds) of the conversation's last message."""
        *earlier, (role, text) = messages
        case = {"id": "stability", "role": role, "first": not earlier,
                "conversation": [{"role": r, "content": t} for r, t in earlier]}
        return (await self.turn_score(case, text))[1]

    async def complexity(self, summary: str) -> float | None:
        """The weighted complexity the complexity judge gives ``summary`` (None: failed)."""
        async with self.semaphore:
            j = await judge_complexity(self.complexity_judge, summary)
        if not j.ok:
            return None
        v = j.value
        return weighted_complexity(v["critical_thinking"], v["error_handling"], v["topic_knowledge"])

    async def solved_case(self, case: dict) -> Verdict:
        """The solved-check's verdict on one solved-check conversation."""
        problem, history = _solved_problem(case)
        async with self.semaphore:
            j = await self.judges.solved(problem, history)
        return Verdict(case["id"], case["solved"], j.value if j.ok else None, j.reason or j.error or "")

    async def outcome_case(self, case: dict) -> tuple[Verdict, Verdict | None]:
        """(the simulated user's decided outcome, what its reply says) on one outcome scenario."""
        problem, history = _outcome_problem(case)
        async with self.semaphore:
            try:
                reply = await self.user.respond(problem, history, 2)
            except Exception as exc:  # a failed call is a failed case, reported
                return Verdict(case["id"], case["fixed"], None, str(exc)[:80]), None
        sim = reply.extra["simulator"]
        said = Verdict(case["id"], case["fixed"], claims_success(reply.text or ""), (reply.text or "")[:90])
        if sim.get("outcome") is None:  # user_outcome=model (the paper's user): what it says is its decision
            return Verdict(case["id"], case["fixed"], said.got, "no outcome decided: the reply's own claim"), said
        decided = Verdict(case["id"], case["fixed"], sim["outcome"] == "fixed", f"P(fix)={sim['p_fix']:.2f}")
        return decided, said

    async def persona_case(self, case: dict) -> PersonaCase:
        """The simulated user's persona scenario played turn by turn (``sanity_personas``)."""
        async with self.semaphore:
            try:
                return await play_persona_case(self.user, case)
            except Exception as exc:  # a failed call is a failed case, reported
                return PersonaCase(case["id"], case["persona"], expected_turns=len(case["agent"]),
                                   error=str(exc)[:80] or type(exc).__name__)


async def run_sanity(judge: StructuredJudge, complexity_judge: StructuredJudge,
                     helpful_pairs: int | None = None, complexity_pairs: int | None = None,
                     concurrency: int = 4, solved: int | None = 0, outcome: int | None = 0,
                     judges: SelfScoreJudges | None = None, user=None,
                     replies: bool = True, turns: int | None = 0, stability: int | None = 0,
                     personas: int | None = WITH_OUTCOME,
                     on_progress: Callable[[int, int], None] | None = None) -> SanityReport:
    """Judge the first ``helpful_pairs`` / ``complexity_pairs`` pairs (all by default), and
    ``solved`` solved-check conversations and ``outcome`` simulated-user scenarios (balanced
    between yes and no; None = all, 0 = none), the first ``turns`` turn-helpfulness pairs and the
    first ``stability`` stability messages, each :data:`STABILITY_REPEATS` times (None = all,
    0 = none), and play the first ``personas`` persona scenarios with the simulated user (None =
    all, 0 = none; the default :data:`WITH_OUTCOME`: all when the whole outcome set is asked
    for, ``outcome=None`` as ``deskbench sanity`` asks, else none, so the demo's short sanity
    check stays as it was).

    Args:
        judges: the turn judges whose solved-check is tested (default: on ``judge``).
        user: a ``harness.simuser.users.SimulatedUser`` for the outcome cases (needed when
            ``outcome`` is not 0); with ``replies`` its whole reply is generated and checked too.
        on_progress: ``(cases judged, cases)`` as each judgment (or outcome scenario) comes back.
    """
    judges = judges or SelfScoreJudges(judge)
    run = _CaseJudge(judges, complexity_judge, user, concurrency)
    hp = HELPFULNESS_PAIRS[:helpful_pairs] if helpful_pairs is not None else HELPFULNESS_PAIRS
    cp = COMPLEXITY_PAIRS[:complexity_pairs] if complexity_pairs is not None else COMPLEXITY_PAIRS
    sc = balanced(solved_cases(), solved, "solved") if solved != 0 else []
    oc = balanced(outcome_cases(), outcome, "fixed") if outcome != 0 and user is not None else []
    tc = turn_helpfulness_cases()[:turns] if turns != 0 else []
    st = STABILITY_CASES[:stability] if stability != 0 else ()
    if personas == WITH_OUTCOME:
        personas = None if outcome is None else 0
    pc = persona_cases()[:personas] if personas != 0 and user is not None else []
    total = 2 * len(hp) + 2 * len(cp) + len(sc) + len(oc) + 2 * len(tc) + STABILITY_REPEATS * len(st) + len(pc)
    done = 0

    async def counted(job):
        nonlocal done
        result = await job
        done += 1
        if on_progress:
            on_progress(done, total)
        return result

    if on_progress:
        on_progress(0, total)
    scores = await asyncio.gather(*(counted(run.helpfulness(q, r)) for q, good, bad in hp for r in (good, bad)),
                                  *(counted(run.complexity(s)) for pair in cp for s in pair))
    h, c = scores[: 2 * len(hp)], scores[2 * len(hp):]
    t = await asyncio.gather(*(counted(run.turn_score(x, x[v])) for x in tc for v in ("helpful", "useless")))
    turn_pairs = [TurnPair(x["id"], turn_case_group(x), good[0], bad[0], good[1], bad[1])
                  for x, good, bad in zip(tc, t[0::2], t[1::2])]
    repeated = await asyncio.gather(*(counted(run.stability_score(messages)) for _, messages in st
                                      for _ in range(STABILITY_REPEATS)))
    stable = [StabilityCase(case_id, list(repeated[k * STABILITY_REPEATS:(k + 1) * STABILITY_REPEATS]))
              for k, (case_id, _) in enumerate(st)]
    solved_verdicts = list(await asyncio.gather(*(counted(run.solved_case(x)) for x in sc)))
    outcomes = list(await asyncio.gather(*(counted(run.outcome_case(x)) for x in oc)))
    played = list(await asyncio.gather(*(counted(run.persona_case(x)) for x in pc)))
    faults = fault_verdicts(user) if user is not None and hasattr(user, "fault_kinds") else []
    return SanityReport(list(zip(h[0::2], h[1::2])), list(zip(c[0::2], c[1::2])), judge.client.model_name,
                        solved=solved_verdicts, outcome=[d for d, _ in outcomes],
                        replies=[r for _, r in outcomes if r is not None] if replies else [],
                        solved_method=judges.solved_method,
                        user_model=user.client.model_name if user is not None else "",
                        turn_pairs=turn_pairs, stability=stable, personas=played, fault_rules=faults)


def fault_verdicts(user) -> list[Verdict]:
    """The simulator-fault cases read by ``user``'s fault rules (``fault_kinds``; no model call)."""
    out = []
    for case in fault_cases():
        problem = Problem("sanity", case["question"], None, None, facts=case["facts"])
        history = [Message(role, text) for role, text in case["history"]]
        found = case["kind"] in user.fault_kinds(problem, history, case["message"], case["fixed"])
        out.append(Verdict(case["id"], case["expect"], found, case["kind"]))
    return out
