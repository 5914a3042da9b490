"""Statistics over judges: how far judges that scored the same items agree, and how much one
judge varies when it judges the same item again.

:func:`judge_comparison` gives a repeated-measures ANOVA (statsmodels ``AnovaRM``), a one-way
ANOVA and Krippendorff's alpha (the ``krippendorff`` package); :func:`judge_reliability` the
per-item standard deviation of repeat judgments with a bootstrap interval of its mean. As in
:mod:`harness.study.statistics`, missing values are excluded and counted, never imputed, and
results are plain dicts.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Mapping, Sequence

import numpy as np

from harness.study.statistics import anova, bootstrap_ci, clean


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
