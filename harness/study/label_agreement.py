"""Agreement of SelfScore's judgments with human labels (``deskbench agreement``, the organiser
page's live ratings).

Pure statistics over (human, judge) pairs:

- a yes/no judgment (``solved``, one per conversation): accuracy per human class with Wilson 95%
  intervals, the confusion table, overall accuracy and Cohen's kappa with a bootstrap interval
  over conversations;
- a graded judgment (helpfulness per turn, a conversation figure): Spearman's rho, Kendall's tau-b
  and Cohen's linearly weighted kappa after the judge's 1-10 score is binned onto the label
  scale (:func:`bin_score`, :func:`label_scale`: 0-2 for helpfulness, whatever labels a subset
  happens to hold), each with a percentile bootstrap 95% interval that resamples conversations
  with all their turns (:func:`harness.study.bootstrap.cluster_bootstrap`, 2,000 resamples,
  seeded; resamples without variation are counted as undefined, not dropped silently).

:func:`label_pairs` reads them from scored transcripts whose input carried ``labels``
(docs/data-formats.md#human-labels); :func:`agreement_summary` computes every table, for all
labels and for each label source apart (``harness.study.label_sources``);
``harness.study.label_report`` prints it.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from harness.study.bootstrap import RESAMPLES, cluster_bootstrap, group_by
from harness.study.label_sources import REPORTED_SOURCES, label_objects, label_source, rows_labelled_by

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = RESAMPLES
#: the scale of the helpfulness labels (0 useless, 1 partial, 2 solves; docs/data-formats.md)
HELPFULNESS_SCALE = (0, 1, 2)
GRADED_KINDS = ("agent_helpfulness", "user_helpfulness")
CONVERSATION_FIGURES = ("avg_agent_helpfulness", "avg_user_helpfulness", "quality", "final_score")


def wilson_interval(successes: int, n: int) -> tuple[float | None, float | None]:
    """The Wilson score 95% interval of a proportion (None, None for n = 0)."""
    if n == 0:
        return None, None
    p = successes / n
    centre = (p + Z95 ** 2 / (2 * n)) / (1 + Z95 ** 2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / (1 + Z95 ** 2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def cohen_kappa(pairs: Sequence[tuple[Any, Any]], weights: str | None = None,
                levels: Sequence[Any] | None = None) -> float | None:
    """Cohen's kappa of (rater a, rater b) pairs over ``levels`` (default: the values seen);
    ``weights="linear"`` weighs a disagreement by its distance in level order. None when the
    expected agreement is total (one level only) or there are no pairs."""
    if not pairs:
        return None
    levels = list(levels) if levels is not None else sorted({v for p in pairs for v in p})
    index = {v: i for i, v in enumerate(levels)}
    k = len(levels)
    if k < 2:
        return None
    observed = np.zeros((k, k))
    for a, b in pairs:
        observed[index[a], index[b]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    w = (np.abs(i - j) / (k - 1)) if weights == "linear" else (i != j).astype(float)
    disagreement_expected = float((w * expected).sum())
    if disagreement_expected == 0:
        return None
    return 1.0 - float((w * observed).sum()) / disagreement_expected


def _kappa_of_pairs(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    return cohen_kappa(pairs, levels=[False, True])


def binary_agreement(pairs: Sequence[tuple[bool, bool | None]], seed: int = 0,
                     resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """Agreement of a yes/no judgment with the human label (one pair per conversation): per human
    class the judge's hits with a Wilson 95% interval, the confusion table, accuracy and Cohen's
    kappa with a bootstrap 95% interval over conversations (``kappa_bootstrap`` says how many
    resamples were undefined: one class only). A pair whose judgment is None (failed) is counted
    as failed, not as a miss."""
    judged = [(bool(h), bool(j)) for h, j in pairs if j is not None]
    interval = cluster_bootstrap([[p] for p in judged], _kappa_of_pairs, resamples, seed)
    classes = {}
    for label, name in ((True, "yes"), (False, "no")):
        of_class = [j for h, j in judged if h is label]
        right = sum(j is label for j in of_class)
        low, high = wilson_interval(right, len(of_class))
        classes[name] = {"n": len(of_class), "right": right,
                         "accuracy": right / len(of_class) if of_class else None, "ci": [low, high]}
    confusion = Counter((h, j) for h, j in judged)
    return {"n": len(judged), "failed": len(pairs) - len(judged), "classes": classes,
            "accuracy": sum(h == j for h, j in judged) / len(judged) if judged else None,
            "cohen_kappa": _kappa_of_pairs(judged), "kappa_ci": [interval.low, interval.high],
            "kappa_bootstrap": {"unit": "conversation", **interval.as_dict()},
            "confusion": {f"human {'yes' if h else 'no'} / judge {'yes' if j else 'no'}": confusion[(h, j)]
                          for h in (True, False) for j in (True, False)}}


def bin_score(score: float, levels: int, low: float = 1, high: float = 10) -> int:
    """A judge score on ``low..high`` as one of ``levels`` equal-width bins (0 = lowest): with 3
    levels, 1-4 -> 0, 5-7 -> 1, 8-10 -> 2."""
    position = (score - low) / (high - low + 1) * levels
    return max(0, min(levels - 1, int(math.floor(position))))


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based; tied values share the mean of their positions)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2.0)[inverse]


def _spearman(xs: np.ndarray, ys: np.ndarray) -> float | None:
    """Spearman's rho: Pearson's r of the average ranks (None without variation)."""
    rx, ry = _ranks(xs), _ranks(ys)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    den = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    return None if den == 0 else float((rx * ry).sum() / den)


def _kendall(xs: np.ndarray, ys: np.ndarray) -> float | None:
    """Kendall's tau-b: (concordant - discordant) over the root of the pairs untied in each."""
    upper = np.triu_indices(len(xs), 1)
    sx = np.sign(xs[:, None] - xs[None, :])[upper]
    sy = np.sign(ys[:, None] - ys[None, :])[upper]
    den = math.sqrt(float(np.count_nonzero(sx)) * float(np.count_nonzero(sy)))
    return None if den == 0 else float((sx * sy).sum() / den)


