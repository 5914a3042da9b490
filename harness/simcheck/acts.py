"""The act of a user's reply, decided by rules over the reply and the helper's message it answers.

One act per reply (docs/simcheck.md, "Acts"); when a reply does several, the first of
:data:`ACTS` that it does wins, the order the hand labels follow
(``harness/data/simcheck/SOURCE.md``):

``fixed``
    a success is claimed (``harness.aids.cues.claims_success``) and nothing is said to persist.
``broken``
    a failure is reported (a persisting cue, ``persists.*`` of ``harness.aids.cues``, or a
    failure word of :data:`_FAILURE`: an error, "only root can", "no luck", a pasted result
    "this is what I get") after a helper's message that gives a fix step (:data:`_FIX_STEP`);
    after a message that only asks or shows, the same words are the requested fact.
``gives_requested``
    the helper's message asks (a question, or a look step of :data:`_LOOK`: paste, show, check
    if, ``-vvv``, ``fdisk -l``) and the reply has a statement with content (a sentence that is
    not a question, with a word beyond acknowledgement).
``asks``
    a sentence ends with "?" or opens with a question word, or the reply pleads for help or
    says it does not understand (:data:`_PLEA`).
``gives_unrequested``
    a statement with content that nothing asked for.
``closes``
    only thanks, acknowledgement, apology or goodbye (every word in :data:`_ACK_WORDS`, or an
    acknowledgement phrase of :data:`_ACK`).
``leaves``
    no reply (None or empty).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from harness.aids import claims_success, persisting_hits, sentences, strip_address

ACTS = ("fixed", "broken", "gives_requested", "asks", "gives_unrequested", "closes", "leaves")
LABELS_PATH = Path(__file__).resolve().parents[1] / "data" / "simcheck" / "act_labels.jsonl"

_QUESTION_WORD = re.compile(r"^(?:how|what|why|where|which|who|can|could|should|would|shall|is|are|do|does|"
                            r"did|will|any ?one|so how|so what|so i should)\b", re.I)
_PLEA = re.compile(r"\b(?:help me|please help|anyone (?:going to|out there|know)|can anyone|could u help|"
                   r"don'?t understand|dont know what|confus\w*|what do i (?:do|type))\b", re.I)
_FAILURE = re.compile(
    r"\b(?:error|errors|fail(?:s|ed|ure)?|no luck|(?:did ?n[o']?t|does ?n[o']?t|doesnt|didnt|won'?t|can'?t|cannot|"
    r"could ?n'?t|isn'?t|is not|not) (?:work|help|mount|load|boot|start|find|show|fix|change|see|log|do)\w*|"
    r"only root|wrong password|stuck|nothing (?:shows|loads|there|happens)|there is nothing|no effect|"
    r"this is what i get|i get this|i get that|already install\w*|same|not available|anymore|is gone|no response)\b",
    re.I)
_FIX_STEP = re.compile(  # an imperative opening a clause ("sudo ...", "then reinstall ...")
    r"(?:^|[:,.!>/]\s*|\b(?:try|just|then|now|and|also|to|please)\s+|\n)(?:try|attach|install|reinstall|remove|purge|edit|mount|reboot|boot|log ?out|disable|enable|change|update|"
    r"upgrade|use|run|add|set|delete|type|press|go to|open|navigate|sudo|apt-get|power|boot|follow)\b", re.I | re.M)
_FOUND = re.compile(r"\b(?:a+h+ ?ha+|turned out|turns out|(?:that|this) (?:fixed|solved) it|it was (?:the|my) )", re.I)
_LOOK = re.compile(
    r"(?:\?|\bpaste(?:bin)?\b|\bshow\b|\blist\b|\bcheck (?:if|whether|that|what)\b|\bsee (?:if|whether|what)\b|"
    r"\blook (?:at|for)\b|\btell (?:us|me)\b|\bdescribe\b|\bdetails\b|\boutput\b|-v+\b|\bfdisk -l\b|"
    r"\bdpkg -l\b|\blspci\b|\blsusb\b|\bdmesg\b|\bcat\b|\blocate\b|\bgrep\b|\bifconfig\b|\bunit files\b)", re.I)
_ACK = re.compile(r"^(?:(?:ok(?:ay)?|alright|sure|yes|right)[ ,.!]*)?(?:i'?ll|i will|will|shall|let me|ill)? ?"
                  r"(?:do|try|give (?:it|that) a (?:shot|try)|check|see|be right back)\b", re.I)
_ACK_WORDS = frozenset("""ok okay k kk alright thanks thank thanx thx ty cheers you u all much very lot brb back
    hmm hmmm hm mm heh hehe haha lol :) :( ;) :/ sorry np sure cool great nice ah oh aha i see will do shall
    let me try that it again right well so bumped i'll ill""".split())
