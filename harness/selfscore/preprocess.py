"""Preprocessing of a problem with the paper's prompts, cached in the store.

The summarized question feeds the complexity judgment; the extracted underlying problem feeds
the solved-check. A task that brings its own ``problem`` skips extraction.

A small extractor model tends to answer a question instead of restating it, and to state the
fix instead of the problem. Every extraction is therefore checked (:func:`answer_signs`,
:func:`solution_signs`); a flagged one is regenerated once with a stricter prompt, and both
attempts are kept in the preprocessing row's ``raw`` (JSON). Measured in
``tests/benchmarks/bench_preprocess.py`` (docs/selfscore.md).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from graphs.protocols import LLMCall
from harness.aids import PREPROCESS_ANSWER_SIGNS, PREPROCESS_SOLUTION_SIGNS, version_of
from harness.models.llm import RoleClient
from harness.selfscore import prompts
from harness.selfscore.judge_messages import escape_judged_text
from store import StoreReader, StoreWriter

# --- the checks -------------------------------------------------------------------------------
# The signs are rules of the one catalogue (harness.aids.data_preprocess), each named by its
# "sign" trait; guard_version() hashes them with the prompts, the examples and the length limit.
# A small model copies a prompt's example when the post confuses it ("The computer is not
# plugged in" for a question in Italian): the paper's examples and every quoted text of the
# problem prompts (harness.selfscore.prompts) count as copied.
PAPER_EXAMPLES = ("The computer is not plugged in", "The DNS servers are down")


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def copied_example(text: str) -> bool:
    """Whether ``text`` is one of the prompts' examples rather than this post's own."""
    quoted = re.findall(r'"([^"]+)"', prompts.PROBLEM_PROMPT + prompts.PROBLEM_FROM_SOLUTION_PROMPT
                        + prompts.SUMMARY_PROMPT)
    return _norm(text) in {_norm(q) for q in (*PAPER_EXAMPLES, *quoted)}
# how a restated question or request starts (the benchmark's verdict, with "ends with ?")
_RESTATEMENT_START = re.compile(
    r"^\W*(how|what|why|when|where|which|who|whom|whose|can|could|is|are|am|was|were|do|does|did|"
    r"should|would|will|shall|may|might|has|have|i|i'm|i've|i'd|i'll|my|we|our|the user|user|"
    r"please|help|any|anyone|someone|somebody|if|whether)\b", re.I)
# a user's greeting before the request ("Hey there! I need ...", as IRC askers write)
_GREETING = re.compile(r"^\W*(hey|hi|hello|ciao|hola|greetings)( there| guys| all| everyone| folks)?\b[\s,.!:;-]*", re.I)
PROBLEM_MAX_WORDS = int(PREPROCESS_SOLUTION_SIGNS.limit("solution.max_words"))


def answer_signs(text: str) -> list[str]:
    """The answer patterns a summary shows (empty: it does not answer the question)."""
    text = text.strip()
    signs = [PREPROCESS_ANSWER_SIGNS.entry(h.rule_id).trait("sign") for h in PREPROCESS_ANSWER_SIGNS.each(text)]
    if copied_example(text):
        signs.append("copied the prompt's example")
    return signs


def looks_like_answer(text: str) -> bool:
    """Whether a summary shows any answer pattern (:func:`answer_signs`)."""
    return bool(answer_signs(text))


def is_restatement(text: str) -> bool:
    """The benchmark's verdict on a summary: phrased as the user's question or request (ends
    with "?" or starts like one: How/What/Can/Is/I/My/The user ...) and no answer pattern."""
    text = text.strip()
    request = _GREETING.sub("", text, count=1)
    return (bool(text) and not looks_like_answer(text)
            and (text.rstrip("\"'").endswith("?") or bool(_RESTATEMENT_START.match(request))))


def solution_signs(text: str) -> list[str]:
    """The signs that a problem statement is a fix, instructions or a question, or too long
    (empty: it reads as a problem)."""
    text = text.strip()
    signs = [PREPROCESS_SOLUTION_SIGNS.entry(h.rule_id).trait("sign") for h in PREPROCESS_SOLUTION_SIGNS.each(text)]
    if len(text.split()) > PROBLEM_MAX_WORDS:
        signs.append("too long")
    if copied_example(text):
        signs.append("copied the prompt's example")
    return signs


def is_problem_statement(text: str) -> bool:
    """The benchmark's verdict on a problem: a short statement with no sign of a solution."""
    return bool(text.strip()) and not solution_signs(text)


def check_signs(kind: str, text: str) -> list[str]:
    """What is wrong with an extraction of ``kind`` (``summary`` or ``problem``)."""
    return answer_signs(text) if kind == "summary" else solution_signs(text)


# --- the prompts ------------------------------------------------------------------------------
# Sent instead, once, when the first attempt showed the signs above.
SUMMARY_RETRY = (
    "Your previous output answered the question instead of restating it. Rewrite the question "
    "below as the user's own short question, in the first person, ending with \"?\". Do not "
    "answer it, explain it or give any steps or commands."
)
PROBLEM_RETRY = (
    "Your previous output was a fix, an instruction, a question or a copied example, not this "
    "user's problem. State only what is wrong (the cause) in one short plain sentence about the "
    "user's system, or what the user does not know. Never say what to do."
)