def _varied(xs: np.ndarray, ys: np.ndarray) -> bool:
    """Three pairs or more, and variation in both raters (else no rank correlation)."""
    return len(xs) >= 3 and bool(np.any(xs != xs[0])) and bool(np.any(ys != ys[0]))


def label_scale(values: Sequence[float], declared: Sequence[float] | None) -> tuple[list[float] | None, str]:
    """The levels weighted kappa bins onto, and where they come from: the ``declared`` scale when
    every label is on it; else the integer range from the lowest to the highest label seen (None
    when the labels are not integers or there is one level only)."""
    if declared is not None and all(v in declared for v in values):
        return list(declared), "declared"
    if not values or not all(float(v).is_integer() for v in values):
        return None, "labels seen"
    low, high = int(min(values)), int(max(values))
    return (list(range(low, high + 1)) if high > low else None), "labels seen"


def _on_indices(xs: np.ndarray, ys: np.ndarray, levels: Sequence[float] | None):
    """The statistics of :func:`rank_agreement` on a resample given as indices into ``xs``/``ys``."""
    def rho(idx: list[int]) -> float | None:
        x, y = xs[idx], ys[idx]
        return _spearman(x, y) if _varied(x, y) else None

    def tau(idx: list[int]) -> float | None:
        x, y = xs[idx], ys[idx]
        return _kendall(x, y) if _varied(x, y) else None

    out = {"spearman": rho, "kendall": tau}
    if levels is not None:
        hx = np.array([list(levels).index(h) for h in xs])
        jy = np.array([bin_score(j, len(levels)) for j in ys])
        out["kappa"] = lambda idx: cohen_kappa(list(zip(hx[idx].tolist(), jy[idx].tolist())), "linear",
                                               list(range(len(levels))))
    return out


