"""Checks of a simulated user's message: cheap rules first, then (optionally) the judge role.

A simulated user must stay a user: it must not leak the hidden solution, act as the agent,
contradict the facts of its scenario, or claim a success that the turn's decided outcome does
not explain (nor miss reporting one that it does). :func:`rule_violations` finds these with
rules; :func:`contradicts_facts` asks the judge role one Yes/No question. The simulated user
(``harness.simuser.users.SimulatedUser``) regenerates a message that fails, a bounded number of
times, and stores every check with the turn.

The cues these checks share with the solved-check and the helpfulness bounds (success claimed,
problem persisting, result reported, reads like the agent) are ``harness.aids.cues``; the
patterns, word lists and limits of the checks here are data in ``harness.aids.data_user``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from graphs.protocols import LLMCall, Message, Problem
from harness.aids.cues import agent_hits, claims_success_hits, persisting_cues, result_cues, result_hits
from harness.aids.data_text import TEXT
from harness.aids.data_user import USER_CHECKS
from harness.aids.rules import version_of
from harness.aids import Hit
from harness.aids.text import copied_fraction, plain_words, sentences, terms
from harness.simuser import prompts
from harness.simuser.personas import Plan, deviations, named_details, persona, told_facts


def user_checks_version() -> str:
    """The version of what decides a regeneration, read now: every rule, word list and limit the
    checks read (``USER_CHECK_RULES``), the role-break rules a draft is also written again for
    (``SIMULATOR_FAULTS``), the text spans they cut by (sentences), and the notes the regenerated
    draft is asked with (``prompts.USER_REGENERATION``, ``prompts.USER_REJECTED``)."""
    import json

    from harness.aids import SIMULATOR_FAULTS, TEXT_SPANS, USER_CHECK_RULES
    return version_of("user-regenerations", [USER_CHECK_RULES, SIMULATOR_FAULTS, TEXT_SPANS, prompts.USER_REGENERATION,
                                             json.dumps(prompts.USER_REJECTED, sort_keys=True)])


# --- the simulator's own instructions, copied into its message ---------------------------------
# The 1.5B sometimes writes the outcome note it was given ("If the agent asked you something,
# answer it from your facts. ...") into its reply. A sentence that shares a run of 8 words with
# an instruction is cut (the rest of the message is the reply).
_COPY_RUN = int(USER_CHECKS.limit("copy.run"))


def _instruction_texts(notes: Sequence[str] = ()) -> list[str]:
    """The simulator's notes and rules, and each regeneration note it can be given (a batch
    reply ended "(Your last draft was not used: it repeated an earlier message; ...)"), and a
    persona's ``notes`` of the turn (none for the cooperative user)."""
    return [prompts.USER_FIXED, prompts.USER_NOT_FIXED, prompts.GROUNDED_USER_SYSTEM.split("Rules:", 1)[-1],
            *(prompts.USER_REGENERATION.format(why=why) for why in prompts.USER_REJECTED.values()), *notes]


def _instruction_runs(notes: Sequence[str] = ()) -> set[tuple[str, ...]]:
    texts = _instruction_texts(notes)
    runs = set()
    for text in texts:
        words = plain_words(text)
        runs.update(tuple(words[i:i + _COPY_RUN]) for i in range(len(words) - _COPY_RUN + 1))
    return runs


# words of the notes that a user's own sentence does not need ("The problem is still there." is
# a reply, "Never say that it works." a copied order)
_META_WORDS = USER_CHECKS.words("copy.meta_words")


def _instruction_text(notes: Sequence[str] = ()) -> str:
    return " " + " | ".join(" ".join(plain_words(t)) for t in _instruction_texts(notes)) + " "


