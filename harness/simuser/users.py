"""The user's side of a help-desk conversation: the LLM-simulated user grounded in the real
thread, and the scripted user."""
from __future__ import annotations

import asyncio
import json
import re
from functools import cached_property
from typing import Mapping, Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from graphs.protocols import LLMCall, Message, Problem, Reply
from harness.agents.history import as_chat, window
from harness.aids.cues import claims_success
from harness.aids.text import addressees, without_addresses
from harness.aids import EMBEDDED_AIDS, USER_FACTS, USER_OUTCOME_THRESHOLDS, sentences
from harness.models.llm import RoleClient, ask_yes_no
from harness.selfscore.judge_messages import escape_judged_text
from harness.selfscore.prompts import YES_NO_SYSTEM
from harness.selfscore.transcript import _clip
from harness.simuser import checks as user_checks
from harness.simuser import faults, personas, prompts
from harness.simuser.fix_terms import asks_only, shared_fix_terms

_ROLE_PREFIX = re.compile(r"^\s*(user|person|me|customer|agent|assistant)\s*:\s*", re.I)
OUTCOME_SOLUTION_CHARS = 1500  # the real fix in the outcome question, cut in the middle beyond this
OUTCOME_AGENT_CHARS = 3000     # the agent's message in the outcome question, likewise
OUTCOME_METHODS = ("decided", "model")
# the outcome decision's own logic, hashed into its version with its texts and thresholds:
# o2: a thread's helper messages are not taken for its fix when the thread has no labelled fix
OUTCOME_LOGIC_VERSION = "o2"


def known_fix(problem: Problem) -> str | None:
    """The fix the outcome decision compares the agent's message with: the thread's solution when
    it is a known fix (``Problem.fix_known``), else None. A thread without a labelled fix gives
    every helper message as its solution; taken for the fix, any helper step shared a term and a
    likeness with it, and the outcome was decided fixed at 6 of the 10 points of a thread whose
    real asker never reported it fixed (issue 42, simcheck tune part)."""
    return problem.solution if problem.fix_known else None


def outcome_messages(problem: Problem, agent_message: str) -> list[BaseMessage]:
    """The Yes/No question: does the agent's latest message fix the hidden true problem?"""
    fix = known_fix(problem)
    solution = (prompts.USER_OUTCOME_SOLUTION.format(
        solution=escape_judged_text(_clip(fix, OUTCOME_SOLUTION_CHARS))) if fix else "")
    text = prompts.USER_OUTCOME.format(
        problem=escape_judged_text(problem.problem_statement or problem.question),
        solution_block=solution, agent=escape_judged_text(_clip(agent_message, OUTCOME_AGENT_CHARS)))
    return [SystemMessage(YES_NO_SYSTEM), HumanMessage(text)]


_FACT_QUESTION = USER_FACTS.regex("fact.question")
_CHATTER = USER_FACTS.words("fact.chatter_words")


def situation_facts(facts: Sequence[str]) -> list[str]:
    """The facts of a task that say something of the asker's situation: without the asker's later
    questions (every sentence ends with "?": ``fact.question``) and chatter (only words of
    ``fact.chatter_words``: "I see thanks. Let me check again"). A real thread's facts are the
    asker's later messages, cleaned; given whole, the 1.5B asked the later questions turns early,
    word for word, and sent the chatter as its reply (issue 42, simcheck tune part)."""
    def situation(fact: str) -> bool:
        parts = sentences(fact)
        if parts and all(_FACT_QUESTION.search(p) for p in parts):
            return False
        words = [w.strip(".,!?") for w in fact.lower().split()]
        return not all(w in _CHATTER or not w for w in words)
    return [f for f in facts if situation(f)]


def _facts_block(facts: Sequence[str]) -> str:
    return "\n".join(f"- {escape_judged_text(f)}" for f in facts) or "- (nothing beyond the question)"


