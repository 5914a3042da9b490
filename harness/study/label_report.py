"""The agreement tables of :func:`harness.study.label_agreement.agreement_summary` as Markdown
(``deskbench agreement``) and as one line (``deskbench sanity``).

Every interval says how it was made: conversations resampled as clusters (all turns of a
conversation together), the number of resamples, and how many of them were undefined (no
variation left) and so left out of the percentiles.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.study.label_agreement import GRADED_KINDS

SOURCE_NAMES = {"maintainers": "maintainers' labels (written while building the judges)",
                "people": "people's verdicts (the asker's own words in the thread)"}


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.2f}"


def _ci(ci: Sequence[float | None], fmt=_num) -> str:
    return "n/a" if ci[0] is None else f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def _short(text: Any, n: int = 110) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _undefined(made: Mapping[str, Any] | None) -> str:
    """``, k undefined`` for the statistics with resamples that had no value."""
    if not made:
        return ""
    bad = {k: v for k, v in (made.get("undefined") or {}).items() if v}
    return "" if not bad else " (undefined resamples: " + ", ".join(f"{k} {v}" for k, v in bad.items()) + ")"


def _solved_lines(s: Mapping[str, Any]) -> list[str]:
    lines = ["### Solved (per conversation)", "",
             "| human label | n | judge agrees | accuracy | 95% CI (Wilson) |", "|---|---|---|---|---|"]
    for name in ("yes", "no"):
        c = s["classes"][name]
        lines.append(f"| {'solved' if name == 'yes' else 'not solved'} | {c['n']} | {c['right']} | "
                     f"{_pct(c['accuracy'])} | {_ci(c['ci'], _pct)} |")
    made = s.get("kappa_bootstrap") or {}
    undefined = f", {made['undefined']} of {made['resamples']} resamples undefined" if made.get("undefined") else ""
    lines += ["", f"Accuracy {_pct(s['accuracy'])}, Cohen's kappa {_num(s['cohen_kappa'])} "
              f"{_ci(s.get('kappa_ci', [None]))} (conversations resampled{undefined}), failed {s['failed']}. "
              "Confusion: " + ", ".join(f"{k}: {v}" for k, v in s["confusion"].items()), ""]
    return lines


def _graded_lines(kind: str, g: Mapping[str, Any]) -> list[str]:
    lines = [f"### {kind.replace('_', ' ').capitalize()} (per turn)", "",
             "| scores | n (conversations) | Spearman rho [95% CI] | Kendall tau [95% CI] | weighted kappa [95% CI] (bins) |",
             "|---|---|---|---|---|"]
    notes = []
    for name in ("aided", "judge_only"):
        r = g[name]
        made = r.get("bootstrap") or {}
        scale = f"{r['bins']} bins, {'scale' if r.get('scale_from') == 'declared' else 'labels seen'}" if r["bins"] else "-"
        lines.append(f"| {'stored (after aids)' if name == 'aided' else 'judge only'} | {r['n']} ({made.get('clusters', '-')}) | "
                     f"{_num(r['spearman_rho'])} {_ci(r['spearman_ci'])} | {_num(r['kendall_tau'])} "
                     f"{_ci(r['kendall_ci'])} | {_num(r['weighted_kappa'])} {_ci(r.get('kappa_ci', [None]))} ({scale}) |")
        if _undefined(made):
            notes.append(f"{name}{_undefined(made)}")
    lines += ["", f"Scores the judge used: {g['scores_used']}; aids moved {g['moved']} of them."
              + (" " + "; ".join(notes) + "." if notes else ""), ""]
    return lines


def _source_lines(summary: Mapping[str, Any]) -> list[str]:
    """One row per label source: solved per class, kappa, agent helpfulness rho."""
    by_source = summary.get("by_source") or {}
    if not by_source:
        return []
    lines = ["### By label source", "", f"Labels per source: {summary.get('label_sources')}.", "",
             "| labels | conversations | solved right | not solved right | kappa [95% CI] | agent helpfulness rho [95% CI] (turns) |",
             "|---|---|---|---|---|---|"]
    for source, part in by_source.items():
        s, a = part["solved"], part["agent_helpfulness"]["aided"]
        yes, no = s["classes"]["yes"], s["classes"]["no"]
        lines.append(f"| {SOURCE_NAMES.get(source, source)} | {part['conversations']} | {yes['right']}/{yes['n']} "
                     f"{_ci(yes['ci'], _pct)} | {no['right']}/{no['n']} {_ci(no['ci'], _pct)} | "
                     f"{_num(s['cohen_kappa'])} {_ci(s.get('kappa_ci', [None]))} | "
                     f"{_num(a['spearman_rho'])} {_ci(a['spearman_ci'])} ({a['n']}) |")
    return lines + [""]


def agreement_markdown(summary: Mapping[str, Any], title: str) -> list[str]:
    """The agreement tables of :func:`harness.study.label_agreement.agreement_summary` as Markdown lines."""
    lines = [f"## {title}", "", f"{summary['conversations']} conversations (split {summary['split']}). "
             "Intervals: percentile bootstrap, 2,000 resamples of conversations (all turns of a conversation "
             "together), seeded; Wilson intervals for the per-class accuracies.", "",
             *_solved_lines(summary["solved"])]
    skipped = [kind for kind in GRADED_KINDS if not summary[kind]["aided"]["n"] and not summary[kind]["judge_only"]["n"]]
    for kind in GRADED_KINDS:
        if kind not in skipped:
            lines += _graded_lines(kind, summary[kind])
    if skipped:
        lines += [f"Not judged here (not in --kinds, or no such labels): {', '.join(skipped)}.", ""]
    conversation = summary["conversation"].items()
    if any(f["with_quality"]["n"] or f["with_solved"]["n"] for _, f in conversation):
        lines += ["### Per conversation: each figure against the labels", "",
                  "| figure | rho with labels.quality [95% CI] (n) | rho with labels.solved [95% CI] (n) |", "|---|---|---|"]
        for figure, f in conversation:
            q, v = f["with_quality"], f["with_solved"]
            lines.append(f"| {figure} | {_num(q['spearman_rho'])} {_ci(q['spearman_ci'])} ({q['n']}) | "
                         f"{_num(v['spearman_rho'])} {_ci(v['spearman_ci'])} ({v['n']}) |")
        lines.append("")
    lines += _source_lines(summary)
    lines += ["### Worst disagreements", ""]
    for kind, worst in summary["worst"].items():
        for w in worst:
            lines.append(f"- {kind} `{w['id']}`" + (f" turn {w['turn']}" if "turn" in w else "")
                         + f": human {w['human']}, judge {w['judge']}. Q: {_short(w['question'], 80)} "
                         f"| text: {_short(w['text'])}" + (f" | label note: {_short(w['note'], 120)}" if w.get("note") else ""))
    return lines


def agreement_line(summary: Mapping[str, Any]) -> str:
    """One line: solved accuracy per class and, where the part has helpfulness labels, turn-level
    agent helpfulness rho (``deskbench sanity``)."""
    s = summary["solved"]["classes"]
    line = (f"agreement with human labels ({summary['conversations']} held-out conversations): solved "
            f"{s['yes']['right']}/{s['yes']['n']} solved, {s['no']['right']}/{s['no']['n']} not solved")
    helpful = (summary.get("agent_helpfulness") or {}).get("aided") or {}
    if helpful.get("n"):
        line += f"; agent helpfulness rho {_num(helpful['spearman_rho'])} (n {helpful['n']})"
    return line
