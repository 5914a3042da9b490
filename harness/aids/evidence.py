"""The evidence solved-check's rules (``harness.selfscore.solved_evidence``): how a user message
reacts to the previous answer, and when an agent message is no fix whatever the judge says.

Its word list is data (:data:`EVIDENCE`, versioned by content like every rule set); it reads the
solved-check's cues (``harness.aids.cues``) and the helpfulness bounds' ``elsewhere``, ``step``
and repeat rules, so one rule decides the same thing everywhere.
"""
from __future__ import annotations

from typing import Sequence

from graphs.protocols import Message
from harness.aids.cues import claims_success_hits, persisting_hits
from harness.aids.data_bounds import ACK
from harness.aids.helpfulness_bounds import agent_reply_bounds, only_asks
from harness.aids.rules import Limit, Rule, RuleSet, WordList
from harness.aids.text import plain_words

EVIDENCE = RuleSet("evidence", [
    Rule(id="evidence.confirms", pattern=r"\b(?:works?|working|worked|fixed|solved|resolved|did the trick|"
         r"(?:is|are) back|that did it|no longer)\b", decides="user reply: a success said in so many words (and "
         "not negated: claims_success) -> solved by the previous answer, no question",
         why="the looser success words ('mount', 'shows', 'appears') fired on 'unable to mount as the type "
         "disappeared' and 'a screen came with lot of logs' in real threads (tune split)"),
    Rule(id="evidence.question_clause", pattern=r"[^.!?\n]*\?[?!]*",
         decides="user reply: a clause that ends in '?' is left out before a confirmation is looked "
         "for (a success word asked about is no success said)",
         why="'does this work recursively and for binary files?!' read as a confirmation (a held-out "
         "disagreement, so the held-out figure after this rule is no longer untouched)"),
], word_lists=[
    WordList(id="evidence.accepts", words="thanks thank thx ty cheers appreciate appreciated great perfect "
             "awesome excellent nice cool much very so a lot ok okay k alright right you i will try that it "
             "got see understood for the help your yes yeah good fine",
             decides="user reply: only thanks or OK (with the bounds' ack words) -> the previous answer "
             "is judged as the one the user accepted",
             why="real helpdesk dialogues end 'OK. Thank you' after the answer; nobody writes 'it works now'"),
], limits=[
    Limit(id="evidence.accepts_max_words", value=12, decides="an acceptance has at most this many words",
          why="'ok thanks, I will try that tonight' is an acceptance; a long message says more"),
])
EVIDENCE_RULES_VERSION = EVIDENCE.version

SOLVED_THRESHOLDS = RuleSet("solved-thresholds", limits=[
    Limit(id="solved.confirmed", value=0.5,
          decides="P(yes) of the confirmation questions (the mean of two phrasings) at or above which the "
                  "user says the problem is fixed (ConfirmationSolvedCheck)",
          why="the Yes/No answer's own midpoint: the two phrasings' mean is a probability of 'yes'"),
    Limit(id="solved.answer", value=0.5,
          decides="P(the answer fixes the problem), the questions' mean averaged with the answer's "
                  "similarity to the reference where there is one, at or above which it is the fix "
                  "(EvidenceSolvedCheck)",
          why="the midpoint, as for the confirmation; the evidence method's tune split was read at 0.5"),
])
"""The thresholds that turn the solved-check's probabilities into a verdict."""


def reaction(message: str) -> tuple[str, list[str]]:
    """How a user message reacts to the previous answer, with the ids of the rules that decided:
    ``persists`` (the problem is still there), ``confirms`` (a success said plainly), ``accepts``
    (thanks or OK and nothing else, or "I'll try that": the answer is taken, its outcome unknown)
    or ``other`` (a new question, an output, anything else). A success is looked for outside the
    clauses that end in "?" ("that worked. What happened to pulseaudio?" confirms, "does this work
    recursively?" does not)."""
    hits = persisting_hits(message)
    persisting = [h.rule_id for h in hits if not h.rule_id.startswith("untried.")]
    if persisting:
        return "persists", persisting
    said = EVIDENCE.regex("evidence.question_clause").sub(" ", message)
    confirmed = _confirmation(said)
    if confirmed:
        return "confirms", confirmed
    # the rule that kept a success word asked about from confirming, when it did
    asked = ["evidence.question_clause"] if said != message and _confirmation(message) else []
    if hits:  # only untried.*: "OK, I will try that"
        return "accepts", [h.rule_id for h in hits] + asked
    words = plain_words(message)
    accepted = EVIDENCE.words("evidence.accepts") | ACK.words("ack.words")
    if words and "?" not in message and len(words) <= EVIDENCE.limit("evidence.accepts_max_words") \
            and set(words) <= accepted:
        return "accepts", ["evidence.accepts"]
    return "other", asked


def _confirmation(text: str) -> list[str]:
    """The rules by which ``text`` says a success plainly (not negated), or ``[]``."""
    success = [h.rule_id for h in claims_success_hits(text)]
    plainly = EVIDENCE.regex("evidence.confirms").search(text)
    return [*success, "evidence.confirms"] if success and plainly else []


def not_a_fix(text: str, earlier: Sequence[Message]) -> str | None:
    """Why an agent message is no fix whatever the judge says (the id of the rule), or None: it
    only asks (a question and no step), only sends the user elsewhere, or repeats an earlier
    agent message (the helpfulness bounds' rules)."""
    if only_asks(text):
        return "asks.question"
    bounds = agent_reply_bounds(text, [*earlier, Message("agent", text)])
    if bounds.rule_ids and bounds.rule_ids[-1] in ("band.repeats_agent", "band.elsewhere"):
        return bounds.rule_ids[0]  # the rule that fired (repeat.agent_copied, elsewhere.*), then its band
    return None
