"""harness.study.html_report: a report from three synthetic runs, its tables, figures and text summary."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from harness.selfscore.scoring import score_interaction
from harness.study.html_report import text_summary, write_html_report
from harness.study.judge_statistics import judge_comparison, judge_reliability
from harness.study.statistics import TUKEY_COLUMNS, compare_runs, weight_sensitivity

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(seed: int, agent_bias: int, n: int = 20) -> list[dict]:
    """Per-interaction figures as score_interaction makes them, with a failed judgment or two."""
    rnd = random.Random(seed)
    out = []
    for k in range(n):
        complexity = {"critical_thinking": rnd.randint(2, 8), "error_handling": rnd.randint(2, 8),
                      "topic_knowledge": rnd.randint(2, 8)}
        turns = [{"user_helpfulness": rnd.randint(3, 9),
                  "agent_helpfulness": min(10, rnd.randint(3, 8) + agent_bias), "solved": t == 2}
                 for t in range(rnd.randint(1, 4))]
        if k == 0:
            complexity = None  # failed complexity judgment: no final score
        figs = score_interaction(complexity, turns, "solved")
        figs["task_id"] = f"t{k}"
        out.append(figs)
    return out


@pytest.fixture
def runs() -> dict[str, list[dict]]:
    return {"llama_x_x (plain)": _run(1, 0), "llama_x_x <rag>": _run(2, 2), "human_x_x": _run(3, -1)}


def _img_sources(page: str) -> list[str]:
    return re.findall(r'<img src="([^"]+)"', page)


def test_report_from_three_runs(tmp_path: Path, runs):
    path = write_html_report(runs, tmp_path / "out", n_resamples=500)
    assert path == tmp_path / "out" / "report.html" and path.exists()
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    for heading in ("One-way ANOVA on final_score", "Tukey HSD", "Mann-Whitney U", "bootstrap CI",
                    "Per-run distributions", "Distributions side by side"):
        assert heading in page
    assert "".join(f"<th>{c}</th>" for c in TUKEY_COLUMNS) in page
    assert page.count("<h3>") == 3 + 3  # three Mann-Whitney pairs, three runs
    assert "llama_x_x &lt;rag&gt;" in page and "<rag>" not in page  # names escaped
    # self-contained: no scripts, no external resources
    assert "<script" not in page and "http://" not in page and "https://" not in page
    sources = _img_sources(page)
    assert len(sources) == 4  # box plots + one distribution figure per run
    for src in sources:
        png = path.parent / src
        assert png.exists() and png.read_bytes().startswith(PNG_MAGIC)
        assert png.parent == path.parent / "report_files"


def test_report_tables_match_statistics(tmp_path: Path, runs):
    comparison = compare_runs(runs, n_resamples=500)
    page = write_html_report(runs, tmp_path, comparison=comparison).read_text(encoding="utf-8")
    anova = comparison["anova"]
    assert f"F({anova['df_between']}, {anova['df_within']}) = {anova['F']:.3f}" in page
    assert f"p = {anova['p']:.4g}" in page
    for name, ci in comparison["summary"].items():
        assert ci["excluded"] == 1  # the failed complexity judgment
        assert f"[{ci['low']:.2f}, {ci['high']:.2f}]" in page
    for row in comparison["tukey"]:
        assert f"<td>{row['meandiff']:.3f}</td>" in page


def test_report_optional_sections_and_embedding(tmp_path: Path, runs):
    judges = judge_comparison({"judge_a": [20.0, 25.0, 30.0, 22.0, None],
                               "judge_b": [21.0, 24.0, 33.0, 20.0, 27.0]})
    reliability = judge_reliability({"t1": [5, 6, 5], "t2": [7, 7, 8], "t3": [4]}, n_resamples=200)
    sensitivity = weight_sensitivity(runs, [(0.2, 0.7, 0.1), (1 / 3, 1 / 3, 1 / 3)])
    path = write_html_report(runs, tmp_path, title="Judges & weights", judge_comparison=judges,
                             reliability=reliability, sensitivity=sensitivity,
                             embed_images=True, n_resamples=300)
    page = path.read_text(encoding="utf-8")
    assert "<title>Judges &amp; weights</title>" in page
    for text in ("Judge agreement", "Repeated-measures ANOVA", "Krippendorff's alpha (interval)",
                 "Repeat-judging reliability", "Complexity-weight sensitivity", "(paper)"):
        assert text in page
    sources = _img_sources(page)
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)


def test_single_run_report_and_bad_input(tmp_path: Path, runs):
    name = "llama_x_x (plain)"
    page = write_html_report({name: runs[name]}, tmp_path, n_resamples=200).read_text(encoding="utf-8")
    assert "Tukey HSD" not in page and "Per-run distributions" in page
    assert len(_img_sources(page)) == 1
    with pytest.raises(ValueError, match="no runs"):
        write_html_report({}, tmp_path)


def test_report_survives_a_run_without_scores(tmp_path: Path, runs):
    runs = dict(runs, empty=[{"final_score": None, "quality": None}])
    page = write_html_report(runs, tmp_path, n_resamples=200).read_text(encoding="utf-8")
    assert "not computed: group &#x27;empty&#x27; has no usable values" in page
    assert all((tmp_path / s).read_bytes().startswith(PNG_MAGIC) for s in _img_sources(page))


def test_text_summary(runs):
    comparison = compare_runs(runs, n_resamples=500)
    text = text_summary(runs, comparison)
    anova = comparison["anova"]
    assert f"F(2, {anova['df_within']}) = {anova['F']:.3f}, p = {anova['p']:.4g}" in text
    header = next(line for line in text.splitlines() if line.startswith("group1"))
    assert header.split() == list(TUKEY_COLUMNS)
    assert len([line for line in text.splitlines() if line.endswith((" yes", " no"))]) == 3
    for name, ci in comparison["summary"].items():
        assert name in text and f"{ci['mean']:.2f}" in text
    assert "Tukey" not in text_summary({"one": runs["human_x_x"]}, n_resamples=200)