def strip_copied_instructions(message: str, notes: Sequence[str] = ()) -> tuple[str, list[str]]:
    """``message`` without the sentences that copy the simulator's instructions (a run of 8
    words of them, or a whole short sentence of 4 words or more with a word of the notes' own,
    such as "never" or "say": a batch reply ended "Never say that it works.)"), and those sentences (the message unchanged and ``[]`` when none does).
    ``notes``: a persona's notes of the turn (``harness.simuser.personas.Plan.texts``), cut too."""
    runs, whole = _instruction_runs(notes), _instruction_text(notes)
    kept, cut = [], []
    for sentence in sentences(message):
        words = plain_words(sentence)
        copied = any(tuple(words[i:i + _COPY_RUN]) in runs for i in range(len(words) - _COPY_RUN + 1)) \
            or (len(words) >= 4 and _META_WORDS.intersection(words) and f" {' '.join(words)} " in whole)
        (cut if copied else kept).append(sentence)
    return (" ".join(kept) if cut else message), cut


# --- leaks: distinctive terms of the hidden problem or solution --------------------------------
_STOP = USER_CHECKS.words("leak.stop_words")
_STEM_SUFFIXES = USER_CHECKS.entry("leak.stem_suffixes").words
_LEAK_MIN_LENGTH = int(USER_CHECKS.limit("leak.min_length"))
_LEAK_MIN_TERMS = int(USER_CHECKS.limit("leak.min_terms"))
_TECHNICAL_RE = TEXT.regex("term.technical")  # versions, paths, packages, commands

# --- contradictions: a product named with a version other than the facts' -----------------------
_VERSION_RE = USER_CHECKS.regex("version.product")

# --- the simulated user's own cues beside the shared ones (harness.aids.cues) --------------------
_AS_AGENT = [r for r in USER_CHECKS.rules if r.id.startswith("helper.")]  # an instruction to the reader
_NOW_ABLE = [r for r in USER_CHECKS.rules if r.id.startswith("claim.")]  # "I am now able to ..."


def _hits(rules, text: str) -> list[Hit]:
    """The first hit of each of ``rules`` in ``text``, in the rules' order."""
    return [Hit(r.id, m.group(0), m.start(), m.end()) for r in rules for m in [r.regex.search(text or "")] if m]


@dataclass(slots=True)
class Violation:
    """One failed check: its kind and the evidence (the text that tripped it)."""

    kind: str  # leaks_solution | acts_as_agent | contradicts_facts | false_success | missed_success | repeats_earlier | echoes_agent | ...
    evidence: str
    rules: tuple[str, ...] = ()  # the catalogue entries that decided it (the simulator-fault record)

    def as_dict(self) -> dict:
        """The violation as stored in the simulator record (evidence cut to 160 characters)."""
        return {"kind": self.kind, "evidence": self.evidence[:160]}


def _stem(word: str) -> str:
    """A crude stem, so that "installed" and "install" are one term."""
    for suffix in _STEM_SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> set[str]:
    return {_stem(w.lower().strip(".")) for w in terms(text)}


def leaked_terms(message: str, problem: Problem, history: Sequence[Message]) -> list[str]:
    """Distinctive words of the hidden problem statement and solution that the user's message
    uses although neither the question, the facts, nor any agent message said them."""
    hidden = _terms(problem.problem_statement or "") | _terms(problem.solution or "")
    known = _terms(problem.question) | _terms(" ".join(problem.facts)) | _terms(
        " ".join(m.content for m in history))
    leaked = []
    for raw in terms(message):
        w = raw.lower().strip(".")
        stem = _stem(w)
        if stem in hidden and stem not in known and w not in _STOP and len(w) >= _LEAK_MIN_LENGTH \
                and w not in leaked:
            leaked.append(w)
    return leaked


def _is_leak(leaked: list[str]) -> bool:
    technical = [t for t in leaked if _TECHNICAL_RE.search(t)]
    return bool(technical) or len(leaked) >= _LEAK_MIN_TERMS


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


def repeated_message(message: str, history: Sequence[Message], limit: float = USER_CHECKS.limit("repeat.question"),
                     verbatim: float = USER_CHECKS.limit("repeat.verbatim"),
                     verbatim_words: int = int(USER_CHECKS.limit("repeat.verbatim_words"))) -> str | None:
    """The earlier user message this one repeats, or None: the question when most of this
    message (``limit``) copies it (the simulator re-pasting its question instead of answering
    the agent), or any earlier message of at least ``verbatim_words`` words written out again
    almost whole (``verbatim``; in a batch the 1.5B sent one 60-word paragraph three turns in a
    row). A user who says "it still fails" again in other words, as people do, is not flagged."""
    users = [m for m in history if m.role == "user"]
    if users and copied_fraction(message, users[0].content) >= limit:
        return users[0].content
    if len(terms(message)) >= verbatim_words:
        for m in users[1:]:
            if copied_fraction(message, m.content) >= verbatim:
                return m.content
    return None


