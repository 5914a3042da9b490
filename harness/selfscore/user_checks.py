"""Checks of a simulated user's message: cheap rules first, then (optionally) the judge role.

A simulated user must stay a user: it must not leak the hidden solution, act as the agent,
contradict the facts of its scenario, or claim a success that the turn's decided outcome does
not explain (nor miss reporting one that it does). :func:`rule_violations` finds these with
rules; :func:`contradicts_facts` asks the judge role one Yes/No question. The simulated user
(``harness.selfscore.participants.SimulatedUser``) regenerates a message that fails, a bounded number of
times, and stores every check with the turn.
"""
from __future__ import annotations

import re
from difflib import SequenceMatcher
from dataclasses import dataclass
from typing import Sequence

from graphs.protocols import LLMCall, Message, Problem

# --- acting as the agent: instructions, explanations, assistant phrases ------------------------
# the help desk's own phrases (apologies, offers of help): a user never writes these
_ASSISTANT_PATTERNS = [
    r"\bi hope (?:this|that) helps\b",
    r"\blet me know if\b",
    r"\b(?:as an ai|i am an ai|i'm an ai|language model)\b",
    r"\bhow can i (?:help|assist) you\b",
    r"\bfeel free to (?:ask|reach out|contact)\b", r"\b(?:i'm |i am )?glad (?:i|to) (?:could |can )?help\b",
    # "I'm sorry to hear that you're having trouble playing music in Amarok." (a batch, p8)
    r"\b(?:i'm|i am) sorry to hear\b",
    # "Sorry for the inconvenience, but I am not sure what you are asking. Please provide more
    # context or details about your problem, and I will do my best to help you." (b18, p9)
    r"\b(?:sorry for|apologi[sz]e for) (?:the|any) (?:inconvenience|confusion)\b",
    r"\b(?:i will|i'll) do my best to help\b",
    r"\b(?:details|context|information) (?:about|on) your (?:problem|issue)\b",
]
# instructions and explanations, which a real user also writes now and then ("you can create
# shared folders" describing what a dialog offers)
_AGENT_PATTERNS = [
    r"^\s*(sure|certainly|of course|absolutely)\b[,!.]",
    r"\bhere(?:'s| is) (?:how|what you)\b",
    r"\byou (?:can|should|need to|could|may want to|might want to|must) (?!tell|help|see)\w+",
    r"\b(?:to (?:fix|solve|resolve) (?:this|that|the|your))\b",
    r"^\s*(?:\d+[.)]|[-*])\s+\S.*\n\s*(?:\d+[.)]|[-*])\s+\S",  # a list of steps
    r"```",
    # instructions to the reader, seen in batches: "Once you have done this, try running your SSH
    # command again."
    r"\bonce you(?:'ve| have) (?:done|completed|finished|tried)\b",
    r"\btry \w+ing your\b",
    *_ASSISTANT_PATTERNS,
]
_AGENT_RE = [re.compile(p, re.I | re.M | re.S) for p in _AGENT_PATTERNS]
_ASSISTANT_RE = [re.compile(p, re.I | re.M | re.S) for p in _ASSISTANT_PATTERNS]

# --- claims of success, and their negations ----------------------------------------------------
_SUCCESS_RE = re.compile(
    r"\b(?:works?|working|worked|fixed|solved|resolved|did it|did the trick|gone|"
    r"(?:is|are) back|shows? up|appears?|load(?:s|ing)?|prints?|connects?|connected|mounts?|mounted|"
    r"(?:was|am|were) able to|managed to)\b"
    r"|\bnow,? (?:i (?:have|can)|it|the|my|they)\b|\b(?:can|could) now\b"
    # "now I get / see / am getting X": the problem's end unless X is an error or another bad state
    # ("Now I am getting graphical interface." is a success, "Now I get a different error." is not)
    r"|\bnow,? i(?:'m| am)? (?:get(?:ting)?|see(?:ing)?)\b(?! (?:(?:a|an|the|this|that|another|same|new|"
    r"different|other|weird|strange|some)\s+){0,3}(?:errors?|messages?|warnings?|problems?|issues?|"
    r"black|blank|nothing|no)\b)", re.I)
