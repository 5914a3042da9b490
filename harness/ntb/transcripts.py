"""Scoring NoisyToolBench step logs made elsewhere (other harnesses, earlier runs, by hand).

Input is JSONL, one case per line::

    {"category": "IMKI" | "IMR" | "IwE" | "IBTC", "query_id": int, "steps": [...]}

``steps`` is the step log of :mod:`harness.ntb.steplog` (``ask``, ``call``, ``answer``,
``think``); an ask's optional ``thought`` is part of its message (``ask_match="message"``),
an answer's optional ``limitation: true`` marks an Ask-when-Needed "limitation of toolset"
statement (A3 = 0); other fields are ignored. The case itself (query, anticipated question,
clarification, expected calls) comes from the shipped data through
:func:`harness.ntb.cases.load_cases`. Every line is validated before anything is scored; one
problem anywhere means nothing is written.

With ``no_judge`` no model is called at all: A1, Re, Steps and the deterministic (exact-set)
A2 are computed, A3 (and the IBTC ``limitation_stated``) stay empty. Otherwise the ``judge``
role of the runtime judges A3, the IBTC limitation and, with ``a2_method="llm-judge"``, A2.
The CSV (official columns plus ``category``) is written atomically.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from harness.config import RunConfig
from harness.models.embeddings import embed
from harness.ntb.ask_matching import DEFAULT_ASK_MATCH, DEFAULT_THRESHOLD, Embedder, embedder_id
from harness.ntb.cases import Case, case_key, load_cases
from harness.ntb.judge_prompts import PROMPT_VERSION
from harness.ntb.scoring import (CATEGORIES, DEFAULT_A2_METHOD, SCORER_VERSION, check_settings, score_case, tables,
                                 write_csv)
from harness.ntb.steplog import validate_steps
from harness.selfscore.transcripts import TranscriptError, raise_problems
from harness.tasks.jsonl import JsonlError, read_jsonl

if TYPE_CHECKING:  # the composition root builds the runtime and passes it in
    from harness.compose import Runtime

JUDGED_METRICS = ("A2", "A3", "limitation")


def score_ntb_transcripts(path: str | Path, out_csv: str | Path, runtime: Runtime | None,
                          no_judge: bool = False, threshold: float = DEFAULT_THRESHOLD,
                          a2_method: str = DEFAULT_A2_METHOD, embedder: Embedder | None = None,
                          concurrency: int = RunConfig.model_fields["concurrency"].default,
                          ask_match: str = DEFAULT_ASK_MATCH,
                          on_progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Score the cases of a JSONL step-log file and write the official CSV.

    Args:
        path: input JSONL file (plain or gzipped).
        out_csv: output CSV (replaced if it exists).
        runtime: provides the ``judge`` role; may be None only with ``no_judge``.
        no_judge: call no model; A3 stays empty; needs ``a2_method="exact-set"``.
        threshold: A1 similarity threshold (0.4 official code, 0.8 paper).
        a2_method: ``exact-set`` (deterministic) or ``llm-judge``.
        embedder: texts -> vectors for A1; default :func:`harness.models.embeddings.embed`.
        concurrency: most cases judged at once.
        ask_match: ``message`` (a step's thought and text, as the official code compares the
            whole asking message) or ``question`` (the text alone).
        on_progress: ``(cases scored, cases)`` as each case is scored.

    Returns:
        ``count``, ``out``, ``tables`` (:func:`harness.ntb.scoring.tables`), ``judged`` and
        ``failed`` (per metric: A2, A3, limitation), ``failed_judgments``, ``judge_calls`` and
        the provenance: ``threshold``, ``embedding_model``, ``ask_match``, ``a2_method``, ``judge_model``,
        ``prompt_version``, ``scorer_version``, ``convention`` (the default IBTC convention).

    Raises:
        TranscriptError: malformed lines or unknown cases (each named by line and field).
        ValueError: bad settings (threshold, A2 method, ``llm-judge`` with ``no_judge``,
            judging without a runtime, concurrency < 1).
    """
    check_settings(threshold, a2_method, ask_match)
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if no_judge and a2_method != "exact-set":
        raise ValueError("--no-judge computes A2 deterministically: use a2_method 'exact-set'")
    if not no_judge and runtime is None:
        raise ValueError("judging needs a runtime (the judge role); pass no_judge=True to score without one")
    path, out_csv = Path(path), Path(out_csv)
    items = read_ntb_transcripts(path)
    embedder = embedder or embed
    judge = None if no_judge else runtime.structured_judge("judge")
    rows = asyncio.run(_score_all(items, embedder, threshold, a2_method, judge, concurrency, on_progress,
                                  ask_match))
    write_csv(rows, out_csv)
    judged = Counter(m for r in rows for m, s in r["judged"].items() if s == "ok")
    failed = Counter(m for r in rows for m, s in r["judged"].items() if s == "failed")
    return {
        "count": len(rows), "out": str(out_csv), "tables": tables(rows),
        "judged": {m: judged[m] for m in JUDGED_METRICS}, "failed": {m: failed[m] for m in JUDGED_METRICS},
        "failed_judgments": sum(failed.values()), "judge_calls": sum(r["judge_calls"] for r in rows),
        "threshold": threshold, "embedding_model": embedder_id(embedder), "ask_match": ask_match,
        "a2_method": a2_method,
        "judge_model": None if judge is None else judge.client.model_name,
        "prompt_version": PROMPT_VERSION, "scorer_version": SCORER_VERSION,
        "convention": "ibtc-excluded",
    }