_WORD = re.compile(r"[a-z0-9']+|[:;][()/pd]", re.I)


def _clean(text: str) -> list[str]:
    """The reply's sentences, IRC addresses at line starts removed."""
    return [s for s in sentences("\n".join(strip_address(line) for line in text.splitlines())) if s.strip()]


def is_question(sentence: str) -> bool:
    """A sentence that asks: it ends with "?" or opens with a question word."""
    s = sentence.strip()
    return s.endswith("?") or bool(_QUESTION_WORD.match(s))


def is_acknowledgement(sentence: str) -> bool:
    """Thanks, acknowledgement, apology or goodbye, and nothing else."""
    words = [w.lower() for w in _WORD.findall(sentence)]
    return not words or all(w in _ACK_WORDS for w in words) or bool(_ACK.match(sentence.strip())) \
        and len(words) <= 6


def helper_asks(helper: str) -> bool:
    """The helper's message asks the asker for information: a question or a look step."""
    return bool(_LOOK.search(helper or ""))


def helper_gives_step(helper: str) -> bool:
    """The helper's message tells the asker to do something that could fix the problem."""
    return bool(_FIX_STEP.search(helper or ""))


def reports_failure(text: str) -> bool:
    """The reply reports a failure: a persisting cue or a failure word outside its questions."""
    statements = " ".join(s for s in _clean(text) if not is_question(s))
    return bool(_FAILURE.search(statements)) or any(h.rule_id.startswith("persists.")
                                                    for h in persisting_hits(statements))


def act_of(reply: str | None, helper: str) -> str:
    """The act of ``reply`` to the helper's message ``helper`` (see the module's text)."""
    if reply is None or not reply.strip():
        return "leaves"
    parts = _clean(reply) or [reply.strip()]
    statements = [s for s in parts if not is_question(s) and not is_acknowledgement(s)]
    questions = [s for s in parts if is_question(s)] or [s for s in parts if _PLEA.search(s)]
    failure = reports_failure(reply)
    if (claims_success(" ".join(statements)) and not failure) or _FOUND.search(reply):
        return "fixed"
    if failure and (helper_gives_step(helper) or not helper_asks(helper)):
        return "broken"
    if statements and helper_asks(helper):
        return "gives_requested"
    if questions:
        return "asks"
    if statements:
        return "gives_unrequested"
    return "closes"


def acts_version() -> str:
    """A hash of every rule the classifier reads (its patterns, word lists and act order)."""
    parts = [ACTS, *(p.pattern for p in (_QUESTION_WORD, _PLEA, _FAILURE, _FIX_STEP, _LOOK, _ACK, _FOUND)),
             sorted(_ACK_WORDS)]
    return "acts-" + hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()[:10]


def load_act_labels(path: Path = LABELS_PATH) -> list[dict[str, Any]]:
    """The hand-labelled replies (``harness/data/simcheck/act_labels.jsonl``).

    Raises:
        ValueError: a row without ``helper``, ``reply`` and a known ``act``, naming the line.
    """
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("act") not in ACTS or not isinstance(row.get("reply"), str) or "helper" not in row:
            raise ValueError(f"{path}:{n}: a label needs `helper`, `reply` and an `act` of {', '.join(ACTS)}")
        rows.append(row)
    return rows


def classifier_agreement(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The classifier against hand labels: accuracy, Cohen's kappa, per-act counts (labelled,
    classified, both), and the disagreements."""
    from harness.study import cohen_kappa
    pairs = [(row["act"], act_of(row["reply"], row["helper"])) for row in rows]
    labelled, classified = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    both = Counter(a for a, b in pairs if a == b)
    return {"n": len(pairs), "version": acts_version(),
            "accuracy": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
            "kappa": cohen_kappa(pairs, levels=list(ACTS)) if pairs else None,
            "per_act": {act: {"labelled": labelled[act], "classified": classified[act], "agree": both[act]}
                        for act in ACTS},
            "disagreements": [{"id": row.get("id"), "label": a, "classified": b}
                              for row, (a, b) in zip(rows, pairs) if a != b]}
