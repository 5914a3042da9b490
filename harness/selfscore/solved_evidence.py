"""The solved-check from the evidence a person reads (method ``evidence``, docs/selfscore.md).

The paper decides "from the turn history and the latest agent message" whether the problem is
solved. A 1.5B judge cannot do that from one JSON verdict (it said "solved" to every reply),
and the ``confirmation`` method it replaced can only say "yes" once the user says the words.
This check reads what a person would:

1. how the user reacted to the previous answer (``harness.aids.cues``): a confirmation ("it
   works now") is solved, no question asked; an acceptance ("OK, thank you") sends the previous
   answer to step 2; a persisting symptom or a new question does not end anything by itself;
2. whether an answer fixes the problem: an agent message that only asks, only sends the user
   elsewhere, or repeats an earlier message is no fix (rules, no question); otherwise the judge
   answers one Yes/No question in two phrasings ("does it tell the user how to fix exactly this
   problem?", "if the user does exactly that, is the problem gone?"), from token
   log-probabilities, averaged, then averaged with the answer's embedding similarity to the
   reference solution where the task has one; at or above :data:`ANSWER_THRESHOLD` it is solved.

So a one-turn right fix is solved, and a thank-you after a pointer elsewhere is not. The
probabilities, the rules that decided and the answer they were asked about are stored.
"""
from __future__ import annotations

import asyncio
from typing import Sequence

from graphs.protocols import Judgment, Message, Problem
from harness.aids import SOLVED_THRESHOLDS, version_of
from harness.aids.evidence import not_a_fix, reaction
from harness.models.llm import RoleClient, ask_yes_no
from harness.selfscore import prompts
from harness.selfscore.judge_input import JudgeInput
from harness.selfscore.judge_messages import escape_judged_text, judge_messages

EVIDENCE_VERSION = "ev4"  # ev4: no confirmation in a clause that ends in "?"; ev3: the confirmation questions on a reported result (ev2: two phrasings; ev1: one)
ANSWER_THRESHOLD = SOLVED_THRESHOLDS.limit("solved.answer")
"""P(the answer fixes the problem) at or above which it counts as the fix (``solved.answer``)."""

ANSWER_QUESTION = """The user's underlying problem: <problem>{problem}</problem>
{reference}Question: does the latest AGENT message tell the user how to fix exactly this problem (a fix for its cause, not for a neighbouring problem)? A question back to the user, general advice, sending the user elsewhere or a fix for a different cause is No. Answer Yes or No, one word, not JSON."""
ANSWER_QUESTION_ALT = """The user's underlying problem: <problem>{problem}</problem>
{reference}Question: if the user does exactly what the latest AGENT message says, is this problem gone (its cause fixed)? A question, general advice, a pointer elsewhere or a step for another cause is No. Answer Yes or No, one word, not JSON."""
QUESTIONS = (("q1", ANSWER_QUESTION), ("q2", ANSWER_QUESTION_ALT))
REFERENCE = "The fix that solved it: <solution>{solution}</solution>\n"


def solved_rules_version() -> str:
    """The version of everything the ``solved_rules`` aid decides by, read now (a changed rule
    changes it): the judges' prompt version and the solved-check's questions (the confirmation
    and the answer questions), the solved-check's cues and success claim, the evidence rules,
    the helpfulness bounds it vetoes with, the thresholds, and the evidence check's own logic
    version (:data:`EVIDENCE_VERSION`, bumped by hand when its code changes)."""
    from harness.aids import EVIDENCE, HB, SOLVED_CUES, SUCCESS_CLAIM, SOLVED_THRESHOLDS
    return version_of("solved-rules", [
        prompts.PROMPT_VERSION, prompts.SOLVED_CONFIRMED, prompts.SOLVED_CONFIRMED_ALT, ANSWER_QUESTION,
        ANSWER_QUESTION_ALT, REFERENCE, SOLVED_CUES, SUCCESS_CLAIM, EVIDENCE, HB, SOLVED_THRESHOLDS,
        EVIDENCE_VERSION])