# "the installation was successful": the problem's end when nothing in the message says it
# persists (a step can succeed while the problem stays: "it ran successfully but still no sound")
_SUCCEEDED_RE = re.compile(r"\b(?:successful(?:ly)?|succeeded)\b", re.I)
_NEGATION_RE = re.compile(r"(?:\bnot\b|n't\b|\bno longer\b|\bnever\b|\bstill\b|\bnothing\b|"
                          r"\bsame (?:error|problem)\b|\bif\b|\bwhether\b|\bwould\b|\bshould\b|\bwill\b|\bhope\b)", re.I)

# --- the problem persists, the fix is untried, or the user asks something else first ----------
_PERSIST_RE = re.compile(
    r"\bstill\b(?!\s+works)|\bsame (?:error|problem|issue|message|thing|as before)\b|"
    r"\b(?:didn't|did not|doesn't|does not|won't|will not|can't|cannot|isn't|is not|aren't|not) "
    r"(?:work|working|help|fix|change|solve|show|load|print|connect|start|boot|mount|appear)\w*|"
    r"\b(?:dropped|failed|crashed|stopped|happened|broke|froze|disconnected) again\b|"
    r"\b(?:different|new|another) error\b|\bi(?:'ll| will) (?:try|give it|do that|check)\b|"
    r"\bbefore i try\b|\b(?:would|could) work if\b|\bno (?:change|luck|difference)\b|"
    r"\bnothing (?:changed|happened)\b", re.I)


def agent_cues(message: str) -> list[str]:
    """Phrases of a message that read like the help desk's, not the user's: a list of steps,
    code, instructions, assistant phrases (the ``acts_as_agent`` patterns)."""
    return [m.group(0)[:60] for rx in _AGENT_RE for m in [rx.search(message or "")] if m]


def assistant_phrases(message: str) -> list[str]:
    """The help desk's own phrases in a message ("I'm sorry to hear", "let me know if", "I will
    do my best to help"): the part of :func:`agent_cues` that a real user never writes."""
    return [m.group(0)[:60] for rx in _ASSISTANT_RE for m in [rx.search(message or "")] if m]


# --- the simulator's own instructions, copied into its message ---------------------------------
# The 1.5B sometimes writes the outcome note it was given ("If the agent asked you something,
# answer it from your facts. ...") into its reply. A sentence that shares a run of 8 words with
# an instruction is cut (the rest of the message is the reply).
_COPY_RUN = 8


def _instruction_texts() -> list[str]:
    """The simulator's notes and rules, and each regeneration note it can be given (a batch
    reply ended "(Your last draft was not used: it repeated an earlier message; ...)")."""
    from harness.selfscore import prompts
    return [prompts.USER_FIXED, prompts.USER_NOT_FIXED, prompts.GROUNDED_USER_SYSTEM.split("Rules:", 1)[-1],
            *(prompts.USER_REGENERATION.format(why=why) for why in prompts.USER_REJECTED.values())]


def _instruction_runs() -> set[tuple[str, ...]]:
    texts = _instruction_texts()
    runs = set()
    for text in texts:
        words = _plain_words(text)
        runs.update(tuple(words[i:i + _COPY_RUN]) for i in range(len(words) - _COPY_RUN + 1))
    return runs


def _plain_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


# words of the notes that a user's own sentence does not need ("The problem is still there." is
# a reply, "Never say that it works." a copied order)
_META_WORDS = {"never", "say", "note", "reply", "agent", "facts", "sentences"}


def _instruction_text() -> str:
    return " " + " | ".join(" ".join(_plain_words(t)) for t in _instruction_texts()) + " "


