"""Statistics across SelfScore runs (SELFSCORE.md, "Runs, baselines and comparisons", "Known limits").

Pure functions over plain lists and dicts: no store access, no plotting. The tests themselves come
from libraries, never hand-rolled: one-way ANOVA and Mann-Whitney U from scipy, Tukey HSD from
statsmodels, bootstrap intervals from ``scipy.stats.bootstrap``. The statistics over judges
(repeated-measures ANOVA, Krippendorff's alpha, repeat-judging variance) are in
:mod:`harness.study.judge_statistics`.

Missing values (None or NaN) are excluded, never imputed, and every result says how many values
it used (``n``) and how many it dropped (``excluded``). Input no test can use (fewer than two
groups, a group with no values, non-numeric or infinite values) raises ``ValueError`` naming the
problem.

Results are plain dicts and lists, so they serialize to JSON and render in the reports as is.
"""
from __future__ import annotations

import math
import warnings
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats

from harness.selfscore.scoring import weighted_complexity

PAPER_WEIGHTS: tuple[float, float, float] = (0.5, 0.4, 0.1)
MANN_WHITNEY_METRICS: tuple[str, ...] = (
    "final_score", "avg_agent_helpfulness", "avg_user_helpfulness", "quality", "weighted_complexity",
)
TUKEY_COLUMNS: tuple[str, ...] = ("group1", "group2", "meandiff", "p-adj", "lower", "upper", "reject")


def clean(values: Sequence[Any]) -> tuple[list[float], int]:
    """Drop missing values.

    Args:
        values: numbers, None or NaN.

    Returns:
        ``(kept values as floats, number excluded)``.

    Raises:
        ValueError: a value is not a number (bools and strings included) or is infinite.
    """
    kept: list[float] = []
    excluded = 0
    for v in values:
        if v is None:
            excluded += 1
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError(f"not a number: {v!r}")
        v = float(v)
        if math.isnan(v):
            excluded += 1
        elif math.isinf(v):
            raise ValueError(f"infinite value {v} cannot be used")
        else:
            kept.append(v)
    return kept, excluded


def metric_values(figures: Sequence[Mapping[str, Any]], metric: str) -> list[Any]:
    """One metric from per-interaction figure dicts (None where a dict lacks it)."""
    return [f.get(metric) for f in figures]


def _clean_groups(groups: Mapping[str, Sequence[Any]], min_groups: int = 2
                  ) -> tuple[dict[str, list[float]], dict[str, int], dict[str, int]]:
    if len(groups) < min_groups:
        raise ValueError(f"need at least {min_groups} groups, got {len(groups)}")
    data, n, excluded = {}, {}, {}
    for name, values in groups.items():
        kept, dropped = clean(values)
        if not kept:
            raise ValueError(f"group {name!r} has no usable values ({dropped} missing)")
        data[str(name)], n[str(name)], excluded[str(name)] = kept, len(kept), dropped
    if sum(n.values()) <= len(n):
        raise ValueError("need more values than groups (no within-group variance to estimate)")
    return data, n, excluded


