"""SelfScore's figures as pure functions over stored rows (SELFSCORE.md, "Final scoring").

Default formula ``paper`` is the formula as the paper writes it:
``Quality = avg agent helpfulness / avg user helpfulness`` and
``Final = (Weighted Complexity + Quality) / 2 * 10``. It cannot reach the 100 the paper's prose
promises (perfect user and agent give 55; an unhelpful user can push quality above 10); we keep
it as the default so results compare with the paper. ``agent_only`` is an opt-in variant
(``Quality = avg agent helpfulness``, final in 10..100, 100 only for a perfect agent on a
maximally complex problem); the formula used is stored with every score.

Failed judgments are excluded from the averages and counted, never replaced by a default.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

SCORER_NAME = "selfscore"
SCORER_VERSION = "1.0"
FORMULAS = ("paper", "agent_only")
EXPORT_FIELDS = (
    "interaction_id", "critical_thinking", "error_handling", "topic_knowledge",
    "weighted_complexity", "turns", "avg_user_helpfulness", "avg_agent_helpfulness", "quality",
    "final_score", "solved", "stop_reason", "input_tokens", "output_tokens", "cost",
)


def weighted_complexity(ct: int, eh: int, tk: int,
                        weights: Sequence[float] = (0.5, 0.4, 0.1)) -> float:
    """``w1*CT + w2*EH + w3*TK`` (paper: 0.5, 0.4, 0.1)."""
    return weights[0] * ct + weights[1] * eh + weights[2] * tk


def turn_quality(user_helpfulness: int | None, agent_helpfulness: int | None) -> float | None:
    """Quality of one turn: agent helpfulness / user helpfulness (None if either failed)."""
    if user_helpfulness is None or agent_helpfulness is None:
        return None
    return agent_helpfulness / user_helpfulness


def _mean(values: Iterable[float | None]) -> tuple[float | None, int]:
    vals = [v for v in values if v is not None]
    return (sum(vals) / len(vals) if vals else None), len(vals)


def score_interaction(complexity: Mapping[str, int] | None, turns: Sequence[Mapping[str, Any]],
                      stop_reason: str | None = None, formula: str = "paper",
                      weights: Sequence[float] = (0.5, 0.4, 0.1)) -> dict[str, Any]:
    """All per-interaction figures from the complexity verdict and the stored turn rows.

    Args:
        complexity: ``critical_thinking``, ``error_handling``, ``topic_knowledge`` (1-10), or
            None when the complexity judgment failed.
        turns: rows with ``user_helpfulness``, ``agent_helpfulness`` (int or None), ``solved``,
            ``input_tokens``, ``output_tokens``, ``cost``.
        stop_reason: why the conversation ended.
        formula: ``paper`` (default) or ``agent_only``.
        weights: CT, EH, TK weights.
    """
    if formula not in FORMULAS:
        raise ValueError(f"unknown formula {formula!r}; choose one of {', '.join(FORMULAS)}")
    ct = eh = tk = wc = None
    if complexity:
        ct, eh, tk = (complexity["critical_thinking"], complexity["error_handling"],
                      complexity["topic_knowledge"])
        wc = weighted_complexity(ct, eh, tk, weights)
    n = len(turns)
    avg_user, n_user = _mean(t.get("user_helpfulness") for t in turns)
    avg_agent, n_agent = _mean(t.get("agent_helpfulness") for t in turns)
    if formula == "paper":
        quality = avg_agent / avg_user if avg_agent is not None and avg_user else None
    else:
        quality = avg_agent
    final = (wc + quality) / 2 * 10 if wc is not None and quality is not None else None
    return {
        "critical_thinking": ct, "error_handling": eh, "topic_knowledge": tk,
        "weighted_complexity": wc, "turns": n,
        "avg_user_helpfulness": avg_user, "avg_agent_helpfulness": avg_agent,
        "quality": quality, "final_score": final,
        "solved": any(bool(t.get("solved")) for t in turns), "stop_reason": stop_reason,
        "input_tokens": _reported_sum(t.get("input_tokens") for t in turns),
        "output_tokens": _reported_sum(t.get("output_tokens") for t in turns),
        "cost": _reported_sum((t.get("cost") for t in turns), 0.0),
        "failed_user_judgments": n - n_user, "failed_agent_judgments": n - n_agent,
        "complexity_failed": complexity is None,
        "formula": formula,
    }


def _reported_sum(values, zero=0):
    """The sum of the reported values; None when there were values and none was reported (an
    agent under test that reports no usage: "not reported", never 0)."""
    values = list(values)
    if values and all(v is None for v in values):
        return None
    return sum((v for v in values if v is not None), zero)


def summarize(figures: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Run-level means over interactions, with counts of what was excluded and why."""
    def mean_of(key):
        return _mean(f.get(key) for f in figures)[0]
    scored = [f for f in figures if f.get("final_score") is not None]
    return {
        "interactions": len(figures),
        "scored": len(scored),
        "unscored": len(figures) - len(scored),
        "mean_final_score": mean_of("final_score"),
        "mean_weighted_complexity": mean_of("weighted_complexity"),
        "mean_quality": mean_of("quality"),
        "mean_avg_user_helpfulness": mean_of("avg_user_helpfulness"),
        "mean_avg_agent_helpfulness": mean_of("avg_agent_helpfulness"),
        "mean_turns": mean_of("turns"),
        "solved_rate": (sum(bool(f.get("solved")) for f in figures) / len(figures)) if figures else None,
        # None when no conversation's agent reported a cost (an agent under test without usage)
        "total_cost": _reported_sum((f.get("cost") for f in figures), 0.0),
        "failed_judgments": sum((f.get("failed_user_judgments") or 0) + (f.get("failed_agent_judgments") or 0)
                                + int(bool(f.get("complexity_failed"))) for f in figures),
    }
