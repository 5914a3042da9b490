"""PNG figures for the HTML report: per-run distributions and side-by-side box plots.

Uses matplotlib's object API with the Agg canvas (no pyplot, no display, no global backend
switch), so it runs headless and in threads. Missing values (None/NaN) are left out of every
plot; the titles say how many values each panel shows.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from harness.study.statistics import clean, metric_values

# The distributions the paper plots per run.
DISTRIBUTION_METRICS: tuple[tuple[str, str], ...] = (
    ("weighted_complexity", "Weighted complexity"),
    ("avg_user_helpfulness", "Avg user helpfulness"),
    ("avg_agent_helpfulness", "Avg agent helpfulness"),
    ("quality", "Quality"),
    ("final_score", "Final score"),
)


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=90)
    return path


def run_distributions_png(name: str, figures: Sequence[Mapping[str, Any]], path: Path,
                          metrics: Sequence[tuple[str, str]] = DISTRIBUTION_METRICS) -> Path:
    """One row of histograms, one per metric, for a single run.

    Args:
        name: the run's name (figure title).
        figures: the run's per-interaction figure dicts.
        path: where to write the PNG.
        metrics: (key, label) pairs to plot.

    Returns:
        ``path``.
    """
    fig = Figure(figsize=(3.2 * len(metrics), 3.0))
    for k, (key, label) in enumerate(metrics, start=1):
        ax = fig.add_subplot(1, len(metrics), k)
        values, excluded = clean(metric_values(figures, key))
        if values:
            ax.hist(values, bins=min(20, max(5, len(values) // 2)), color="#4477aa",
                    edgecolor="white")
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(f"{label}\n(n={len(values)}, missing {excluded})", fontsize=9)
        ax.tick_params(labelsize=8)
    fig.suptitle(name, fontsize=10)
    return _save(fig, path)


def comparison_boxplots_png(runs: Mapping[str, Sequence[Mapping[str, Any]]], path: Path,
                            metrics: Sequence[tuple[str, str]] = DISTRIBUTION_METRICS) -> Path:
    """Box plots of each metric with the runs side by side.

    Args:
        runs: run name -> per-interaction figure dicts.
        path: where to write the PNG.
        metrics: (key, label) pairs to plot, one panel each.

    Returns:
        ``path``.
    """
    names = list(runs)
    fig = Figure(figsize=(max(4.0, 0.9 * len(names) + 1.5), 2.8 * len(metrics)))
    for k, (key, label) in enumerate(metrics, start=1):
        ax = fig.add_subplot(len(metrics), 1, k)
        data = [clean(metric_values(runs[n], key))[0] for n in names]
        positions = [i + 1 for i, d in enumerate(data) if d]
        if positions:
            ax.boxplot([d for d in data if d], positions=positions, widths=0.6)
        ax.set_xticks(range(1, len(names) + 1))
        ax.set_xticklabels([f"{n}\n(n={len(d)})" for n, d in zip(names, data)], fontsize=8,
                           rotation=20 if len(names) > 4 else 0)
        ax.set_xlim(0.4, len(names) + 0.6)
        ax.set_title(label, fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
    return _save(fig, path)


def pass_k_png(curves: Mapping[str, Mapping[str, Any]], path: Path) -> Path:
    """pass^k (solid) and pass@k (dashed) against k, one colour per run.

    Args:
        curves: run name -> :func:`harness.study.trials.pass_k_figures` of its figures.
        path: where to write the PNG.

    Returns:
        ``path``.
    """
    fig = Figure(figsize=(4.8, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    for i, (name, c) in enumerate(curves.items()):
        colour = f"C{i % 10}"
        ax.plot(c["k"], c["pass_hat"], marker="o", color=colour, label=f"{name} pass^k")
        ax.plot(c["k"], c["pass_at"], marker=".", linestyle="--", color=colour, label=f"{name} pass@k")
    ks = sorted({k for c in curves.values() for k in c["k"]})
    ax.set_xticks(ks or [1])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("k (trials)", fontsize=9)
    ax.set_ylabel("share of tasks", fontsize=9)
    ax.set_title("pass^k: all k trials solved; pass@k: at least one", fontsize=9)
    ax.legend(fontsize=7)
    ax.tick_params(labelsize=8)
    return _save(fig, path)
