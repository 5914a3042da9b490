"""harness.study.statistics: results equal the libraries called directly, and hand-made known cases."""
from __future__ import annotations

import math
import statistics as pystats

import krippendorff
import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multicomp import pairwise_tukeyhsd

from harness.study.judge_statistics import judge_comparison, judge_reliability
from harness.study.statistics import (
    MANN_WHITNEY_METRICS, TUKEY_COLUMNS, anova, bootstrap_ci, clean, compare_runs,
    mann_whitney, mann_whitney_metrics, tukey_hsd, weight_sensitivity,
)

KNOWN = {"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0], "c": [7.0, 8.0, 9.0]}
RNG = np.random.default_rng(42)
RANDOM = {name: list(RNG.normal(loc, 4.0, size=25)) for name, loc in
          (("plain", 24.0), ("rag", 27.0), ("human", 23.0))}


# -- cleaning ------------------------------------------------------------------------------
def test_clean_drops_none_and_nan_and_counts():
    assert clean([1, None, 2.5, float("nan"), np.float64(3)]) == ([1.0, 2.5, 3.0], 2)


@pytest.mark.parametrize("bad", ["3", True, float("inf"), [1]])
def test_clean_rejects_non_numbers(bad):
    with pytest.raises(ValueError):
        clean([1, bad])


# -- ANOVA ---------------------------------------------------------------------------------
def test_anova_known_numbers():
    # Means 2, 5, 8: SSB = 54 (df 2), SSW = 6 (df 6), F = 27; p = (1 + 2F/6)^-3 = 0.001.
    res = anova(KNOWN)
    assert res["F"] == pytest.approx(27.0)
    assert res["p"] == pytest.approx(0.001)
    assert (res["df_between"], res["df_within"]) == (2, 6)
    assert res["n"] == {"a": 3, "b": 3, "c": 3}


def test_anova_equals_scipy():
    res = anova(RANDOM)
    ref = stats.f_oneway(*RANDOM.values())
    assert res["F"] == pytest.approx(ref.statistic, rel=1e-12)
    assert res["p"] == pytest.approx(ref.pvalue, rel=1e-12)


def test_anova_excludes_missing_and_counts():
    with_missing = {"a": [1, None, 2, 3], "b": [4, 5, float("nan"), 6], "c": [7, 8, 9]}
    res = anova(with_missing)
    assert res["F"] == pytest.approx(anova(KNOWN)["F"])
    assert res["n"] == {"a": 3, "b": 3, "c": 3}
    assert res["excluded"] == {"a": 1, "b": 1, "c": 0}


@pytest.mark.parametrize("groups, match", [
    ({"a": [1, 2, 3]}, "at least 2 groups"),
    ({}, "at least 2 groups"),
    ({"a": [1, 2], "b": [None, None]}, "'b' has no usable values"),
    ({"a": [1], "b": [2]}, "more values than groups"),
    ({"a": [1, 2], "b": [3, "x"]}, "not a number"),
])
def test_anova_bad_input(groups, match):
    with pytest.raises(ValueError, match=match):
        anova(groups)


def test_anova_constant_groups_noted():
    res = anova({"a": [1, 1], "b": [2, 2]})
    assert not math.isfinite(res["F"]) and "note" in res


# -- Tukey HSD -----------------------------------------------------------------------------
def test_tukey_columns_and_known_numbers():
    table = tukey_hsd({"b": KNOWN["b"], "a": KNOWN["a"], "c": KNOWN["c"]})
    assert all(tuple(row) == TUKEY_COLUMNS for row in table)
    assert TUKEY_COLUMNS == ("group1", "group2", "meandiff", "p-adj", "lower", "upper", "reject")
    assert [(r["group1"], r["group2"], r["meandiff"]) for r in table] == [
        ("a", "b", 3.0), ("a", "c", 6.0), ("b", "c", 3.0)]
    # Half width of the interval: q(0.95; 3 groups, 6 df) * sqrt(MSW / n) with MSW = 1, n = 3.
    half = stats.studentized_range.ppf(0.95, 3, 6) * math.sqrt(1 / 3)
    for row in table:
        assert row["lower"] == pytest.approx(row["meandiff"] - half, rel=1e-6)
        assert row["upper"] == pytest.approx(row["meandiff"] + half, rel=1e-6)
        assert row["reject"] is True
    assert table.n == {"b": 3, "a": 3, "c": 3} and table.alpha == 0.05


def test_tukey_equals_statsmodels_summary():
    table = tukey_hsd(RANDOM)
    values = np.concatenate(list(RANDOM.values()))
    labels = np.repeat(list(RANDOM), [len(v) for v in RANDOM.values()])
    ref = pairwise_tukeyhsd(values, labels, alpha=0.05).summary().data
    assert tuple(ref[0]) == TUKEY_COLUMNS
    assert len(ref) - 1 == len(table)
    for row, want in zip(table, ref[1:]):
        assert [row["group1"], row["group2"], row["reject"]] == [want[0], want[1], bool(want[6])]
        for key, value in zip(TUKEY_COLUMNS[2:6], want[2:6]):
            assert row[key] == pytest.approx(value, abs=1e-4)  # the summary rounds to 4 places


def test_tukey_missing_counted_and_bad_input():
    table = tukey_hsd({"a": [1, 2, None], "b": [3, 4, 5]})
    assert table.excluded == {"a": 1, "b": 0} and len(table) == 1
    with pytest.raises(ValueError, match="at least 2 groups"):
        tukey_hsd({"a": [1, 2, 3]})


# -- Mann-Whitney --------------------------------------------------------------------------
def test_mann_whitney_known_numbers():
    # Complete separation of 3 vs 3: U = 0, exact two-sided p = 2 / C(6, 3) = 0.1.
    res = mann_whitney([1, 2, 3], [4, 5, 6])
    assert res["U"] == 0.0 and res["p"] == pytest.approx(0.1)


def test_mann_whitney_equals_scipy_and_excludes_missing():
    a, b = RANDOM["plain"], RANDOM["rag"]
    res = mann_whitney(a + [None], [float("nan")] + b)
    ref = stats.mannwhitneyu(a, b, alternative="two-sided")
    assert (res["U"], res["p"]) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    assert (res["n_a"], res["n_b"], res["excluded_a"], res["excluded_b"]) == (25, 25, 1, 1)


def test_mann_whitney_bad_input():
    with pytest.raises(ValueError, match="at least one value"):
        mann_whitney([None], [1, 2])


def test_mann_whitney_metrics_rows_per_metric():
    run_a = [{"final_score": v, "quality": 1.0, "avg_user_helpfulness": None} for v in (20, 21, 22)]
    run_b = [{"final_score": v, "quality": 1.2, "avg_user_helpfulness": None} for v in (25, 26, 27)]
    rows = mann_whitney_metrics(run_a, run_b)
    assert [r["metric"] for r in rows] == list(MANN_WHITNEY_METRICS)
    by = {r["metric"]: r for r in rows}
    assert by["final_score"]["p"] == pytest.approx(0.1)
    assert by["avg_user_helpfulness"]["p"] is None and "error" in by["avg_user_helpfulness"]
    assert by["avg_user_helpfulness"]["excluded_a"] == 3
    assert by["weighted_complexity"]["U"] is None  # key absent: counted as missing


# -- bootstrap -----------------------------------------------------------------------------
def test_bootstrap_equals_scipy_and_is_deterministic():
    values = RANDOM["plain"]
    res = bootstrap_ci(values + [None], seed=7, n_resamples=2000)
    ref = stats.bootstrap((np.asarray(values),), np.mean, n_resamples=2000, method="BCa",
                          rng=np.random.default_rng(7)).confidence_interval
    assert (res["low"], res["high"]) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert res["mean"] == pytest.approx(np.mean(values))
    assert (res["n"], res["excluded"], res["method"]) == (25, 1, "BCa")
    assert bootstrap_ci(values, seed=7, n_resamples=2000) == bootstrap_ci(values, seed=7, n_resamples=2000)
    assert bootstrap_ci(values, seed=8, n_resamples=2000)["low"] != res["low"]


def test_bootstrap_percentile_and_confidence():
    values = RANDOM["rag"]
    res = bootstrap_ci(values, confidence=0.9, n_resamples=1000, method="percentile")
    ref = stats.bootstrap((np.asarray(values),), np.mean, n_resamples=1000, method="percentile",
                          confidence_level=0.9, rng=np.random.default_rng(0)).confidence_interval
    assert (res["low"], res["high"]) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert res["low"] < res["mean"] < res["high"]


@pytest.mark.parametrize("values, n", [([], 0), ([5.0], 1), ([None, 3.0], 1)])
def test_bootstrap_too_few_values(values, n):
    res = bootstrap_ci(values)
    assert res["low"] is None and res["high"] is None and res["n"] == n
    assert "at least 2" in res["reason"]


def test_bootstrap_constant_values():
    res = bootstrap_ci([4.0, 4.0, 4.0])
    assert (res["low"], res["high"]) == (4.0, 4.0) and "degenerate" in res["reason"]


# -- judges --------------------------------------------------------------------------------
def test_judge_comparison_rm_anova_equals_paired_t_and_alpha_equals_package():
    j1, j2 = [1.0, 3.0, 4.0, 6.0, 2.0], [2.0, 5.0, 4.0, 8.0, 2.5]
    res = judge_comparison({"j1": j1, "j2": j2})
    # With two judges the repeated-measures F is the squared paired t.
    t = stats.ttest_rel(j1, j2)
    assert res["rm_anova"]["F"] == pytest.approx(t.statistic ** 2)
    assert res["rm_anova"]["p"] == pytest.approx(t.pvalue)
    assert res["oneway_anova"]["F"] == pytest.approx(stats.f_oneway(j1, j2).statistic)
    want = krippendorff.alpha(reliability_data=[j1, j2], level_of_measurement="interval")
    assert res["krippendorff_alpha"] == pytest.approx(want)
    assert res["complete_items"] == 5


def test_judge_comparison_missing_and_perfect_agreement():
    scores = {"x": {"t1": 1, "t2": 5, "t3": 9, "t4": None},
              "y": {"t1": 1, "t2": 5, "t3": 9, "t4": 3},
              "z": {"t1": 1, "t2": 5, "t3": 9}}
    res = judge_comparison(scores)
    assert res["items"] == 4 and res["complete_items"] == 3
    assert res["n"] == {"x": 3, "y": 4, "z": 3} and res["excluded"] == {"x": 1, "y": 0, "z": 1}
    assert res["krippendorff_alpha"] == pytest.approx(1.0)
    assert "error" in res["rm_anova"]  # identical scores: no within-item variation


def test_judge_comparison_bad_input():
    with pytest.raises(ValueError, match="at least 2 judges"):
        judge_comparison({"only": [1, 2, 3]})
    res = judge_comparison({"a": [1, None], "b": [None, 2]})
    assert "error" in res["rm_anova"] and res["krippendorff_alpha"] is None


def test_judge_reliability_sd_and_exclusions():
    res = judge_reliability({"t1": [1, 2, 3], "t2": [4, 4, None], "t3": [5], "t4": [2, 6]},
                            n_resamples=500)
    assert res["per_item"]["t1"]["sd"] == pytest.approx(pystats.stdev([1, 2, 3]))
    assert res["per_item"]["t2"] == {"sd": 0.0, "mean": 4.0, "n": 2, "excluded": 1}
    assert res["per_item"]["t4"]["sd"] == pytest.approx(pystats.stdev([2, 6]))
    assert res["mean_sd"] == pytest.approx(np.mean([1.0, 0.0, pystats.stdev([2, 6])]))
    assert res["excluded_items"] == {"t3": "1 valid judgment(s), need 2"}
    assert res["excluded_values"] == 1 and res["n_items"] == 3
    assert res["ci"]["n"] == 3 and res["ci"]["low"] is not None


# -- weight sensitivity --------------------------------------------------------------------
def test_weight_sensitivity_detects_ranking_change():
    runs = {"ct_heavy": [(9, 2, 2, 1.0), (8, 2, 2, 1.0)],
            "eh_heavy": [(3, 8, 2, 1.0), (3, 9, 2, 1.0), (5, 5, 5, None)]}
    res = weight_sensitivity(runs, [(0.5, 0.4, 0.1), (0.2, 0.7, 0.1), (0.6, 0.3, 0.1)])
    base = res["baseline"]
    assert base["ranking"] == ["ct_heavy", "eh_heavy"] and base["ranking_changed"] is False
    # paper weights: ct_heavy (0.5*8.5 + 0.4*2 + 0.2 + 1) / 2 * 10 = 31.25
    assert base["means"]["ct_heavy"] == pytest.approx(31.25)
    assert base["excluded"] == {"ct_heavy": 0, "eh_heavy": 1} and base["n"]["eh_heavy"] == 2
    same, flipped, kept = res["rows"]
    assert same["ranking_changed"] is False and same["means"] == base["means"]
    assert flipped["ranking"] == ["eh_heavy", "ct_heavy"] and flipped["ranking_changed"] is True
    assert kept["ranking_changed"] is False


def test_weight_sensitivity_accepts_figure_dicts():
    figs = {"a": [{"critical_thinking": 5, "error_handling": 5, "topic_knowledge": 5, "quality": 1.0}],
            "b": [{"critical_thinking": 6, "error_handling": 6, "topic_knowledge": 6, "quality": 1.0}]}
    res = weight_sensitivity(figs, [(1, 0, 0)])
    assert res["rows"][0]["means"] == {"a": pytest.approx(30.0), "b": pytest.approx(35.0)}
    assert res["rows"][0]["ranking"] == ["b", "a"]


@pytest.mark.parametrize("runs, vectors, match", [
    ({"a": [(1, 1, 1, 1.0)]}, [(1, 0, 0)], "at least 2 runs"),
    ({"a": [(1, 1, 1, 1.0)], "b": [(1, None, 1, 1.0)]}, [(1, 0, 0)], "'b' has no interaction"),
    ({"a": [(1, 1, 1, 1.0)], "b": [(2, 2, 2, 1.0)]}, [(1, 0)], "3 finite numbers"),
    ({"a": [(1, 1, 1, 1.0)], "b": [(2, 2, 2, 1.0)]}, [(1, float("nan"), 0)], "3 finite numbers"),
    ({"a": [(1, 1, 1)], "b": [(2, 2, 2, 1.0)]}, [(1, 0, 0)], "CT, EH, TK, quality"),
])
def test_weight_sensitivity_bad_input(runs, vectors, match):
    with pytest.raises(ValueError, match=match):
        weight_sensitivity(runs, vectors)


# -- compare_runs --------------------------------------------------------------------------
def test_compare_runs_bundles_everything():
    runs = {name: [{"final_score": v, "quality": v / 25} for v in values]
            for name, values in RANDOM.items()}
    res = compare_runs(runs, n_resamples=500)
    assert res["anova"]["F"] == pytest.approx(stats.f_oneway(*RANDOM.values()).statistic)
    assert len(res["tukey"]) == 3 and set(res["summary"]) == set(RANDOM)
    assert [(p["run_a"], p["run_b"]) for p in res["mann_whitney"]] == [
        ("plain", "rag"), ("plain", "human"), ("rag", "human")]


def test_compare_runs_single_run_reports_errors():
    res = compare_runs({"only": [{"final_score": 20.0}, {"final_score": 25.0}]}, n_resamples=200)
    assert "error" in res["anova"] and "error" in res["tukey"] and res["mann_whitney"] == []
    assert res["summary"]["only"]["n"] == 2
