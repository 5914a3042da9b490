"""Simulator faults: what a simulated user message does that a real asker does not, named, with the
catalogue entries that found it and their versions (issue 42; docs/selfscore.md, "Simulator faults").

Every message the simulated user sends is checked once more, as sent: the regeneration checks
(``harness.simuser.checks.rule_violations``, the kinds a draft is written again for on the
embedded profile) and the fault rules that only flag (``harness.aids.data_user.SIMULATOR_FAULTS``:
a refusal or an AI's self-description, an action no asker does between two chat messages, a
verbatim repeat loop; and, where no outcome was decided, a success claim after an agent message
that only asked). Each kind belongs to one named fault (:data:`FAULTS`); the faults of the sent
message are stored with the turn (``extra["simulator"]["faults"]``, :func:`faults_record`) and
the turn is ``flagged`` when there is any. The report counts the conversations a fault touched
and gives every figure with and without them; nothing here changes what the user sends.
"""
from __future__ import annotations

from typing import Sequence

from graphs.protocols import Message, Problem
from harness.aids import FAULT_RULES, SIMULATOR_FAULTS, USER_CHECK_RULES, version_of
from harness.aids.cues import claims_success_hits
from harness.aids.text import plain_words, sentences
from harness.simuser import personas, prompts
from harness.simuser.checks import Violation, rule_violations
from harness.simuser.fix_terms import asks_only

FAULTS: dict[str, tuple[str, ...]] = {
    "role_break": ("breaks_role",),
    "answers_as_agent": ("acts_as_agent", "echoes_agent", "copies_instructions"),
    "leaks_fix": ("leaks_solution",),
    "unfounded_success": ("false_success", "unprompted_success"),
    "missed_success": ("missed_success",),
    "impossible_action": ("impossible_action",),
    "repeat_loop": ("repeats_earlier", "repeats_loop"),
    "missed_persona_act": ("misses_persona",),
    "contradicts_scenario": ("contradicts_facts", "invents_detail"),
}
"""Each simulator fault and the check kinds that find it (a kind belongs to one fault)."""
FAULT_OF = {kind: fault for fault, kinds in FAULTS.items() for kind in kinds}
FLAG_ONLY = ("breaks_role", "impossible_action", "repeats_loop", "unprompted_success")
"""The kinds found here only: flagged, never regenerated (the regeneration aid reads the others)."""

_LOOP = int(SIMULATOR_FAULTS.limit("loop.in_a_row"))
_ROLE_RULES = [r for r in SIMULATOR_FAULTS.rules if r.id.startswith("role.")]
_ACTION_RULES = [r for r in SIMULATOR_FAULTS.rules if r.id.startswith("action.") and r.id != "action.earlier"]
_EARLIER = SIMULATOR_FAULTS.regex("action.earlier")


def _plain(text: str) -> str:
    return (text or "").replace("\u2019", "'").replace("\u2018", "'")


def role_breaks(message: str) -> list[Violation]:
    """``breaks_role``: the message refuses like an assistant ("I apologize, but I cannot help
    with that.") or describes itself as an AI ("As an AI language model ...")."""
    text = _plain(message)
    hits = [(r.id, m.group(0)) for r in _ROLE_RULES for m in [r.regex.search(text)] if m]
    return [Violation("breaks_role", ", ".join(h for _, h in hits), tuple(i for i, _ in hits))] if hits else []


def impossible_actions(message: str, problem: Problem) -> list[Violation]:
    """``impossible_action``: a sentence reports an action a real asker does not do between two
    chat messages (reinstalling the system, buying hardware, waiting days, a repair shop), unless
    it places the action before the conversation (``action.earlier``) or the question, facts or
    problem statement report an action of the same rule (the asker's own history)."""
    known = _plain(" ".join([problem.question, *problem.facts, problem.problem_statement or ""]))
    rules, evidence = [], []
    for sentence in sentences(_plain(message)):
        if _EARLIER.search(sentence):
            continue
        for rule in _ACTION_RULES:
            m = rule.regex.search(sentence)
            if m and not rule.regex.search(known) and rule.id not in rules:
                rules.append(rule.id)
                evidence.append(sentence)
    return [Violation("impossible_action", " | ".join(evidence), tuple(rules))] if rules else []


def _same(a: str, b: str) -> bool:
    words = plain_words(a)
    return bool(words) and words == plain_words(b)


def repeat_loop(message: str, history: Sequence[Message]) -> list[Violation]:
    """``repeats_loop``: the message is the user's previous message again, word for word (case
    and punctuation aside), for the ``loop.in_a_row``-th time in a row, or for the second time
    while the agent's latest message is its previous one again (both sides loop)."""
    users = [m.content for m in history if m.role == "user"]
    agents = [m.content for m in history if m.role == "agent"]
    if not users or not _same(message, users[-1]):
        return []
    in_a_row = 1 + next((k for k, earlier in enumerate(reversed(users)) if not _same(message, earlier)), len(users))
    both = len(agents) >= 2 and _same(agents[-1], agents[-2])
    if in_a_row >= _LOOP or both:
        why = f"sent {in_a_row} times in a row" + ("; the agent repeated its message too" if both else "")
        return [Violation("repeats_loop", f"{why}: {message}", ("loop.in_a_row",))]
    return []


