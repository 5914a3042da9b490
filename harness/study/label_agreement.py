"""Agreement of SelfScore's judgments with human labels (``deskbench agreement``, the organiser
page's live ratings).

Pure statistics over (human, judge) pairs:

- a yes/no judgment (``solved``): accuracy per human class with Wilson 95% intervals, the
  confusion table, overall accuracy and Cohen's kappa;
- a graded judgment (helpfulness, quality): Spearman's rho and Kendall's tau-b with percentile
  bootstrap 95% intervals (pairs resampled, seeded), and Cohen's linearly weighted kappa after
  the judge's 1-10 score is binned onto the label's levels (:func:`bin_score`).

:func:`label_pairs` reads them from scored transcripts whose input carried ``labels``
(docs/data-formats.md#human-labels); :func:`agreement_summary` computes every table and
:func:`agreement_markdown` prints it.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

Z95 = 1.959963984540054
BOOTSTRAP_RESAMPLES = 2000
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


def binary_agreement(pairs: Sequence[tuple[bool, bool | None]]) -> dict[str, Any]:
    """Agreement of a yes/no judgment with the human label: per human class the judge's hits
    with a Wilson 95% interval, the confusion table, accuracy and Cohen's kappa. A pair whose
    judgment is None (failed) is counted as failed, not as a miss."""
    judged = [(bool(h), bool(j)) for h, j in pairs if j is not None]
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
            "cohen_kappa": cohen_kappa(judged, levels=[False, True]),
            "confusion": {f"human {'yes' if h else 'no'} / judge {'yes' if j else 'no'}": confusion[(h, j)]
                          for h in (True, False) for j in (True, False)}}


def bin_score(score: float, levels: int, low: float = 1, high: float = 10) -> int:
    """A judge score on ``low..high`` as one of ``levels`` equal-width bins (0 = lowest): with 3
    levels, 1-4 -> 0, 5-7 -> 1, 8-10 -> 2."""
    position = (score - low) / (high - low + 1) * levels
    return max(0, min(levels - 1, int(math.floor(position))))


def _correlations(xs: np.ndarray, ys: np.ndarray) -> tuple[float | None, float | None]:
    from scipy import stats
    if len(xs) < 3 or len(set(xs.tolist())) < 2 or len(set(ys.tolist())) < 2:
        return None, None
    rho = stats.spearmanr(xs, ys)[0]
    tau = stats.kendalltau(xs, ys)[0]
    return (None if math.isnan(rho) else float(rho)), (None if math.isnan(tau) else float(tau))


def rank_agreement(pairs: Sequence[tuple[float, float | None]], seed: int = 0,
                   resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """Spearman's rho and Kendall's tau-b of (human, judge) pairs with percentile bootstrap 95%
    intervals, and the linearly weighted kappa with the judge's 1-10 score binned onto the
    human label's levels (the distinct integer values between its lowest and highest label)."""
    judged = [(float(h), float(j)) for h, j in pairs if j is not None]
    out: dict[str, Any] = {"n": len(judged), "failed": len(pairs) - len(judged), "spearman_rho": None,
                           "spearman_ci": [None, None], "kendall_tau": None, "kendall_ci": [None, None],
                           "weighted_kappa": None, "bins": None}
    if not judged:
        return out
    xs, ys = np.array([h for h, _ in judged]), np.array([j for _, j in judged])
    out["spearman_rho"], out["kendall_tau"] = _correlations(xs, ys)
    if out["spearman_rho"] is not None:
        rng = np.random.default_rng(seed)
        rhos, taus = [], []
        for _ in range(resamples):
            idx = rng.integers(0, len(xs), len(xs))
            rho, tau = _correlations(xs[idx], ys[idx])
            if rho is not None and tau is not None:
                rhos.append(rho)
                taus.append(tau)
        if rhos:
            out["spearman_ci"] = [float(np.percentile(rhos, 2.5)), float(np.percentile(rhos, 97.5))]
            out["kendall_ci"] = [float(np.percentile(taus, 2.5)), float(np.percentile(taus, 97.5))]
    low, high = int(math.floor(xs.min())), int(math.ceil(xs.max()))
    if high > low and all(float(h).is_integer() for h in xs):
        levels = high - low + 1
        binned = [(int(h) - low, bin_score(j, levels)) for h, j in judged]
        out["weighted_kappa"] = cohen_kappa(binned, "linear", list(range(levels)))
        out["bins"] = levels
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
        base = {"id": row.get("id"), "split": row.get("split"), "kind": row.get("kind"),
                "question": row.get("question")}
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


