"""Preprocessing quality: does the extractor restate questions and extract problems, not answers?

    .venv/bin/python tests/benchmarks/bench_preprocess.py [--part summary|problem|both]
        [--variant before|after|both] [--json now.json] [--reuse earlier.json]
        [--role extractor.base_url=... --role extractor.model=...]

Samples (fixed): 20 LFRQA technology questions (every 100th task) and the first messages of
20 shipped #ubuntu IRC threads (every 10th). For each, the summary (the complexity judge's
input) is printed with a verdict from :func:`harness.selfscore.preprocess.is_restatement`: phrased as
the user's question or request and free of answer patterns. For the first 10 of each sample,
the underlying problem is extracted both from the question and from the solution (the
reference answer; the helpers' messages of the IRC thread, as ``harness.tasks.datasets.task_solution``
joins them) and judged by :func:`harness.selfscore.preprocess.is_problem_statement`: one short statement
of the cause, not a fix, instructions or a question.

``before`` runs the prompts as they were before the guard (kept below, one call each);
``after`` runs ``harness.selfscore.preprocess.extract`` with the current prompts and its check-and-
regenerate-once guard. ``--reuse`` takes one variant's outputs from an earlier ``--json``
instead of calling the model again (e.g. ``--variant after --reuse before.json``). Calls are
sequential, at the role's settings (temperature 0). Not collected by pytest.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from time import perf_counter

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from langchain_core.messages import HumanMessage, SystemMessage

from harness.cli.common import role_overrides
from harness.compose import Runtime
from harness.config import load_config
from harness.selfscore.judges import escape_judged_text
from harness.selfscore.preprocess import (answer_signs, extract, is_problem_statement, is_restatement,
                                solution_signs)
from harness.tasks.datasets import load_dataset, task_solution
from harness.tasks.ubuntu_irc import import_ubuntu_irc

# --- the prompts before the guard (harness/selfscore/prompts.py at prompt version selfscore-p4) ---------
OLD_SUMMARY_SYSTEM = "You rewrite help-desk questions. You never answer them."
OLD_SUMMARY_PROMPT = (
    "Dumb this question down and summarize it in one or two sentence(s), written as the user's "
    "question. Do not answer it.\n<question>\n{question}\n</question>"
)
OLD_PROBLEM_SYSTEM = "You extract the problem a help-desk user has. You never solve it."
OLD_PROBLEM_PROMPT = (
    'Extract a problem statement from this post. For example, "The computer is not plugged in", '
    'or "The DNS servers are down". Respond with only the problem, not a solution.'
    "\n<post>\n{question}\n</post>"
)
OLD_PROBLEM_FROM_SOLUTION_PROMPT = (
    "A user asked a help desk the question below, and the solution below fixed it. Extract the "
    "underlying problem that the solution fixes: its cause, in one short sentence. For example, "
    '"The computer is not plugged in", or "The DNS servers are down". Respond with only the '
    "problem, not the solution."
    "\n<question>\n{question}\n</question>\n<solution>\n{solution}\n</solution>"
)

N_PER_SET, N_PROBLEMS_PER_SET = 20, 10


def samples() -> list[dict]:
    """The fixed sample: 20 LFRQA tasks (every 100th), 20 IRC threads (every 10th)."""
    lfrqa = load_dataset("lfrqa_technology").tasks[::100][:N_PER_SET]
    irc = import_ubuntu_irc().tasks[::10][:N_PER_SET]
    out = [{"id": t.id, "set": "lfrqa", "question": t.question,
            "solution": task_solution(t.reference_answer)} for t in lfrqa]
    out += [{"id": t["id"], "set": "irc", "question": t["question"],
             "solution": task_solution(None, t["agent_replies"])}
            for t in irc]
    for i, s in enumerate(out):
        s["problem_sample"] = i % N_PER_SET < N_PROBLEMS_PER_SET
    return out


def old_messages(kind: str, question: str, solution: str | None):
    if kind == "summary":
        system, template = OLD_SUMMARY_SYSTEM, OLD_SUMMARY_PROMPT
    elif solution:
        system, template = OLD_PROBLEM_SYSTEM, OLD_PROBLEM_FROM_SOLUTION_PROMPT
    else:
        system, template = OLD_PROBLEM_SYSTEM, OLD_PROBLEM_PROMPT
    return [SystemMessage(system), HumanMessage(template.format(
        question=escape_judged_text(question), solution=escape_judged_text(solution or "")))]


async def one(variant: str, kind: str, question: str, solution: str | None, client) -> dict:
    """One extraction: its text, raw attempts, call latencies and wall seconds."""
    started = perf_counter()
    if variant == "before":
        text, call = await client.complete(old_messages(kind, question, solution), f"extractor:{kind}")
        row = {"text": text.strip(), "attempts": [text], "calls_ms": [call.latency_ms]}
    else:
        result = await extract(kind, question, client, solution)
        row = {"text": result.text, "attempts": result.attempts, "first_signs": result.signs,
               "calls_ms": [c.latency_ms for c in result.calls]}
    row["seconds"] = perf_counter() - started
    return row


async def run_variant(variant: str, parts: set[str], items: list[dict], client, out: dict,
                      save=lambda: None) -> None:
    """Fill ``out`` with ``{sample id: {"summary": row, "problem_q": row, "problem_s": row}}``,
    calling ``save`` after each sample."""
    for n, s in enumerate(items, 1):
        rows = out.setdefault(s["id"], {})
        if "summary" in parts:
            rows["summary"] = await one(variant, "summary", s["question"], None, client)
        if "problem" in parts and s["problem_sample"]:
            rows["problem_q"] = await one(variant, "problem", s["question"], None, client)
            rows["problem_s"] = await one(variant, "problem", s["question"], s["solution"], client)
        print(f"  [{variant}] {n}/{len(items)} {s['id']}", file=sys.stderr, flush=True)
        save()


def clip(text: str, n: int = 110) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 3] + "..."


def verdict(kind: str, text: str) -> str:
    if kind == "summary":
        return "restated" if is_restatement(text) else f"NOT restated {answer_signs(text) or ['form']}"
    return "problem" if is_problem_statement(text) else f"NOT a problem {solution_signs(text)}"


def report(items: list[dict], results: dict[str, dict], variants: list[str]) -> dict:
    figures: dict = {}
    have = lambda v, sid, key: key in results.get(v, {}).get(sid, {})  # noqa: E731
    if any(have(v, s["id"], "summary") for v in variants for s in items):
        print("\n## Summaries\n")
        for s in items:
            print(f"- [{s['set']}] {s['id']}\n    Q: {clip(s['question'])}")
            for v in variants:
                if have(v, s["id"], "summary"):
                    r = results[v][s["id"]]["summary"]
                    again = " (regenerated)" if len(r["attempts"]) > 1 else ""
                    print(f"    {v:6}: {clip(r['text'], 200)}\n            -> {verdict('summary', r['text'])}{again}")
        for v in variants:
            rows = [(s, results[v][s["id"]]["summary"]) for s in items if have(v, s["id"], "summary")]
            for name, subset in (("all", rows), ("lfrqa", [r for r in rows if r[0]["set"] == "lfrqa"]),
                                 ("irc", [r for r in rows if r[0]["set"] == "irc"])):
                ok = sum(is_restatement(r["text"]) for _, r in subset)
                figures[f"summary_restated_{v}_{name}"] = [ok, len(subset)]
    if any(have(v, s["id"], "problem_q") for v in variants for s in items):
        print("\n## Problems (from the question | from the solution)\n")
        for s in items:
            if not s["problem_sample"]:
                continue
            print(f"- [{s['set']}] {s['id']}\n    Q: {clip(s['question'])}\n    S: {clip(s['solution'], 160)}")
            for v in variants:
                if have(v, s["id"], "problem_q"):
                    q, sol = results[v][s["id"]]["problem_q"], results[v][s["id"]]["problem_s"]
                    print(f"    {v:6} from question: {clip(q['text'], 160)}\n"
                          f"            -> {verdict('problem', q['text'])}{' (regenerated)' if len(q['attempts']) > 1 else ''}\n"
                          f"    {v:6} from solution: {clip(sol['text'], 160)}\n"
                          f"            -> {verdict('problem', sol['text'])}{' (regenerated)' if len(sol['attempts']) > 1 else ''}")
        for v in variants:
            for key in ("problem_q", "problem_s"):
                rows = [results[v][s["id"]][key] for s in items if have(v, s["id"], key)]
                figures[f"{key}_statement_{v}"] = [sum(is_problem_statement(r["text"]) for r in rows), len(rows)]
    print("\n## Figures\n")
    for name, (ok, n) in figures.items():
        print(f"{name}: {ok}/{n} = {100 * ok / max(1, n):.0f}%")
    for v in variants:
        calls = [ms for rows in results.get(v, {}).values() for r in rows.values() for ms in r["calls_ms"]]
        walls = [r["seconds"] for rows in results.get(v, {}).values() for r in rows.values()]
        regen = sum(len(r["attempts"]) > 1 for rows in results.get(v, {}).values() for r in rows.values())
        if calls:
            print(f"{v}: {len(walls)} extractions, {len(calls)} calls ({regen} regenerated); per call "
                  f"mean {statistics.mean(calls) / 1000:.1f} s, median {statistics.median(calls) / 1000:.1f} s; "
                  f"per extraction mean {statistics.mean(walls):.1f} s")
            figures[f"seconds_per_call_{v}"] = statistics.mean(calls) / 1000
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("summary", "problem", "both"), default="both")
    ap.add_argument("--variant", choices=("before", "after", "both", "none"), default="both",
                    help="none: only print the outputs of --reuse")
    ap.add_argument("--json", help="write every output and the figures here")
    ap.add_argument("--reuse", help="outputs (--json) of an earlier run, for the variants not run now")
    ap.add_argument("--ids", help="comma-separated sample ids: run only these")
    ap.add_argument("--role", action="append", metavar="ROLE.KEY=VALUE")
    args = ap.parse_args()

    items = samples()
    run_items = [s for s in items if not args.ids or s["id"] in args.ids.split(",")]
    parts = {"summary", "problem"} if args.part == "both" else {args.part}
    to_run = {"both": ["before", "after"], "none": []}.get(args.variant, [args.variant])
    results: dict[str, dict] = json.loads(Path(args.reuse).read_text())["results"] if args.reuse else {}
    config = load_config(overrides={"roles": role_overrides(args.role)} if args.role else None)
    started, model = perf_counter(), config.role("extractor").model

    def save() -> None:
        if args.json:
            Path(args.json).write_text(json.dumps({"results": results}, indent=1))

    async def run_all():
        for v in to_run:
            await run_variant(v, parts, run_items, client, results.setdefault(v, {}), save)

    if to_run:
        with Runtime(config) as runtime:
            client = runtime.client("extractor")
            asyncio.run(run_all())
    print(f"# bench_preprocess: extractor {model}, {perf_counter() - started:.0f} s")
    variants = [v for v in ("before", "after") if v in results]
    figures = report(items, results, variants)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "figures": figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