def strip_copied_instructions(message: str) -> tuple[str, list[str]]:
    """``message`` without the sentences that copy the simulator's instructions (a run of 8
    words of them, or a whole short sentence of 4 words or more with a word of the notes' own,
    such as "never" or "say": a batch reply ended "Never say that it works.)"), and those sentences (the message unchanged and ``[]`` when none does)."""
    runs, whole = _instruction_runs(), _instruction_text()
    kept, cut = [], []
    for sentence in re.split(r"(?<=[.!?)])\s+", message.strip()):
        words = _plain_words(sentence)
        copied = any(tuple(words[i:i + _COPY_RUN]) in runs for i in range(len(words) - _COPY_RUN + 1)) \
            or (len(words) >= 4 and _META_WORDS.intersection(words) and f" {' '.join(words)} " in whole)
        (cut if copied else kept).append(sentence)
    return (" ".join(kept) if cut else message), cut


# --- a result reported at all: a message that only says a step was done confirms nothing -----
_RESULT_RE = re.compile(r"\b(?:again|now|stopped|perfect|did it|did the trick|that did|online|shows?|back|"
                        r"should be (?:resolved|fixed|solved|working))\b", re.I)
# "again"/"back" right after a step ("logged back in again", "tried again") report no result (a
# batch's solved-check took "I logged out and logged back in again to apply the new
# permissions." for a confirmation at P(yes) 0.52); after anything else they do ("came out again")
_STEP_BEFORE = re.compile(r"\b(?:tried|try|trying|logged|log|logging|signed|sign|went|go|going|restarted|"
                          r"restart|rebooted|reboot|ran|run|did|do|done|typed|type|entered|clicked|opened|"
                          r"installed|plugged|turned|switched|put|set|changed|back|in|it|that|this)\W*$", re.I)


def result_cues(message: str) -> list[str]:
    """Words by which the message reports a result (success words, "again", "now", "stopped",
    "shows", ...), negated or not; none when it only says what the user did ("I have changed the
    permissions ... and ensured that the files are owned by my account user": a batch's
    solved-check took that for a confirmation at P(yes) 0.56)."""
    message = message or ""
    results = [m for m in _RESULT_RE.finditer(message)
               if m.group(0).lower() not in ("again", "back") or not _STEP_BEFORE.search(message[:m.start()])]
    return [m.group(0) for m in (*_SUCCESS_RE.finditer(message), *results)]


def persisting_cues(message: str) -> list[str]:
    """Phrases saying the problem is still there, the fix is not tried yet, or a new question
    comes first ("still", "same error", "didn't work", "I'll try", "before I try", ...)."""
    return [m.group(0) for m in _PERSIST_RE.finditer(message or "")]


# --- leaks: distinctive terms of the hidden problem or solution --------------------------------
_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*[A-Za-z0-9]")
_STOP = set("""about above after again against all also always because been before being below
between both cannot could does doing down during each from further have having here into itself
just more most must only other over same should some such than that their them then there these
they this those through under until very were what when where which while will with would your
yours thing things work works working problem problems issue user users computer machine system
something someone anything still already fixed solve solved solution cause caused because need
needs make sure then open file files using used use""".split())
_TECHNICAL_RE = re.compile(r"[0-9._/+-]|^[a-z]+[A-Z]")  # versions, paths, packages, commands

# --- contradictions: a product named with a version other than the facts' -----------------------
_VERSION_RE = re.compile(r"\b(ubuntu|windows|debian|fedora|macos|os x|kernel|python|firefox|"
                         r"gnome|kde|office|excel|outlook|chrome)\s+v?(\d+(?:\.\d+)*)", re.I)


@dataclass(slots=True)
class Violation:
    """One failed check: its kind and the evidence (the text that tripped it)."""

    kind: str  # leaks_solution | acts_as_agent | contradicts_facts | false_success | missed_success | repeats_earlier | echoes_agent | ...
    evidence: str

    def as_dict(self) -> dict:
        """The violation as stored in the simulator record (evidence cut to 160 characters)."""
        return {"kind": self.kind, "evidence": self.evidence[:160]}


