"""The simulated user played at every real reply point, with a cache so that a rerun is cheap.

At a point the simulated user gets what a batch would give it at that turn: the question, the
real helpers' messages and the real asker's earlier replies as the history (ending with the
helper's message the point answers), the turn index ``index + 2`` (turn 1 is the question), the
thread's solution, the problem statement the extractor makes of it (as ``prepare_problem`` does
in a batch; a task's own ``problem`` wins), the point's facts (``points``: the fair default
withholds what the real asker says from this reply on) and the persona. Each reply is appended
to ``replies.jsonl`` in the cache folder, keyed by the point's content, the persona, the facts
given, the statement and ``user_key`` (the user model and everything that decides its replies);
each statement to ``statements.jsonl``, keyed by task, extractor model and prompt version.
A point whose call failed is recorded without being cached, and played again next time.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Sequence

from graphs.protocols import Problem
from harness.simcheck.points import Point

REPLIES = "replies.jsonl"
STATEMENTS = "statements.jsonl"


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _append(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def reply_key(point: Point, persona: str, statement: str | None, user_key: str) -> str:
    """The cache key of one simulated reply: what decides it."""
    parts = [point.id, point.helper, point.real, list(point.facts), point.solution, point.fix_known, persona,
             statement, user_key]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()[:24]


async def problem_statements(extractor_of: Callable[[], Any], model: str, points: Sequence[Point],
                             cache: Path | None, guard: bool = True) -> dict[str, str | None]:
    """The problem statement of each task of ``points``: the task's own, else the extractor's
    from the thread's solution (``harness.selfscore.extract``), cached; None for a task with
    neither a statement nor a solution (the simulated user then reads the question).
    ``extractor_of()`` gives the extractor's client, asked for only when a statement is not
    cached (a cached rerun starts no model); ``model`` is its model's name (in the key)."""
    from harness.selfscore import PROMPT_VERSION, extract
    path = cache / STATEMENTS if cache else None
    version = f"{model}|{PROMPT_VERSION}|guard={guard}"
    known = {(r["task_id"], r["version"]): r["statement"] for r in (_read(path) if path else [])}
    out: dict[str, str | None] = {}
    for p in points:
        if p.task_id in out:
            continue
        if p.problem or not p.solution:
            out[p.task_id] = p.problem
        elif (p.task_id, version) in known:
            out[p.task_id] = known[(p.task_id, version)]
        else:
            result = await extract("problem", p.question, extractor_of(), p.solution, guard=guard)
            out[p.task_id] = result.text
            if path:
                _append(path, {"task_id": p.task_id, "version": version, "statement": result.text})
    return out


def problem_of(point: Point, persona: str, statement: str | None) -> Problem:
    """The ``Problem`` the simulated user sees at ``point``."""
    return Problem(f"simcheck:{point.id}", point.question, None, statement, None, solution=point.solution,
                   problem_source="task" if point.problem else ("solution" if point.solution else "question"),
                   facts=point.facts, persona=persona, fix_known=point.fix_known,
                   context={"run_id": "simcheck", "task_id": point.task_id, "trial": 1})


async def simulate_points(user_of: Callable[[], Any], points: Sequence[Point], persona: str, user_key: str,
                          statements: dict[str, str | None], cache: Path | None = None, concurrency: int = 4,
                          on_progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """The simulated reply at every point, from the cache where it holds one; ``user_of()``
    gives the simulated user, asked for only when a reply is not cached.

    Returns:
        One record per point, in order: ``id``, ``key``, ``persona``, ``text`` (None when the
        user left), ``simulator`` (the user's record: outcome, attempts, persona act),
        ``cached``, ``error`` (the failure, when the call failed; ``text`` is then None).
    """
    path = cache / REPLIES if cache else None
    stored = {r["key"]: r for r in (_read(path) if path else []) if not r.get("error")}
    gate = asyncio.Semaphore(max(1, concurrency))
    done = 0

    async def one(point: Point) -> dict[str, Any]:
        nonlocal done
        statement = statements.get(point.task_id)
        key = reply_key(point, persona, statement, user_key)
        if key in stored:
            record = {**stored[key], "cached": True}
        else:
            async with gate:
                try:
                    reply = await user_of().respond(problem_of(point, persona, statement), list(point.history),
                                               point.index + 2)
                    record = {"id": point.id, "key": key, "persona": persona, "text": reply.text,
                              "simulator": (reply.extra or {}).get("simulator"), "user_key": user_key}
                    if path:
                        _append(path, record)
                    record = {**record, "cached": False}
                except Exception as exc:  # noqa: BLE001 - one point's failure is recorded, the rest go on
                    record = {"id": point.id, "key": key, "persona": persona, "text": None,
                              "error": f"{type(exc).__name__}: {exc}"[:300], "cached": False}
        done += 1
        if on_progress:
            on_progress(done, len(points))
        return record

    return list(await asyncio.gather(*(one(p) for p in points)))
