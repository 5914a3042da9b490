"""Every rule set, in one place: what a report lists, and the hits of each rule over texts.

:data:`RULE_SETS` are the sets of one decision each (every rule, word list and limit stands in
exactly one of them); :data:`FAMILIES` are the joined sets whose versions judgments and runs
record (everything one aid reads). ``python -m harness.aids`` prints both.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from harness.aids import data_bounds, data_cues, data_text, data_user, evidence
from harness.aids.rules import RuleSet

RULE_SETS: tuple[RuleSet, ...] = (
    data_text.TEXT, data_text.QUOTED, data_text.TECHNICAL,
    data_cues.PERSISTS, data_cues.UNTRIED, data_cues.SUCCESS, data_cues.SUCCEEDED, data_cues.NEGATION,
    data_cues.SYMPTOM_GONE, data_cues.RESULT, data_cues.AFTER_STEP, data_cues.ASSISTANT,
    data_cues.AGENT_INSTRUCTIONS,
    data_bounds.NO_OUTPUT, data_bounds.WORKS, data_bounds.OUTPUT, data_bounds.POSTPONES, data_bounds.REFUSES,
    data_bounds.ACK, data_bounds.QUESTION_DETAIL, data_bounds.HOW_TO, data_bounds.ELSEWHERE, data_bounds.STEP,
    data_bounds.ASKS, data_bounds.PLEASANTRY,
    data_bounds.BANDS, data_user.USER_CHECKS, data_user.FIX_TERMS, evidence.EVIDENCE,
)
"""The sets of one decision each; together they hold every entry once."""

FAMILIES: tuple[RuleSet, ...] = (
    data_bounds.HB, data_cues.SOLVED_CUES, data_cues.SUCCESS_CLAIM, data_cues.PERSISTING, data_cues.AGENT,
    data_bounds.OUTCOME,
    data_bounds.DETAIL, data_user.USER_CHECK_RULES,
)
"""The joined sets whose versions are recorded: the helpfulness bounds (``hb``), the solved-check's
vetoes, the success claim, the simulated user's checks, and the sets they join."""


def rule_set(name: str) -> RuleSet:
    """The rule set or family called ``name``.

    Raises:
        KeyError: no set has that name.
    """
    for s in (*RULE_SETS, *FAMILIES):
        if s.name == name:
            return s
    raise KeyError(name)


def entries() -> list:
    """Every rule, word list and limit, each once, in the order of :data:`RULE_SETS`."""
    return [e for s in RULE_SETS for e in (*s.rules, *s.word_lists, *s.limits)]


def hit_counts(texts: Iterable[str], sets: Iterable[RuleSet] = RULE_SETS) -> Counter:
    """How many of ``texts`` each rule matches (rule id -> count; a text counts once per rule)."""
    rules = [r for s in sets for r in s.rules]
    counts: Counter = Counter()
    for text in texts:
        counts.update(r.id for r in rules if r.regex.search(text or ""))
    return counts


def report(texts: Iterable[str] | None = None, show_rules: bool = True, full: bool = False) -> str:
    """The rule sets as text: each family and set with its version, and (``show_rules``) each
    entry with what it decides (``full``: its pattern, words or value and why too); with
    ``texts``, each rule's number of matching texts."""
    counts = hit_counts(texts) if texts is not None else None
    lines = ["families (versions recorded with judgments and runs):"]
    lines += [f"  {f.version:32} {len(f.rules):3} rules, {len(f.word_lists)} word lists, {len(f.limits):2} limits"
              for f in FAMILIES]
    lines.append("\nrule sets (each entry in one):")
    for s in RULE_SETS:
        lines.append(("\n" if show_rules else "") + f"  {s.version:32} {len(s.rules):3} rules, "
                     f"{len(s.word_lists)} word lists, {len(s.limits):2} limits")
        if not show_rules:
            continue
        for e in (*s.rules, *s.word_lists, *s.limits):
            hits = f" [{counts[e.id]} hits]" if counts is not None and e in s.rules else ""
            lines.append(f"    {e.id}{hits}: {e.decides}")
            if full:
                body = getattr(e, "pattern", None) or " ".join(getattr(e, "words", ())) or e.value
                flags = f" (flags {e.flags!r})" if isinstance(getattr(e, "flags", None), str) else ""
                lines += [f"        {body}{flags}", f"        why: {e.why}"]
    return "\n".join(lines)