# The outcome decision: the mean of P(yes) and the similarity to the real fix, against a
# threshold that depends on whether the message names a distinctive term of the real fix
# (harness.simuser.fix_terms). The thresholds are entries of the rule catalogue
# (harness.aids.data_user.USER_OUTCOME_THRESHOLDS: what each decides and how it was set, on the
# first 16 outcome scenarios of harness/data/sanity/user_outcome.jsonl; not held out).
FIX_THRESHOLD_WITH_TERMS = USER_OUTCOME_THRESHOLDS.limit("outcome.with_terms")
FIX_THRESHOLD_WITHOUT_TERMS = USER_OUTCOME_THRESHOLDS.limit("outcome.without_terms")
FIX_THRESHOLD = USER_OUTCOME_THRESHOLDS.limit("outcome.no_solution")  # a task without a known solution

REJECTED = prompts.USER_REJECTED  # why a draft was not used, told to the model when it writes again


class SimulatedUser:
    """An LLM playing the asker, grounded in the real thread (docs/selfscore.md).

    Turn 1 is the question itself. Each later turn: (1) decide the outcome: does the agent's
    latest message fix the hidden true problem (:meth:`outcome`)? (2) write the reply under that outcome,
    with the asker's facts as a hidden scenario; (3) check it (``harness.simuser.checks``: rules,
    then the judge role for contradictions when ``judge`` is given and the task has facts) and
    regenerate a failed message up to ``max_regenerations`` times (default: the user_regenerations
    aid's value when on; a runtime passes its method profile's). The decision, every attempt
    and every check are returned in ``Reply.extra["simulator"]`` and stored with the turn.
    """

    def __init__(self, client: RoleClient, judge: RoleClient | None = None,
                 max_regenerations: int = EMBEDDED_AIDS["user_regenerations"],
                 fix_threshold: float = FIX_THRESHOLD,
                 embedder=None, with_terms: float = FIX_THRESHOLD_WITH_TERMS,
                 without_terms: float = FIX_THRESHOLD_WITHOUT_TERMS,
                 outcome: str = EMBEDDED_AIDS["user_outcome"], fallback: bool = EMBEDDED_AIDS["user_fallback"]):
        if outcome not in OUTCOME_METHODS:
            raise ValueError(f"unknown simulated-user outcome method {outcome!r}; one of {OUTCOME_METHODS}")
        self.outcome_method = outcome
        self.fallback = fallback
        self.client = client
        self.judge = judge
        self.max_regenerations = max_regenerations
        self.fix_threshold = fix_threshold
        self.thresholds = {True: with_terms, False: without_terms}
        self._embedder = embedder

    def read_reply(self, problem: Problem, history: Sequence[Message], text: str | None, fixed: bool) -> dict:
        """What a reply of this user shows of the personas, the facts, and the grounding rules
        (``harness.simuser.checks.read_reply``): the persona sanity check is handed the user and
        reads its replies through it, since the method (``selfscore``) imports no ``simuser``."""
        return user_checks.read_reply(text, problem, history, fixed)

    @cached_property
    def faults_version(self) -> str:
        """The fault check's version (``harness.simuser.faults.faults_version``), hashed once per
        user rather than for every message (0.2 ms each: the rule sets are the process's constants)."""
        return faults.faults_version()

    def fault_kinds(self, problem: Problem, history: Sequence[Message], text: str, fixed: bool | None) -> set[str]:
        """The check kinds the simulator-fault check finds in ``text`` sent after ``history``
        (``harness.simuser.faults.message_faults``): the fault sanity cases read them through
        the user, since the method (``selfscore``) imports no ``simuser``."""
        return {f["kind"] for f in faults.message_faults(text, problem, history, fixed)}

    def similarity(self, problem: Problem, agent_message: str) -> float:
        """Cosine similarity of the agent's message and the thread's real fix (the problem
        statement where the thread has none), with offline MiniLM embeddings
        (``harness.models.embeddings``). Not the problem with the fix: an agent that restates the
        symptom scored high against the problem whatever it advised. The IRC nicks the fix
        addresses are left out of both texts (``harness.aids.text.without_addresses``)."""
        if self._embedder is None:
            from harness.models.embeddings import default_embedder
            self._embedder = default_embedder()
        hidden = without_addresses(known_fix(problem) or problem.problem_statement or problem.question)
        message = without_addresses(agent_message, addressees(problem.solution or "")).strip()
        a, h = self._embedder.embed_array([message[:2000] or " ", hidden[:2000] or " "])
        return float(a @ h)

    async def outcome(self, problem: Problem, agent_message: str) -> tuple[bool, dict, LLMCall]:
        """Does the agent's message fix the hidden true problem? The mean of the user model's
        P(yes) (token log-probabilities) and the embedding similarity of the message with the
        thread's real fix reaches the threshold: a lower one when the message names a
        distinctive term of the real fix (``harness.simuser.fix_terms``), a higher one when it does not;
        ``fix_threshold`` when the task has no known fix (:func:`known_fix`). A message that only asks something and
        names no term of the fix is not fixed whatever the scores (``asks_only`` in the record)."""
        p_llm, _, call = await ask_yes_no(self.client, outcome_messages(problem, agent_message),
                                          "user:outcome")
        # off the event loop: the encoder holds a core for milliseconds (onnxruntime runs
        # without the GIL), the other conversations go on meanwhile
        cosine = await asyncio.to_thread(self.similarity, problem, agent_message) if agent_message.strip() else 0.0
        score = (p_llm + cosine) / 2
        fix = known_fix(problem)
        terms = shared_fix_terms(agent_message, fix, problem.question) if fix else None
        needed = self.fix_threshold if terms is None else self.thresholds[bool(terms)]
        decision = {"p_fix": round(score, 4), "p_llm": round(p_llm, 4), "similarity": round(cosine, 4),
                    "fix_terms": terms, "threshold": needed}
        if not terms and asks_only(agent_message):
            decision["asks_only"] = True  # a question tells the user to do nothing
            return False, decision, call
        return score >= needed, decision, call

    async def _draft(self, messages: list[BaseMessage], attempt: int) -> tuple[str, LLMCall]:
        """One draft of the reply. A regeneration samples with another seed and a little more
        temperature: at the role's own seed the 1.5B wrote the rejected draft again, word for
        word, in most regenerations of a batch."""
        if attempt == 0:
            return await self.client.complete(messages, "user:reply")
        spec = self.client.spec
        msg, call = await self.client.invoke(
            messages, f"user:reply:retry{attempt}", seed=(spec.seed or 0) + attempt,
            temperature=min(1.0, (spec.temperature or 0.0) + 0.15 * attempt))
        return (msg.content if isinstance(msg.content, str) else str(msg.content)), call

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        """The user's message of turn ``turn_index``: the question on turn 1; later, with the
        outcome method ``decided``, the :meth:`outcome` of the agent's last message decides fixed
        or not and the reply is drafted to say so; with ``model`` (the paper's LLM user) the
        model reads the conversation and says what happened itself. A draft that breaks a check
        (``harness.simuser.checks``) is regenerated up to ``max_regenerations`` times. The
        decision, every draft and its violations are in ``extra['simulator']``.

        A persona other than cooperative (``problem.persona``, ``harness.simuser.personas``)
        plans the turn after the decision: the act its schedule picks changes the note (and,
        for a mistaken claim, the outcome the reply reports), the checks relax what the act
        allows, and ``extra['simulator']['persona']`` records it; an impatient user's ``ends``
        returns ``Reply(None)`` (the conversation ends, ``user_ended``).

        Raises:
            ValueError: a persona other than cooperative without a decided outcome (its
                schedule plans on the outcome).
        """
        persona = personas.persona(problem.persona)
        if turn_index == 1 or not history:
            return Reply(problem.question)
        if self.outcome_method == "model" and persona.schedule is not None:
            raise ValueError(f"the {persona.name!r} persona plans its replies on a decided outcome; "
                             "run it with the simulator method user_outcome=decided "
                             "(--aid user_outcome=on), or with the cooperative persona")
        calls: list[LLMCall] = []
        agent_message = history[-1].content if history[-1].role == "agent" else ""
        if self.outcome_method == "decided":
            fixed, decision, call = await self.outcome(problem, agent_message)
            calls.append(call)
            decided = {"outcome": "fixed" if fixed else "not_fixed", **decision,
                       "fix_threshold": decision["threshold"]}
        else:
            fixed, decided = None, {"outcome": None, "decided_by": "model"}
        plan = persona.plan(problem, history, fixed)
        if plan is not None and plan.ends:
            return Reply(None, calls, {"simulator": {**decided, "persona": plan.record}})
        reply_fixed = fixed if plan is None else plan.fixed
        told = [] if plan is not None and plan.hide_facts else situation_facts(problem.facts)
        facts = prompts.USER_FACTS_WITHHELD if plan is not None and plan.hide_facts else _facts_block(told)
        system = prompts.GROUNDED_USER_SYSTEM.format(question=escape_judged_text(problem.question), facts=facts)
        chat = as_chat(window(history), "user")
        if fixed is not None:  # the reply is written under the decided outcome
            note = (prompts.USER_FIXED if fixed else prompts.USER_NOT_FIXED) if plan is None else plan.note
            chat[-1] = HumanMessage(f"{chat[-1].content}\n\n{note}")
        text, attempts = await self._drafts(problem, history, system, chat, reply_fixed, plan, calls)
        simulator = {**decided, "attempts": attempts, "regenerations": len(attempts) - 1,
                     "violations": sorted({v["kind"] for a in attempts for v in a["violations"]}),
                     "unresolved": bool(attempts[-1]["violations"])}
        if self.fallback and attempts[-1]["violations"] and reply_fixed is False:
            text, fallback = _honest_not_fixed(attempts, text)
            if fallback:
                simulator["fallback"] = fallback
        if plan is not None:
            simulator["persona"] = plan.record
        if problem.facts:  # how many of the task's facts the prompt gave, and by which rules
            simulator["situation_facts"] = {"given": len(told), "of": len(problem.facts), "rules": USER_FACTS.version}
        # the sent message's simulator faults, flagged with the turn (a record: nothing is resent)
        simulator["faults"] = faults.faults_record(text, problem, history, reply_fixed, plan, attempts,
                                                   self.faults_version)
        return Reply(text, calls, {"simulator": simulator})

    async def _drafts(self, problem: Problem, history: Sequence[Message], system: str, chat: list,
                      reply_fixed: bool | None, plan, calls: list[LLMCall]) -> tuple[str, list[dict]]:
        """Draft the reply, check it, and draft again (saying why) while a check fails, up to
        ``max_regenerations`` times; the last text and every attempt with its checks."""
        attempts: list[dict] = []
        text = ""
        for attempt in range(self.max_regenerations + 1):
            if attempts:  # say why the last draft was not used
                why = "; ".join(REJECTED.get(v["kind"]) or plan.rejected() for v in attempts[-1]["violations"])
                chat[-1] = HumanMessage(f"{chat[-1].content}\n" + prompts.USER_REGENERATION.format(why=why))
            raw, call = await self._draft([SystemMessage(system), *chat], attempt)
            calls.append(call)
            text = _ROLE_PREFIX.sub("", raw.strip()) or raw.strip()
            text, copied = user_checks.strip_copied_instructions(text, plan.texts() if plan else ())
            violations = [v.as_dict() for v in (*user_checks.rule_violations(text, problem, history, reply_fixed, plan),
                                                *faults.role_breaks(text))]
            if copied and not text.strip():
                violations.insert(0, {"kind": "copies_instructions", "evidence": copied[0][:160]})
            checks = {"rules": [v["kind"] for v in violations]}
            if copied:  # cut from the draft: the simulator's own instructions, written out
                checks["cut_instructions"] = [c[:160] for c in copied]
            if not violations and self.judge is not None and problem.facts:
                p, more = await user_checks.contradicts_facts(self.judge, text, problem, history)
                calls.extend(more)
                checks["p_contradicts"] = round(p, 4)
                if p >= 0.5:
                    violations.append({"kind": "contradicts_facts", "evidence": f"judge P(yes)={p:.2f}"})
            attempts.append({"text": text, "violations": violations, "checks": checks})
            if not violations:
                break
        return text, attempts


