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
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from graphs.protocols import Message
from harness.selfscore.fix_terms import without_addresses
from harness.selfscore.user_checks import assistant_phrases, claims_success, copied_fraction

RULES_VERSION = "hb1"

_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+'-]*")
# a technical token: a version, a path, a package or a command with a digit, dot, slash or dash
_TECHNICAL_RE = re.compile(r"(?<![A-Za-z])(?:\d+(?:\.\d+)+|\d{2,}|[\w-]*/[\w./-]+|[a-z]+-[a-z0-9-]+|[a-z]+\.[a-z]{2,})"
                           r"|\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]{4,}\b")  # or a model: K7S41Gx, BCM4312
_QUOTED_RE = re.compile(r"'[^'\n]{3,200}'|\"[^\"\n]{3,200}\"|`[^`\n]{2,200}`|“[^”\n]{3,200}”")

# -- a later user message -------------------------------------------------------------------------
_PERSISTS_RE = re.compile(
    r"\bstill\b(?!\s+works?\b)|\bsame (?:error|problem|issue|message|thing|as before)\b|"
    r"\b(?:didn'?t|did not|doesn'?t|does not|won'?t|will not|can'?t|cannot|isn'?t|is not|aren'?t|not) "
    r"(?:work|help|fix|change|solve|show|load|print|connect|start|boot|mount|appear|find|install)\w*|"
    r"\bno (?:change|luck|difference|sound|signal|output|errors?)\b|\bnothing (?:changed|happened)\b|"
    r"\b(?:different|new|another) error\b|\b(?:failed|crashed|froze|dropped) again\b", re.I)
_OUTPUT_RE = re.compile(r"\b(?:it|that|this|the output|the command|the log|the error|they) "
                        r"(?:says?|said|shows?|showed|lists?|listed|prints?|printed|returns?|returned|gives?|gave)\b|"
                        r"\b(?:i get|i got|output)\b|https?://", re.I)
# a success said plainly (``claims_success`` then rules out its negations)
_WORKS_RE = re.compile(r"\b(?:it|that|this|everything|now it)\s+(?:works|worked|is working|did it|did the trick)\b|"
                       r"\bworks? now\b|\bnow (?:it works|i can|works)\b|\b(?:is|are|was) (?:fixed|solved|resolved)\b|"
                       r"\b(?:fixed|solved) it\b|\bproblem (?:is )?gone\b", re.I)
_POSTPONES_RE = re.compile(
    r"\b(?:i(?:'ll| will| am going to|'m going to) (?:try|do|check|give|look)\w*(?:\s+\w+){0,4}\s+"
    r"(?:later|tomorrow|next|some ?time|when)|later|tomorrow|next week|some ?time)\b", re.I)
_REFUSES_RE = re.compile(r"\b(?:i )?(?:don't|do not|won't|will not) (?:want to|change|do|try|run)\b|\bjust tell me\b",
                         re.I)
_ACK_WORDS = {"ok", "okay", "k", "thanks", "thank", "you", "thx", "ty", "right", "alright", "hmm", "fine",
              "cool", "great", "understood"}

# -- a first question ---------------------------------------------------------------------------
_SYSTEM_RE = re.compile(r"\b(?:ubuntu|kubuntu|xubuntu|debian|fedora|windows|macos|os x|linux mint|"
                        r"hardy|gutsy|feisty|edgy|dapper|intrepid|jaunty|karmic|lucid|kernel)\b|"
                        r"\b\d+\.\d+\b", re.I)
_ERROR_RE = re.compile(r"\b(?:error|errors|fails? with|failed with|says|message|warning|denied|"
                       r"not found|no such|cannot|can't|unable)\b|\b[1-5]\d\d\b", re.I)
_TRIED_RE = re.compile(r"\b(?:i(?:'ve| have)? (?:tried|checked|added|installed|reinstalled|set|"
                       r"changed|run|ran|removed|updated|upgraded|rebooted)|already|since|after (?:i|the|a|an|my|yesterday)|"
                       r"when i)\b", re.I)

_HOW_TO_RE = re.compile(r"\b(?:how (?:do|can|to|would|should)|is there an? \w+|what(?:'s| is) the "
                        r"(?:difference|command|way|best way|default)|where (?:is|are|can|do|\S+ (?:is|are))\b|"
                        r"recomm?end|a tool like)\b", re.I)

