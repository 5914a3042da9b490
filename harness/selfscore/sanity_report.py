"""The judge sanity report: per-case verdicts of each sanity set and the report's printed lines."""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.selfscore import prompts
from harness.selfscore.sanity_sets import TURN_GROUPS


@dataclass
class Verdict:
    """One yes/no sanity case: what was expected, what came back (None: failed), and details."""

    id: str
    expected: bool
    got: bool | None
    detail: str = ""

    @property
    def right(self) -> bool:
        """Whether the case came back with the expected answer (a failed case is wrong)."""
        return self.got is not None and self.got == self.expected


def class_counts(cases: list[Verdict]) -> tuple[int, int, int, int]:
    """(right on yes, yes cases, right on no, no cases)."""
    yes = [c for c in cases if c.expected]
    no = [c for c in cases if not c.expected]
    return sum(c.right for c in yes), len(yes), sum(c.right for c in no), len(no)


@dataclass
class TurnPair:
    """One turn-helpfulness case: the scores of its helpful and its useless version, and the
    judge's own scores before the rubric bounds (``harness.selfscore.helpfulness_bounds``)."""

    id: str
    group: str
    helpful: int | None
    useless: int | None
    judge_helpful: int | None = None
    judge_useless: int | None = None

    @property
    def right(self) -> bool:
        """Whether the helpful version scored strictly higher (both scores valid)."""
        return self.helpful is not None and self.useless is not None and self.helpful > self.useless

    @property
    def judge_right(self) -> bool:
        """Whether the helpful version scored strictly higher by the judge's own scores."""
        return (self.judge_helpful is not None and self.judge_useless is not None
                and self.judge_helpful > self.judge_useless)


@dataclass
class StabilityCase:
    """One message judged several times: the judge's own scores (None: a failed judgment)."""

    id: str
    scores: list[float | None]

    @property
    def spread(self) -> float | None:
        """Highest minus lowest valid score (None when fewer than two are valid), to 0.01 (scores
        read from probabilities are expected values)."""
        valid = [v for v in self.scores if v is not None]
        return round(max(valid) - min(valid), 2) if len(valid) > 1 else None


@dataclass
class PersonaTurn:
    """One reply of a persona case: the act expected and recorded (None: none), the reply (None:
    the user ended the conversation), whether it showed what was expected, the grounding rules it
    broke, and the decided outcome."""

    turn: int
    expected: str | None
    act: str | None
    text: str | None
    appeared: bool
    broken: list[str] = field(default_factory=list)
    outcome: str = ""


@dataclass
class PersonaCase:
    """One persona scenario played turn by turn (``harness.selfscore.sanity_personas``); ``error``
    when a call failed."""

    id: str
    persona: str
    turns: list[PersonaTurn] = field(default_factory=list)
    expected_turns: int = 0
    error: str = ""

    @property
    def behaved(self) -> bool | None:
        """Every expected turn was played and showed what it expected (None: the case failed)."""
        if self.error:
            return None
        return len(self.turns) == self.expected_turns and all(t.appeared for t in self.turns)

    @property
    def grounded(self) -> bool:
        """No reply broke a grounding rule (and the case did not fail)."""
        return not self.error and not any(t.broken for t in self.turns)