# kinds of violation after which a not-fixed reply must not be sent: it would end the
# conversation on a claim the outcome contradicts, write (or copy) the agent's part, or give away the
# hidden solution (a repeat or an invented version number misleads nobody about the outcome)
_MISLEADING = {"false_success", "acts_as_agent", "echoes_agent", "copies_instructions", "leaks_solution",
               "contradicts_facts", "breaks_role"}
NOT_FIXED_FALLBACK = "I tried that, but the problem is still there."


def _honest_not_fixed(attempts: list[dict], text: str) -> tuple[str, str | None]:
    """When every draft of a not-fixed reply broke a check: the first draft whose violations
    mislead nobody (a repeat, say), else a plain "still there" reply. A 1.5B simulator told
    "the problem is not fixed" wrote "I have resolved the issue" in all its regenerations; sending
    that made the solved-check end the conversation as solved."""
    def misleading(a: dict) -> bool:
        kinds = {v["kind"] for v in a["violations"]}
        if "false_success" in kinds and not claims_success(a["text"]):
            kinds.discard("false_success")  # a result word alone ("again"): left to the solved-check
        return bool(kinds & _MISLEADING)
    if not misleading(attempts[-1]):
        return text, None
    for a in attempts:
        if not misleading(a):
            return a["text"], "an earlier draft"
    return NOT_FIXED_FALLBACK, "scripted"


