"""The simcheck summary (the ``--json`` file) and its printed table (docs/simcheck.md).

Every figure is given per user model and persona, and per part of the points: ``tune`` and the
frozen ``heldout`` part apart, never pooled (issue 42: the simulated user will be tuned on one
part and measured on the other).
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from harness.simcheck.acts import ACTS, act_of, acts_version, classifier_agreement, load_act_labels
from harness.simcheck.measures import Pair, act_measures, fact_measures, length_ratio, over_cooperation
from harness.simcheck.points import Point, split_digest
from harness.simcheck.style import style_auc

SHORT = {"fixed": "fix", "broken": "brk", "gives_requested": "req", "asks": "ask",
         "gives_unrequested": "unr", "closes": "cls", "leaves": "lv"}
EXAMPLES = 3


def pairs_of(points: Sequence[Point], records: Sequence[dict[str, Any]]) -> tuple[list[Pair], int]:
    """The pairs of the points whose simulated reply came back, and how many failed."""
    by_id = {r["id"]: r for r in records}
    pairs, failed = [], 0
    for p in points:
        r = by_id.get(p.id)
        if r is None or r.get("error"):
            failed += 1
            continue
        pairs.append(Pair(p, r.get("text"), act_of(p.real, p.helper), act_of(r.get("text"), p.helper)))
    return pairs, failed


def part_summary(pairs: Sequence[Pair], followups_of: dict[str, list[str]]) -> dict[str, Any]:
    """Every measure of one part's pairs."""
    return {"points": len(pairs), "threads": len({p.point.task_id for p in pairs}),
            "acts": act_measures(pairs), "over_cooperation": over_cooperation(pairs),
            "facts": fact_measures(pairs, followups_of), "length": length_ratio(pairs), "style": style_auc(pairs),
            "examples": [{"id": p.point.id, "helper": p.point.helper, "real": p.point.real, "sim": p.sim,
                          "real_act": p.real_act, "sim_act": p.sim_act} for p in pairs[:EXAMPLES]]}


def simcheck_summary(dataset: str, points: Sequence[Point], runs: dict[tuple[str, str], list[dict[str, Any]]],
                     followups_of: dict[str, list[str]], facts_mode: str, all_points: Sequence[Point],
                     split: str = "all") -> dict[str, Any]:
    """The whole summary: the points, the act classifier's agreement with the hand labels, and
    for each (user model, persona) of ``runs`` every measure per part (both parts unless
    ``split`` names one; a part without a point says so)."""
    parts = ["tune", "heldout"] if split == "all" else [split]
    labels = classifier_agreement(load_act_labels())
    groups = []
    for (model, persona), records in runs.items():
        pairs, failed = pairs_of(points, records)
        groups.append({"user_model": model, "persona": persona, "failed": failed,
                       "left": sum(p.sim is None for p in pairs),
                       "parts": {s: part_summary([p for p in pairs if p.point.split == s], followups_of)
                                 for s in parts}})
    return {"dataset": dataset, "facts": facts_mode, "points": len(points),
            "threads": len({p.task_id for p in points}),
            "parts": {s: sum(p.split == s for p in points) for s in parts},
            "heldout_sha256": split_digest([p for p in all_points if p.split == "heldout"]),
            "real_acts": {s: dict(Counter(act_of(p.real, p.helper) for p in points if p.split == s)) for s in parts},
            "act_classifier": {**{k: v for k, v in labels.items() if k != "disagreements"},
                               "version": acts_version()},
            "groups": groups}


def _ci(m: dict[str, Any], pct: bool = False) -> str:
    if m.get("value") is None:
        return "-"
    f = (lambda v: f"{100 * v:.0f}%") if pct else (lambda v: f"{v:.2f}")
    interval = f" [{f(m['low'])}, {f(m['high'])}]" if m.get("low") is not None else ""
    return f"{f(m['value'])}{interval}"


def _confusion(acts: dict[str, Any]) -> list[str]:
    used = [a for a in ACTS if any(acts["confusion"][a].values()) or any(acts["confusion"][r][a] for r in ACTS)]
    corner = "real \\ sim"
    lines = [f"    {corner:<17} " + " ".join(f"{SHORT[a]:>4}" for a in used)]
    for a in used:
        if any(acts["confusion"][a].values()):
            lines.append(f"    {a:<17} " + " ".join(f"{acts['confusion'][a][b]:>4}" for b in used))
    return lines


def part_lines(name: str, s: dict[str, Any]) -> list[str]:
    """The printed block of one part."""
    if not s["points"]:
        return [f"  {name}: no point in this selection"]
    oc, facts, style, length = s["over_cooperation"], s["facts"], s["style"], s["length"]
    top = ", ".join(f"{f['name']} {f['weight']:+.2f}" for f in style["features"][:4] if f["weight"] is not None)
    lines = [f"  {name}: {s['points']} points, {s['threads']} threads",
             f"    acts: same act {_ci(s['acts']['agreement'], True)}, kappa {_ci(s['acts']['kappa'])}",
             *_confusion(s["acts"]),
             f"    over-cooperation (sim fixed | real broken or asks, n={oc['over']['n']}): {_ci(oc['over'], True)}; "
             f"reverse (sim not fixed | real fixed, n={oc['reverse']['n']}): {_ci(oc['reverse'], True)}",
             f"    success reports: sim {_ci(oc['sim_fixed'], True)}, real {_ci(oc['real_fixed'], True)}"]
    for key, what in (("requested_given", f"asked (n={facts['asked_points']}): a fact or detail given"),
                      ("unasked_told", "not asked: a hidden fact told"), ("early", "a fact told before the real asker did"),
                      ("invented", "a detail nothing grounds")):
        lines.append(f"    facts, {what}: sim {_ci(facts['sim'][key], True)}, real {_ci(facts['real'][key], True)}")
    lines += [f"    facts the real reply gave that the sim gave too: {_ci(facts['real_facts_matched'], True)}",
              f"    length: sim/real words {_ci(length)} (mean {length['sim_mean']:.1f} vs {length['real_mean']:.1f})",
              f"    style AUC (sim vs real, {style.get('folds', '-')} thread-grouped folds): "
              f"{_ci({'value': style['auc'], 'low': style['low'], 'high': style['high']})}; strongest: {top or '-'}"]
    return lines


def simcheck_lines(summary: dict[str, Any]) -> list[str]:
    """The printed report of a summary."""
    ac = summary["act_classifier"]
    lines = [f"simcheck: {summary['dataset']}, {summary['points']} real reply points in {summary['threads']} threads "
             f"(" + ", ".join(f"{k} {v}" for k, v in summary["parts"].items()) + f"); facts: {summary['facts']}",
             f"held-out part sha256 {summary['heldout_sha256'][:16]}...",
             f"act classifier {ac['version']} vs {ac['n']} hand labels: accuracy {ac['accuracy']:.2f}, "
             f"kappa {ac['kappa']:.2f}"]
    for part, acts in summary["real_acts"].items():
        lines.append(f"real acts ({part}): " + ", ".join(f"{a} {acts[a]}" for a in ACTS if acts.get(a)))
    for g in summary["groups"]:
        lines += ["", f"user model {g['user_model']}, persona {g['persona']}"
                  + (f" ({g['failed']} points failed, left out)" if g["failed"] else "")
                  + (f"; the user left at {g['left']} points" if g["left"] else "")]
        for part, s in g["parts"].items():
            lines += part_lines(part, s)
    return lines