@dataclass
class SanityReport:
    """Everything one judge sanity run found: the pair scores, the per-case verdicts and
    stability scores of each set, and which judge and simulated user gave them."""

    helpful_pairs: list[tuple[float | None, float | None]]
    complexity_pairs: list[tuple[float | None, float | None]]
    judge_model: str
    solved: list[Verdict] = field(default_factory=list)
    outcome: list[Verdict] = field(default_factory=list)
    replies: list[Verdict] = field(default_factory=list)
    solved_method: str = "confirmation"
    user_model: str = ""
    turn_pairs: list[TurnPair] = field(default_factory=list)
    stability: list[StabilityCase] = field(default_factory=list)
    personas: list[PersonaCase] = field(default_factory=list)
    fault_rules: list[Verdict] = field(default_factory=list)

    @property
    def largest_spread(self) -> float | None:
        """The largest score spread of the stability messages (None when none has one)."""
        spreads = [c.spread for c in self.stability if c.spread is not None]
        return max(spreads) if spreads else None

    @property
    def helpful_correct(self) -> int:
        """How many helpfulness pairs scored the helpful reply strictly higher."""
        return sum(1 for good, bad in self.helpful_pairs if good is not None and bad is not None and good > bad)

    @property
    def complexity_correct(self) -> int:
        """How many complexity pairs rated the hard problem strictly more complex."""
        return sum(1 for easy, hard in self.complexity_pairs
                   if easy is not None and hard is not None and hard > easy)

    @property
    def failed(self) -> int:
        """How many judgments (and simulated-user replies) of every set failed."""
        return sum(v is None for pair in [*self.helpful_pairs, *self.complexity_pairs] for v in pair) + \
            sum(c.got is None for c in [*self.solved, *self.outcome, *self.replies]) + \
            sum(v is None for t in self.turn_pairs for v in (t.helpful, t.useless)) + \
            sum(v is None for c in self.stability for v in c.scores) + \
            sum(c.behaved is None for c in self.personas)

    def lines(self) -> list[str]:
        """The printed report: one summary line per set, then one line per pair and case,
        with ``<-- wrong`` (or ``<-- wrong order``) marking each one the judge got wrong."""
        out = [f"Judge sanity ({self.judge_model}, prompt {prompts.PROMPT_VERSION}): helpful reply "
               f"scored higher in {self.helpful_correct}/{len(self.helpful_pairs)} pairs; harder "
               f"problem rated more complex in {self.complexity_correct}/{len(self.complexity_pairs)} pairs"
               + (f"; {self.failed} judgments failed" if self.failed else "") + "."]
        if self.turn_pairs:
            groups = self._turn_groups()
            out.append("Helpfulness in conversations: helpful version scored higher for " + "; ".join(
                f"{sum(t.right for t in group)}/{len(group)} {label}" for label, group in groups)
                + " (the judge's own scores, before the rubric bounds: " + ", ".join(
                f"{sum(t.judge_right for t in group)}/{len(group)}" for _, group in groups) + ").")
        if self.stability:
            repeats = max(len(c.scores) for c in self.stability)
            out.append(f"Judge stability: {len(self.stability)} messages judged {repeats} times each at once, "
                       "score spread (highest - lowest, the judge's own scores) " + ", ".join(
                           f"{'failed' if c.spread is None else c.spread} ({c.id})" for c in self.stability)
                       + f"; largest {self.largest_spread}.")
        if self.solved:
            ys, yn, ns, nn = class_counts(self.solved)
            out.append(f"Solved-check ({self.solved_method}): right on {ys}/{yn} solved and {ns}/{nn} "
                       f"unsolved conversations.")
        if self.outcome:
            ys, yn, ns, nn = class_counts(self.outcome)
            out.append(f"Simulated user ({self.user_model}): outcome right on {ys}/{yn} fixes and "
                       f"{ns}/{nn} non-fixes" + (self._reply_line() if self.replies else "") + ".")
        if self.personas:
            out.append(self._persona_line())
        if self.fault_rules:
            out.append(self._fault_line())
        for i, (good, bad) in enumerate(self.helpful_pairs):
            out.append(f"  helpfulness pair {i + 1}: helpful {good} vs useless {bad}"
                       + ("" if good is not None and bad is not None and good > bad else "  <-- wrong order"))
        for i, (easy, hard) in enumerate(self.complexity_pairs):
            out.append(f"  complexity pair {i + 1}: easy {_fmt(easy)} vs hard {_fmt(hard)}"
                       + ("" if easy is not None and hard is not None and hard > easy else "  <-- wrong order"))
        for t in self.turn_pairs:
            own = "" if (t.judge_helpful, t.judge_useless) == (t.helpful, t.useless) else \
                f" (judge {t.judge_helpful} vs {t.judge_useless})"
            out.append(f"  {t.group} turn pair {t.id}: helpful {t.helpful} vs useless {t.useless}{own}"
                       + ("" if t.right else "  <-- wrong order"))
        for c in self.stability:
            out.append(f"  stability {c.id}: " + " ".join("failed" if v is None else str(v) for v in c.scores))
        for label, cases in (("solved-check", self.solved), ("user outcome", self.outcome),
                             ("user reply", self.replies)):
            for c in cases:
                got = "failed" if c.got is None else ("yes" if c.got else "no")
                out.append(f"  {label} {c.id}: expected {'yes' if c.expected else 'no'}, got {got}"
                           f"{'  (' + c.detail + ')' if c.detail else ''}" + ("" if c.right else "  <-- wrong"))
        for c in self.personas:
            out.extend(_persona_case_lines(c))
        out += [f"  fault rule {c.id}: expected {'yes' if c.expected else 'no'}, got {'yes' if c.got else 'no'}"
                "  <-- wrong" for c in self.fault_rules if not c.right]
        return out

    def _fault_line(self) -> str:
        ys, yn, ns, nn = class_counts(self.fault_rules)
        kinds = sorted({c.detail for c in self.fault_rules})
        per_kind = ", ".join(f"{k} {sum(c.right for c in self.fault_rules if c.detail == k)}/"
                             f"{sum(c.detail == k for c in self.fault_rules)}" for k in kinds)
        return (f"Simulator-fault rules (hand-written cases, no model): right on {ys}/{yn} faulty and "
                f"{ns}/{nn} clean messages ({per_kind}).")

    def _persona_line(self) -> str:
        behaved = sum(bool(c.behaved) for c in self.personas)
        grounded = sum(c.grounded for c in self.personas)
        replies = [t for c in self.personas for t in c.turns if t.text is not None]
        broken = sum(bool(t.broken) for t in replies)
        names = ", ".join(f"{c.persona} {'yes' if c.behaved else 'failed' if c.behaved is None else 'no'}"
                          for c in self.personas)
        return (f"Personas ({self.user_model}): {behaved}/{len(self.personas)} behaved ({names}; cooperative: "
                f"no deviation); {grounded}/{len(self.personas)} kept the grounding rules "
                f"({broken}/{len(replies)} replies broke one).")

    def _turn_groups(self) -> list[tuple[str, list[TurnPair]]]:
        groups = [(label, [t for t in self.turn_pairs if t.group == key]) for key, label in TURN_GROUPS]
        return [(label, group) for label, group in groups if group]

    def _reply_line(self) -> str:
        ys, yn, ns, nn = class_counts(self.replies)
        return f"; its reply reports success on {ys}/{yn} fixes and persists on {ns}/{nn} non-fixes"


def _fmt(value: float | None) -> str:
    return "failed" if value is None else f"{value:.1f}"


def _persona_case_lines(case: PersonaCase) -> list[str]:
    """One line per persona case, then one per reply: expected and recorded act, the reply."""
    status = ("failed: " + case.error[:80]) if case.error else ("behaved" if case.behaved else "did not behave")
    out = [f"  persona {case.persona} ({case.id}): {status}"
           + ("" if case.grounded else "; broke a grounding rule") + ("" if case.behaved and case.grounded else "  <-- wrong")]
    for t in case.turns:
        said = "(ended the conversation)" if t.text is None else repr(t.text[:100])
        out.append(f"    turn {t.turn}: expected {t.expected or '-'}, act {t.act or '-'}, outcome {t.outcome or '-'}: "
                   f"{said}" + (f"  broke {', '.join(t.broken)}" if t.broken else "")
                   + ("" if t.appeared else "  <-- wrong"))
    if len(case.turns) < case.expected_turns and not case.error:
        out.append(f"    (ended after turn {case.turns[-1].turn if case.turns else 1} of {case.expected_turns + 1})  <-- wrong")
    return out