def unprompted_success(message: str, history: Sequence[Message], fixed: bool | None) -> list[Violation]:
    """``unprompted_success``, where no outcome was decided (``fixed`` None: the paper's user
    says what happened itself): the message claims the problem is fixed although the agent's
    latest message told the user to do nothing (only questions, ``fix_terms.asks_only``, or no
    message), so nothing the agent said could have fixed it. With a decided outcome the claim is
    ``false_success`` instead."""
    if fixed is not None:
        return []
    hits = claims_success_hits(message)
    agent = next((m.content for m in reversed(history) if m.role == "agent"), "")
    if hits and (not agent.strip() or asks_only(agent)):
        return [Violation("unprompted_success", message, (hits[0].rule_id, "asks.sentence", "asks.suggestion"))]
    return []


def flag_only_violations(message: str, problem: Problem, history: Sequence[Message],
                         fixed: bool | None) -> list[Violation]:
    """The kinds of :data:`FLAG_ONLY` found in ``message`` (the sent message, before it joins
    ``history``)."""
    return [*role_breaks(message), *impossible_actions(message, problem), *repeat_loop(message, history),
            *unprompted_success(message, history, fixed)]


def _version(kind: str) -> str:
    if kind == "misses_persona":
        return personas.marks_version()
    if kind == "unprompted_success":
        return FAULT_RULES.version
    return SIMULATOR_FAULTS.version if kind in FLAG_ONLY else USER_CHECK_RULES.version


def _carried(attempt: dict | None, found: set[str]) -> list[dict]:
    """The sent draft's findings the rules cannot see again: its instructions cut to nothing
    (``copies_instructions``) and the judge's contradiction (``contradicts_facts``, P(yes))."""
    out = []
    for v in (attempt or {}).get("violations", []):
        if v["kind"] == "copies_instructions":
            out.append({**v, "rules": ["copy.run", "copy.meta_words"], "version": USER_CHECK_RULES.version})
        elif v["kind"] == "contradicts_facts" and v["evidence"].startswith("judge") and v["kind"] not in found:
            out.append({**v, "rules": ["judge:user_check"], "version": contradiction_version()})
    return out


def message_faults(text: str, problem: Problem, history: Sequence[Message], fixed: bool | None,
                   plan=None, attempt: dict | None = None) -> list[dict]:
    """The faults of the message ``text`` as sent: each with its fault name, kind, the catalogue
    entries that decided it (``rules``), their set's ``version`` and the evidence (160 chars).

    Args:
        fixed: the outcome the reply reports (None: none was decided).
        plan: the persona's plan of the turn (its relaxations and act), or None.
        attempt: the stored draft ``text`` is (its copied instructions and the judge's check).
    """
    found = [*rule_violations(text, problem, history, fixed, plan),
             *flag_only_violations(text, problem, history, fixed)]
    out = [{"fault": FAULT_OF[v.kind], "kind": v.kind, "rules": list(v.rules), "version": _version(v.kind),
            "evidence": v.evidence[:160]} for v in found]
    for v in _carried(attempt, {v.kind for v in found}):
        out.append({"fault": FAULT_OF[v["kind"]], "kind": v["kind"], "rules": v["rules"], "version": v["version"],
                    "evidence": v["evidence"][:160]})
    return out


def faults_record(text: str | None, problem: Problem, history: Sequence[Message], fixed: bool | None,
                  plan=None, attempts: Sequence[dict] = (), version: str | None = None) -> dict:
    """The turn's ``extra["simulator"]["faults"]``: ``flagged`` (the sent message has a fault),
    ``found`` (:func:`message_faults`) and the ``version`` of the whole check (``version``, or
    :func:`faults_version` computed now)."""
    attempt = next((a for a in reversed(attempts) if a.get("text") == text), None)
    found = message_faults(text, problem, history, fixed, plan, attempt) if text else []
    return {"flagged": bool(found), "found": found, "version": version or faults_version()}


def contradiction_version() -> str:
    """The version of the judge's contradiction check: its Yes/No question."""
    return version_of("user-contradicts", [prompts.USER_CONTRADICTS])


def faults_version() -> str:
    """The version of the fault check: every rule it reads (``FAULT_RULES``), the kinds of each
    fault, the persona acts' marks and the judge's contradiction question."""
    mapping = ";".join(f"{f}={','.join(k)}" for f, k in FAULTS.items())
    return version_of("simulator-faults", [FAULT_RULES, mapping, personas.marks_version(), contradiction_version()])
