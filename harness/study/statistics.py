"""Statistics across SelfScore runs (SELFSCORE.md, "Runs, baselines and comparisons", "Known limits").

Pure functions over plain lists and dicts: no store access, no plotting. The tests themselves come
from libraries, never hand-rolled: one-way ANOVA and Mann-Whitney U from scipy, Tukey HSD and the
repeated-measures ANOVA from statsmodels, bootstrap intervals from ``scipy.stats.bootstrap``,
Krippendorff's alpha from the ``krippendorff`` package.

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


def judge_comparison(scores: Mapping[str, Mapping[str, Any] | Sequence[Any]]) -> dict[str, Any]:
    """Agreement of judges that scored the same items (e.g. final scores per task, per judge).

    The F-test is a **repeated-measures** ANOVA (statsmodels ``AnovaRM``, judge as the within
    factor, item as the subject), because every judge scores the same items: the items' own
    variation is removed from the error term, which a one-way ANOVA would wrongly treat as
    independent groups. It uses only items scored by every judge. A one-way ANOVA over all
    valid scores is reported too, as the paper would compute it.

    Agreement is Krippendorff's alpha at the interval level (``krippendorff`` package); it
    handles missing ratings itself, so it uses every item scored by at least two judges.

    Args:
        scores: judge -> {item id: score}, or judge -> list of scores aligned by position
            (positions become item ids "0", "1", ...). None/NaN scores are excluded.

    Returns:
        ``{"judges", "items", "complete_items", "n": {judge: n}, "excluded": {judge: k},
        "means_complete": {judge: mean over complete items}, "rm_anova": {"F", "p", "df_num",
        "df_den", "n_items"} | {"error"}, "oneway_anova": anova() | {"error"},
        "krippendorff_alpha": float | None, "alpha_error": str | None}``.

    Raises:
        ValueError: fewer than 2 judges, or a score that is not a number.
    """
    if len(scores) < 2:
        raise ValueError(f"need at least 2 judges, got {len(scores)}")
    table: dict[str, dict[str, float | None]] = {}
    for judge, s in scores.items():
        items = s.items() if isinstance(s, Mapping) else enumerate(s)
        table[str(judge)] = {str(k): _one(v) for k, v in items}
    judges = list(table)
    items = list(dict.fromkeys(k for t in table.values() for k in t))
    complete = [i for i in items if all(table[j].get(i) is not None for j in judges)]
    out: dict[str, Any] = {
        "judges": judges, "items": len(items), "complete_items": len(complete),
        "n": {j: sum(v is not None for v in table[j].values()) for j in judges},
        "excluded": {j: len(items) - sum(v is not None for v in table[j].values()) for j in judges},
        "means_complete": {j: (float(np.mean([table[j][i] for i in complete])) if complete else None)
                           for j in judges},
    }
    out["rm_anova"] = _rm_anova(table, judges, complete)
    try:
        out["oneway_anova"] = anova({j: list(table[j].values()) for j in judges})
    except ValueError as exc:
        out["oneway_anova"] = {"error": str(exc)}
    out["krippendorff_alpha"], out["alpha_error"] = _alpha(table, judges, items)
    return out


def _one(value: Any) -> float | None:
    kept, _ = clean([value])
    return kept[0] if kept else None


def _rm_anova(table: dict[str, dict[str, float | None]], judges: list[str],
              complete: list[str]) -> dict[str, Any]:
    if len(complete) < 2:
        return {"error": f"need at least 2 items scored by every judge, got {len(complete)}"}
    import pandas as pd
    from statsmodels.stats.anova import AnovaRM

    matrix = np.array([[table[j][i] for j in judges] for i in complete])
    residual = matrix - matrix.mean(axis=1, keepdims=True) - matrix.mean(axis=0) + matrix.mean()
    if np.allclose(residual, 0.0, atol=1e-12):
        return {"error": "no residual variation (judges agree exactly or differ by a constant "
                         "shift): F undefined", "n_items": len(complete)}
    df = pd.DataFrame([{"item": i, "judge": j, "score": table[j][i]} for i in complete for j in judges])
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings(action="ignore"):
            row = AnovaRM(df, "score", "item", within=["judge"]).fit().anova_table.iloc[0]
    except (ValueError, ZeroDivisionError, np.linalg.LinAlgError) as exc:
        return {"error": f"repeated-measures ANOVA failed: {exc}"}
    f, p = float(row["F Value"]), float(row["Pr > F"])
    result = {"F": f, "p": p, "df_num": float(row["Num DF"]), "df_den": float(row["Den DF"]),
              "n_items": len(complete)}
    if not (math.isfinite(f) and f >= 0 and math.isfinite(p)):
        result["error"] = "F undefined for these scores"
    return result


def _alpha(table: dict[str, dict[str, float | None]], judges: list[str],
           items: list[str]) -> tuple[float | None, str | None]:
    import krippendorff

    data = np.array([[np.nan if table[j].get(i) is None else table[j][i] for i in items]
                     for j in judges], dtype=float)
    if int((np.sum(~np.isnan(data), axis=0) >= 2).sum()) < 1:
        return None, "no item was scored by at least two judges"
    try:
        with np.errstate(all="ignore"):
            value = float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
    except (ValueError, ZeroDivisionError) as exc:
        return None, f"Krippendorff's alpha undefined: {exc}"
    return (None, "Krippendorff's alpha undefined (no variation)") if math.isnan(value) else (value, None)


def judge_reliability(repeats: Mapping[str, Sequence[Any]], confidence: float = 0.95,
                      n_resamples: int = 10000, seed: int | None = 0) -> dict[str, Any]:
    """Repeat-judging variance: the same item judged K times by the same judge.

    Args:
        repeats: item id -> the K scores it got (None/NaN excluded).
        confidence, n_resamples, seed: for the bootstrap interval of the mean SD.

    Returns:
        ``{"per_item": {item: {"sd", "mean", "n", "excluded"}}, "mean_sd", "n_items",
        "excluded_items": {item: reason}, "excluded_values", "ci": bootstrap_ci(per-item SDs)}``.
        SD is the sample standard deviation (``ddof=1``); items with fewer than 2 valid
        judgments have no SD and are listed in ``excluded_items``.
    """
    per_item, skipped, dropped = {}, {}, 0
    for item, values in repeats.items():
        kept, excluded = clean(values)
        dropped += excluded
        if len(kept) < 2:
            skipped[str(item)] = f"{len(kept)} valid judgment(s), need 2"
            continue
        per_item[str(item)] = {"sd": float(np.std(kept, ddof=1)), "mean": float(np.mean(kept)),
                               "n": len(kept), "excluded": excluded}
    sds = [v["sd"] for v in per_item.values()]
    return {"per_item": per_item, "mean_sd": float(np.mean(sds)) if sds else None,
            "n_items": len(sds), "excluded_items": skipped, "excluded_values": dropped,
            "ci": bootstrap_ci(sds, confidence, n_resamples, seed)}


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