def agreement_summary(rows: Sequence[Mapping[str, Any]], split: str | None = None) -> dict[str, Any]:
    """Every agreement table of scored, labelled transcript rows (only ``split`` when given)."""
    rows = [r for r in rows if split in (None, "all") or r.get("split") == split]
    items = label_pairs(rows)
    out: dict[str, Any] = {"conversations": len(rows), "split": split or "all",
                           "solved": binary_agreement([(i["human"], i["judge"]) for i in items["solved"]]),
                           "worst": {"solved": _worst(items["solved"], graded=False)}}
    for kind in GRADED_KINDS:
        pairs = [(i["human"], i["judge"]) for i in items[kind]]
        own = [(i["human"], i["judge_own"]) for i in items[kind]]
        out[kind] = {"aided": rank_agreement(pairs), "judge_only": rank_agreement(own),
                     "moved": sum(1 for i in items[kind] if i["judge"] != i["judge_own"]),
                     "scores_used": sorted({i["judge"] for i in items[kind] if i["judge"] is not None})}
        out["worst"][kind] = _worst(items[kind], graded=True)
    conv = items["conversation"]
    out["conversation"] = {
        figure: {"with_quality": rank_agreement([(c["label_quality"], c[figure]) for c in conv
                                                 if c["label_quality"] is not None]),
                 "with_solved": rank_agreement([(float(bool(c["label_solved"])), c[figure]) for c in conv
                                                if c["label_solved"] is not None])}
        for figure in CONVERSATION_FIGURES}
    return out


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.2f}"


def _ci(ci: Sequence[float | None], fmt=_num) -> str:
    return "n/a" if ci[0] is None else f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def _short(text: Any, n: int = 110) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def agreement_markdown(summary: Mapping[str, Any], title: str) -> list[str]:
    """The agreement tables of :func:`agreement_summary` as Markdown lines."""
    s = summary["solved"]
    lines = [f"## {title}", "", f"{summary['conversations']} conversations (split {summary['split']}).", "",
             "### Solved (per conversation)", "",
             "| human label | n | judge agrees | accuracy | 95% CI (Wilson) |", "|---|---|---|---|---|"]
    for name in ("yes", "no"):
        c = s["classes"][name]
        lines.append(f"| {'solved' if name == 'yes' else 'not solved'} | {c['n']} | {c['right']} | "
                     f"{_pct(c['accuracy'])} | {_ci(c['ci'], _pct)} |")
    kappa = s["cohen_kappa"]
    lines += ["", f"Accuracy {_pct(s['accuracy'])}, Cohen's kappa {_num(kappa)}, failed {s['failed']}. "
              "Confusion: " + ", ".join(f"{k}: {v}" for k, v in s["confusion"].items()), ""]
    skipped = [kind for kind in GRADED_KINDS if not summary[kind]["aided"]["n"] and not summary[kind]["judge_only"]["n"]]
    for kind in GRADED_KINDS:
        g = summary[kind]
        if kind in skipped:
            continue
        lines += [f"### {kind.replace('_', ' ').capitalize()} (per turn)", "",
                  "| scores | n | Spearman rho [95% CI] | Kendall tau [95% CI] | weighted kappa (binned) |",
                  "|---|---|---|---|---|"]
        for name in ("aided", "judge_only"):
            r = g[name]
            lines.append(f"| {'stored (after aids)' if name == 'aided' else 'judge only'} | {r['n']} | "
                         f"{_num(r['spearman_rho'])} {_ci(r['spearman_ci'])} | {_num(r['kendall_tau'])} "
                         f"{_ci(r['kendall_ci'])} | {_num(r['weighted_kappa'])} ({r['bins'] or '-'} bins) |")
        lines += ["", f"Scores the judge used: {g['scores_used']}; aids moved {g['moved']} of them.", ""]
    if skipped:
        lines += [f"Not judged here (not in --kinds, or no such labels): {', '.join(skipped)}.", ""]
    conversation = summary["conversation"].items()
    if any(f["with_quality"]["n"] or f["with_solved"]["n"] for _, f in conversation):
        lines += ["### Per conversation: each figure against the labels", "",
                  "| figure | rho with labels.quality (n) | rho with labels.solved (n) |", "|---|---|---|"]
        for figure, f in conversation:
            q, v = f["with_quality"], f["with_solved"]
            lines.append(f"| {figure} | {_num(q['spearman_rho'])} ({q['n']}) | {_num(v['spearman_rho'])} ({v['n']}) |")
        lines.append("")
    lines += ["### Worst disagreements", ""]
    for kind, worst in summary["worst"].items():
        for w in worst:
            lines.append(f"- {kind} `{w['id']}`" + (f" turn {w['turn']}" if "turn" in w else "")
                         + f": human {w['human']}, judge {w['judge']}. Q: {_short(w['question'], 80)} "
                         f"| text: {_short(w['text'])}" + (f" | label note: {_short(w['note'], 120)}" if w.get("note") else ""))
    return lines


def agreement_line(summary: Mapping[str, Any]) -> str:
    """One line: solved accuracy per class and turn-level agent helpfulness rho (``deskbench sanity``)."""
    s = summary["solved"]["classes"]
    rho = summary["agent_helpfulness"]["aided"]["spearman_rho"]
    return (f"agreement with human labels ({summary['conversations']} held-out conversations): solved "
            f"{s['yes']['right']}/{s['yes']['n']} solved, {s['no']['right']}/{s['no']['n']} not solved; "
            f"agent helpfulness rho {_num(rho)} (n {summary['agent_helpfulness']['aided']['n']})")