def anova(groups: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """One-way ANOVA (``scipy.stats.f_oneway``) across groups, e.g. final scores per run.

    Args:
        groups: group name -> values (None/NaN excluded).

    Returns:
        ``{"F", "p", "df_between", "df_within", "n": {group: n}, "excluded": {group: k}}``,
        plus ``"note"`` when F is not finite (no variation within groups: NaN or inf).

    Raises:
        ValueError: fewer than 2 groups, an empty group, or no more values than groups.
    """
    data, n, excluded = _clean_groups(groups)
    with np.errstate(all="ignore"), warnings.catch_warnings(action="ignore"):
        res = stats.f_oneway(*data.values())
    out = {"F": float(res.statistic), "p": float(res.pvalue), "df_between": len(data) - 1,
           "df_within": sum(n.values()) - len(data), "n": n, "excluded": excluded}
    if not math.isfinite(out["F"]):
        out["note"] = "no variation within groups: F is undefined or infinite"
    return out


class TukeyTable(list):
    """Tukey HSD rows (a plain list of dicts) that also carries ``n``, ``excluded`` and ``alpha``."""

    n: dict[str, int]
    excluded: dict[str, int]
    alpha: float


def tukey_hsd(groups: Mapping[str, Sequence[Any]], alpha: float = 0.05) -> TukeyTable:
    """Tukey HSD pairwise table (statsmodels ``pairwise_tukeyhsd``), the paper's columns.

    Args:
        groups: group name -> values (None/NaN excluded).
        alpha: family-wise error rate.

    Returns:
        A list of rows ``{"group1", "group2", "meandiff", "p-adj", "lower", "upper", "reject"}``
        in statsmodels' order (groups sorted by name; ``meandiff = mean(group2) - mean(group1)``),
        with attributes ``n``, ``excluded`` and ``alpha``.

    Raises:
        ValueError: as for :func:`anova`.
    """
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    data, n, excluded = _clean_groups(groups)
    endog = np.concatenate([np.asarray(v) for v in data.values()])
    labels = np.concatenate([[name] * len(v) for name, v in data.items()])
    with np.errstate(all="ignore"):
        res = pairwise_tukeyhsd(endog, labels, alpha=alpha)
    names = [str(g) for g in res.groupsunique]
    table = TukeyTable()
    for k, (i, j) in enumerate(combinations(range(len(names)), 2)):
        table.append(dict(zip(TUKEY_COLUMNS, (
            names[i], names[j], float(res.meandiffs[k]), float(res.pvalues[k]),
            float(res.confint[k][0]), float(res.confint[k][1]), bool(res.reject[k])))))
    table.n, table.excluded, table.alpha = n, excluded, alpha
    return table


def mann_whitney(a: Sequence[Any], b: Sequence[Any]) -> dict[str, Any]:
    """Two-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu``).

    Returns:
        ``{"U", "p", "n_a", "n_b", "excluded_a", "excluded_b"}``; U is the statistic for ``a``.

    Raises:
        ValueError: a sample has no usable values.
    """
    ka, ea = clean(a)
    kb, eb = clean(b)
    if not ka or not kb:
        raise ValueError(f"each sample needs at least one value (got {len(ka)} and {len(kb)})")
    res = stats.mannwhitneyu(ka, kb, alternative="two-sided")
    return {"U": float(res.statistic), "p": float(res.pvalue), "n_a": len(ka), "n_b": len(kb),
            "excluded_a": ea, "excluded_b": eb}


def mann_whitney_metrics(run_a: Sequence[Mapping[str, Any]], run_b: Sequence[Mapping[str, Any]],
                         metrics: Sequence[str] = MANN_WHITNEY_METRICS) -> list[dict[str, Any]]:
    """Mann-Whitney U between two runs' per-interaction figures, one row per metric.

    Returns:
        Rows ``{"metric", "U", "p", "n_a", "n_b", "excluded_a", "excluded_b"}``; a metric that
        cannot be tested has U and p None and an ``"error"`` saying why.
    """
    rows = []
    for metric in metrics:
        a, b = metric_values(run_a, metric), metric_values(run_b, metric)
        try:
            rows.append({"metric": metric, **mann_whitney(a, b)})
        except ValueError as exc:
            (ka, ea), (kb, eb) = clean(a), clean(b)
            rows.append({"metric": metric, "U": None, "p": None, "n_a": len(ka), "n_b": len(kb),
                         "excluded_a": ea, "excluded_b": eb, "error": str(exc)})
    return rows


def bootstrap_ci(values: Sequence[Any], confidence: float = 0.95, n_resamples: int = 10000,
                 seed: int | None = 0, method: str = "BCa") -> dict[str, Any]:
    """Bootstrap confidence interval of the mean (``scipy.stats.bootstrap``).

    Args:
        values: numbers (None/NaN excluded).
        confidence: confidence level.
        n_resamples: bootstrap resamples.
        seed: seed of the resampling generator (same seed, same interval).
        method: ``"BCa"`` (default), ``"percentile"`` or ``"basic"``. When BCa is undefined
            (e.g. tiny samples), the percentile interval is used and ``method`` says so.

    Returns:
        ``{"mean", "low", "high", "confidence", "method", "n", "excluded", "reason"}``. With
        fewer than 2 values ``low``/``high`` are None and ``reason`` says why; with all values
        equal the interval is that value and ``reason`` says it is degenerate.
    """
    kept, excluded = clean(values)
    out: dict[str, Any] = {"mean": float(np.mean(kept)) if kept else None, "low": None,
                           "high": None, "confidence": confidence, "method": method,
                           "n": len(kept), "excluded": excluded, "reason": None}
    if len(kept) < 2:
        out["reason"] = f"need at least 2 values for a bootstrap interval, got {len(kept)}"
        return out
    if min(kept) == max(kept):
        out.update(low=kept[0], high=kept[0], reason="all values equal: degenerate interval")
        return out
    for m in dict.fromkeys((method, "percentile")):
        with np.errstate(all="ignore"), warnings.catch_warnings(action="ignore"):
            res = stats.bootstrap((np.asarray(kept),), np.mean, confidence_level=confidence,
                                  n_resamples=n_resamples, method=m,
                                  rng=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if not (math.isnan(low) or math.isnan(high)):
            out.update(low=low, high=high, method=m)
            if m != method:
                out["reason"] = f"{method} interval undefined for these values; used percentile"
            return out
    out["reason"] = "bootstrap interval undefined for these values"
    return out


def _complexity_entry(entry: Any) -> tuple[Any, Any, Any, Any]:
    if isinstance(entry, Mapping):
        return (entry.get("critical_thinking"), entry.get("error_handling"),
                entry.get("topic_knowledge"), entry.get("quality"))
    if len(entry) != 4:
        raise ValueError(f"expected (CT, EH, TK, quality), got {entry!r}")
    return tuple(entry)  # type: ignore[return-value]


def _ranking(means: Mapping[str, float]) -> list[str]:
    return sorted(means, key=lambda r: (-round(means[r], 9), r))


def weight_sensitivity(runs: Mapping[str, Sequence[Any]], weight_vectors: Sequence[Sequence[float]],
                       baseline: Sequence[float] = PAPER_WEIGHTS) -> dict[str, Any]:
    """Recompute final scores under other complexity weights and compare run rankings.

    ``final = (weighted_complexity(CT, EH, TK, w) + quality) / 2 * 10`` per interaction
    (the paper formula; ``quality`` is taken as stored), averaged per run.

    Args:
        runs: run name -> entries, each ``(CT, EH, TK, quality)`` or a figure dict with
            ``critical_thinking``, ``error_handling``, ``topic_knowledge``, ``quality``.
            Entries with any missing part are excluded and counted.
        weight_vectors: (w_CT, w_EH, w_TK) vectors to try.
        baseline: the weights rankings are compared against (paper: 0.5, 0.4, 0.1).

    Returns:
        ``{"baseline": row, "rows": [row per weight vector]}``, each row ``{"weights",
        "means": {run: mean final}, "n": {run: n}, "excluded": {run: k}, "ranking": [runs,
        best first], "ranking_changed": bool}`` (ties broken by run name).

    Raises:
        ValueError: fewer than 2 runs, a run without a complete entry, or a weight vector
            that is not 3 finite numbers.
    """
    if len(runs) < 2:
        raise ValueError(f"need at least 2 runs to rank, got {len(runs)}")
    complete: dict[str, list[tuple[float, ...]]] = {}
    excluded: dict[str, int] = {}
    for run, entries in runs.items():
        rows = [_complexity_entry(e) for e in entries]
        kept = [tuple(float(x) for x in r) for r in rows if len(clean(r)[0]) == 4]
        if not kept:
            raise ValueError(f"run {run!r} has no interaction with CT, EH, TK and quality")
        complete[str(run)], excluded[str(run)] = kept, len(rows) - len(kept)

    def row(weights: Sequence[float]) -> dict[str, Any]:
        w = tuple(float(x) for x in weights)
        if len(w) != 3 or not all(math.isfinite(x) for x in w):
            raise ValueError(f"a weight vector is 3 finite numbers (CT, EH, TK), got {weights!r}")
        means = {r: float(np.mean([(weighted_complexity(ct, eh, tk, w) + q) / 2 * 10
                                   for ct, eh, tk, q in e])) for r, e in complete.items()}
        return {"weights": w, "means": means, "n": {r: len(e) for r, e in complete.items()},
                "excluded": dict(excluded), "ranking": _ranking(means)}

    base = row(baseline)
    base["ranking_changed"] = False
    out = []
    for w in weight_vectors:
        r = row(w)
        r["ranking_changed"] = r["ranking"] != base["ranking"]
        out.append(r)
    return {"baseline": base, "rows": out}


def compare_runs(runs: Mapping[str, Sequence[Mapping[str, Any]]], metric: str = "final_score",
                 confidence: float = 0.95, n_resamples: int = 10000, seed: int | None = 0,
                 alpha: float = 0.05) -> dict[str, Any]:
    """Everything the paper reports across runs, from per-interaction figure dicts.

    Args:
        runs: run name -> per-interaction figure dicts (as ``StoreReader.scores`` holds them).
        metric: the metric for the means, ANOVA and Tukey table.
        confidence, n_resamples, seed: bootstrap settings for each run's mean.
        alpha: Tukey family-wise error rate.

    Returns:
        ``{"metric", "summary": {run: bootstrap_ci()}, "anova": anova() | {"error"},
        "tukey": [rows] | {"error"}, "mann_whitney": [{"run_a", "run_b", "rows":
        mann_whitney_metrics()}]}``. Tests that cannot run (e.g. one run) carry ``error``.
    """
    groups = {name: metric_values(figs, metric) for name, figs in runs.items()}
    out: dict[str, Any] = {
        "metric": metric,
        "summary": {name: bootstrap_ci(v, confidence, n_resamples, seed) for name, v in groups.items()},
    }
    for key, fn in (("anova", anova), ("tukey", lambda g: tukey_hsd(g, alpha))):
        try:
            out[key] = fn(groups)
        except ValueError as exc:
            out[key] = {"error": str(exc)}
    out["mann_whitney"] = [{"run_a": a, "run_b": b, "rows": mann_whitney_metrics(runs[a], runs[b])}
                           for a, b in combinations(runs, 2)]
    return out


def summarize_measures(values: dict[str, list[float]]) -> dict[str, dict[str, float | int | None]]:
    """n, mean, p50 and p95 of each measure."""
    out = {}
    for key, vals in values.items():
        arr = np.asarray(vals, dtype=float)
        out[key] = {"n": len(vals), "mean": float(arr.mean()) if len(vals) else None,
                    "p50": float(np.percentile(arr, 50)) if len(vals) else None,
                    "p95": float(np.percentile(arr, 95)) if len(vals) else None}
    return out
