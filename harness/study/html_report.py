"""Comparison report across SelfScore runs: a self-contained HTML file and a terminal summary.

Input is plain data: run name -> per-interaction figure dicts (as ``StoreReader.scores(run_id)``
rows hold them under ``figures``), plus optional results of
:func:`harness.study.judge_statistics.judge_comparison`,
:func:`harness.study.judge_statistics.judge_reliability` and
:func:`harness.study.statistics.weight_sensitivity`. The HTML uses inline CSS only and no scripts; its
PNG figures lie in ``report_files/`` beside it (or are embedded as data URIs with
``embed_images=True``), so it opens offline.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.selfscore.scoring import summarize
from harness.study.report_plots import comparison_boxplots_png, pass_k_png, run_distributions_png
from harness.study.statistics import TUKEY_COLUMNS, compare_runs
from harness.study.trials import pass_k_figures

Runs = Mapping[str, Sequence[Mapping[str, Any]]]

_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 8px;
text-align:right}th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
img{max-width:100%;border:1px solid #eee}.note{color:#666;font-size:90%}.err{color:#a00}"""


def fmt(value: Any, digits: int = 2) -> str:
    """A value for a table cell: floats rounded, p-values kept readable, None as n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value != value:
            return "nan"
        return f"{value:.{digits}f}" if abs(value) >= 10 ** -digits or value == 0 else f"{value:.3g}"
    return str(value)


def _p(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _slug(name: str, index: int) -> str:
    return f"{index:02d}_" + (re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "run")


def _img(path: Path, base: Path, alt: str, embed: bool) -> str:
    src = ("data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
           if embed else path.relative_to(base).as_posix())
    return f'<p><img src="{html.escape(src)}" alt="{html.escape(alt)}"></p>'


def summary_rows(runs: Runs, comparison: Mapping[str, Any]) -> list[list[str]]:
    """Rows of the run table: n, mean metric with its CI, and the other run-level means."""
    rows = []
    for name, figures in runs.items():
        ci, s = comparison["summary"][name], summarize(figures)
        interval = (f"[{fmt(ci['low'])}, {fmt(ci['high'])}]" if ci["low"] is not None
                    else ci["reason"])
        rows.append([name, s["interactions"], ci["n"], ci["excluded"], fmt(ci["mean"]), interval,
                     fmt(s["mean_weighted_complexity"]), fmt(s["mean_avg_user_helpfulness"]),
                     fmt(s["mean_avg_agent_helpfulness"]), fmt(s["mean_quality"]),
                     fmt(s["solved_rate"])])
    return rows


def _summary_headers(comparison: Mapping[str, Any]) -> list[str]:
    level = next(iter(comparison["summary"].values()))["confidence"]
    return ["run", "interactions", "n", "missing", f"mean {comparison['metric']}",
            f"{level:.0%} bootstrap CI", "complexity", "user h.", "agent h.", "quality", "solved"]


def _anova_line(result: Mapping[str, Any]) -> str:
    if "error" in result:
        return f"not computed: {result['error']}"
    return (f"F({result['df_between']}, {result['df_within']}) = {fmt(result['F'], 3)}, "
            f"p = {_p(result['p'])}" + (f" ({result['note']})" if result.get("note") else ""))


def _tukey_rows(tukey: Any) -> list[list[str]]:
    return [[r["group1"], r["group2"], fmt(r["meandiff"], 3), _p(r["p-adj"]), fmt(r["lower"], 3),
             fmt(r["upper"], 3), fmt(r["reject"])] for r in tukey]


def _mw_rows(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [[r["metric"], fmt(r["U"], 1), _p(r["p"]), r["n_a"], r["n_b"],
             r["excluded_a"] + r["excluded_b"], r.get("error", "")] for r in rows]


def _judge_html(jc: Mapping[str, Any]) -> str:
    rows = [[j, jc["n"][j], jc["excluded"][j], fmt(jc["means_complete"][j])] for j in jc["judges"]]
    rm = jc["rm_anova"]
    rm_line = (f"not computed: {rm['error']}" if "F" not in rm else
               f"F({fmt(rm['df_num'], 0)}, {fmt(rm['df_den'], 0)}) = {fmt(rm['F'], 3)}, "
               f"p = {_p(rm['p'])} over {rm['n_items']} items scored by every judge")
    alpha = (fmt(jc["krippendorff_alpha"], 3) if jc["krippendorff_alpha"] is not None
             else f"n/a ({jc['alpha_error']})")
    return ("<h2>Judge agreement</h2>"
            f"<p>{jc['items']} items, {jc['complete_items']} scored by every judge.</p>"
            + _table(["judge", "scored", "missing", "mean (complete items)"], rows)
            + f"<p>Repeated-measures ANOVA (judge within item): {html.escape(rm_line)}</p>"
            f"<p>One-way ANOVA (items treated as independent, as the paper): "
            f"{html.escape(_anova_line(jc['oneway_anova']))}</p>"
            f"<p>Krippendorff's alpha (interval): {html.escape(alpha)}</p>")


def _reliability_html(rel: Mapping[str, Any], max_rows: int = 200) -> str:
    ci = rel["ci"]
    interval = f"[{fmt(ci['low'], 3)}, {fmt(ci['high'], 3)}]" if ci["low"] is not None else ci["reason"]
    items = list(rel["per_item"].items())
    rows = [[k, v["n"], v["excluded"], fmt(v["mean"]), fmt(v["sd"], 3)] for k, v in items[:max_rows]]
    more = f'<p class="note">{len(items) - max_rows} more items not shown.</p>' if len(items) > max_rows else ""
    return ("<h2>Repeat-judging reliability</h2>"
            f"<p>Mean per-item SD {fmt(rel['mean_sd'], 3)} over {rel['n_items']} items "
            f"({ci['confidence']:.0%} CI {html.escape(str(interval))}); "
            f"{len(rel['excluded_items'])} items with fewer than 2 judgments excluded, "
            f"{rel['excluded_values']} missing judgments.</p>"
            + _table(["item", "judgments", "missing", "mean", "SD"], rows) + more)


def _sensitivity_html(sens: Mapping[str, Any]) -> str:
    runs = list(sens["baseline"]["means"])
    rows = [[", ".join(fmt(w) for w in r["weights"]) + (" (paper)" if r is sens["baseline"] else ""),
             *(fmt(r["means"][n]) for n in runs), " > ".join(r["ranking"]), fmt(r["ranking_changed"])]
            for r in [sens["baseline"], *sens["rows"]]]
    return ("<h2>Complexity-weight sensitivity</h2>"
            + _table(["weights (CT, EH, TK)", *runs, "ranking", "changed"], rows))


def write_html_report(runs: Runs, out_dir: Path, *, title: str = "SelfScore comparison",
                      comparison: Mapping[str, Any] | None = None,
                      judge_comparison: Mapping[str, Any] | None = None,
                      reliability: Mapping[str, Any] | None = None,
                      sensitivity: Mapping[str, Any] | None = None,
                      noise: Mapping[str, Any] | None = None, warnings: Sequence[str] = (),
                      sections: Sequence[str] = (),
                      embed_images: bool = False, seed: int | None = 0,
                      n_resamples: int = 10000) -> Path:
    """Write ``report.html`` (and ``report_files/*.png``) into ``out_dir``.

    Args:
        runs: run name -> per-interaction figure dicts; one run gives its distributions only.
        out_dir: folder for the report (created).
        title: page title.
        comparison: a precomputed :func:`harness.study.statistics.compare_runs` result; computed
            here (final score, with ``seed`` and ``n_resamples``) when None.
        judge_comparison: optional :func:`harness.study.judge_statistics.judge_comparison` result.
        reliability: optional :func:`harness.study.judge_statistics.judge_reliability` result.
        sensitivity: optional :func:`harness.study.statistics.weight_sensitivity` result.
        noise: optional :func:`harness.study.noise.compare_trials` result (the noise floor over
            trials, with a pass^k plot when a run has several trials).
        sections: HTML sections made elsewhere, added at the end (people and the simulator
            side by side, :mod:`harness.study.people_vs_simulator_report`).
        warnings: lines shown under the runs' table (the simulator-fault warnings of
            ``harness.study.fault_report.fault_warnings``).
        embed_images: embed PNGs as data URIs (a single file) instead of linking them.

    Returns:
        The path of the HTML file.

    Raises:
        ValueError: ``runs`` is empty.
    """
    if not runs:
        raise ValueError("no runs to report")
    out_dir = Path(out_dir)
    files = out_dir / "report_files"
    files.mkdir(parents=True, exist_ok=True)
    comparison = comparison or compare_runs(runs, seed=seed, n_resamples=n_resamples)
    parts = [f"<h1>{html.escape(title)}</h1>", "<h2>Runs</h2>",
             _table(_summary_headers(comparison), summary_rows(runs, comparison)),
             '<p class="note">Missing values (failed judgments) are excluded and counted, never '
             "imputed. Intervals: bootstrap of the mean "
             f"({html.escape(next(iter(comparison['summary'].values()))['method'])}).</p>",
             *(f'<p class="err">{html.escape(w)}</p>' for w in warnings)]
    if len(runs) >= 2:
        parts += [f"<h2>One-way ANOVA on {html.escape(comparison['metric'])}</h2>",
                  f"<p>{html.escape(_anova_line(comparison['anova']))}</p>", "<h2>Tukey HSD</h2>"]
        tukey = comparison["tukey"]
        parts.append(f'<p class="err">not computed: {html.escape(tukey["error"])}</p>'
                     if isinstance(tukey, Mapping) else _table(TUKEY_COLUMNS, _tukey_rows(tukey)))
        parts.append("<h2>Mann-Whitney U (two-sided)</h2>")
        for pair in comparison["mann_whitney"]:
            parts += [f"<h3>{html.escape(pair['run_a'])} vs {html.escape(pair['run_b'])}</h3>",
                      _table(["metric", "U", "p", "n a", "n b", "missing", "note"],
                             _mw_rows(pair["rows"]))]
        box = comparison_boxplots_png(runs, files / "comparison_boxplots.png")
        parts += ["<h2>Distributions side by side</h2>", _img(box, out_dir, "box plots", embed_images)]
    parts.append("<h2>Per-run distributions</h2>")
    for i, (name, figures) in enumerate(runs.items()):
        png = run_distributions_png(name, figures, files / f"{_slug(name, i)}.png")
        parts += [f"<h3>{html.escape(name)}</h3>", _img(png, out_dir, name, embed_images)]
    if judge_comparison:
        parts.append(_judge_html(judge_comparison))
    if reliability:
        parts.append(_reliability_html(reliability))
    if sensitivity:
        parts.append(_sensitivity_html(sensitivity))
    if noise:
        parts += _noise_html(runs, noise, files, out_dir, embed_images)
    parts += list(sections)
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>'
            f"{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")
    path = out_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def _noise_html(runs: Runs, noise: Mapping[str, Any], files: Path, out_dir: Path,
                embed_images: bool) -> list[str]:
    """The noise-floor section: the paired differences with their verdicts, and pass^k against k."""
    parts = ["<h2>Trials and the noise floor</h2>"]
    if noise.get("note"):
        parts.append(f'<p class="note">{html.escape(noise["note"])}</p>')
    for pair in noise["pairs"]:
        rows = [[k, _num(f["difference"]), f"[{_num(f['low'])}, {_num(f['high'])}]",
                 _num(f["floor_a"]), _num(f["floor_b"]), f["verdict"]]
                for k, f in pair["figures"].items() if f["difference"] is not None]
        parts += [f"<h3>{html.escape(pair['a'])} - {html.escape(pair['b'])} ({pair['tasks']} paired tasks)</h3>",
                  _table(["figure", "difference", "95% CI", "noise floor a", "noise floor b", "verdict"], rows)]
    curves = {n: pass_k_figures(f) for n, f in runs.items() if noise["trials"].get(n, 0) > 1}
    if curves:
        png = pass_k_png(curves, files / "pass_k.png")
        parts += ["<h3>pass^k against k</h3>", _img(png, out_dir, "pass^k", embed_images)]
    return parts


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:+.3f}" if v < 0 else f"{v:.3f}"


def _text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1) -> list[str]:
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            .rstrip() for r in cells]


def text_summary(runs: Runs, comparison: Mapping[str, Any] | None = None, seed: int | None = 0,
                 n_resamples: int = 10000) -> str:
    """Plain-text summary for the terminal: means with CIs, ANOVA F and p, Tukey table.

    Args:
        runs: run name -> per-interaction figure dicts.
        comparison: a precomputed :func:`harness.study.statistics.compare_runs` result, or None.
        seed, n_resamples: bootstrap settings when ``comparison`` is computed here.
    """
    comparison = comparison or compare_runs(runs, seed=seed, n_resamples=n_resamples)
    rows = [r[:6] for r in summary_rows(runs, comparison)]
    lines = _text_table(_summary_headers(comparison)[:6], rows)
    if len(runs) >= 2:
        lines += ["", f"One-way ANOVA on {comparison['metric']}: {_anova_line(comparison['anova'])}",
                  "", "Tukey HSD:"]
        tukey = comparison["tukey"]
        lines += ([f"  not computed: {tukey['error']}"] if isinstance(tukey, Mapping)
                  else _text_table(TUKEY_COLUMNS, _tukey_rows(tukey), left=2))
    return "\n".join(lines) + "\n"