def extraction_messages(kind: str, question: str, solution: str | None = None,
                        stricter: bool = False, guard: bool = True) -> list[BaseMessage]:
    """The extractor's prompt for the ``summary`` or the ``problem`` of a question; the
    problem is extracted from the thread's ``solution`` where there is one (the paper's way).
    ``stricter``: the regeneration prompt after a flagged first attempt. ``guard`` off (the
    paper): the paper's prompt verbatim, one user message, the text appended as it is."""
    if not guard:
        text = (prompts.PAPER_SUMMARY_PROMPT.format(question=question) if kind == "summary"
                else prompts.PAPER_PROBLEM_PROMPT.format(post=solution or question))
        return [HumanMessage(text)]
    if kind == "summary":
        system, template, retry = prompts.SUMMARY_SYSTEM, prompts.SUMMARY_PROMPT, SUMMARY_RETRY
    elif solution:
        system, template, retry = prompts.PROBLEM_SYSTEM, prompts.PROBLEM_FROM_SOLUTION_PROMPT, PROBLEM_RETRY
    else:
        system, template, retry = prompts.PROBLEM_SYSTEM, prompts.PROBLEM_PROMPT, PROBLEM_RETRY
    # the texts are data inside the prompt's tags: they can neither close nor open them
    text = template.format(question=escape_judged_text(question),
                           solution=escape_judged_text(solution or ""))
    return [SystemMessage(system), HumanMessage(f"{retry}\n\n{text}" if stricter else text)]


_LABEL = re.compile(r"^\s*(summary|summarized question|restated question|restatement|question|"
                    r"problem statement|problem|underlying problem|cause)\s*:\s*", re.I)


def clean(text: str) -> str:
    """The model's text without surrounding quotes or a leading label ("Problem: ...")."""
    text = text.strip()
    stripped = _LABEL.sub("", text, count=1).strip()
    if len(stripped) > 1 and stripped[0] == stripped[-1] and stripped[0] in "\"'`":
        stripped = stripped[1:-1].strip()
    return stripped or text


@dataclass
class Extraction:
    """One extraction: the text used, every attempt's raw output, the signs that made the
    first attempt be regenerated (empty: it was kept), and the calls."""

    text: str
    attempts: list[str]
    signs: list[str] = field(default_factory=list)
    calls: list[LLMCall] = field(default_factory=list)

    @property
    def regenerated(self) -> bool:
        """Whether the first attempt was regenerated (more than one attempt)."""
        return len(self.attempts) > 1

    def raw(self) -> str:
        """The ``raw`` of the preprocessing row: the text itself, or JSON of both attempts."""
        if not self.regenerated:
            return self.attempts[0]
        return json.dumps({"attempts": self.attempts, "first_attempt_signs": self.signs,
                           "regenerated": True})


async def extract(kind: str, question: str, extractor: RoleClient,
                  solution: str | None = None, guard: bool = True) -> Extraction:
    """The ``summary`` or ``problem`` of a question from the extractor (no cache). With the
    ``guard`` (the aid ``preprocessing_guard``): the harness's prompts, and a first attempt
    flagged by :func:`check_signs` is regenerated once with the stricter prompt, whose text is
    used unless it is empty; without it: the paper's prompt, one call, its text as it is.

    Raises:
        RuntimeError: the extractor returned nothing usable.
    """
    raw, call = await extractor.complete(extraction_messages(kind, question, solution, guard=guard),
                                         f"extractor:{kind}")
    result = Extraction(clean(raw), [raw], calls=[call])
    signs = check_signs(kind, result.text) if guard and result.text else []
    if guard and (signs or not result.text):
        result.signs = signs or ["empty"]
        again, call = await extractor.complete(
            extraction_messages(kind, question, solution, stricter=True), f"extractor:{kind}:retry")
        result.attempts.append(again)
        result.calls.append(call)
        if clean(again):
            result.text = clean(again)
    if not result.text:
        raise RuntimeError(f"The extractor returned an empty {kind}.")
    return result


def guard_version() -> str:
    """The version of the aid ``preprocessing_guard``: a hash of the harness's preprocessing
    prompts, the retry prompts, the two sign sets (with the length limit) and the examples
    that count as copied."""
    return version_of("preprocessing-guard", [
        prompts.SUMMARY_SYSTEM, prompts.SUMMARY_PROMPT, prompts.PROBLEM_SYSTEM, prompts.PROBLEM_PROMPT,
        prompts.PROBLEM_FROM_SOLUTION_PROMPT, SUMMARY_RETRY, PROBLEM_RETRY,
        PREPROCESS_ANSWER_SIGNS, PREPROCESS_SOLUTION_SIGNS, *PAPER_EXAMPLES])


def paper_preprocessing_version() -> str:
    """What a preprocessing row of the paper's prompts records as its prompt version (a hash of
    the two texts): the cache never mixes them with the guarded prompts' outputs."""
    return version_of("paper-preprocessing", [prompts.PAPER_SUMMARY_PROMPT, prompts.PAPER_PROBLEM_PROMPT])


async def preprocessed_text(kind: str, problem_id: str, question: str, extractor: RoleClient,
                            reader: StoreReader, writer: StoreWriter,
                            solution: str | None = None, guard: bool = True) -> tuple[str, list[LLMCall]]:
    """The ``summary`` or ``problem`` text of a problem, from the cache or :func:`extract`
    (cached per prompt version: the guarded prompts' and the paper's apart)."""
    model = extractor.model_name
    version = prompts.PROMPT_VERSION if guard else paper_preprocessing_version()
    cached = reader.preprocessing(problem_id, kind, model, version)
    if cached is not None:
        return cached, []
    try:
        result = await extract(kind, question, extractor, solution, guard=guard)
    except RuntimeError:
        raise RuntimeError(f"The extractor returned an empty {kind} for problem {problem_id}.") from None
    writer.put_preprocessing({"problem_id": problem_id, "kind": kind, "model": model,
                              "prompt_version": version, "text": result.text, "raw": result.raw()})
    return result.text, result.calls
