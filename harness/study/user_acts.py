"""What a user's message does, read by a few plain rules: the act mix of people's and the
simulator's messages in ``deskbench compare`` (:mod:`harness.study.people_vs_simulator`).

Each message gets one act, the first rule that fires in this order:

1. ``reports fixed``: the message says the problem is fixed (:func:`harness.aids.claims_success`:
   a success phrase not negated in its clause, or the symptom said to be gone);
2. ``still broken``: it says the problem is still there or the fix is not tried yet
   (:func:`harness.aids.persisting_cues`: "still", "didn't work", "same error", "I'll try");
3. ``asks a question``: a question mark, or a first word that opens a question ("how", "what",
   "can", "should", ...);
4. ``thanks / closes``: thanks or a goodbye ("thanks", "cheers", "bye", "that's all");
5. ``gives a fact``: it reports a result (:func:`harness.aids.result_cues`) or carries something
   a helper can use: a number, a path or command, a quoted or code text, an error or output
   word, or a plain statement of at least four words;
6. ``other``: none of these ("ok", "hmm", "sure").

The rules are deliberately small and the same for both sides, so a difference in the mix is a
difference in the messages, not in the reader. A richer act classifier is being built for
``deskbench simcheck`` (the simulated user against the real askers of imported threads); the
two should converge on one classifier, and this module then becomes a call of that one.
"""
from __future__ import annotations

import re
from typing import Iterable

from harness.aids import claims_success, persisting_cues, result_cues

FIXED, BROKEN, QUESTION, THANKS, FACT, OTHER = ("reports fixed", "still broken", "asks a question",
                                                "thanks / closes", "gives a fact", "other")
#: every act, in the order the rules try them (the report's row order)
ACTS = (FIXED, BROKEN, QUESTION, THANKS, FACT, OTHER)

_QUESTION_OPENERS = re.compile(
    r"^\s*(how|what|why|where|when|which|who|whom|whose|is|are|am|was|were|do|does|did|can|could|"
    r"should|would|will|shall|may|might|have|has|any|anything)\b", re.I)
_THANKS = re.compile(r"\b(thanks|thank\s+you|thank\s+u|thx|ty|cheers|appreciate\w*|bye|goodbye|"
                     r"that'?s\s+all|no\s+more\s+questions|have\s+a\s+(good|nice|great)\s+\w+)\b", re.I)
_FACT_SIGNS = re.compile(
    r"\d|[/\\`=<>|$~]|\"[^\"]+\"|\b(error|errors|output|says|said|shows|showed|message|log|logs|"
    r"version|installed|running|using|returns|returned|prints|printed)\b", re.I)
_WORDS = re.compile(r"\S+")


def words(message: str | None) -> int:
    """The number of words of a message (runs of non-space characters)."""
    return len(_WORDS.findall(message or ""))


def user_act(message: str | None) -> str:
    """The act of one user message (one of :data:`ACTS`), by the rules in the module docstring."""
    text = (message or "").strip()
    if not text:
        return OTHER
    if claims_success(text):
        return FIXED
    if persisting_cues(text):
        return BROKEN
    if "?" in text or _QUESTION_OPENERS.match(text):
        return QUESTION
    if _THANKS.search(text):
        return THANKS
    if result_cues(text) or _FACT_SIGNS.search(text) or words(text) >= 4:
        return FACT
    return OTHER


def act_shares(messages: Iterable[str | None]) -> dict[str, float] | None:
    """Each act's share of ``messages`` (every act present, shares summing to 1), or None when
    there is no message."""
    acts = [user_act(m) for m in messages]
    if not acts:
        return None
    return {act: acts.count(act) / len(acts) for act in ACTS}
