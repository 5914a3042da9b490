"""LLM judges with JSON-schema-constrained output, validated into typed verdicts.

A judgment that fails (endpoint error, invalid JSON, out-of-range score) is retried a bounded
number of times with the validation error shown to the model, then recorded as *failed*:
never replaced by a default. Every attempt's raw output is kept.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphs.protocols import Judgment, LLMCall, Message, Problem
from harness.aids import SOLVED_THRESHOLDS
from harness.aids.helpfulness_bounds import agent_reply_bounds, first_question_bounds, user_reply_bounds
from harness.aids.profiles import EMBEDDED_AIDS, PAPER_AIDS
from harness.models.llm import RoleClient, ask_yes_no
from harness.selfscore import prompts
from harness.selfscore.judge_input import JudgeInput
from harness.selfscore.judge_messages import clipping, escape_judged_text, judge_messages, yes_no_messages
from harness.selfscore.score_reading import read_judgment, score_reading_record
from harness.selfscore.solved_evidence import EvidenceSolvedCheck

Score = Field(ge=1, le=10)
Reason = Field(max_length=200)  # bounds the judge's output tokens (JSON-schema maxLength)


# The verdict models have no docstrings on purpose: pydantic puts a class docstring into the
# JSON schema (``description``) that :func:`response_format` sends to the judge.
class _Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HelpfulnessVerdict(_Verdict):
    reason: str = Reason
    score: int = Score


class SolvedVerdict(_Verdict):
    reason: str = Reason
    solved: bool


class ComplexityVerdict(_Verdict):
    reason: str = Reason
    critical_thinking: int = Score
    error_handling: int = Score
    topic_knowledge: int = Score


V = TypeVar("V", bound=_Verdict)


@lru_cache(maxsize=None)
def response_format(model: type[BaseModel]) -> dict:
    """OpenAI ``response_format`` for a verdict model (honoured by llama.cpp, vLLM, Ollama).

    Built once per model (pydantic's schema generation costs more than the rest of a call) and
    shared by every request: read it, never change it."""
    return {"type": "json_schema",
            "json_schema": {"name": model.__name__, "schema": model.model_json_schema(), "strict": True}}


SCORE_READINGS = ("sampled", "probabilities")


class StructuredJudge:
    """Runs one judging prompt with bounded retries and returns a :class:`Judgment`.

    ``reading`` is how a score judgment (helpfulness, complexity) gets its score: ``sampled``
    (the paper's: a JSON verdict with a written reason and the score) or ``probabilities`` (the
    expected score over the score tokens' probabilities, :mod:`harness.selfscore.score_reading`),
    with a written reason after it only when ``reasons``.
    """

    def __init__(self, client: RoleClient, retries: int, reading: str = "sampled", reasons: bool = True):
        if reading not in SCORE_READINGS:
            raise ValueError(f"unknown score reading {reading!r}; one of {SCORE_READINGS}")
        self.client = client
        self.retries = retries
        self.reading = reading
        self.reasons = reasons

    reads_probabilities = property(lambda self: self.reading == "probabilities",
                                   doc="Whether score judgments are read from probabilities.")

    async def read(self, kind: str, keyed: dict[str | None, list[BaseMessage]]) -> Judgment:
        """Scores read from probabilities, one per key (None: one score); see
        :func:`harness.selfscore.score_reading.read_judgment`."""
        return await read_judgment(self.client, self.retries, self.reasons, kind, keyed)

    async def judge(self, kind: str, messages: list[BaseMessage], verdict: type[V],
                    value_of: Callable[[V], object]) -> Judgment:
        """Ask for a ``verdict`` JSON answer to ``messages`` and validate it, retrying up to
        ``retries`` more times after an endpoint failure or invalid JSON (then with a request to
        answer again).

        Returns:
            An ``ok`` judgment whose value is ``value_of(verdict)``, or a ``failed`` one (value None)
            with every attempt's raw output, calls and the last error; a failure is never defaulted.
        """
        raws: list[str] = []
        calls: list[LLMCall] = []
        error = None
        fmt = response_format(verdict)
        attempt_messages = list(messages)
        for attempt in range(1, self.retries + 2):
            try:
                text, call = await self.client.complete(attempt_messages, f"judge:{kind}", fmt)
            except Exception as exc:  # endpoint failure: recorded, retried, never defaulted
                calls.append(getattr(exc, "llm_call", None) or LLMCall(
                    self.client.role, f"judge:{kind}", self.client.model_name, error=str(exc)[:500]))
                error = f"{type(exc).__name__}: {exc}"[:500]
                raws.append("")
                continue
            calls.append(call)
            raws.append(text)
            try:
                parsed = verdict.model_validate_json(text)
            except ValidationError as exc:
                error = _short_validation_error(exc)
                attempt_messages = [*messages, HumanMessage(
                    f"Your previous answer was invalid ({error}). Answer again with JSON only, "
                    "following the schema exactly.")]
                continue
            data = parsed.model_dump()
            return Judgment(kind=kind, status="ok", value=value_of(parsed), model=self.client.model_name,
                            prompt_version=prompts.PROMPT_VERSION, reason=data.get("reason"),
                            raw=raws, attempts=attempt, parsed=data, calls=calls)
        return Judgment(kind=kind, status="failed", value=None, model=self.client.model_name,
                        prompt_version=prompts.PROMPT_VERSION, raw=raws, attempts=self.retries + 1,
                        error=error, calls=calls)


def _short_validation_error(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'json'}: {e['msg']}" for e in exc.errors()[:3])


def _failed_view(kind: str, model: str, exc: Exception) -> Judgment:
    """A judgment that failed before judging: its input could not be built (a translation)."""
    return Judgment(kind=kind, status="failed", value=None, model=model, prompt_version=prompts.PROMPT_VERSION,
                    calls=list(getattr(exc, "llm_calls", None) or []), error=f"{type(exc).__name__}: {exc}"[:500])


SOLVED_METHODS = ("confirmation", "evidence", "verdict")
CONFIRMED_THRESHOLD = SOLVED_THRESHOLDS.limit("solved.confirmed")  # P(yes) at or above which an answer counts as yes


class ConfirmationSolvedCheck:
    """The solved-check from the user's confirmation (method ``confirmation``, docs/selfscore.md).

    P(the user says this problem is fixed) is the mean P(yes) of one Yes/No question about the
    user's latest message in two phrasings (token log-probabilities); solved when it is at
    least ``threshold``. The rules come first and decide alone, with no question asked, when
    they find the problem persisting, the fix untried or a new question first
    (``harness.aids.cues.persisting_cues``), a message that reads like the agent's
    (``agent_cues``: steps, code, instructions), or no result reported at all (``result_cues``:
    "I changed the permissions." says what was done, not that it works). The agent's latest reply does not
    decide: a fix counts once the user reports that it worked (the simulated user reports so only
    when the fix addresses the hidden cause). Turn 1 is never solved: the user has not answered
    an agent message yet. The probabilities and the cues are stored with the judgment.
    The questions read the conversation as :class:`harness.selfscore.judge_input.JudgeInput` shows it
    (neutralised; other languages per its mode); the rule vetoes read the user's message as
    written, or its English translation (mode ``translate``); in mode ``tell`` a message the
    English rules cannot read is left to the questions.
    """

    QUESTIONS = (("q1", prompts.SOLVED_CONFIRMED), ("q2", prompts.SOLVED_CONFIRMED_ALT))

    def __init__(self, client: RoleClient, threshold: float = CONFIRMED_THRESHOLD,
                 manipulation_defence: bool = True, judge_input: JudgeInput | None = None):
        self.client = client
        self.threshold = threshold
        self.judge_input = judge_input or JudgeInput(manipulation_defence)

    async def judge(self, problem: Problem, history: Sequence[Message]) -> Judgment:
        """Whether the user's latest message confirms the problem is fixed: False on turn 1 and
        when the rules veto, else P(yes) of the two questions against ``threshold`` (failed when
        a question gets no yes/no answer)."""
        from harness.aids.cues import agent_hits, persisting_hits, result_hits

        base = dict(kind="solved", model=self.client.model_name, prompt_version=prompts.PROMPT_VERSION)
        upto_user = list(history[:-1]) if history and history[-1].role == "agent" else list(history)
        if not upto_user or upto_user[-1].role != "user" or not any(m.role == "agent" for m in upto_user):
            return Judgment(**base, status="ok", value=False,
                            reason="the user has not answered an agent message yet",
                            parsed={"method": "confirmation", "skipped": "first turn"})
        try:
            view = await self.judge_input.view(upto_user)
        except Exception as exc:
            return _failed_view("solved", self.client.model_name, exc)
        message = upto_user[-1].content
        if view.language and any(t["index"] == len(upto_user) - 1 for t in view.language.get("translated", [])):
            message = view.latest  # the rules read English
        rules_read = self.judge_input.rules_can_read(view)
        hits = {"persisting": persisting_hits(message), "agent": agent_hits(message), "result": result_hits(message)}
        cues, results = [h.text for h in hits["persisting"]], [h.text for h in hits["result"]]
        like_agent = [h.text[:60] for h in hits["agent"]]
        # the ids of the rules that decide: a persisting or agent cue vetoes, and no result cue does
        vetoing = [h.rule_id for h in (*hits["persisting"], *hits["agent"])] + ([] if results else ["result.none"])
        if rules_read and (cues or like_agent or not results):  # the rules decide: no question is asked
            vetoes = ([repr(c) for c in cues[:3]] + [f"reads like the agent ({c!r})" for c in like_agent[:1]]
                      + ([] if results else ["no result reported"]))
            # a decision aid, not post-processing: no question is asked, so there is no judge
            # answer to keep (judge_value None says so)
            return view.record(Judgment(
                **base, status="ok", value=False, reason="not solved: " + ", ".join(vetoes),
                parsed={"method": "confirmation", "decided_by": "rules", "persisting_cues": cues,
                        "agent_cues": like_agent, "result_cues": results, "solved": False,
                        "judge_value": None, "rule_ids": vetoing}))
        statement = escape_judged_text(problem.problem_statement or problem.question)
        calls, raws, answers = [], [], {}
        try:
            for key, template in self.QUESTIONS:
                p, token, call = await ask_yes_no(
                    self.client, yes_no_messages(view.messages, view.task(template.format(problem=statement))),
                    f"judge:solved:{key}")
                calls.append(call)
                raws.append(token)
                answers[key] = round(p, 4)
        except Exception as exc:  # endpoint failure or no yes/no answer: failed, never defaulted
            calls.extend(getattr(exc, "llm_calls", None) or [])
            return view.record(Judgment(**base, status="failed", value=None, raw=raws, calls=calls,
                                        error=f"{type(exc).__name__}: {exc}"[:500]))
        p_confirmed = round(sum(answers.values()) / len(answers), 4)
        solved = p_confirmed >= self.threshold
        reason = f"user says it is fixed: P(yes)={p_confirmed:.2f}"
        return view.record(Judgment(
            **base, status="ok", value=solved, reason=reason, raw=raws, calls=calls,
            parsed={"method": "confirmation", "decided_by": "questions" if rules_read else "questions (rules cannot read the language)",
                    "p_confirmed": p_confirmed, **{f"p_{k}": v for k, v in answers.items()},
                    "threshold": self.threshold, "persisting_cues": cues, "agent_cues": like_agent,
                    "result_cues": results, "solved": solved, "judge_value": solved, "rule_ids": []}))


class SelfScoreJudges:
    """The per-turn judges of SelfScore (implements ``graphs.protocols.TurnJudges``).

    The arguments are the judges' aids (``harness.aids.profiles``; their defaults are the
    aids' embedded values, which the default profile gives an embedded judge):
    ``solved_method`` picks the solved-check: ``verdict`` (the paper's: one JSON verdict from
    the turn history and the latest agent message) or ``confirmation`` (an aid, see
    :class:`ConfirmationSolvedCheck`). Every judge reads the conversation through one
    :class:`harness.selfscore.judge_input.JudgeInput`: ``manipulation_defence`` removes
    manipulation spans, ``other_languages`` judges a message in another language on what it
    says (``as-is`` is the paper's); each judgment records what was done.
    ``helpfulness_bounds`` pins a helpfulness score to the rubric's band where
    :mod:`harness.aids.helpfulness_bounds` sees what the message plainly is. Every judgment
    keeps the judge's own answer (``parsed["judge_value"]``) beside what an aid made of it, and
    the profile and aids that shaped it (``profile_record``, from
    :meth:`harness.aids.profiles.Profile.record`).
    """

    def __init__(self, judge: StructuredJudge, solved_method: str = EMBEDDED_AIDS["solved_rules"],
                 manipulation_defence: bool = EMBEDDED_AIDS["manipulation_defence"],
                 other_languages: str = EMBEDDED_AIDS["translation"],
                 helpfulness_bounds: bool = EMBEDDED_AIDS["helpfulness_bounds"],
                 profile_record: dict | None = None,
                 judge_reminder: bool = EMBEDDED_AIDS["judge_reminder"]):
        if solved_method not in SOLVED_METHODS:
            raise ValueError(f"unknown solved-check method {solved_method!r}; one of {SOLVED_METHODS}")
        self.judge = judge
        self.solved_method = solved_method
        self.manipulation_defence = manipulation_defence
        self.helpfulness_bounds = helpfulness_bounds
        self.judge_reminder = judge_reminder
        self.judge_input = JudgeInput(manipulation_defence, other_languages, judge.client, escape_judged_text)
        self.confirmation = ConfirmationSolvedCheck(judge.client, judge_input=self.judge_input)
        self.evidence = EvidenceSolvedCheck(judge.client, self.judge_input, confirmation=self.confirmation,
                                            reminder=judge_reminder)
        self.profile_record = profile_record or _profile_of(
            {"solved_rules": solved_method, "manipulation_defence": manipulation_defence,
             "translation": other_languages, "helpfulness_bounds": helpfulness_bounds,
             "judge_reminder": judge_reminder}, judge.reading)

    def _traced(self, judgment: Judgment) -> Judgment:
        """``judgment`` with the profile and the aids that shaped it (their versions) in ``parsed``."""
        if judgment.parsed is None:
            return judgment
        parsed = judgment.parsed
        aids = {}
        versions = {n: a.get("version") for n, a in self.profile_record.get("aids", {}).items() if a.get("on")}
        if "manipulation_defence" in parsed and "manipulation_defence" in versions:
            aids["manipulation_defence"] = {"version": versions["manipulation_defence"],
                                            "moved": bool(parsed["manipulation_defence"].get("spans_removed"))}
        if (parsed.get("other_languages") or {}).get("mode") == "translate":
            aids["translation"] = {"version": versions.get("translation"),
                                   "moved": bool(parsed["other_languages"].get("translated"))}
        if "bounds" in parsed:
            bounds = parsed["bounds"]
            aids["helpfulness_bounds"] = {"version": bounds.get("rules_version"),
                                          "rules": bounds.get("rule_ids", bounds.get("rules", [])),
                                          "moved": parsed.get("judge_value") != parsed.get("score")}
        if parsed.get("judge_reminder") and "judge_reminder" in versions:  # its prompt ended with the reminder
            aids["judge_reminder"] = {"version": versions["judge_reminder"], "moved": None}
        if parsed.get("method") == "evidence":
            aids["solved_rules"] = {"version": versions.get("solved_rules"), "rules": parsed.get("rule_ids", []),
                                    "moved": parsed.get("judge_value") != parsed.get("solved"),
                                    "p_fix": [a.get("p_fix") for a in parsed.get("answers", [])]}
        if parsed.get("method") == "confirmation":
            aids["solved_rules"] = {"version": versions.get("solved_rules"), "rules": parsed.get("rule_ids", []),
                                    "moved": parsed.get("decided_by") == "rules"}
        judgment.parsed = {**parsed, "profile": self.profile_record.get("profile"), "aids": aids}
        return judgment

    async def _judged(self, kind: str, history: Sequence[Message], task: str, verdict, value_of,
                      bounds_of=None) -> Judgment:
        try:
            view = await self.judge_input.view(history)
        except Exception as exc:
            return _failed_view(kind, self.judge.client.model_name, exc)
        reminder = self.judge_reminder
        if bounds_of is not None and self.judge.reads_probabilities:  # a score: read, not sampled
            judgment = await self.judge.read(kind, {None: judge_messages(
                view.messages, view.task(prompts.score_only(task)), reminder)})
        else:
            judgment = await self.judge.judge(kind, judge_messages(view.messages, view.task(task), reminder),
                                              verdict, value_of)
        if judgment.ok and judgment.parsed is not None:
            judgment.parsed = {**judgment.parsed, "judge_value": judgment.value}  # always kept
            if reminder:
                judgment.parsed["judge_reminder"] = True
            clipped = clipping(view.messages)
            if clipped:  # what the judge did not read, with the limits used
                judgment.parsed["clipped"] = clipped
        if bounds_of is not None and self.helpfulness_bounds and judgment.ok and self.judge_input.rules_can_read(view):
            # the rules read the conversation as the judge did (neutralised, or its English translation)
            bounds = bounds_of(view.latest, view.messages)
            if bounds.rules:
                score = bounds.apply(judgment.value)
                judgment.parsed = {**(judgment.parsed or {}), "bounds": bounds.record(judgment.value), "score": score}
                judgment.value = score
        return view.record(judgment)

    async def user_helpfulness(self, problem: Problem, history: Sequence[Message],
                               first_turn: bool) -> Judgment:
        """Helpfulness of the user's latest message (the first-question rubric and bounds when
        ``first_turn``, else those of a later reply)."""
        task = prompts.USER_HELPFULNESS_FIRST if first_turn else prompts.USER_HELPFULNESS_LATER
        bounds_of = (lambda text, _h: first_question_bounds(text)) if first_turn else user_reply_bounds
        return self._traced(await self._judged("user_helpfulness", history, task, HelpfulnessVerdict,
                                               lambda v: v.score, bounds_of))

    async def agent_helpfulness(self, problem: Problem, history: Sequence[Message]) -> Judgment:
        """Helpfulness of the agent's latest reply, with the agent-reply rubric bounds."""
        return self._traced(await self._judged("agent_helpfulness", history, prompts.AGENT_HELPFULNESS,
                                               HelpfulnessVerdict, lambda v: v.score, agent_reply_bounds))

    async def solved(self, problem: Problem, history: Sequence[Message]) -> Judgment:
        """The solved-check by ``solved_method``: :class:`ConfirmationSolvedCheck`, or one JSON
        verdict against the problem statement (the question when there is none)."""
        if self.solved_method == "confirmation":
            return self._traced(await self.confirmation.judge(problem, history))
        if self.solved_method == "evidence":
            return self._traced(await self.evidence.judge(problem, history))
        statement = problem.problem_statement or problem.question
        task = prompts.SOLVED_CHECK.format(problem=escape_judged_text(statement))
        judgment = await self._judged("solved", history, task, SolvedVerdict, lambda v: v.solved)
        if judgment.parsed is not None:
            judgment.parsed = {**judgment.parsed, "method": "verdict"}
        return self._traced(judgment)


def _profile_of(values: dict, score_reading: str) -> dict:
    """A profile record for judges built without one (sanity sets, tests): the judges' aids as
    given (aid name -> value), the other roles' left out."""
    on = {n: v != PAPER_AIDS[n] for n, v in values.items()}
    name = "paper" if not any(on.values()) else "embedded" if all(
        v == EMBEDDED_AIDS[n] for n, v in values.items()) else "mixed"
    return {"profile": name, "requested": None,
            "aids": {n: {"on": on[n], "value": v, "version": None} for n, v in values.items()},
            "score_reading": score_reading_record(score_reading)}


COMPLEXITY_DIMENSIONS = ("critical_thinking", "error_handling", "topic_knowledge")


async def judge_complexity(judge: StructuredJudge, summary: str) -> Judgment:
    """Complexity (CT, EH, TK) of a problem from its summarized question (read from probabilities,
    one dimension per question, when the judge reads them)."""
    task = prompts.COMPLEXITY.format(summary=escape_judged_text(summary))
    if judge.reads_probabilities:
        return await judge.read("complexity", {
            d: [SystemMessage(prompts.COMPLEXITY_SYSTEM), HumanMessage(prompts.complexity_score_only(task, d))]
            for d in COMPLEXITY_DIMENSIONS})
    messages = [SystemMessage(prompts.COMPLEXITY_SYSTEM), HumanMessage(task)]
    return await judge.judge(
        "complexity", messages, ComplexityVerdict,
        lambda v: {"critical_thinking": v.critical_thinking, "error_handling": v.error_handling,
                   "topic_knowledge": v.topic_knowledge})
