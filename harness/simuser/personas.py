"""Simulated-user personas: how the simulated user behaves beyond answering truthfully.

A task or a run picks a persona (``Problem.persona``): ``cooperative`` (today's user, nothing
changes), ``vague`` (withholds the first time it is asked, tells the second time, reports failed
steps in a few words), ``impatient`` (short replies, asks for a human on the second failed step,
ends the conversation on the third), ``mistaken`` (says it already did the first step, which it
has not, so that reply is never fixed), ``tangential`` (one unrelated question beside its first
not-fixed reply). A schedule decides **in code**, from the history and the decided outcome,
which turn gets which act; :meth:`Persona.plan` returns the turn's :class:`Plan` (the note the
reply is written under, from ``harness.simuser.prompts``, and what the checks relax on the act's
own sentences); the model only writes the text. Every persona keeps the grounding rules.
docs/selfscore.md, "Personas", has the table of acts and relaxations and the measurements.

A *step* is an agent message that tells the user to do something (not only questions,
``harness.simuser.fix_terms.asks_only``); a *failed step* is one whose outcome was not fixed (an
earlier one: the user's reply reported no fix, :func:`reported_fixed`).
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from typing import Callable, Sequence

from graphs.protocols import Message, Problem
from harness.aids.cues import claims_success, persisting_cues
from harness.aids.text import sentences, terms
from harness.simuser import prompts
from harness.simuser.fix_terms import asks_only, asks_something

COOPERATIVE = "cooperative"


@dataclass(frozen=True)
class Act:
    """One deviation of a persona from the cooperative user.

    Attributes:
        name: stored as ``persona.act`` of the turn's simulator record.
        note: the outcome note the reply is written under (``{topic}``: the tangent's matter).
        allows: check kinds (``harness.simuser.checks``) not applied to the sentences that do the
            act (the rest of the message is checked as usual).
        marks: a sentence that does the act matches it (None: nothing to find in the text).
        fixed: the outcome the reply reports whatever the decision (None: the decision's).
        ends: the user ends the conversation instead of replying (``Reply(None)``).
        hide_facts: the system prompt lists no facts on that turn (``USER_FACTS_WITHHELD``).
    """

    name: str
    note: str = ""
    allows: frozenset[str] = frozenset()
    marks: re.Pattern | None = None
    fixed: bool | None = None
    ends: bool = False
    hide_facts: bool = False


_HUMAN_RE = re.compile(
    r"\b(?:human|real person|a person|someone (?:else|real|who)|somebody|supervisor|manager|"
    r"representative|technician|operator|(?:live|real) (?:agent|support|help))\b", re.I)
_ALREADY_RE = re.compile(r"\b(?:already|before I (?:asked|wrote|contacted|came|called)|earlier today|"
                         r"(?:tried|did|done|ran|checked|removed|installed|cleared|restarted) (?:\S+ ){0,4}before)\b",
                         re.I)
# what marks a sentence about each unrelated matter of prompts.TANGENT_TOPICS
TANGENT_MARKS = {
    "wallpaper": re.compile(r"\b(?:wallpaper|background|desktop picture)\b", re.I),
    "pointer": re.compile(r"\b(?:pointer|cursor)\b", re.I),
    "out_of_office": re.compile(r"\b(?:out[- ]of[- ]office|vacation|automatic (?:reply|response)|auto-?reply)\b", re.I),
    "battery": re.compile(r"\b(?:battery|plugged in|charger|charging)\b", re.I),
    "double_sided": re.compile(r"\b(?:both sides|double[- ]sided|duplex)\b", re.I),
}

WITHHOLDS = Act("withholds", prompts.USER_VAGUE_WITHHOLDS, fixed=False, hide_facts=True)
TELLS = Act("tells", prompts.USER_VAGUE_TELLS, fixed=False)
LITTLE_DETAIL = Act("little_detail", prompts.USER_VAGUE_LITTLE_DETAIL, fixed=False, hide_facts=True)
ASKS_FOR_HUMAN = Act("asks_for_human", prompts.USER_IMPATIENT_HUMAN, frozenset({"false_success"}), _HUMAN_RE,
                     fixed=False)
ENDS = Act("ends", ends=True, fixed=False)
CLAIMS_DONE = Act("claims_done", prompts.USER_MISTAKEN_DONE, marks=_ALREADY_RE, fixed=False)
TANGENT = Act("tangent", prompts.USER_TANGENT, frozenset({"false_success", "invents_detail"}), fixed=False)


@dataclass(frozen=True)
class Plan:
    """A persona's plan for one reply: its act (None: the persona's plain reply), the outcome the
    reply reports, the note it is written under, what the checks need, and the stored record."""

    persona: str
    act: Act | None
    fixed: bool
    note: str
    marks: re.Pattern | None = None
    topic: str | None = None
    record: dict = field(default_factory=dict)

    @property
    def ends(self) -> bool:
        """The user ends the conversation on this turn."""
        return self.act is not None and self.act.ends

    @property
    def hide_facts(self) -> bool:
        """The system prompt lists no facts on this turn."""
        return self.act is not None and self.act.hide_facts

    @property
    def allows(self) -> frozenset[str]:
        """Check kinds not applied to the act's own sentences."""
        return self.act.allows if self.act else frozenset()

    def rejected(self) -> str:
        """Why a draft that missed the act was not used (told to the model with the next draft)."""
        why = prompts.USER_PERSONA_REJECTED.get(self.act.name, "") if self.act else ""
        return why.format(topic=prompts.TANGENT_TOPICS.get(self.topic or "", ""))

    def act_sentences(self, message: str) -> list[str]:
        """The sentences of ``message`` that do the act (``[]`` when the act marks none)."""
        if self.marks is None:
            return []
        return [s for s in sentences(message) if self.marks.search(s)]

    def texts(self) -> list[str]:
        """This turn's note and regeneration note, without their quoted example replies and the
        tangent's matter (a draft may well follow those): a draft's sentence that copies the rest
        is cut (``harness.simuser.checks.strip_copied_instructions``)."""
        note = self.act.note.format(topic=" ") if self.topic else self.note
        texts = [_QUOTED_EXAMPLE.sub(" ", note)]
        if self.act and self.act.name in prompts.USER_PERSONA_REJECTED:
            why = prompts.USER_PERSONA_REJECTED[self.act.name].format(topic=" ")
            texts.append(prompts.USER_REGENERATION.format(why=why))
        return texts


_QUOTED_EXAMPLE = re.compile(r'"[^"]*"')


# --- the schedules: which turn gets which act, from the history and the decided outcome ----------
def _exchanges(history: Sequence[Message]) -> list[tuple[str, str | None]]:
    """(agent message, the user's reply to it or None) for each agent message, in order."""
    out = []
    for i, m in enumerate(history):
        if m.role == "agent":
            nxt = history[i + 1] if i + 1 < len(history) else None
            out.append((m.content, nxt.content if nxt is not None and nxt.role == "user" else None))
    return out


def is_step(agent_message: str) -> bool:
    """The agent's message tells the user to do something (it is not only questions)."""
    return bool(agent_message.strip()) and not asks_only(agent_message)


def reported_fixed(reply: str) -> bool:
    """The user's reply said the problem is fixed: a success claimed outside any sentence that
    asks for a human or about an unrelated matter ("please connect me to a human" reads as a
    success to ``claims_success``), and nothing said to persist."""
    rest = " ".join(s for s in sentences(reply)
                    if not _HUMAN_RE.search(s) and not any(m.search(s) for m in TANGENT_MARKS.values()))
    return claims_success(rest) and not persisting_cues(reply)


def failed_steps(history: Sequence[Message], fixed: bool) -> int:
    """Failed steps so far: earlier steps whose user reply did not report a fix
    (:func:`reported_fixed`), and the latest agent message when it is a step and its decided
    outcome is not fixed."""
    exchanges = _exchanges(history)
    earlier = sum(1 for a, u in exchanges[:-1] if is_step(a) and u is not None and not reported_fixed(u))
    latest = exchanges[-1][0] if exchanges else ""
    return earlier + (1 if is_step(latest) and not fixed else 0)


def _vague(problem: Problem, history: Sequence[Message], fixed: bool) -> tuple[Act | None, dict]:
    exchanges = _exchanges(history)
    asked_before = sum(1 for a, _ in exchanges[:-1] if asks_something(a))
    latest = exchanges[-1][0] if exchanges else ""
    info = {"asked_before": asked_before}
    if fixed:
        return None, info
    if asks_something(latest):  # the first question is answered vaguely, the second plainly
        return {0: WITHHOLDS, 1: TELLS}.get(asked_before), info
    return LITTLE_DETAIL, info


def _impatient(problem: Problem, history: Sequence[Message], fixed: bool) -> tuple[Act | None, dict]:
    exchanges = _exchanges(history)
    latest_failed = bool(exchanges) and is_step(exchanges[-1][0]) and not fixed
    n = failed_steps(history, fixed)
    info = {"failed_steps": n}
    if latest_failed and n == 2:
        return ASKS_FOR_HUMAN, info
    if latest_failed and n >= 3:  # it asked for a human on the second one: n grows by one a turn
        return ENDS, info
    return None, info


def _mistaken(problem: Problem, history: Sequence[Message], fixed: bool) -> tuple[Act | None, dict]:
    exchanges = _exchanges(history)
    latest = exchanges[-1][0] if exchanges else ""
    first_step = is_step(latest) and not any(is_step(a) for a, _ in exchanges[:-1])
    return (CLAIMS_DONE if first_step else None), {}


def _tangential(problem: Problem, history: Sequence[Message], fixed: bool) -> tuple[Act | None, dict]:
    exchanges = _exchanges(history)
    earlier_not_fixed = any(u is not None and not reported_fixed(u) for _, u in exchanges[:-1])
    return (TANGENT if not fixed and not earlier_not_fixed else None), {}


def tangent_topic(problem: Problem) -> str:
    """The unrelated matter a tangential user brings up: one of ``prompts.TANGENT_TOPICS``, picked
    by the interaction id (the same on a resumed run), skipping any the task itself mentions."""
    names = list(prompts.TANGENT_TOPICS)
    start = zlib.crc32(problem.interaction_id.encode("utf-8")) % len(names)
    task = " ".join([problem.question, problem.solution or "", problem.problem_statement or "", *problem.facts])
    for k in range(len(names)):
        name = names[(start + k) % len(names)]
        if not TANGENT_MARKS[name].search(task):
            return name
    return names[start]


@dataclass(frozen=True)
class Persona:
    """A named behaviour of the simulated user: its description, its style note (added to every
    reply's note; "" none), its acts, and the schedule that picks the act of a turn."""

    name: str
    description: str
    acts: tuple[Act, ...] = ()
    style: str = ""
    schedule: Callable[[Problem, Sequence[Message], bool], tuple[Act | None, dict]] | None = None

    def plan(self, problem: Problem, history: Sequence[Message], fixed: bool) -> Plan | None:
        """The plan of the reply to ``history`` (which ends with the agent's message) under the
        decided outcome ``fixed``; None for the cooperative user (nothing changes)."""
        if self.schedule is None:
            return None
        act, info = self.schedule(problem, history, fixed)
        reply_fixed = fixed if act is None or act.fixed is None else act.fixed
        topic = tangent_topic(problem) if act is TANGENT else None
        if act is not None and act.note:
            note = act.note.format(topic=prompts.TANGENT_TOPICS[topic]) if topic else act.note
        else:
            note = prompts.USER_FIXED if reply_fixed else prompts.USER_NOT_FIXED
        if self.style and act is None and not reply_fixed:  # an act's note and a success report say enough
            note = f"{note}\n{self.style}"
        record = {"name": self.name, "act": act.name if act else None, **info}
        if topic:
            record["topic"] = topic
        if reply_fixed != fixed:
            record["reply_outcome"] = "fixed" if reply_fixed else "not_fixed"
        marks = TANGENT_MARKS[topic] if topic else (act.marks if act else None)
        return Plan(self.name, act, reply_fixed, note, marks, topic, record)


PERSONAS: dict[str, Persona] = {p.name: p for p in (
    Persona(COOPERATIVE, "answers what it is asked from its facts and reports each outcome plainly "
            "(the simulated user of every run before personas)"),
    Persona("vague", "answers with little detail until asked twice: the first time the agent asks "
            "something it answers without any fact, and reports a failed step in a few words",
            (WITHHOLDS, TELLS, LITTLE_DETAIL), schedule=_vague),
    Persona("impatient", "short replies; asks for a human after two failed steps and ends the "
            "conversation when the next step fails too", (ASKS_FOR_HUMAN, ENDS),
            prompts.USER_IMPATIENT_STYLE, _impatient),
    Persona("mistaken", "once, on the first step the agent gives, says it already did it before "
            "(it has not), so that step does not fix anything yet", (CLAIMS_DONE,), schedule=_mistaken),
    Persona("tangential", "once, on its first reply that is not fixed, asks an unrelated question "
            "beside its reply", (TANGENT,), schedule=_tangential),
)}
PERSONA_NAMES = tuple(PERSONAS)


def persona(name: str | None) -> Persona:
    """The persona called ``name`` (None or "": cooperative).

    Raises:
        ValueError: an unknown name, naming the known ones.
    """
    try:
        return PERSONAS[name or COOPERATIVE]
    except KeyError:
        raise ValueError(f"unknown simulated-user persona {name!r}: choose one of "
                         f"{', '.join(PERSONA_NAMES)}") from None


def marks_version() -> str:
    """The version of what decides a missed persona act (``checks.persona_violations``): each
    act's name and the pattern its sentences are found by (a changed mark changes it)."""
    from harness.aids import version_of
    acts = sorted({a.name: a for p in PERSONAS.values() for a in p.acts}.items())
    return version_of("persona-acts", [f"{name}={a.marks.pattern if a.marks else ''}" for name, a in acts]
                      + [f"tangent.{k}={v.pattern}" for k, v in sorted(TANGENT_MARKS.items())])


# --- what the sanity check and the tests read in a reply ------------------------------------------
def details(text: str) -> set[str]:
    """The specific terms of ``text``, lowercased: a name (capitalized, not a sentence's first
    word, not "I"), an acronym or a number or version (``Broadcom``, ``HP``, ``BCM4313``, ``22.04``)."""
    out = set()
    for sentence in sentences(text):
        for k, t in enumerate(terms(sentence)):
            if any(c.isdigit() for c in t) or (t.isupper() and len(t) >= 2) or (k > 0 and t[0].isupper() and t != "I"):
                out.add(t.lower())
    return out


def _known(problem: Problem, history: Sequence[Message]) -> set[str]:
    return {t.lower() for t in terms(" ".join([problem.question, *(m.content for m in history)]))}


def fact_terms(problem: Problem, history: Sequence[Message]) -> set[str]:
    """The facts' own :func:`details` that neither the question nor the conversation so far gives:
    a reply that uses one tells a fact."""
    return details("\n".join(problem.facts)) - _known(problem, history)


def told_facts(message: str, problem: Problem, history: Sequence[Message]) -> list[str]:
    """The :func:`fact_terms` that ``message`` uses."""
    words = {t.lower() for t in terms(message)}
    return sorted(fact_terms(problem, history) & words)


def named_details(message: str, problem: Problem, history: Sequence[Message]) -> list[str]:
    """The :func:`details` of ``message`` that neither the question nor the conversation so far
    gives: a fact told, or one made up ("I think it is an Intel card")."""
    return sorted(details(message) - _known(problem, history))


def deviations(message: str | None) -> list[str]:
    """The acts a reply shows by its words alone: ``ends`` (no reply), ``asks_for_human``,
    ``claims_done`` ("already", "before I asked", ...), ``tangent`` (one of the unrelated matters).
    A cooperative user's replies show none."""
    if message is None:
        return ["ends"]
    found = []
    if _HUMAN_RE.search(message):
        found.append("asks_for_human")
    if _ALREADY_RE.search(message):
        found.append("claims_done")
    if any(m.search(message) for m in TANGENT_MARKS.values()):
        found.append("tangent")
    return found
