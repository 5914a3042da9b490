"""The report's sections over trials and personas: pass^k, the flip share, each figure's spread
over trials with its noise floor, and every figure broken down by the simulated user's persona."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

from harness.selfscore.scoring import summarize
from harness.study.trials import pass_k_figures, trial_summary

PASS_K_PNG = "pass_k.png"


def _f(v: Any, digits: int = 2) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def trial_lines(figures: Sequence[Mapping[str, Any]]) -> list[str]:
    """The "Trials" section: pass^k and pass@k per k, the flip share, and per figure the run
    mean with its task-clustered interval, the spread over trials and the noise floor. A
    one-trial run gets one line saying what ``--trials`` would add."""
    s = trial_summary(figures)
    if s["trials"] < 2:
        return ["", "## Trials", "",
                "One trial per task: pass^k for k > 1, the flip share and the noise floor need "
                "repeated trials (`deskbench run --trials 4`)."]
    solved = s["solved"]
    lo, hi = solved["trials"]
    lines = ["", "## Trials", "",
             f"{solved['tasks']} tasks, {lo if lo == hi else f'{lo}-{hi}'} trials each "
             "(each trial its own seeds for every sampled role). pass^k: the chance that all k "
             "trials of a task are solved (unbiased estimator, as tau2-bench); pass@k: at least one.",
             "", "| k | pass^k | pass@k |", "|---|---|---|"]
    lines += [f"| {k} | {_f(p, 3)} | {_f(a, 3)} |"
              for k, p, a in zip(solved["k"], solved["pass_hat"], solved["pass_at"])]
    flip = solved["flip_share"]
    lines += ["", f"Verdict flips between trials on {len(solved['flipped'])} of {solved['tasks']} tasks "
              f"(flip share {_f(flip)})" + (": " + ", ".join(solved["flipped"]) if solved["flipped"] else "."),
              f"![pass^k against k]({PASS_K_PNG})", "",
              "| figure | run mean | 95% CI (tasks resampled) | within-task SD | noise floor, these "
              "trials | noise floor, one trial |", "|---|---|---|---|---|---|"]
    for key, sp in s["spread"].items():
        ci = f"[{_f(sp['low'])}, {_f(sp['high'])}]" if sp["low"] is not None else "n/a"
        lines.append(f"| {key} | {_f(sp['mean'])} | {ci} | {_f(sp['within_sd'])} | "
                     f"±{_f(sp['noise_floor'])} | ±{_f(sp['noise_floor_one_trial'])} |")
    lines += ["", "A noise floor is the gap two runs of this same configuration can show by chance "
              "(95%); `deskbench compare` calls a difference inside it noise.", "",
              "| task | trials | solved | final mean | final SD | final range |", "|---|---|---|---|---|---|"]
    finals = s["spread"]["final_score"]["tasks"]
    for task, p in sorted(solved["per_task"].items()):
        f = finals.get(task, {})
        rng = f"{_f(f.get('min'))}-{_f(f.get('max'))}" if f else "n/a"
        lines.append(f"| {task} | {p['n']} | {p['c']}/{p['n']} | {_f(f.get('mean'))} | {_f(f.get('sd'))} | {rng} |")
    return lines


def persona_lines(figures: Sequence[Mapping[str, Any]]) -> list[str]:
    """The "By persona" section: every summary figure and the stop reasons per simulated-user
    persona (none when every conversation had the cooperative user or no simulated user)."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for f in figures:
        groups[f.get("persona") or "none"].append(f)
    if set(groups) <= {"cooperative", "none"}:
        return []
    summaries = {p: summarize(fs) for p, fs in sorted(groups.items())}
    keys = [k for k in next(iter(summaries.values())) if k not in ("unscored", "total_cost")]
    lines = ["", "## By persona", "", "| figure | " + " | ".join(summaries) + " |",
             "|---|" + "---|" * len(summaries)]
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(
            str(v) if isinstance(v := summaries[p][k], int) else _f(v) for p in summaries) + " |")
    stops = {p: Counter(f.get("stop_reason") for f in fs) for p, fs in sorted(groups.items())}
    lines.append("| stop reasons | " + " | ".join(
        ", ".join(f"{r} {n}" for r, n in c.most_common()) for c in stops.values()) + " |")
    return lines


def pass_k_lines(figures: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> list[str]:
    """pass^k of several 0/1 figures side by side (NoisyToolBench: A1, A2, A3) and each one's
    flip share; one line saying what ``--trials`` adds for a one-trial run."""
    curves = {k: pass_k_figures(figures, k) for k in keys}
    most = max((c["trials"][1] for c in curves.values() if c["tasks"]), default=0)
    if most < 2:
        return ["One trial per case: pass^k for k > 1 and the flip share need `--trials 4` (or more)."]
    ks = max((c["k"] for c in curves.values()), key=len)
    lines = [f"Over trials (pass^k: all k trials succeed; unbiased estimator, as tau2-bench):",
             f"{'k':>3} " + " ".join(f"{'pass^k ' + key:>10}" for key in keys)]
    for i, k in enumerate(ks):
        lines.append(f"{k:>3} " + " ".join(
            f"{c['pass_hat'][i]:>10.3f}" if i < len(c["pass_hat"]) else f"{'n/a':>10}" for c in curves.values()))
    lines.append("flip share: " + ", ".join(
        f"{key} {_f(c['flip_share'])} ({len(c['flipped'])}/{c['tasks']} cases)" for key, c in curves.items()))
    return lines
