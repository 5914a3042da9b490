"""Scoring help-desk transcripts made elsewhere (human threads, other harnesses, live logs).

Input is JSONL, one interaction per line::

    {"id": str, "question": str, "problem": str?, "solution": str?,
     "complexity": {"critical_thinking": int, "error_handling": int, "topic_knowledge": int}?,
     "turns": [{"user": str, "agent": str, "user_helpfulness": int?, "agent_helpfulness": int?,
                "solved": bool?, "input_tokens": int?, "output_tokens": int?, "cost": float?}]}

Only what is missing (absent or ``null``) is judged, with the same judges and prompts as a
SelfScore run. A missing ``problem`` is extracted as a run extracts it: from ``solution`` (the
thread's fix) where given, else from the question, with the same restating guard
(``harness.selfscore.preprocess.extract``); ``problem_source`` says which. A judgment that fails stays
``None`` and is counted, never defaulted. Other
fields, of an interaction or of a turn, are kept in the output under their own names.

Each output line is the input line with the figures of :func:`harness.selfscore.scoring.score_interaction`
added: the per-interaction export fields of :data:`harness.selfscore.scoring.EXPORT_FIELDS` (so
``turns`` is the number of turns, as in every export), the provenance of the scores, the
turns with their filled-in scores under ``scored_turns``, and a ``judged`` map (field ->
``"ok"`` or ``"failed"``) at the top and in each turn naming what was judged by this call.
Fields this module writes replace input fields of the same name.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from graphs.protocols import Judgment, Message, Problem
from harness.selfscore import prompts
from harness.selfscore.judges import judge_complexity
from harness.selfscore.preprocess import extract
from harness.selfscore.scoring import EXPORT_FIELDS, FORMULAS, SCORER_VERSION, score_interaction
from harness.tasks.jsonl import JsonlError, json_type, read_jsonl, write_jsonl

if TYPE_CHECKING:  # the composition root builds the runtime and passes it in
    from harness.compose import Runtime

COMPLEXITY_KEYS = ("critical_thinking", "error_handling", "topic_knowledge")
TURN_JUDGMENTS = ("user_helpfulness", "agent_helpfulness", "solved")
KINDS = ("complexity", "problem", *TURN_JUDGMENTS)
TURN_KEYS = ("user", "agent", *TURN_JUDGMENTS, "input_tokens", "output_tokens", "cost")
MAX_LISTED = 10


class TranscriptError(ValueError):
    """A transcript file that cannot be scored; the message names each line and field."""


async def ascore_transcripts(path: str | Path, out: str | Path, runtime: Runtime | None,
                      no_judge: bool = False, formula: str = "paper",
                      weights: Sequence[float] = (0.5, 0.4, 0.1),
                      concurrency: int = 4,
                      on_progress: Callable[[int, int], None] | None = None,
                      wanted: Callable[[dict, int | None, str], bool] | None = None) -> dict[str, Any]:
    """Score the interactions of a JSONL transcript file and write one JSONL row each (the
    coroutine; :func:`score_transcripts` runs it in its own event loop).

    Every line is validated before anything is judged; the output is written atomically
    (a temporary file renamed over ``out``), so on any error no output file is left behind.

    Args:
        path: input JSONL file.
        out: output JSONL file (replaced if it exists).
        runtime: provides the ``extractor``, ``complexity`` and ``judge`` roles; may be None
            with ``no_judge`` or when nothing is missing.
        no_judge: never call a model; any missing value is an error.
        formula: ``paper`` (default) or ``agent_only``, see :mod:`harness.selfscore.scoring`.
        weights: CT, EH, TK weights of the weighted complexity.
        concurrency: most model calls in flight at once.
        on_progress: ``(interactions done, interactions)`` while judging, as each interaction
            has all it lacked (not called when nothing is judged).
        wanted: ``(row, turn index or None, kind of KINDS) -> bool``: judge a missing value only
            where true (default everywhere; ``deskbench agreement`` judges what labels compare).

    Returns:
        ``count`` (interactions), ``scored`` (with a final score), ``judged`` and ``failed``
        (per kind: complexity, problem, user_helpfulness, agent_helpfulness, solved),
        ``failed_judgments`` (total) and ``out`` (the written path).

    Raises:
        TranscriptError: malformed lines, or missing values with ``no_judge`` or no runtime.
        ValueError: an unknown formula, weights that are not three numbers, concurrency < 1.
    """
    if formula not in FORMULAS:
        raise ValueError(f"unknown formula {formula!r}; choose one of {', '.join(FORMULAS)}")
    if len(weights) != 3:
        raise ValueError("weights must be three numbers (CT, EH, TK)")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    path, out = Path(path), Path(out)
    rows = read_transcripts(path)
    if no_judge or runtime is None:
        why = "required with --no-judge" if no_judge else "no runtime given to judge it"
        problems = [f"line {n}: {field} is missing ({why})"
                    for n, row in rows for field in missing_fields(row)]
        raise_problems(problems, path)
    judging = _Judging(runtime, concurrency, on_progress, wanted) if runtime is not None and not no_judge else None
    records = [_start_record(row) for _, row in rows]
    if judging is not None:
        await judging.fill_all(records)
    models = {role: runtime.config.role(role).model if runtime is not None else None
              for role in ("judge", "complexity")}
    profile = runtime.profile_record() if judging is not None else None
    output = [_output_row(r, formula, weights, models, profile) for r in records]
    write_jsonl(out, output)
    judged = judging.judged if judging else Counter()
    failed = judging.failed if judging else Counter()
    return {"count": len(output), "scored": sum(r["final_score"] is not None for r in output),
            "judged": {k: judged[k] for k in KINDS}, "failed": {k: failed[k] for k in KINDS},
            "failed_judgments": sum(failed.values()), "out": str(out)}


def score_transcripts(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`ascore_transcripts` in its own event loop (same arguments, result and errors)."""
    return asyncio.run(ascore_transcripts(*args, **kwargs))