# -- an agent message ---------------------------------------------------------------------------
_ELSEWHERE_RE = re.compile(
    r"\b(?:contact\w*|ask\w*|consult\w*|reach\w* out to|get\w* in touch with)\b[^.]{0,40}\b(?:administrator|admin|"
    r"sysadmin|manufacturer|vendor|support|it department|technician|professional|provider|isp)\b|"
    r"\btry again later\b|\b(?:seek|get) (?:professional|further) (?:help|assistance)\b", re.I)
_STEP_RE = re.compile(r"`[^`]+`|\b(?:sudo|apt-get|apt|run|type|open|edit|install|reinstall|remove|"
                      r"enable|disable|set|change|replace|add|check|press|click|select|choose|reboot|restart)\b",
                      re.I)


@dataclass(frozen=True, slots=True)
class Bounds:
    """The band a helpfulness score must fall in, and the rules that set it."""

    floor: int = 1
    cap: int = 10
    rules: tuple[str, ...] = ()

    def apply(self, score: int) -> int:
        """``score`` moved into the band."""
        return min(max(score, self.floor), self.cap)

    def record(self, score: int) -> dict:
        """What the judgment stores: the judge's own score, the band, the rules."""
        return {"judge_score": score, "floor": self.floor, "cap": self.cap, "rules": list(self.rules),
                "rules_version": RULES_VERSION}


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text or "")]


def _same(a: str, b: str) -> bool:
    words = _words(a)
    return bool(words) and words == _words(b)


def user_reply_bounds(text: str, history: Sequence[Message]) -> Bounds:
    """Bounds for a later user message (``history`` ends with it).

    Args:
        text: the user's message as the rules read it.
        history: the conversation up to and including that message.
    """
    text = without_addresses(text)  # "Dr_Willis: when I do ..." -> "when I do ..."
    first = next((m.content for m in history[:-1] if m.role == "user"), "")
    help_desk = assistant_phrases(text)
    if help_desk:
        return Bounds(cap=2, rules=(f"speaks as the help desk ({help_desk[0]!r})",))
    if first and (_same(text, first) or copied_fraction(text, first) >= 0.6):
        return Bounds(cap=2, rules=("repeats the first question",))
    refuses = _REFUSES_RE.search(text)
    if refuses:
        return Bounds(cap=3, rules=(f"refuses the step ({refuses.group(0)!r})",))
    persists = _PERSISTS_RE.search(text)
    works = _WORKS_RE.search(text) if claims_success(text) else None
    outcome = (persists or works).group(0) if persists or works else None
    # a follow-up question names things but reports nothing: its technical words are no output
    output = (_OUTPUT_RE.search(text) or _QUOTED_RE.search(text)
              or (len(set(_TECHNICAL_RE.findall(text))) >= 2 and "?" not in text))
    if outcome:
        return Bounds(floor=5, rules=(f"reports the outcome ({outcome!r})",))
    if output:
        return Bounds(floor=5, rules=("reports an output",))
    postpones = _POSTPONES_RE.search(text)
    if postpones:
        return Bounds(cap=3, rules=(f"postpones the step ({postpones.group(0)!r})",))
    words = _words(text)
    if words and len(words) <= 6 and set(words) <= _ACK_WORDS:
        return Bounds(cap=2, rules=("only acknowledges",))
    return Bounds()


def first_question_bounds(text: str) -> Bounds:
    """Bounds for the user's opening question: at most 4 (the rubric's "a problem is named, but
    without details") when it names no system or version, no error or output, nothing tried."""
    has_detail = (_SYSTEM_RE.search(text) or _ERROR_RE.search(text) or _QUOTED_RE.search(text)
                  or _TRIED_RE.search(text) or _TECHNICAL_RE.search(text))
    if has_detail or _HOW_TO_RE.search(text):  # a how-to question needs no system or error
        return Bounds()
    return Bounds(cap=4, rules=("no system, error, output or step tried",))


def agent_reply_bounds(text: str, history: Sequence[Message]) -> Bounds:
    """Bounds for an agent message (``history`` ends with it): at most 2 for a repeat of an
    earlier agent message, at most 3 for one that only sends the user elsewhere."""
    for m in history[:-1]:
        if m.role == "agent" and (_same(text, m.content) or copied_fraction(text, m.content, min_run=3) >= 0.8):
            return Bounds(cap=2, rules=("repeats an earlier agent message",))
    elsewhere = _ELSEWHERE_RE.search(text)
    if elsewhere and not _STEP_RE.search(_ELSEWHERE_RE.sub(" ", text)):
        return Bounds(cap=3, rules=(f"only sends the user elsewhere ({elsewhere.group(0)!r})",))
    return Bounds()