def _stem(word: str) -> str:
    """A crude stem, so that "installed" and "install" are one term."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> set[str]:
    return {_stem(w.lower().strip(".")) for w in _WORD_RE.findall(text or "")}


def leaked_terms(message: str, problem: Problem, history: Sequence[Message]) -> list[str]:
    """Distinctive words of the hidden problem statement and solution that the user's message
    uses although neither the question, the facts, nor any agent message said them."""
    hidden = _terms(problem.problem_statement or "") | _terms(problem.solution or "")
    known = _terms(problem.question) | _terms(" ".join(problem.facts)) | _terms(
        " ".join(m.content for m in history))
    leaked = []
    for raw in _WORD_RE.findall(message):
        w = raw.lower().strip(".")
        stem = _stem(w)
        if stem in hidden and stem not in known and w not in _STOP and len(w) >= 4 and w not in leaked:
            leaked.append(w)
    return leaked


def _is_leak(terms: list[str]) -> bool:
    technical = [t for t in terms if _TECHNICAL_RE.search(t)]
    return bool(technical) or len(terms) >= 3


# quoted text (an error message the user cites: "Roaming not allowed by server") is not the
# user's own words: its "not" negates nothing the user says
_QUOTED_RE = re.compile(r"\"[^\"\n]{1,200}\"|`[^`\n]{1,200}`|“[^”\n]{1,200}”")
# the error itself has gone: "the error is no longer appearing", "the warning does not show up anymore"
_SYMPTOM_GONE_RE = re.compile(
    r"\b(?:error|problem|issue|message|warning|crash\w*|symptom)s?\b[^.,;!?]{0,40}?"
    r"\b(?:no longer|not (?:\w+ )?(?:appear|show|happen|occur|come)\w*[^.,;!?]{0,12}?\b(?:any ?more|again))", re.I)


def claims_success(message: str) -> bool:
    """The message says the problem is fixed (a success phrase not negated in its clause, or
    the error itself said to be gone); quoted text is ignored."""
    message = _QUOTED_RE.sub("the error", message or "")
    if _SYMPTOM_GONE_RE.search(message):
        return True
    matches = [*_SUCCESS_RE.finditer(message)]
    if not _PERSIST_RE.search(message):
        matches += _SUCCEEDED_RE.finditer(message)
    for m in matches:
        clause_start = max(message.rfind(sep, 0, m.start()) for sep in (".", ",", ";", " but ", "!", "?"))
        clause = message[clause_start + 1: m.end() + 12]
        if not _NEGATION_RE.search(clause):
            return True
    return False


def version_conflicts(message: str, facts: Sequence[str], question: str) -> list[str]:
    """Products the message names with a version other than the one the facts or question give."""
    known: dict[str, set[str]] = {}
    for text in (*facts, question):
        for product, version in _VERSION_RE.findall(text):
            known.setdefault(product.lower(), set()).add(version)
    out = []
    for product, version in _VERSION_RE.findall(message):
        seen = known.get(product.lower())
        if seen and version not in seen and not any(v.startswith(version) or version.startswith(v) for v in seen):
            out.append(f"{product} {version} (facts: {', '.join(sorted(seen))})")
    return out


def invented_versions(message: str, problem: Problem, history: Sequence[Message]) -> list[str]:
    """Products the message names with a version that neither the question, the facts, the
    thread's true problem and fix nor the conversation so far gives (in a batch the 1.5B asker
    of a 2007 thread said "Ubuntu 20.04" four turns in a row). A conflict with the facts is
    :func:`version_conflicts`' instead."""
    context = " ".join([*problem.facts, problem.question, problem.problem_statement or "",
                        problem.solution or "", *(m.content for m in history)]).lower()
    return [f"{product} {version}" for product, version in _VERSION_RE.findall(message)
            if version not in context]


def copied_fraction(message: str, earlier: str, min_run: int = 4) -> float:
    """The share of the message's words that stand in runs of at least ``min_run`` words copied
    from ``earlier`` (0.0 for a message under 8 words: short replies repeat words by nature)."""
    words = [w.lower() for w in _WORD_RE.findall(message or "")]
    if len(words) < 8:
        return 0.0
    before = [w.lower() for w in _WORD_RE.findall(earlier or "")]
    blocks = SequenceMatcher(None, words, before, autojunk=False).get_matching_blocks()
    return sum(b.size for b in blocks if b.size >= min_run) / len(words)


