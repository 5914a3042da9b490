"""Human-vs-LLM judge agreement on the same agent replies (live sessions' ratings).

For every turn a person rated: their helpfulness score beside the LLM judge's, and their
solved verdict beside the solved-check's. Reported per run: Pearson and Spearman correlation,
Krippendorff's alpha (interval; ``harness.study.judge_statistics.judge_comparison``), mean difference
(human - LLM) and mean absolute difference for helpfulness, the rank intervals resampling
conversations (``interaction_id``) with all their rated turns; percent agreement and Cohen's
kappa for solved.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from harness.study.judge_statistics import judge_comparison
from harness.study.label_agreement import binary_agreement, rank_agreement


def _rated(rows: Sequence[Mapping[str, Any]], human: str, llm: str) -> list[Mapping[str, Any]]:
    """The rows with both a ``human`` and an ``llm`` value."""
    return [r for r in rows if r.get(human) is not None and r.get(llm) is not None]


def _pairs(rows: Sequence[Mapping[str, Any]], human: str, llm: str) -> list[tuple[float, float]]:
    return [(float(r[human]), float(r[llm])) for r in _rated(rows, human, llm)]


def _corr(xs: list[float], ys: list[float], kind: str) -> float | None:
    from scipy import stats
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    value = (stats.pearsonr if kind == "pearson" else stats.spearmanr)(xs, ys)[0]
    return None if math.isnan(value) else float(value)


def helpfulness_agreement(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Agreement on agent helpfulness over rows with ``human_helpfulness`` and
    ``llm_helpfulness`` (``store.live.LiveStore.human_vs_llm``)."""
    pairs = _pairs(rows, "human_helpfulness", "llm_helpfulness")
    out: dict[str, Any] = {"n": len(pairs), "pearson_r": None, "spearman_rho": None,
                           "krippendorff_alpha": None, "mean_difference": None,
                           "mean_abs_difference": None, "note": None}
    if not pairs:
        out["note"] = "no turn has both a human rating and an LLM helpfulness score"
        return out
    xs, ys = [h for h, _ in pairs], [m for _, m in pairs]
    out["mean_difference"] = sum(h - m for h, m in pairs) / len(pairs)
    out["mean_abs_difference"] = sum(abs(h - m) for h, m in pairs) / len(pairs)
    rated = _rated(rows, "human_helpfulness", "llm_helpfulness")
    # the statistics `deskbench agreement` reports, the same code; the turns of one conversation together
    ranks = rank_agreement(pairs, [r.get("interaction_id", i) for i, r in enumerate(rated)])
    out["pearson_r"], out["spearman_rho"] = _corr(xs, ys, "pearson"), ranks["spearman_rho"]
    out.update(spearman_ci=ranks["spearman_ci"], kendall_tau=ranks["kendall_tau"], kendall_ci=ranks["kendall_ci"])
    comparison = judge_comparison({"human": xs, "llm": ys})
    out["krippendorff_alpha"] = comparison["krippendorff_alpha"]
    if comparison["alpha_error"] or out["pearson_r"] is None:
        out["note"] = comparison["alpha_error"] or "correlation needs 3+ pairs with variation"
    return out


def solved_agreement(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Agreement of the person's solved verdict with the solved-check's (with
    :func:`harness.study.label_agreement.binary_agreement`'s per-class figures)."""
    pairs = [(bool(round(h)), bool(round(m))) for h, m in _pairs(rows, "human_solved", "llm_solved")]
    out: dict[str, Any] = {"n": len(pairs), "percent_agreement": None, "cohen_kappa": None}
    if not pairs:
        return out
    table = binary_agreement(pairs)
    out.update(percent_agreement=table["accuracy"], cohen_kappa=table["cohen_kappa"], classes=table["classes"])
    return out


def human_llm_agreement(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"helpfulness": helpfulness_agreement(rows), "solved": solved_agreement(rows)}``."""
    return {"helpfulness": helpfulness_agreement(rows), "solved": solved_agreement(rows)}
