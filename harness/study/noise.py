"""Is a difference between two runs larger than the harness's own noise?

Two runs of several trials on the same tasks are compared task by task (paired): the
difference of their means of task means, with a 95% interval from a two-level bootstrap (tasks
resampled, then each run's trials of a task resampled, so that both the choice of tasks and the
trial-to-trial noise are in it), beside each run's noise floor (``harness.study.trials``). A
difference is called real only when its interval leaves out 0 and it is larger than the noise
floor of either run; otherwise the comparison says plainly that it is inside the noise.

Runs of one trial have no within-task variance: no noise floor can be computed, and the
comparison says which ``--trials`` to run instead of guessing one.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from harness.study.trials import SPREAD_FIGURES, by_task, spread_figures

#: the figures a comparison over trials reports, solved first (the pass^1 difference)
COMPARED = ("solved", *SPREAD_FIGURES)
SUGGESTED_TRIALS = 4


def paired_difference(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]],
                      n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Mean of task means of ``a`` minus ``b`` over the tasks both have, with a two-level
    bootstrap 95% interval; ``tasks`` is how many were paired."""
    tasks = sorted(set(a) & set(b))
    tasks = [t for t in tasks if len(a[t]) and len(b[t])]
    out: dict[str, Any] = {"tasks": len(tasks), "difference": None, "low": None, "high": None}
    if not tasks:
        return out
    diffs = [float(np.mean(a[t]) - np.mean(b[t])) for t in tasks]
    out["difference"] = float(np.mean(diffs))
    if len(tasks) < 2:
        return out
    rng = np.random.default_rng(seed)
    arrays = [(np.asarray(a[t], float), np.asarray(b[t], float)) for t in tasks]
    boot = np.empty(n_resamples)
    for r in range(n_resamples):
        picked = rng.integers(0, len(arrays), size=len(arrays))
        total = 0.0
        for i in picked:
            xa, xb = arrays[i]
            total += xa[rng.integers(0, len(xa), len(xa))].mean() - xb[rng.integers(0, len(xb), len(xb))].mean()
        boot[r] = total / len(arrays)
    out["low"], out["high"] = float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))
    return out


def verdict(diff: dict[str, Any], floor_a: float | None, floor_b: float | None) -> tuple[str, str]:
    """``(real|noise|unknown, sentence)`` for one figure's paired difference and the two noise floors."""
    d = diff["difference"]
    if d is None:
        return "unknown", "no task in common"
    floors = [f for f in (floor_a, floor_b) if f is not None]
    if not floors:
        return "unknown", "no noise floor: a run has one trial per task"
    floor = max(floors)
    if diff["low"] is not None and diff["low"] <= 0 <= diff["high"]:
        return "noise", (f"inside the noise: the interval [{diff['low']:+.2f}, {diff['high']:+.2f}] "
                         "holds 0")
    if abs(d) <= floor:
        return "noise", f"inside the noise: |{d:+.2f}| is within the noise floor ±{floor:.2f}"
    if diff["low"] is None:
        return "unknown", "too few paired tasks for an interval"
    return "real", (f"larger than the noise: interval [{diff['low']:+.2f}, {diff['high']:+.2f}], "
                    f"noise floor ±{floor:.2f}")


def compare_trials(runs: Mapping[str, Sequence[Mapping[str, Any]]],
                   keys: Sequence[str] = COMPARED) -> dict[str, Any]:
    """Paired comparison of the first run against each other run, per figure of ``keys``
    (default :data:`COMPARED`; NoisyToolBench: A1, A2, A3).

    Returns:
        ``{"trials": {run: K}, "single_trial": [runs with one trial], "note": str | None,
        "pairs": [{"a", "b", "tasks", "figures": {key: {"difference", "low", "high",
        "floor_a", "floor_b", "verdict", "sentence"}}}]}``.
    """
    names = list(runs)
    trials = {n: max((int(f.get("trial") or 1) for f in runs[n]), default=0) for n in names}
    single = [n for n in names if trials[n] < 2]
    out: dict[str, Any] = {"trials": trials, "single_trial": single, "pairs": [], "note": None}
    if single:
        out["note"] = (f"No noise floor can be computed for {', '.join(single)}: one trial per task "
                       f"gives no run-to-run variance. Run each configuration with `--trials "
                       f"{SUGGESTED_TRIALS}` (or more) to see whether a difference is larger than the "
                       "noise; two runs of one configuration (`compare A A2`) show the floor itself.")
    spreads = {n: {k: spread_figures(runs[n], k) for k in keys} for n in names}
    grouped = {n: {k: by_task(runs[n], k) for k in keys} for n in names}
    first = names[0]
    for other in names[1:]:
        pair: dict[str, Any] = {"a": first, "b": other, "figures": {}}
        for k in keys:
            diff = paired_difference(grouped[first][k], grouped[other][k])
            fa, fb = spreads[first][k]["noise_floor"], spreads[other][k]["noise_floor"]
            kind, sentence = verdict(diff, fa, fb)
            pair["figures"][k] = {**diff, "floor_a": fa, "floor_b": fb, "verdict": kind, "sentence": sentence}
        pair["tasks"] = pair["figures"][keys[0]]["tasks"]
        out["pairs"].append(pair)
    return out


def noise_lines(result: dict[str, Any]) -> list[str]:
    """The comparison as text lines (the terminal summary and the Markdown section)."""
    lines = ["Noise floor (paired by task, trials: "
             + ", ".join(f"{n} {k}" for n, k in result["trials"].items()) + ")"]
    if result["note"]:
        lines.append(result["note"])
    for pair in result["pairs"]:
        lines.append(f"{pair['a']} - {pair['b']} on {pair['tasks']} paired task(s):")
        for key, f in pair["figures"].items():
            if f["difference"] is None:
                continue
            label = "solved (pass^1)" if key == "solved" else f"{key} (pass^1)" if key in ("A1", "A2", "A3") else key
            lines.append(f"  {label}: {f['difference']:+.3f} ({f['verdict']}) {f['sentence']}")
    return lines