def outcome_version() -> str:
    """The version of the simulator method ``decided``: a hash of its outcome question, the
    notes the reply is written under, the thresholds, the limits and the fix-term rules."""
    from harness.aids import FIX_TERMS, TEXT, version_of
    limits = json.dumps({"solution_chars": OUTCOME_SOLUTION_CHARS, "agent_chars": OUTCOME_AGENT_CHARS})
    return version_of("user-outcome", [prompts.USER_OUTCOME, prompts.USER_OUTCOME_SOLUTION, prompts.USER_FIXED,
                                       prompts.USER_NOT_FIXED, limits, USER_OUTCOME_THRESHOLDS, FIX_TERMS, TEXT,
                                       OUTCOME_LOGIC_VERSION])


def fallback_version() -> str:
    """The version of the aid ``user_fallback``: a hash of the scripted line and the kinds of
    violation that make a draft misleading."""
    from harness.aids import version_of
    return version_of("user-fallback", [NOT_FIXED_FALLBACK, *sorted(_MISLEADING)])


class ScriptedUser:
    """Fixed follow-up messages (a test double and a replay tool).

    Turn 1 is the problem's question, or the interaction's entry in ``openings`` (a replayed
    conversation's first message as it was said); turn *n* is ``script[n-2]``; when the script
    runs out the user ends the conversation. ``script`` is one list for every interaction, or a
    mapping from interaction id to its own list.
    """

    def __init__(self, script: Sequence[str] | Mapping[str, Sequence[str]],
                 openings: Mapping[str, str] | None = None):
        self.script = script
        self.openings = openings or {}

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        """The opening or question on turn 1, then the script's next message; None (the user
        ends the conversation) when the script runs out."""
        if turn_index == 1:
            return Reply(self.openings.get(problem.interaction_id) or problem.question)
        script = self.script.get(problem.interaction_id, ()) if isinstance(self.script, Mapping) else self.script
        i = turn_index - 2
        return Reply(script[i] if i < len(script) else None)
