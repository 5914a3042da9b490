"""Rubric bounds on a helpfulness score, from what a message plainly is (method in docs/selfscore.md).

The embedded 1.5B judge reads the rubric's bands loosely deep in a conversation: in batches
b18/b19 and on the turn-helpfulness sanity set it gave 1 to "I tried logging in again and the
issue is still there." (the rubric's 5-6: the step was done, the outcome said in a few words),
8 to "Thanks, I will try that some time next week." and to a user speaking as the help desk,
and 7-9 to a first question with no detail at all ("my sound does not work recently..i need
help"). Its Yes/No answers to "did the user report the result?" were near chance (P(yes)
0.44-0.87 on both sides). These bands, though, are defined by things a rule can see, so each
rule here pins a score to the band the rubric itself gives such a message:

- a later user message that speaks as the help desk or pastes the first question again: at
  most 2; one that only acknowledges ("ok"): at most 2; one that refuses the step, or postpones
  it without reporting anything ("I will try that later"): at most 3; one that reports an
  outcome (still failing, or working) or an output: at least 5;
- a first question that reports a fault (not a how-to) and names no system, version or model,
  no error or output, and nothing tried or since when: at most 4;
- an agent message that repeats an earlier agent message: at most 2; one that only sends the
  user elsewhere or to try again later, with no step of its own: at most 3.

The judge's own score stands inside the bounds; the judgment records the judge's score, the
bounds and the rules that set them. The rules read English (``harness.selfscore.judge_input``).

The rules are data (:mod:`harness.aids.data_bounds`, with the cues of :mod:`harness.aids.data_cues`
and the units of :mod:`harness.aids.data_text`), read through :mod:`harness.aids.rules`; a bounded
judgment stores the ids of the rules that set its band and :data:`RULES_VERSION`, the hash of them all.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from graphs.protocols import Message
from harness.aids.cues import assistant_hits, claims_success
from harness.aids.data_bounds import (ACK, ASKS, BANDS, DETAIL, ELSEWHERE, HB, HOW_TO, OUTCOME, OUTPUT, PLEASANTRY, POSTPONES, REFUSES, STEP, WORKS)
from harness.aids.data_text import QUOTED, TECHNICAL, TEXT_SPANS
from harness.aids.rules import Hit, version_of
from harness.aids.text import copied_fraction, plain_words, utterance_words, without_addresses
from harness.aids.text import sentences as split_sentences


def bounds_version() -> str:
    """The version of everything the bounds decide by: every rule, word list and limit they read
    (``HB``) and the text spans they cut by (sentences), hashed by :func:`version_of`."""
    return version_of("helpfulness-bounds", [HB, TEXT_SPANS])


#: what a bounded judgment and a run record: :func:`bounds_version` (``helpfulness-bounds-...``)
RULES_VERSION = bounds_version()

_ACK_WORDS = ACK.words("ack.words")
_ACK_MAX = int(ACK.limit("ack.max_words"))


def _band(band_id: str) -> int:
    return int(BANDS.limit(band_id))


@dataclass(frozen=True, slots=True)
class Bounds:
    """The band a helpfulness score must fall in, the rules that set it (as read) and their ids."""

    floor: int = 1
    cap: int = 10
    rules: tuple[str, ...] = ()
    rule_ids: tuple[str, ...] = ()

    def apply(self, score: int) -> int:
        """``score`` moved into the band."""
        return min(max(score, self.floor), self.cap)

    def record(self, score: int) -> dict:
        """What the judgment stores: the judge's own score, the band, the rules and their ids."""
        return {"judge_score": score, "floor": self.floor, "cap": self.cap, "rules": list(self.rules),
                "rules_version": RULES_VERSION, "rule_ids": list(self.rule_ids)}


def _capped(band_id: str, rule: str, *hit_ids: str) -> Bounds:
    return Bounds(cap=_band(band_id), rules=(rule,), rule_ids=(*hit_ids, band_id))


def _floored(band_id: str, rule: str, *hit_ids: str) -> Bounds:
    return Bounds(floor=_band(band_id), rules=(rule,), rule_ids=(*hit_ids, band_id))


def _same(a: str, b: str) -> bool:
    words = utterance_words(a)
    return bool(words) and words == utterance_words(b)