# --- reading and validation -------------------------------------------------------------------

def read_transcripts(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The ``(line number, row)`` pairs of a transcript file, blank lines skipped.

    Raises:
        TranscriptError: listing every malformed line and field (the first ten).
    """
    try:
        parsed, problems, _digest = read_jsonl(path)
    except JsonlError as exc:
        raise TranscriptError(str(exc)) from exc
    rows: list[tuple[int, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for n, row in parsed:
        errors = validate_row(row)
        problems += [f"line {n}: {e}" for e in errors]
        if errors:
            continue
        if row["id"] in seen:
            problems.append(f"line {n}: id {row['id']!r} duplicates line {seen[row['id']]}")
            continue
        seen[row["id"]] = n
        rows.append((n, row))
    if not rows and not problems:
        problems.append("no interactions (the file is empty)")
    raise_problems(problems, path)
    return rows


def validate_row(row: Any) -> list[str]:
    """What is wrong with one parsed line, as ``field: problem`` texts (empty if valid)."""
    if not isinstance(row, dict):
        return [f"expected a JSON object, got {json_type(row)}"]
    errors = [e for key in ("id", "question") for e in _check_text(row, key, key, required=True)]
    errors += _check_text(row, "problem", "problem", required=False)
    complexity = row.get("complexity")
    if complexity is not None:
        if not isinstance(complexity, dict):
            errors.append(f"complexity must be an object, got {json_type(complexity)}")
        else:
            for key in COMPLEXITY_KEYS:
                if complexity.get(key) is None:
                    errors.append(f"complexity.{key} is missing")
                else:
                    errors += _check_number(complexity[key], f"complexity.{key}", 1, 10)
    turns = row.get("turns")
    if turns is None:
        return errors + ["turns is missing"]
    if not isinstance(turns, list):
        return errors + [f"turns must be a list, got {json_type(turns)}"]
    if not turns:
        return errors + ["turns is empty (an interaction needs at least one turn)"]
    for i, turn in enumerate(turns):
        where = f"turns[{i}]"
        if not isinstance(turn, dict):
            errors.append(f"{where} must be an object, got {json_type(turn)}")
            continue
        for key in ("user", "agent"):
            errors += _check_text(turn, key, f"{where}.{key}", required=True, allow_empty=True)
        for key in ("user_helpfulness", "agent_helpfulness"):
            if turn.get(key) is not None:
                errors += _check_number(turn[key], f"{where}.{key}", 1, 10)
        if turn.get("solved") is not None and not isinstance(turn["solved"], bool):
            errors.append(f"{where}.solved must be true or false, got {json_type(turn['solved'])}")
        for key in ("input_tokens", "output_tokens"):
            if turn.get(key) is not None:
                errors += _check_number(turn[key], f"{where}.{key}", 0, None)
        if turn.get("cost") is not None:
            errors += _check_number(turn["cost"], f"{where}.cost", 0, None, integer=False)
    return errors


def missing_fields(row: dict[str, Any]) -> list[str]:
    """The judged values a valid row lacks, as field paths (``turns[i]`` counts from 0).

    The problem statement is not listed: it is only needed to judge a missing ``solved``.
    """
    missing = ["complexity"] if row.get("complexity") is None else []
    return missing + [f"turns[{i}].{key}" for i, turn in enumerate(row["turns"])
                      for key in TURN_JUDGMENTS if turn.get(key) is None]


def _check_text(row: dict, key: str, where: str, required: bool,
                allow_empty: bool = False) -> list[str]:
    value = row.get(key)
    if value is None:
        return [f"{where} is missing"] if required else []
    if not isinstance(value, str):
        return [f"{where} must be a string, got {json_type(value)}"]
    if not allow_empty and not value.strip():
        return [f"{where} is empty"]
    return []


def _check_number(value: Any, where: str, low: float, high: float | None,
                  integer: bool = True) -> list[str]:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        return [f"{where} must be {'an integer' if integer else 'a number'}, got {json_type(value)}"]
    if value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        return [f"{where} is {value}, must be {bounds}"]
    return []


def raise_problems(problems: list[str], path: Path) -> None:
    """Raise :class:`TranscriptError` listing up to ``MAX_LISTED`` problems, if there are any."""
    if not problems:
        return
    shown = problems[:MAX_LISTED]
    more = len(problems) - len(shown)
    raise TranscriptError(f"{path}: {len(problems)} problem(s); nothing was written:\n  "
                          + "\n  ".join(shown) + (f"\n  ... and {more} more" if more else ""))


# --- judging what is missing ------------------------------------------------------------------

def _start_record(row: dict[str, Any]) -> dict[str, Any]:
    """A copy of an input row that judging fills in; ``judged`` markers start empty."""
    record = {**row, "judged": {}, "judge_errors": {}}
    record["turns"] = [{**turn, "judged": {}} for turn in row["turns"]]
    return record


def _history(turns: list[dict[str, Any]], upto: int, with_agent: bool) -> list[Message]:
    """The conversation up to turn ``upto``'s user message, or its agent message."""
    history = [m for t in turns[:upto] for m in (Message("user", t["user"]), Message("agent", t["agent"]))]
    history.append(Message("user", turns[upto]["user"]))
    if with_agent:
        history.append(Message("agent", turns[upto]["agent"]))
    return history


class _Judging:
    """Fills in the missing values of many records, at most ``concurrency`` calls at once."""

    def __init__(self, runtime: Runtime, concurrency: int,
                 on_progress: Callable[[int, int], None] | None = None,
                 wanted: Callable[[dict, int | None, str], bool] | None = None):
        self.runtime = runtime  # role clients are made on first use: that may start a server
        self.concurrency = concurrency
        self.on_progress = on_progress
        self.wanted = wanted or (lambda row, i, key: True)
        self.judged: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()

    async def fill_all(self, records: list[dict[str, Any]]) -> None:
        self.slots = asyncio.Semaphore(self.concurrency)
        done = 0

        async def counted(record):
            nonlocal done
            await self.fill(record)
            done += 1
            if self.on_progress:
                self.on_progress(done, len(records))
        if self.on_progress:
            self.on_progress(0, len(records))
        await asyncio.gather(*(counted(r) for r in records))

    async def fill(self, record: dict[str, Any]) -> None:
        """Judge everything ``record`` lacks; the problem first where a solved-check needs it."""
        turns = record["turns"]
        jobs = []
        if record.get("complexity") is None and self.wanted(record, None, "complexity"):
            jobs.append(self._complexity(record))
        problem_job = None
        if not record.get("problem") and any(t.get("solved") is None and self.wanted(record, i, "solved")
                                             for i, t in enumerate(turns)):
            problem_job = asyncio.ensure_future(self._problem(record))
            jobs.append(problem_job)
        for i, turn in enumerate(turns):
            jobs += [self._turn(record, i, key, problem_job)
                     for key in TURN_JUDGMENTS if turn.get(key) is None and self.wanted(record, i, key)]
        await asyncio.gather(*jobs)

    async def _complexity(self, record: dict[str, Any]) -> None:
        summary, error = await self._extract("summary", record["question"])
        if summary is None:
            self._record(record, None, "complexity", None, f"summary: {error}")
            return
        async with self.slots:
            judgment = await judge_complexity(self.runtime.structured_judge("complexity"), summary)
        self._record_judgment(record, None, "complexity", judgment)

    async def _problem(self, record: dict[str, Any]) -> None:
        solution = (record.get("solution") or "").strip() or None
        statement, error = await self._extract("problem", record["question"], solution)
        self._record(record, None, "problem", statement, error)
        if statement is not None:
            record["problem_source"] = "solution" if solution else "question"

    async def _turn(self, record: dict[str, Any], i: int, key: str, problem_job) -> None:
        if key == "solved" and problem_job is not None:
            await problem_job  # outside the semaphore: the extraction needs a slot itself
            if record.get("problem") is None:
                self._record(record, i, key, None, "no problem statement (its extraction failed)")
                return
        problem = Problem(record["id"], record["question"], None, record.get("problem"),
                          solution=(record.get("solution") or "").strip() or None)
        judges = self.runtime.turn_judges()
        history = _history(record["turns"], i, with_agent=key != "user_helpfulness")
        async with self.slots:
            if key == "user_helpfulness":
                judgment = await judges.user_helpfulness(problem, history, first_turn=i == 0)
            elif key == "agent_helpfulness":
                judgment = await judges.agent_helpfulness(problem, history)
            else:
                judgment = await judges.solved(problem, history)
        self._record_judgment(record, i, key, judgment)

    async def _extract(self, kind: str, question: str,
                       solution: str | None = None) -> tuple[str | None, str | None]:
        """The extractor's ``summary`` or ``problem`` text (regenerated once when it answers
        instead of restating, as in a run), or ``(None, error)``."""
        extractor = self.runtime.client("extractor")  # a configuration error is raised
        try:
            async with self.slots:
                result = await extract(kind, question, extractor, solution,
                                       guard=self.runtime.profile.value("preprocessing_guard"))
        except Exception as exc:  # recorded as a failed judgment, never defaulted
            return None, f"{type(exc).__name__}: {exc}"[:500]
        return result.text, None

    def _record_judgment(self, record: dict, turn: int | None, key: str, judgment: Judgment) -> None:
        self._record(record, turn, key, judgment.value if judgment.ok else None,
                     None if judgment.ok else judgment.error or "judgment failed")
        parsed = judgment.parsed or {}
        if turn is not None and judgment.ok and "judge_value" in parsed:  # the judge's own answer, the aids
            record["turns"][turn].setdefault("judge_own", {})[key] = parsed["judge_value"]
            record["turns"][turn].setdefault("aids", {})[key] = parsed.get("aids") or {}

    def _record(self, record: dict, turn: int | None, key: str, value: Any, error: str | None) -> None:
        target = record if turn is None else record["turns"][turn]
        target[key] = value
        target["judged"][key] = "ok" if error is None else "failed"
        (self.judged if error is None else self.failed)[key] += 1
        if error is not None:
            record["judge_errors"][key if turn is None else f"turns[{turn}].{key}"] = error


# --- output -----------------------------------------------------------------------------------

def _output_row(record: dict[str, Any], formula: str, weights: Sequence[float],
                models: dict[str, str | None], profile: dict | None = None) -> dict[str, Any]:
    """Figures and provenance first (the method profile of whatever was judged), then the
    (filled-in) input fields."""
    turns = record["turns"]
    stop = "solved" if turns[-1].get("solved") else "transcript_end"
    figures = score_interaction(record.get("complexity"), turns, stop, formula, weights)
    figures["interaction_id"] = record["id"]
    judged_turns = any(t["judged"] for t in turns)
    row: dict[str, Any] = {"id": record["id"]}
    row.update({k: figures[k] for k in EXPORT_FIELDS})
    row.update({
        "formula": formula, "weights": list(weights),
        "failed_judgments": sum(v == "failed" for m in (record, *turns) for v in m["judged"].values()),
        "judge_model": models["judge"] if judged_turns else None,
        "complexity_model": models["complexity"] if "complexity" in record["judged"] else None,
        "prompt_version": prompts.PROMPT_VERSION, "scorer_version": SCORER_VERSION,
        "profile": profile if judged_turns else None,
    })
    row.update(question=record["question"], problem=record.get("problem"),
               complexity=record.get("complexity"), scored_turns=[_ordered(t, TURN_KEYS) for t in turns],
               judged=_ordered(record["judged"], KINDS), judge_errors=record["judge_errors"])
    for key, value in record.items():  # the input's other fields, under their own names
        row.setdefault(key, value)
    return row


def _ordered(mapping: dict[str, Any], first: Sequence[str]) -> dict[str, Any]:
    """``mapping`` with the keys of ``first`` first, then its other keys, ``judged`` last."""
    keys = [k for k in first if k in mapping] + [k for k in mapping if k not in first and k != "judged"]
    ordered = {k: mapping[k] for k in keys}
    if "judged" in mapping:
        ordered["judged"] = _ordered(mapping["judged"], TURN_JUDGMENTS)
    return ordered