ECHO_LIMIT = USER_CHECKS.limit("echo.limit")  # share of a message's words copied, in runs of 3+, from the agent's
_ECHO_RUN = int(USER_CHECKS.limit("echo.min_run"))
_ECHO_SHORT = int(USER_CHECKS.limit("echo.short_words"))
_COPIED_MIN_WORDS = int(TEXT.limit("copied.min_words"))


def echoed_agent(message: str, history: Sequence[Message], limit: float = ECHO_LIMIT) -> str | None:
    """The agent's latest message when this one mostly copies it (``limit`` of its words in
    runs of 3 or more: commands are short), else None. In a p8 batch the 1.5B user sent the agent's commands back
    as its whole reply ("sudo apt-get install --reinstall xserver-xorg / sudo journalctl -xe")
    and once the agent's whole paragraph; "I changed the permissions of the .ssh directory to
    700 as you said, same error" copies about half and passes."""
    agent = next((m.content for m in reversed(history) if m.role == "agent"), "")
    if not agent:
        return None
    return agent if copied_fraction(message, agent, min_run=_ECHO_RUN) >= limit or _short_echo(message, agent) else None


def _short_echo(message: str, agent: str) -> bool:
    """A reply too short for :func:`copied_fraction` (under ``copied.min_words`` words) whose
    words, ``echo.short_words`` or more, stand whole and in order in the agent's message ("Dream,
    ctrl+alt+del?" sent back to "Dream, ctrl+alt+del?")."""
    words = plain_words(message)
    if not _ECHO_SHORT <= len(words) < _COPIED_MIN_WORDS:
        return False
    return f" {' '.join(words)} " in f" {' '.join(plain_words(agent))} "


def rule_violations(message: str, problem: Problem, history: Sequence[Message],
                    fixed: bool | None, plan: Plan | None = None) -> list[Violation]:
    """The rule checks of one simulated user message.

    Args:
        message: the user's candidate message.
        problem: the interaction's problem, with the hidden statement, solution and facts.
        history: the conversation before this message (ends with the agent's message).
        fixed: the turn's decided outcome (the agent's instruction fixes the true cause), or
            None when no outcome was decided (no success rule then); under a persona, the
            outcome its reply reports (``Plan.fixed``).
        plan: a persona's plan of the turn (None: the cooperative user, nothing changes). The
            kinds its act allows (``Plan.allows``) are checked on the message without the act's
            own sentences; a draft that misses the act fails ``misses_persona``
            (:func:`persona_violations`).
    """
    out = _rule_violations(message, problem, history, fixed)
    if plan is None:
        return out
    if plan.allows:
        deviation = plan.act_sentences(message)
        rest = " ".join(s for s in sentences(message) if s not in deviation) if deviation else message
        relaxed = {v.kind for v in _rule_violations(rest, problem, history, fixed)}
        out = [v for v in out if v.kind not in plan.allows or v.kind in relaxed]
    return out + persona_violations(message, problem, history, plan)


def persona_violations(message: str, problem: Problem, history: Sequence[Message],
                       plan: Plan) -> list[Violation]:
    """``misses_persona`` when the draft does not do the act its persona's schedule chose: no
    sentence that asks for a human, says it already did the step, or asks about the unrelated
    matter; or, on a vague user's ``withholds`` turn, a detail named that the conversation has
    not given (a fact told, or one made up in its place: ``personas.named_details``)."""
    act = plan.act
    if act is None:
        return []
    if act.name == "withholds":  # a fact told, or one made up in its place ("an Intel card")
        named = named_details(message, problem, history)
        return [Violation("misses_persona", f"withholds: named {', '.join(named)}", ("persona.withholds",))] \
            if named else []
    if plan.marks is not None and not plan.act_sentences(message):
        return [Violation("misses_persona", f"{act.name}: no sentence does it", (f"persona.{act.name}",))]
    return []