def _output(text: str) -> Hit | None:
    """What shows the message reports an output: a phrase, a quote, or enough distinct technical
    tokens outside a question (a follow-up question names things but reports nothing)."""
    found = OUTPUT.first(text) or QUOTED.first(text)
    if found:
        return found
    tokens = {h.text for h in TECHNICAL.all(text)}
    if len(tokens) >= BANDS.limit("output.technical_tokens") and "?" not in text:
        return Hit("output.technical_tokens", ", ".join(sorted(tokens)))
    return None


def user_reply_bounds(text: str, history: Sequence[Message]) -> Bounds:
    """Bounds for a later user message (``history`` ends with it).

    Args:
        text: the user's message as the rules read it.
        history: the conversation up to and including that message.
    """
    text = without_addresses(text)  # "Dr_Willis: when I do ..." -> "when I do ..."
    first = next((m.content for m in history[:-1] if m.role == "user"), "")
    help_desk = assistant_hits(text)
    if help_desk:
        return _capped("band.help_desk", f"speaks as the help desk ({help_desk[0].text!r})", help_desk[0].rule_id)
    if first and (_same(text, first) or copied_fraction(text, first) >= BANDS.limit("repeat.question_copied")):
        return _capped("band.repeats_question", "repeats the first question", "repeat.question_copied")
    refuses = REFUSES.first(text)
    if refuses:
        return _capped("band.refuses", f"refuses the step ({refuses.text!r})", refuses.rule_id)
    outcome = OUTCOME.first(text) or (WORKS.first(text) if claims_success(text) else None)
    if outcome:
        return _floored("band.outcome", f"reports the outcome ({outcome.text!r})", outcome.rule_id)
    output = _output(text)
    if output:
        return _floored("band.output", "reports an output", output.rule_id)
    postpones = POSTPONES.first(text)
    if postpones:
        return _capped("band.postpones", f"postpones the step ({postpones.text!r})", postpones.rule_id)
    words = utterance_words(text)
    if words and len(words) <= _ACK_MAX and set(words) <= _ACK_WORDS:
        return _capped("band.acknowledges", "only acknowledges", "ack.words")
    return Bounds()


def first_question_bounds(text: str) -> Bounds:
    """Bounds for the user's opening question: at most 4 (the rubric's "a problem is named, but
    without details") when it names no system or version, no error or output, nothing tried."""
    if DETAIL.first(text) or HOW_TO.first(text):  # a how-to question needs no system or error
        return Bounds()
    return _capped("band.no_detail", "no system, error, output or step tried")


def agent_reply_bounds(text: str, history: Sequence[Message]) -> Bounds:
    """Bounds for an agent message (``history`` ends with it): at most 2 for a repeat of an
    earlier agent message, at most 3 for one that only sends the user elsewhere."""
    copied, run = BANDS.limit("repeat.agent_copied"), int(BANDS.limit("repeat.agent_min_run"))
    for m in history[:-1]:
        if m.role == "agent" and (_same(text, m.content) or copied_fraction(text, m.content, min_run=run) >= copied):
            return _capped("band.repeats_agent", "repeats an earlier agent message", "repeat.agent_copied")
    elsewhere = ELSEWHERE.first(text)
    if elsewhere and not STEP.first(ELSEWHERE.sub(" ", text)):
        return _capped("band.elsewhere", f"only sends the user elsewhere ({elsewhere.text!r})", elsewhere.rule_id)
    words = plain_words(without_addresses(text))
    if words and len(words) <= PLEASANTRY.limit("pleasantry.max_words") and set(words) <= PLEASANTRY.words("pleasantry.words"):
        return _capped("band.pleasantry", "only a pleasantry", "pleasantry.words")
    if only_asks(text):
        return _floored("band.asks", "only asks the user something", "asks.question")
    return Bounds()


def only_asks(text: str) -> bool:
    """Whether every sentence of an agent message asks (or only thanks): it asks the user
    something and fixes nothing yet (``asks.question``)."""
    sentences = split_sentences(without_addresses(text or ""))
    statements = [x for x in sentences if not ASKS.first(x)]
    return len(statements) < len(sentences) and all(set(plain_words(x)) <= ACK.words("ack.words") for x in statements)
