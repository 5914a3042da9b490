"""The one clustered percentile bootstrap of the study figures.

Items that belong together (the trials of one task, the turns of one conversation) are not
independent of each other, so an interval that resamples them one by one is too narrow when they
are alike within a group. :func:`cluster_bootstrap` resamples whole clusters with replacement,
pools the items of the drawn clusters, and computes the statistic on the pool; a statistic that is
undefined on a resample (None or NaN: no variation left, one class only) is counted, never dropped
silently: the interval is the percentile interval of the defined resamples and says how many were
undefined. A cluster of one item each is the ordinary (independent) bootstrap.

Used by ``trials`` (a run mean with tasks as clusters) and ``label_agreement`` (agreement with
human labels with conversations as clusters).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Hashable, Sequence, TypeVar

import numpy as np

T = TypeVar("T")
RESAMPLES = 2000


@dataclass(frozen=True)
class BootstrapInterval:
    """A percentile interval and how it was made: ``resamples`` drawn, ``undefined`` of them
    without a value (left out of the percentiles), over ``clusters`` clusters."""

    low: float | None
    high: float | None
    resamples: int
    undefined: int
    clusters: int

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (for JSON summaries)."""
        return asdict(self)


def _defined(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def cluster_bootstrap(clusters: Sequence[Sequence[T]], statistic: Callable[[list[T]], float | None],
                      n_resamples: int = RESAMPLES, seed: int = 0,
                      confidence: float = 0.95) -> BootstrapInterval:
    """Percentile interval of ``statistic`` over ``clusters`` resampled with replacement.

    Each resample draws as many clusters as there are (empty clusters are left out), pools their
    items in draw order and calls ``statistic`` on the pool. Resamples where it returns None or NaN
    are counted in ``undefined``; the interval is read from the others (None, None when fewer than
    two are defined or there are fewer than two clusters).
    """
    groups = [list(c) for c in clusters if len(c)]
    if len(groups) < 2:
        return BootstrapInterval(None, None, 0, 0, len(groups))
    values = [statistic([item for i in row for item in groups[i]]) for row in _draws(len(groups), n_resamples, seed)]
    return _interval(values, len(groups), confidence)


def cluster_mean_bootstrap(values: Sequence[float], n_resamples: int = RESAMPLES, seed: int = 0,
                           confidence: float = 0.95) -> BootstrapInterval:
    """:func:`cluster_bootstrap` of the mean when each cluster is one value (a task's mean over its
    trials): the same draws and interval, the resamples' means computed at once (a report of a
    thousand tasks would otherwise build 2,000 Python lists of a thousand values per figure)."""
    if len(values) < 2:
        return BootstrapInterval(None, None, 0, 0, len(values))
    means = np.asarray(values, dtype=float)[_draws(len(values), n_resamples, seed)].mean(axis=1)
    return _interval(list(means), len(values), confidence)


def _draws(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    """The clusters each resample draws (one row per resample)."""
    return np.random.default_rng(seed).integers(0, n_clusters, size=(n_resamples, n_clusters))


def _interval(values: Sequence[float | None], n_clusters: int, confidence: float) -> BootstrapInterval:
    """The percentile interval of the defined ``values``, the undefined ones counted."""
    defined = [float(v) for v in values if _defined(v)]
    undefined = len(values) - len(defined)
    if len(defined) < 2:
        return BootstrapInterval(None, None, len(values), undefined, n_clusters)
    alpha = (1 - confidence) / 2
    return BootstrapInterval(float(np.quantile(defined, alpha)), float(np.quantile(defined, 1 - alpha)),
                             len(values), undefined, n_clusters)


def group_by(items: Sequence[T], keys: Sequence[Hashable] | None) -> list[list[T]]:
    """``items`` grouped by the parallel ``keys`` in first-seen order; without keys every item is
    its own cluster (the independent bootstrap)."""
    if keys is None:
        return [[item] for item in items]
    if len(keys) != len(items):
        raise ValueError(f"{len(keys)} cluster keys for {len(items)} items")
    groups: dict[Hashable, list[T]] = {}
    for key, item in zip(keys, items):
        groups.setdefault(key, []).append(item)
    return list(groups.values())
