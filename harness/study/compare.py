"""``deskbench compare``: statistics across stored runs, from the store only (no LLM calls).

Runs are compared on their per-interaction figures. Runs that share conversations (a run and
its re-judged copies, see ``harness.selfscore.rejudge``) also give a judge comparison (per-turn agent
helpfulness of the same turns under different judge models) and, when the same judge model
judged them several times, the judge's reliability (per-item standard deviation).

When one run's user is people (a live study) and another's the simulated user, the two are also
set side by side task by task (:mod:`harness.study.people_vs_simulator`): printed after the usual
comparison, added to the HTML report, and written to ``people_vs_simulator.json``. A study id
names the study's runs (``live-<study>-<mode>-<agent>``). A warning says when two runs differ
more in simulator faults than in their solved rate or mean final score
(``harness.study.fault_report.fault_warnings``).
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from harness.study.fault_report import fault_figures, fault_warnings
from harness.study.html_report import text_summary, write_html_report
from harness.study.judge_statistics import judge_comparison, judge_reliability
from harness.study.noise import compare_trials, noise_lines
from harness.study.people_vs_simulator import pairs, same_task_set, side_by_side, study_runs, task_set
from harness.study.people_vs_simulator_report import html_section, text_lines
from harness.study.statistics import compare_runs, weight_sensitivity
from store import StoreError, StoreReader

WEIGHT_VECTORS = [(0.5, 0.4, 0.1), (1 / 3, 1 / 3, 1 / 3), (0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)]


def _labels(runs: list[dict]) -> dict[str, str]:
    """Run id -> a readable unique label (the run name, with the id when names repeat)."""
    counts: dict[str, int] = defaultdict(int)
    for r in runs:
        counts[r["name"]] += 1
    return {r["id"]: r["name"] if counts[r["name"]] == 1 else r["id"] for r in runs}


def turn_scores(reader: StoreReader, run_id: str, key: str = "agent_helpfulness") -> dict[str, Any]:
    """``<conversation>#<turn>`` -> the turn's score, for items shared between runs of one
    conversation set. A conversation is named by its interaction id without ``<run id>:`` (the
    task id in a batch run; a re-judged copy keeps its source's name), so that several
    conversations on one task (live sessions) stay apart."""
    out = {}
    prefix = f"{run_id}:"
    for i in reader.interactions(run_id):
        name = i["id"][len(prefix):] if i["id"].startswith(prefix) else i["id"]
        for t in reader.turns(i["id"]):
            out[f"{name}#{t['turn_index']}"] = t[key]
    return out


def resolve_runs(reader: StoreReader, refs: Sequence[str]) -> list[dict]:
    """The runs ``refs`` name: run ids or names, or study ids (each the study's runs).

    Raises:
        StoreError: a ref that names no run and no study, or a study without conversations.
    """
    runs: dict[str, dict] = {}
    for ref in refs:
        try:
            found = [reader.run(ref)]
        except StoreError:
            ids = study_runs(reader, ref)
            if ids is None:
                raise
            if not ids:
                raise StoreError(f"Study {ref} has no conversations yet.") from None
            found = [reader.run(i) for i in ids]
        runs.update((r["id"], r) for r in found)
    return list(runs.values())


def _fault_warnings(reader: StoreReader, runs: list[dict], labels: dict[str, str]) -> list[str]:
    """``fault_report.fault_warnings`` over the runs: their shares of fault-touched conversations
    against their solved rates and mean final scores."""
    found = {labels[r["id"]]: fault_figures(reader, r["id"]) for r in runs}
    return fault_warnings({n: f["share"] for n, f in found.items()}, {n: f["all"] for n, f in found.items()})


def compare(reader: StoreReader, refs: Sequence[str], out_dir: Path,
            weight_vectors: Sequence[tuple[float, float, float]] = WEIGHT_VECTORS) -> tuple[Path, str]:
    """Write the comparison report for ``refs`` (run ids or names) and return it with a text summary.

    Raises:
        StoreError: a run that is not in the store.
        ValueError: a run without any scored interaction.
    """
    runs = resolve_runs(reader, refs)
    labels = _labels(runs)
    figures = {labels[r["id"]]: [s["figures"] for s in reader.scores(r["id"])] for r in runs}
    empty = [name for name, f in figures.items() if not f]
    if empty:
        raise ValueError(f"No scored interactions in {', '.join(empty)}; finish it with "
                         "`deskbench run --resume RUN` or `deskbench rescore RUN` first.")
    comparison = compare_runs(figures) if len(figures) > 1 else None

    by_conversations: dict[str, list[dict]] = defaultdict(list)
    for r in runs:
        by_conversations[r.get("source_run") or r["id"]].append(r)
    judge_cmp = reliability = None
    for group in by_conversations.values():
        judges = defaultdict(list)
        for r in group:
            judges[r["models"].get("judge")].append(r)
        if len(judges) > 1 and judge_cmp is None:
            judge_cmp = judge_comparison({f"{model} ({labels[rs[0]['id']]})": turn_scores(reader, rs[0]["id"])
                                          for model, rs in judges.items()})
        repeated = [rs for rs in judges.values() if len(rs) > 1]
        if repeated and reliability is None:
            items: dict[str, list] = defaultdict(list)
            for r in repeated[0]:
                for item, score in turn_scores(reader, r["id"]).items():
                    items[item].append(score)
            reliability = judge_reliability(dict(items))
    sensitivity = weight_sensitivity(figures, list(weight_vectors)) if len(figures) > 1 else None
    # tasks are paired by id: runs over different task sets share ids by accident, not tasks
    task_sets = different_task_sets(reader, runs)
    noise = compare_trials(figures) if len(figures) > 1 and not task_sets else None
    warnings = _fault_warnings(reader, runs, labels) if len(runs) > 1 else []
    people = [side_by_side(reader, p, s, labels) for p, s in pairs(reader, runs)]
    path = write_html_report(figures, out_dir, comparison=comparison, judge_comparison=judge_cmp,
                             reliability=reliability, sensitivity=sensitivity, noise=noise,
                             sections=[html_section(p) for p in people], warnings=warnings,
                             title="SelfScore comparison: " + ", ".join(figures))
    summary = text_summary(figures, comparison)
    if warnings:
        summary += "\n" + "\n".join(warnings) + "\n"
    if noise:
        summary += "\n" + "\n".join(noise_lines(noise)) + "\n"
    elif task_sets:
        summary += ("\nNoise floor: not computed: the runs played different task sets ("
                    + ", ".join(task_sets) + "), so no task can be paired.\n")
    for section in people:
        summary += "\n" + "\n".join(text_lines(section)) + "\n"
    if people:
        (Path(out_dir) / "people_vs_simulator.json").write_text(json.dumps(people, indent=1), encoding="utf-8")
    return path, summary


def different_task_sets(reader: StoreReader, runs: list[dict]) -> list[str]:
    """The task sets of ``runs`` named (``'name' (sha256 ...)``) when they are not all one set
    (the same sha256; by name where a run did not record it), else an empty list."""
    sets = [task_set(reader, r) for r in runs]
    if all(same_task_set(sets[0], t) for t in sets[1:]):
        return []
    named = {f"'{t['name']}'" + (f" (sha256 {t['sha256'][:12]})" if t["sha256"] else "") for t in sets}
    return sorted(named)