def _rule_violations(message: str, problem: Problem, history: Sequence[Message],
                     fixed: bool | None) -> list[Violation]:
    out: list[Violation] = []
    like_agent = agent_hits(message) or _hits(_AS_AGENT, message)
    if like_agent:  # the first rule in order that matches
        out.append(Violation("acts_as_agent", like_agent[0].text, (like_agent[0].rule_id,)))
    leaked = leaked_terms(message, problem, history)
    if leaked and _is_leak(leaked):
        decisive = "term.technical" if any(_TECHNICAL_RE.search(t) for t in leaked) else "leak.min_terms"
        out.append(Violation("leaks_solution", ", ".join(leaked), ("leak.stop_words", decisive)))
    earlier = repeated_message(message, history)
    if earlier is not None:
        first = next((m.content for m in history if m.role == "user"), None)
        out.append(Violation("repeats_earlier", earlier,
                             ("repeat.question",) if earlier == first else ("repeat.verbatim", "repeat.verbatim_words")))
    if echoed_agent(message, history) is not None:
        out.append(Violation("echoes_agent", message, ("echo.limit", "echo.min_run")))
    conflicts = version_conflicts(message, problem.facts, problem.question)
    for conflict in conflicts:
        out.append(Violation("contradicts_facts", conflict, ("version.product",)))
    if not conflicts:
        invented = invented_versions(message, problem, history)
        if invented:
            out.append(Violation("invents_detail", ", ".join(invented), ("version.product",)))
    success = claims_success_hits(message) or _hits(_NOW_ABLE, message)
    if fixed is False and (success or (result_cues(message) and not persisting_cues(message))):
        # under a not-fixed outcome a reported result must say the problem stays ("Now, Hardy is
        # loading." and "After updating the system, the problem should be resolved." passed the
        # success rule alone in a batch, and the solved-check took them for confirmations)
        out.append(Violation("false_success", message, tuple(h.rule_id for h in success or result_hits(message))))
    elif fixed is True and not success:
        out.append(Violation("missed_success", message))
    return out


async def contradicts_facts(client, message: str, problem: Problem,
                            history: Sequence[Message]) -> tuple[float, list[LLMCall]]:
    """P(yes) that ``message`` contradicts the scenario's facts, asked of the judge role."""
    from harness.models.llm import ask_yes_no
    from harness.selfscore.judge_messages import escape_judged_text, yes_no_messages

    facts = escape_judged_text("; ".join(problem.facts))
    question = prompts.USER_CONTRADICTS.format(facts=facts)
    p, _, call = await ask_yes_no(client, yes_no_messages([*history, Message("user", message)], question),
                                  "judge:user_check")
    return p, [call]


# a reply that breaks one of these breaks a grounding rule, whatever the persona
GROUNDING = ("false_success", "leaks_solution", "acts_as_agent", "contradicts_facts", "echoes_agent")


def read_reply(text: str | None, problem: Problem, history: Sequence[Message], fixed: bool) -> dict:
    """What a simulated user's reply to ``history`` shows, read by the persona sanity check
    (``harness.selfscore.sanity_personas``, through ``SimulatedUser.read_reply``): the acts its
    words show (``personas.deviations``; ``["ends"]`` for no reply), the facts it tells, the
    details it names that the conversation had not given, and the grounding rules it breaks
    under the decided outcome ``fixed`` (the persona's plan of the turn gives the outcome the
    reply reports and what its act allows)."""
    if text is None:
        return {"shown": deviations(None), "told": [], "named": [], "broken": []}
    plan = persona(problem.persona).plan(problem, history, fixed)
    reported = fixed if plan is None else plan.fixed
    broken = {v.kind for v in rule_violations(text, problem, history, reported, plan)} & set(GROUNDING)
    return {"shown": deviations(text), "told": told_facts(text, problem, history),
            "named": named_details(text, problem, history), "broken": sorted(broken)}
