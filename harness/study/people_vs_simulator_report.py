"""The people-and-simulator section of ``deskbench compare``: terminal lines and the HTML section
of a :func:`harness.study.people_vs_simulator.side_by_side` result."""
from __future__ import annotations

import html
from typing import Any, Mapping

from harness.study.html_report import _table, _text_table, fmt

HEADERS = ["figure", "people", "simulator", "people (shared)", "simulator (shared)",
           "difference", "95% CI", "tasks"]


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def _interval(row: Mapping[str, Any]) -> str:
    if row["low"] is None:
        return "-"
    return f"[{_signed(row['low'])}, {_signed(row['high'])}]"


def _rows(result: Mapping[str, Any]) -> list[list[str]]:
    return [[r["label"], fmt(r["people"]), fmt(r["simulator"]), fmt(r["people_shared"]),
             fmt(r["simulator_shared"]), _signed(r["difference"]), _interval(r), str(r["tasks"])]
            for r in result["figures"]]


def _title(result: Mapping[str, Any]) -> str:
    return (f"People and the simulator side by side: {result['people']['label']} (people) vs "
            f"{result['simulator']['label']} (simulator)")


def _overlap(result: Mapping[str, Any]) -> list[str]:
    """The task set, the overlap and how the differences are made, as sentences."""
    p, s = result["people"], result["simulator"]
    ts = p["task_set"]
    sha = f"sha256 {ts['sha256'][:12]}" if ts["sha256"] else "sha256 not recorded"
    only_p, only_s = result["only_people"], result["only_simulator"]

    def some(ids):
        return f" ({', '.join(ids[:5])}{', ...' if len(ids) > 5 else ''})" if ids else ""
    lines = [f"Task set '{ts['name']}' ({sha}) on both sides.",
             f"Tasks: {len(result['shared_tasks'])} played by both, {len(only_p)} only by people{some(only_p)}, "
             f"{len(only_s)} only by the simulator{some(only_s)}.",
             f"Conversations: people {p['conversations']} on {p['tasks']} tasks, simulator "
             f"{s['conversations']} on {s['tasks']} tasks; on the shared tasks {result['shared_conversations']['people']} "
             f"and {result['shared_conversations']['simulator']}."]
    if result["sentence"]:
        lines.append(result["sentence"])
    else:
        lines.append(f"Difference = people - simulator over the shared tasks: each task's mean over its "
                     f"conversations, paired by task; 95% CI: {result['resamples']:,} bootstrap resamples "
                     f"of tasks. Columns people and simulator: all their conversations; (shared): the mean of task means "
                     f"over the tasks both played.")
    return lines


def text_lines(result: Mapping[str, Any]) -> list[str]:
    """The section for the terminal: title, task sets and overlap, the table, the notes."""
    lines = [_title(result), ""]
    if result["mismatch"]:
        return lines + [result["mismatch"]]
    lines += _overlap(result) + [""] + _text_table(HEADERS, _rows(result)) + [""]
    lines += [f"- {n}" for n in result["notes"]]
    return lines


def html_section(result: Mapping[str, Any]) -> str:
    """The section for ``report.html`` (the same content as :func:`text_lines`)."""
    parts = [f"<h2>{html.escape(_title(result))}</h2>"]
    if result["mismatch"]:
        return parts[0] + f'<p class="err">{html.escape(result["mismatch"])}</p>'
    parts += [f"<p>{html.escape(line)}</p>" for line in _overlap(result)]
    parts.append(_table(HEADERS, _rows(result)))
    parts.append('<ul class="note">' + "".join(f"<li>{html.escape(n)}</li>" for n in result["notes"]) + "</ul>")
    return "\n".join(parts)
