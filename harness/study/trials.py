"""Figures over repeated trials of a task: pass^k and pass@k, the flip share, per-task spread,
a run mean with a task-clustered interval, and the run-to-run noise floor.

A run of K trials plays each task K times (``deskbench run --trials K``). Every function here
reads per-interaction figure dicts (``task_id``, ``trial`` and the scores) and groups them by
task, so a one-trial run gives K = 1 figures and the statements that say what K > 1 would add.

- pass^k (tau2-bench): the chance that all k of k independent trials of a task succeed, with the
  unbiased estimator over a task's n trials of which c succeeded, ``C(c, k) / C(n, k)``, averaged
  over tasks; pass@k (at least one of k succeeds) is ``1 - C(n - c, k) / C(n, k)``.
- The flip share: tasks whose verdict differs between their trials.
- The run mean weights every task the same (the mean of task means); its interval resamples
  tasks with all their trials (a cluster bootstrap), because trials of a task are not
  independent of each other.
- The noise floor: the half-width of a 95% interval on the gap between two runs of this very
  configuration on these tasks, from the trial-to-trial variance alone (the within-task
  variance): ``1.96 * sqrt(2 * sum_i s_i^2 / n_i) / T`` for T tasks. A gap between two
  configurations inside it cannot be told from run-to-run noise.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Mapping, Sequence

import numpy as np

from harness.study import bootstrap

#: the figures whose spread over trials the report and exports give (solved has pass^k)
SPREAD_FIGURES = ("final_score", "quality", "avg_user_helpfulness", "avg_agent_helpfulness",
                  "weighted_complexity", "turns")
Z95 = 1.959963984540054


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau2-bench's unbiased pass^k of one task: ``C(c, k) / C(n, k)`` (n trials, c successes).

    Raises:
        ValueError: k < 1, k > n, or c outside 0..n.
    """
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task: ``1 - C(n - c, k) / C(n, k)``.

    Raises:
        ValueError: k < 1, k > n, or c outside 0..n.
    """
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 1 <= k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")


def by_task(figures: Sequence[Mapping[str, Any]], key: str) -> dict[str, list[float]]:
    """Task id -> the values of ``key`` over its trials, in trial order (missing values left out;
    booleans as 0/1)."""
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for f in figures:
        v = f.get(key)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        out[str(f.get("task_id"))].append((int(f.get("trial") or 1), float(v)))
    return {t: [v for _, v in sorted(vals)] for t, vals in out.items()}


def pass_k_figures(figures: Sequence[Mapping[str, Any]], key: str = "solved") -> dict[str, Any]:
    """pass^k and pass@k for k = 1 .. the fewest trials any task has, averaged over tasks, and
    the share of tasks whose verdict flips between trials.

    Returns:
        ``{"key", "tasks", "trials" (min, max), "k": [...], "pass_hat": [...], "pass_at": [...],
        "flip_share", "flipped": [task ids], "per_task": {task: {"n", "c"}}}``; ``k`` is empty
        when no task has a verdict.
    """
    outcomes = by_task(figures, key)
    per_task = {t: {"n": len(v), "c": int(sum(1 for x in v if x))} for t, v in outcomes.items()}
    out: dict[str, Any] = {"key": key, "tasks": len(per_task), "per_task": per_task,
                           "k": [], "pass_hat": [], "pass_at": [], "flip_share": None, "flipped": []}
    if not per_task:
        out["trials"] = (0, 0)
        return out
    ns = [p["n"] for p in per_task.values()]
    out["trials"] = (min(ns), max(ns))
    for k in range(1, min(ns) + 1):
        out["k"].append(k)
        out["pass_hat"].append(float(np.mean([pass_hat_k(p["n"], p["c"], k) for p in per_task.values()])))
        out["pass_at"].append(float(np.mean([pass_at_k(p["n"], p["c"], k) for p in per_task.values()])))
    out["flipped"] = sorted(t for t, p in per_task.items() if 0 < p["c"] < p["n"])
    repeated = [t for t, p in per_task.items() if p["n"] > 1]
    out["flip_share"] = len(out["flipped"]) / len(repeated) if repeated else None
    return out


def cluster_bootstrap(values: Mapping[str, Sequence[float]], n_resamples: int = 2000,
                      seed: int = 0, confidence: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile interval of the mean of task means, resampling tasks with all their trials
    (:func:`harness.study.bootstrap.cluster_mean_bootstrap`, each task a cluster holding its mean)."""
    means = [float(np.mean(v)) for v in values.values() if len(v)]
    interval = bootstrap.cluster_mean_bootstrap(means, n_resamples, seed, confidence)
    return interval.low, interval.high


def noise_se(values: Mapping[str, Sequence[float]]) -> float | None:
    """The standard error of the mean of task means from trial-to-trial variance alone
    (``sqrt(sum_i s_i^2 / n_i) / T``); None when no task has two trials."""
    repeated = {t: v for t, v in values.items() if len(v) > 1}
    if not repeated or len(repeated) < len(values):
        return None
    return math.sqrt(sum(float(np.var(v, ddof=1)) / len(v) for v in repeated.values())) / len(repeated)


def spread_figures(figures: Sequence[Mapping[str, Any]], key: str) -> dict[str, Any]:
    """One score over trials: per task the mean, standard deviation and range; the run mean
    (tasks weighted equally) with its task-clustered interval; the pooled within-task standard
    deviation; the noise floor of this run (K trials) and of a one-trial run of it.

    Returns:
        ``{"key", "tasks": {task: {"n", "mean", "sd", "min", "max"}}, "mean", "low", "high",
        "within_sd", "noise_floor", "noise_floor_one_trial"}`` (None where not computable).
    """
    values = by_task(figures, key)
    tasks = {t: {"n": len(v), "mean": float(np.mean(v)),
                 "sd": float(np.std(v, ddof=1)) if len(v) > 1 else None,
                 "min": float(min(v)), "max": float(max(v))} for t, v in values.items() if v}
    low, high = cluster_bootstrap(values)
    se = noise_se(values)
    variances = [float(np.var(v, ddof=1)) for v in values.values() if len(v) > 1]
    within = math.sqrt(float(np.mean(variances))) if variances else None
    return {
        "key": key, "tasks": tasks,
        "mean": float(np.mean([t["mean"] for t in tasks.values()])) if tasks else None,
        "low": low, "high": high, "within_sd": within,
        "noise_floor": Z95 * math.sqrt(2) * se if se is not None else None,
        "noise_floor_one_trial": (Z95 * math.sqrt(2) * within / math.sqrt(len(tasks))
                                  if within is not None and tasks else None),
    }


def trial_summary(figures: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Everything over trials of a run's figures: ``solved`` (:func:`pass_k_figures`) and one
    :func:`spread_figures` per figure of :data:`SPREAD_FIGURES`; ``trials`` is the largest number
    of trials a task has."""
    solved = pass_k_figures(figures, "solved")
    return {"trials": solved["trials"][1] if solved["tasks"] else 0, "solved": solved,
            "spread": {k: spread_figures(figures, k) for k in SPREAD_FIGURES}}