def repeated_message(message: str, history: Sequence[Message], limit: float = 0.6,
                     verbatim: float = 0.8, verbatim_words: int = 20) -> str | None:
    """The earlier user message this one repeats, or None: the question when most of this
    message (``limit``) copies it (the simulator re-pasting its question instead of answering
    the agent), or any earlier message of at least ``verbatim_words`` words written out again
    almost whole (``verbatim``; in a batch the 1.5B sent one 60-word paragraph three turns in a
    row). A user who says "it still fails" again in other words, as people do, is not flagged."""
    users = [m for m in history if m.role == "user"]
    if users and copied_fraction(message, users[0].content) >= limit:
        return users[0].content
    if len(_WORD_RE.findall(message or "")) >= verbatim_words:
        for m in users[1:]:
            if copied_fraction(message, m.content) >= verbatim:
                return m.content
    return None


ECHO_LIMIT = 0.75  # share of a message's words copied, in runs of 3+, from the agent's message


def echoed_agent(message: str, history: Sequence[Message], limit: float = ECHO_LIMIT) -> str | None:
    """The agent's latest message when this one mostly copies it (``limit`` of its words in
    runs of 3 or more: commands are short), else None. In a p8 batch the 1.5B user sent the agent's commands back
    as its whole reply ("sudo apt-get install --reinstall xserver-xorg / sudo journalctl -xe")
    and once the agent's whole paragraph; "I changed the permissions of the .ssh directory to
    700 as you said, same error" copies about half and passes."""
    agent = next((m.content for m in reversed(history) if m.role == "agent"), "")
    return agent if agent and copied_fraction(message, agent, min_run=3) >= limit else None


def rule_violations(message: str, problem: Problem, history: Sequence[Message],
                    fixed: bool | None) -> list[Violation]:
    """The rule checks of one simulated user message.

    Args:
        message: the user's candidate message.
        problem: the interaction's problem, with the hidden statement, solution and facts.
        history: the conversation before this message (ends with the agent's message).
        fixed: the turn's decided outcome (the agent's instruction fixes the true cause), or
            None when no outcome was decided (no success rule then).
    """
    out: list[Violation] = []
    for rx in _AGENT_RE:
        m = rx.search(message)
        if m:
            out.append(Violation("acts_as_agent", m.group(0)))
            break
    terms = leaked_terms(message, problem, history)
    if terms and _is_leak(terms):
        out.append(Violation("leaks_solution", ", ".join(terms)))
    earlier = repeated_message(message, history)
    if earlier is not None:
        out.append(Violation("repeats_earlier", earlier))
    if echoed_agent(message, history) is not None:
        out.append(Violation("echoes_agent", message))
    conflicts = version_conflicts(message, problem.facts, problem.question)
    for conflict in conflicts:
        out.append(Violation("contradicts_facts", conflict))
    if not conflicts:
        invented = invented_versions(message, problem, history)
        if invented:
            out.append(Violation("invents_detail", ", ".join(invented)))
    success = claims_success(message)
    if fixed is False and (success or (result_cues(message) and not persisting_cues(message))):
        # under a not-fixed outcome a reported result must say the problem stays ("Now, Hardy is
        # loading." and "After updating the system, the problem should be resolved." passed the
        # success rule alone in a batch, and the solved-check took them for confirmations)
        out.append(Violation("false_success", message))
    elif fixed is True and not success:
        out.append(Violation("missed_success", message))
    return out


async def contradicts_facts(client, message: str, problem: Problem,
                            history: Sequence[Message]) -> tuple[float, list[LLMCall]]:
    """P(yes) that ``message`` contradicts the scenario's facts, asked of the judge role."""
    from harness.models.llm import ask_yes_no
    from harness.selfscore import prompts
    from harness.selfscore.judge_messages import escape_judged_text, yes_no_messages

    facts = escape_judged_text("; ".join(problem.facts))
    question = prompts.USER_CONTRADICTS.format(facts=facts)
    p, _, call = await ask_yes_no(client, yes_no_messages([*history, Message("user", message)], question),
                                  "judge:user_check")
    return p, [call]
