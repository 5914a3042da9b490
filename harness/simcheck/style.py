"""How well a simple classifier tells simulated replies from real ones (docs/simcheck.md, "Style").

Every point gives two replies, the real asker's (label 0) and the simulated user's (label 1;
a reply that left is not a text and is left out). Each reply becomes the named surface features
of :data:`FEATURES`, computed on the text with IRC addresses at line starts removed (the
simulated user never sees the helpers' nicks: an address would be a trivial tell). An
L2-regularised logistic regression (numpy, gradient descent, features standardised on the
training part) is fitted on the replies of all threads but one group and scores the held-back
group's; the threads are dealt into :data:`FOLDS` groups by their order of first appearance, so
the real and the simulated reply of one point, and every point of a thread, are always on the
same side. The AUC of the out-of-fold scores (Mann-Whitney) is 0.5 when the two cannot be told
apart and 1.0 when they always can; its interval resamples threads (the fitted scores are kept).
The weights of a fit on every reply say which features tell them apart (positive: simulated).
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

from harness.aids import strip_address
from harness.study import cluster_bootstrap

FOLDS = 5
L2 = 1.0
STEPS = 400

_SENTENCE = re.compile(r"[.!?]+(?:\s|$)")
FEATURES: dict[str, str] = {
    "log_words": "log(1 + words)",
    "log_chars_per_word": "log of the mean characters per word",
    "lines": "lines (an IRC asker's several messages are lines)",
    "sentences": "sentence ends (. ! ?) per 10 words",
    "capital_start": "the text opens with a capital letter",
    "ends_with_stop": "the text ends with . ! or ?",
    "question_marks": "question marks",
    "exclamations": "exclamation marks",
    "lowercase_i": "a lowercase 'i' used as a word",
    "apostrophe_free": "a contraction written without its apostrophe (dont, cant, im, ive, didnt)",
    "ellipsis": "'..' or '...'",
    "emoticon": ":) :( ;) :/ :D or lol",
    "url": "a URL (a pastebin)",
    "digits": "share of characters that are digits",
    "thanks": "thank, thanks, thx",
    "first_person": "share of words that are I, me, my",
}
_CONTRACTION = re.compile(r"\b(?:dont|cant|im|ive|didnt|doesnt|wont|isnt|thats|whats|ill)\b")
_EMOTICON = re.compile(r"(?:[:;]-?[()/pPdD]|\blol\b)")


def features(text: str) -> list[float]:
    """The :data:`FEATURES` of one reply, in order."""
    body = "\n".join(strip_address(line) for line in (text or "").splitlines()).strip()
    words = body.split()
    n = max(len(words), 1)
    lower = body.lower()
    return [math.log1p(len(words)), math.log(max(sum(len(w) for w in words) / n, 1.0)),
            float(len([line for line in body.splitlines() if line.strip()])),
            10 * len(_SENTENCE.findall(body)) / n, float(body[:1].isupper()), float(body[-1:] in ".!?"),
            float(body.count("?")), float(body.count("!")), float(bool(re.search(r"(?:^|\s)i(?:\s|$)", body))),
            float(bool(_CONTRACTION.search(lower))), float(".." in body), float(bool(_EMOTICON.search(body))),
            float("http" in lower), sum(c.isdigit() for c in body) / max(len(body), 1),
            float(bool(re.search(r"\b(?:thank|thanks|thx)\b", lower))),
            sum(w.strip(".,!?").lower() in ("i", "me", "my") for w in words) / n]


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = STEPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logistic regression by gradient descent on standardised features: (weights with the
    intercept first, the features' means, their scales)."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ w))
        grad = z.T @ (p - y) / len(y) + l2 * np.r_[0, w[1:]] / len(y)
        w -= 0.5 * grad
    return w, mean, scale


def score(model: tuple[np.ndarray, np.ndarray, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The fitted model's P(simulated) of each row of ``x``."""
    w, mean, scale = model
    return 1 / (1 + np.exp(-(np.hstack([np.ones((len(x), 1)), (x - mean) / scale]) @ w)))


def auc(labels: Sequence[int], scores: Sequence[float]) -> float | None:
    """The area under the ROC curve (ties count half); None without both classes."""
    pos = [s for l, s in zip(labels, scores) if l == 1]
    neg = [s for l, s in zip(labels, scores) if l == 0]
    if not pos or not neg:
        return None
    ranks = _ranks(np.asarray([*pos, *neg], dtype=float))
    return float((ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _ranks(values: np.ndarray) -> np.ndarray:
    order = values.argsort(kind="mergesort")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):  # average ranks of ties
        tied = values == v
        ranks[tied] = ranks[tied].mean()
    return ranks


def grouped_auc(rows: Sequence[tuple[str, int, list[float]]], folds: int = FOLDS) -> dict[str, Any]:
    """Cross-validated AUC of ``(group, label, features)`` rows, groups never split (see the
    module's text), with its interval over groups and the weights of a fit on every row."""
    groups = list(dict.fromkeys(g for g, _, _ in rows))
    labels = [label for _, label, _ in rows]
    if len(groups) < 2 or len(set(labels)) < 2:
        return {"auc": None, "low": None, "high": None, "n": len(rows), "features": _named(None)}
    fold_of = {g: i % min(folds, len(groups)) for i, g in enumerate(groups)}
    x, y = np.asarray([f for _, _, f in rows], dtype=float), np.asarray(labels, dtype=float)
    scores = np.zeros(len(rows))
    for k in set(fold_of.values()):
        test = np.asarray([fold_of[g] == k for g, _, _ in rows])
        if len(set(y[~test])) < 2:
            scores[test] = 0.5
            continue
        scores[test] = score(fit(x[~test], y[~test]), x[test])
    by_group: dict[str, list[tuple[int, float]]] = {}
    for (g, label, _), s in zip(rows, scores):
        by_group.setdefault(g, []).append((label, float(s)))
    ci = cluster_bootstrap(list(by_group.values()), lambda items: auc([a for a, _ in items], [b for _, b in items]))
    return {"auc": auc(labels, list(scores)), "low": ci.low, "high": ci.high, "n": len(rows),
            "folds": len(set(fold_of.values())), "features": _named(fit(x, y)[0])}


def _named(weights: np.ndarray | None) -> list[dict[str, Any]]:
    """The features with their standardised weights, the strongest first."""
    if weights is None:
        return [{"name": name, "means": text, "weight": None} for name, text in FEATURES.items()]
    named = [{"name": name, "means": text, "weight": round(float(w), 3)}
             for (name, text), w in zip(FEATURES.items(), weights[1:])]
    return sorted(named, key=lambda f: -abs(f["weight"]))


def style_auc(pairs) -> dict[str, Any]:
    """:func:`grouped_auc` of the real and simulated replies of ``pairs`` (``measures.Pair``)."""
    rows = []
    for p in pairs:
        rows.append((p.point.task_id, 0, features(p.point.real)))
        if p.sim:
            rows.append((p.point.task_id, 1, features(p.sim)))
    return grouped_auc(rows)