def rank_agreement(pairs: Sequence[tuple[float, float | None]], clusters: Sequence[Any] | None = None,
                   scale: Sequence[float] | None = None, seed: int = 0,
                   resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """Spearman's rho, Kendall's tau-b and the linearly weighted kappa (the judge's 1-10 score
    binned onto the label scale, :func:`label_scale`) of (human, judge) pairs, each with a
    percentile bootstrap 95% interval that resamples ``clusters`` (parallel keys: the conversation
    of each pair, so all turns of a conversation are drawn together; None: every pair alone).
    ``bootstrap`` says how each interval was made: resamples, clusters, and how many resamples
    were undefined (no variation left) and so left out."""
    keep = [i for i, (_, j) in enumerate(pairs) if j is not None]
    judged = [(float(pairs[i][0]), float(pairs[i][1])) for i in keep]
    keys = [clusters[i] for i in keep] if clusters is not None else None
    out: dict[str, Any] = {"n": len(judged), "failed": len(pairs) - len(judged), "spearman_rho": None,
                           "spearman_ci": [None, None], "kendall_tau": None, "kendall_ci": [None, None],
                           "weighted_kappa": None, "kappa_ci": [None, None], "bins": None, "scale": None,
                           "scale_from": None, "bootstrap": None}
    if not judged:
        return out
    groups = group_by(list(range(len(judged))), keys)
    made = {"unit": "conversation" if keys is not None else "pair", "clusters": len(groups),
            "resamples": resamples, "undefined": {}}
    xs, ys = np.array([h for h, _ in judged]), np.array([j for _, j in judged])
    levels, out["scale_from"] = label_scale([h for h, _ in judged], scale)
    statistics = _on_indices(xs, ys, levels)
    everything = list(range(len(judged)))
    out["spearman_rho"], out["kendall_tau"] = statistics["spearman"](everything), statistics["kendall"](everything)
    if levels is not None:
        out.update(weighted_kappa=statistics["kappa"](everything), bins=len(levels), scale=levels)
    names = {"spearman": "spearman_ci", "kendall": "kendall_ci", "kappa": "kappa_ci"}
    for name, statistic in statistics.items():
        if name != "kappa" and out["spearman_rho"] is None:
            continue
        interval = cluster_bootstrap(groups, statistic, resamples, seed)
        out[names[name]] = [interval.low, interval.high]
        made["undefined"][name] = interval.undefined
    out["bootstrap"] = made
    return out


def label_pairs(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The (human, judge) items of scored transcript rows (``score_transcripts``'s output, whose
    input carried ``labels``): ``solved`` per conversation, ``agent_helpfulness`` and
    ``user_helpfulness`` per turn (with the judge's own score before any aid as ``judge_own``),
    and each conversation figure beside ``labels.quality`` and ``labels.solved``."""
    items: dict[str, list[dict[str, Any]]] = {"solved": [], **{k: [] for k in GRADED_KINDS},
                                              "conversation": []}
    for row in rows:
        labels = row.get("labels") or {}
        turns = row.get("scored_turns") or []
        base = {"id": row.get("id"), "conversation": len(items["conversation"]), "split": row.get("split"),
                "kind": row.get("kind"), "question": row.get("question")}
        solved_turns = [t.get("solved") for t in turns]
        if labels.get("solved") is not None:
            judge = None if any(s is None for s in solved_turns) and not any(solved_turns) else any(solved_turns)
            items["solved"].append({**base, "human": bool(labels["solved"]), "judge": judge,
                                    "text": (turns[-1].get("agent") if turns else "") or "",
                                    "note": labels.get("note")})
        for i, turn in enumerate(turns):
            turn_labels = turn.get("labels") or {}
            for kind in GRADED_KINDS:
                if turn_labels.get(kind) is None:
                    continue
                own = (turn.get("judge_own") or {}).get(kind, turn.get(kind))
                items[kind].append({**base, "turn": i + 1, "human": turn_labels[kind], "judge": turn.get(kind),
                                    "judge_own": own, "text": turn.get("agent" if kind.startswith("agent") else "user"),
                                    "note": turn_labels.get("note")})
        items["conversation"].append({**base, "label_quality": labels.get("quality"),
                                      "label_solved": labels.get("solved"),
                                      **{f: row.get(f) for f in CONVERSATION_FIGURES}})
    return items


def _worst(items: Sequence[Mapping[str, Any]], graded: bool, n: int = 5) -> list[dict[str, Any]]:
    """The ``n`` items where judge and label disagree most (graded: on a 0..1 scale each)."""
    if not graded:
        wrong = [i for i in items if i["judge"] is not None and i["judge"] != i["human"]]
        return [dict(i) for i in wrong[:n]]
    judged = [i for i in items if i["judge"] is not None]
    if not judged:
        return []
    lo, hi = min(i["human"] for i in judged), max(i["human"] for i in judged)
    span = (hi - lo) or 1

    def gap(i):
        return abs((i["human"] - lo) / span - (i["judge"] - 1) / 9)
    return [{**i, "gap": round(gap(i), 3)} for i in sorted(judged, key=gap, reverse=True)[:n]]


def _graded(items: Sequence[Mapping[str, Any]], judge_key: str, scale: Sequence[float] | None) -> dict[str, Any]:
    """:func:`rank_agreement` of the items' (human, ``judge_key``) with conversations as clusters."""
    return rank_agreement([(i["human"], i[judge_key]) for i in items], [i["conversation"] for i in items], scale)


def _summary(rows: Sequence[Mapping[str, Any]], split: str) -> dict[str, Any]:
    """Every agreement table of ``rows`` (already of one split)."""
    items = label_pairs(rows)
    out: dict[str, Any] = {"conversations": len(rows), "split": split,
                           "solved": binary_agreement([(i["human"], i["judge"]) for i in items["solved"]]),
                           "worst": {"solved": _worst(items["solved"], graded=False)}}
    for kind in GRADED_KINDS:
        out[kind] = {"aided": _graded(items[kind], "judge", HELPFULNESS_SCALE),
                     "judge_only": _graded(items[kind], "judge_own", HELPFULNESS_SCALE),
                     "moved": sum(1 for i in items[kind] if i["judge"] != i["judge_own"]),
                     "scores_used": sorted({i["judge"] for i in items[kind] if i["judge"] is not None})}
        out["worst"][kind] = _worst(items[kind], graded=True)
    conv = items["conversation"]
    quality = [c for c in conv if c["label_quality"] is not None]
    solved = [c for c in conv if c["label_solved"] is not None]
    out["conversation"] = {
        figure: {"with_quality": rank_agreement([(c["label_quality"], c[figure]) for c in quality],
                                                [c["conversation"] for c in quality]),
                 "with_solved": rank_agreement([(float(bool(c["label_solved"])), c[figure]) for c in solved],
                                               [c["conversation"] for c in solved], (0, 1))}
        for figure in CONVERSATION_FIGURES}
    return out


def agreement_summary(rows: Sequence[Mapping[str, Any]], split: str | None = None) -> dict[str, Any]:
    """Every agreement table of scored, labelled transcript rows (only ``split`` when given), for
    all labels and, under ``by_source``, for the labels of each source apart (``maintainers``,
    ``people``; harness.study.label_sources); ``label_sources`` counts the labels of each source."""
    rows = [r for r in rows if split in (None, "all") or r.get("split") == split]
    out = _summary(rows, split or "all")
    out["label_sources"] = dict(sorted(Counter(label_source(labels) for row in rows
                                               for _, labels in label_objects(row) if labels).items()))
    out["by_source"] = {}
    for source in REPORTED_SOURCES:
        part = rows_labelled_by(rows, source)
        if part:
            out["by_source"][source] = _summary(part, split or "all")
    return out