async def _score_all(items: Sequence[tuple[Case, list]], embedder: Embedder, threshold: float,
                     a2_method: str, judge, concurrency: int,
                     on_progress: Callable[[int, int], None] | None = None,
                     ask_match: str = DEFAULT_ASK_MATCH) -> list[dict[str, Any]]:
    slots = asyncio.Semaphore(concurrency)
    done = 0

    async def one(case: Case, steps: list) -> dict[str, Any]:
        nonlocal done
        async with slots:
            row = await score_case(case, steps, embedder=embedder, threshold=threshold,
                                   a2_method=a2_method, judge=judge, ask_match=ask_match)
        done += 1
        if on_progress:
            on_progress(done, len(items))
        return row
    if on_progress:
        on_progress(0, len(items))
    return list(await asyncio.gather(*(one(c, s) for c, s in items)))


# --- reading and validation -------------------------------------------------------------------

def read_ntb_transcripts(path: Path) -> list[tuple[Case, list]]:
    """The ``(case, steps)`` pairs of a step-log file, in file order, blank lines skipped.

    Raises:
        TranscriptError: listing every malformed line, unknown case and duplicate in line
            order (the first ten), or an empty file.
    """
    try:
        parsed, problems, _digest = read_jsonl(path)
    except JsonlError as exc:
        raise TranscriptError(str(exc)) from exc
    valid: list[tuple[int, dict[str, Any]]] = []
    for n, row in parsed:
        errors = validate_line(row)
        problems += [f"line {n}: {e}" for e in errors]
        if not errors:
            valid.append((n, row))
    cases = _cases_for({row["category"] for _, row in valid})
    items: list[tuple[Case, list]] = []
    seen: dict[str, int] = {}
    for n, row in valid:
        key = f"{row['category']}/{row['query_id']}"
        case = cases.get(key)
        if case is None:
            known = sorted(c.query_id for c in cases.values() if c.category == row["category"])
            span = f"{known[0]}-{known[-1]}" if known else "none"
            problems.append(f"line {n}: unknown case {key}: query_id {row['query_id']} is not in "
                            f"{row['category']} (its query_ids: {span})")
            continue
        if key in seen:
            problems.append(f"line {n}: case {key} duplicates line {seen[key]}")
            continue
        seen[key] = n
        items.append((case, row["steps"]))
    if not items and not problems:
        problems.append("no cases (the file is empty)")
    raise_problems(sorted(problems, key=_line_number), path)
    return items


def validate_line(row: Any) -> list[str]:
    """What is wrong with one parsed line, as ``field: problem`` texts (empty if valid)."""
    if not isinstance(row, dict):
        return [f"expected a JSON object, got {type(row).__name__}"]
    errors = []
    category = row.get("category")
    if category is None:
        errors.append("category is missing")
    elif category not in CATEGORIES:
        errors.append(f"category is {category!r}, must be one of {', '.join(CATEGORIES)}")
    query_id = row.get("query_id")
    if query_id is None:
        errors.append("query_id is missing")
    elif isinstance(query_id, bool) or not isinstance(query_id, int):
        errors.append(f"query_id must be an integer, got {query_id!r}")
    if "steps" not in row:
        errors.append("steps is missing")
    else:
        errors += validate_steps(row["steps"])
    return errors


def _cases_for(categories: set[str]) -> dict[str, Case]:
    """The shipped cases of ``categories`` by :func:`case_key`."""
    if not categories:
        return {}
    return {case_key(c): c for c in load_cases(categories=sorted(categories))}


def _line_number(problem: str) -> int:
    """The line a ``"line N: ..."`` problem is about (0 for a file-level problem)."""
    head = problem.split(":", 1)[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else 0


