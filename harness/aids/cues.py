"""What a message plainly says, read by rules: the problem persists, a success is claimed, a
result is reported, the message reads like the help desk's.

The solved-check's vetoes (``harness.selfscore.judges.ConfirmationSolvedCheck``), the simulated
user's checks (``harness.simuser.checks``) and the helpfulness bounds
(:mod:`harness.aids.helpfulness_bounds`) all read these. Each function keeps the list of matched
texts its callers store; its ``*_hits`` twin gives the same matches as :class:`harness.aids.rules.Hit`,
with the id of the rule that matched. The rules are data (:mod:`harness.aids.data_cues`).
"""
from __future__ import annotations

from harness.aids.data_cues import (AFTER_STEP, AGENT, ASSISTANT, NEGATION, PERSISTING, RESULT, SOLVED_CUES,
                                    SUCCEEDED, SUCCESS, SUCCESS_CLAIM, SYMPTOM_GONE)
from harness.aids.data_text import QUOTED
from harness.aids.rules import Hit

#: the version of every rule the solved-check's vetoes read (persisting, agent and result cues)
SOLVED_CUES_VERSION = SOLVED_CUES.version
#: the version of every rule :func:`claims_success` reads
SUCCESS_CLAIM_VERSION = SUCCESS_CLAIM.version


def persisting_hits(message: str) -> list[Hit]:
    """The hits of :func:`persisting_cues`, with their rule ids (``persists.*``, ``untried.*``)."""
    return PERSISTING.all(message)


def persisting_cues(message: str) -> list[str]:
    """Phrases saying the problem is still there, the fix is not tried yet, or a new question
    comes first ("still", "same error", "didn't work", "I'll try", "before I try", ...)."""
    return [h.text for h in persisting_hits(message)]


def agent_hits(message: str) -> list[Hit]:
    """The hits of :func:`agent_cues` (the first of each rule), with their rule ids."""
    return AGENT.each(message)


def agent_cues(message: str) -> list[str]:
    """Phrases of a message that read like the help desk's, not the user's: a list of steps,
    code, instructions, assistant phrases (the ``acts_as_agent`` patterns)."""
    return [h.text[:60] for h in agent_hits(message)]


def assistant_hits(message: str) -> list[Hit]:
    """The hits of :func:`assistant_phrases` (the first of each rule), with their rule ids."""
    return ASSISTANT.each(message)


def assistant_phrases(message: str) -> list[str]:
    """The help desk's own phrases in a message ("I'm sorry to hear", "let me know if", "I will
    do my best to help"): the part of :func:`agent_cues` that a real user never writes."""
    return [h.text[:60] for h in assistant_hits(message)]


def result_hits(message: str) -> list[Hit]:
    """The hits of :func:`result_cues`: the success words, then the result words ("again" and
    "back" only where no step word comes right before them, ``result.after_step``)."""
    message = message or ""
    results = [h for h in RESULT.all(message)
               if h.rule_id != "result.again_back" or not AFTER_STEP.first(message[:h.start])]
    return [*SUCCESS.all(message), *results]


def result_cues(message: str) -> list[str]:
    """Words by which the message reports a result (success words, "again", "now", "stopped",
    "shows", ...), negated or not; none when it only says what the user did ("I have changed the
    permissions ... and ensured that the files are owned by my account user": a batch's
    solved-check took that for a confirmation at P(yes) 0.56)."""
    return [h.text for h in result_hits(message)]


_CLAUSE_ENDS = (".", ",", ";", " but ", "!", "?")


def claims_success_hits(message: str) -> list[Hit]:
    """The hit that makes :func:`claims_success` true (the symptom said to be gone, or the first
    success phrase not negated in its clause), or ``[]``. Quoted text reads as "the error"."""
    message = QUOTED.sub("the error", message or "")
    gone = SYMPTOM_GONE.first(message)
    if gone:
        return [gone]
    hits = SUCCESS.all(message)
    if not PERSISTING.first(message):  # "it ran successfully but still no sound" is no success
        hits += SUCCEEDED.all(message)
    for h in hits:
        clause_start = max(message.rfind(sep, 0, h.start) for sep in _CLAUSE_ENDS)
        if not NEGATION.first(message[clause_start + 1: h.end + 12]):
            return [h]
    return []


def claims_success(message: str) -> bool:
    """The message says the problem is fixed (a success phrase not negated in its clause, or
    the error itself said to be gone); quoted text is ignored."""
    return bool(claims_success_hits(message))