class EvidenceSolvedCheck:
    """Method ``evidence``: solved when the user confirms the previous answer, or when an answer
    (the latest, or the previous one the user accepted) is judged to fix the problem."""

    def __init__(self, client: RoleClient, judge_input: JudgeInput, threshold: float = ANSWER_THRESHOLD,
                 embedder=None, confirmation=None, reminder: bool = True):
        self.client = client
        self.judge_input = judge_input
        self.reminder = reminder  # the aid judge_reminder after the judged answer
        self.threshold = threshold
        self._embedder = embedder
        # the confirmation check (its rule vetoes, then two Yes/No questions) reads a reported result
        # said in other words ("the printer is online again"); None: plain success words only
        self.confirmation = confirmation

    def similarity(self, text: str, solution: str) -> float:
        """Cosine similarity of an answer and the reference solution (offline MiniLM)."""
        if self._embedder is None:
            from harness.models.embeddings import default_embedder
            self._embedder = default_embedder()
        a, b = self._embedder.embed_array([text[:2000] or " ", solution[:2000] or " "])
        return float(a @ b)

    async def _answer(self, problem: Problem, seen: list[Message], index: int, calls: list) -> dict:
        """Whether ``seen[index]`` (an agent message) fixes the problem: rules, then the judge."""
        text = seen[index].content
        rule = not_a_fix(text, seen[:index])
        if rule is not None:
            return {"index": index, "fixes": False, "rule": rule}
        statement = escape_judged_text(problem.problem_statement or problem.question)
        solution = problem.solution or problem.reference_answer
        reference = REFERENCE.format(solution=escape_judged_text(solution[:1500])) if solution else ""
        record: dict = {"index": index}
        for key, question in QUESTIONS:  # the same prompt up to the question: the second reuses its cache
            p, _, call = await ask_yes_no(self.client, judge_messages(
                seen[:index + 1], question.format(problem=statement, reference=reference), self.reminder),
                f"judge:solved:{key}")
            calls.append(call)
            record[f"p_{key}"] = round(p, 4)
        p = (record["p_q1"] + record["p_q2"]) / 2
        record["p_llm"] = round(p, 4)
        score = p
        if solution:
            record["similarity"] = round(await asyncio.to_thread(self.similarity, text, solution), 4)  # off the loop
            score = (p + record["similarity"]) / 2
        record.update(p_fix=round(score, 4), fixes=score >= self.threshold)
        return record

    async def judge(self, problem: Problem, history: Sequence[Message]) -> Judgment:
        """The evidence verdict for the conversation up to the agent's latest message."""
        base = dict(kind="solved", model=self.client.model_name, prompt_version=prompts.PROMPT_VERSION)
        try:
            view = await self.judge_input.view(history)
        except Exception as exc:
            return Judgment(**base, status="failed", value=None, calls=list(getattr(exc, "llm_calls", None) or []),
                            error=f"{type(exc).__name__}: {exc}"[:500])
        seen = view.messages
        agents = [i for i, m in enumerate(seen) if m.role == "agent"]
        users = [i for i, m in enumerate(seen) if m.role == "user"]
        latest = agents[-1] if agents and agents[-1] == len(seen) - 1 else None
        previous = next((i for i in reversed(agents) if users and i < users[-1]), None)
        kind, rule_ids = reaction(seen[users[-1]].content) if users and previous is not None else ("first", [])
        parsed = {"method": "evidence", "version": EVIDENCE_VERSION, "reaction": kind, "threshold": self.threshold,
                  "rule_ids": list(rule_ids), "answers": []}
        calls: list = []
        solved, reason = False, "no answer fixes the problem yet"
        if kind == "confirms" and self.judge_input.rules_can_read(view):
            solved, reason = True, "the user confirms the previous answer fixed it"
        elif kind in ("other", "accepts") and self.confirmation is not None:
            confirmed = await self.confirmation.judge(problem, history)
            calls.extend(confirmed.calls)
            parsed["confirmation"] = {k: (confirmed.parsed or {}).get(k) for k in ("decided_by", "p_confirmed")}
            if confirmed.ok and confirmed.value:
                solved, reason = True, f"the user reports it fixed ({confirmed.reason})"
        if not solved and not (kind == "confirms" and self.judge_input.rules_can_read(view)):
            todo = ([previous] if kind == "accepts" else []) + ([latest] if latest is not None else [])
            try:
                for index in todo:
                    answer = await self._answer(problem, seen, index, calls)
                    parsed["answers"].append(answer)
                    if answer.get("rule"):
                        parsed["rule_ids"].append(answer["rule"])
                    if answer["fixes"]:
                        solved = True
                        reason = ("the answer the user accepted fixes the problem" if index == previous
                                  else "the latest answer fixes the problem") + f" (P={answer['p_fix']:.2f})"
                        break
            except Exception as exc:  # endpoint failure or no yes/no answer: failed, never defaulted
                calls.extend(getattr(exc, "llm_calls", None) or [])
                return view.record(Judgment(**base, status="failed", value=None, calls=calls, parsed=parsed,
                                            error=f"{type(exc).__name__}: {exc}"[:500]))
        asked = [a for a in parsed["answers"] if "p_llm" in a]
        p_confirmed = (parsed.get("confirmation") or {}).get("p_confirmed")
        parsed.update(solved=solved, decided_by="questions" if asked or p_confirmed is not None else "rules",
                      judge_value=(any(a["p_llm"] >= self.threshold for a in asked)
                                   or (p_confirmed is not None
                                       and p_confirmed >= SOLVED_THRESHOLDS.limit("solved.confirmed")))
                      if asked or p_confirmed is not None else None)
        return view.record(Judgment(**base, status="ok", value=solved, reason=reason, calls=calls, parsed=parsed))
