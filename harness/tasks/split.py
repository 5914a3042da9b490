"""A seeded, reproducible split of a task pool into knowledge-base and test halves.

The paper split its Stack Exchange pool 50/50 into RAG material (the knowledge base) and test
questions. :func:`split_ids` gives the same split for the same ids and seed whatever their
input order (the ids are sorted, then shuffled with ``random.Random(seed)``); the returned dict
is plain JSON so the split can be stored next to a run::

    {"seed": 0, "fraction": 0.5, "kb": ["q-1", ...], "test": ["q-2", ...]}
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterable

from harness.tasks.stackexchange import write_tasks


def split_ids(ids: Iterable[str], seed: int = 0, fraction: float = 0.5) -> dict[str, Any]:
    """Split task ids into a knowledge-base part and a test part.

    Args:
        ids: the task ids (unique; integers are turned into strings).
        seed: the random seed; the same seed and ids always give the same split.
        fraction: the share of ids that go to the knowledge base, between 0 and 1; the
            knowledge base gets ``floor(len(ids) * fraction)`` ids, the test part the rest.

    Returns:
        ``{"seed", "fraction", "kb", "test"}``, both lists sorted.

    Raises:
        ValueError: ``fraction`` outside [0, 1], or a duplicate id.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be between 0 and 1 (the knowledge base's share), not {fraction}")
    ordered = sorted(str(i) for i in ids)
    dupes = sorted({a for a, b in zip(ordered, ordered[1:]) if a == b})
    if dupes:
        raise ValueError(f"duplicate task id(s) {', '.join(map(repr, dupes[:5]))}: ids must be unique to split them")
    random.Random(seed).shuffle(ordered)
    n_kb = int(len(ordered) * fraction)
    return {"seed": seed, "fraction": fraction,
            "kb": sorted(ordered[:n_kb]), "test": sorted(ordered[n_kb:])}


def write_split(tasks: Iterable[dict[str, Any]], split: dict[str, Any],
                kb_path: str | Path, test_path: str | Path) -> tuple[int, int]:
    """Write the two halves of a split as task JSONL files (atomically, in input order).

    Args:
        tasks: task dicts with an ``id``; tasks the split does not list are left out.
        split: a dict from :func:`split_ids` (or the JSON it was stored as).
        kb_path: the knowledge-base task file to write (``.gz`` for gzip).
        test_path: the test task file to write (``.gz`` for gzip).

    Returns:
        ``(kb tasks written, test tasks written)``.

    Raises:
        ValueError: the split is not such a dict, or lists ids that are not among the tasks
            (a split made from another task file).
    """
    if not isinstance(split, dict) or not all(isinstance(split.get(k), list) for k in ("kb", "test")):
        raise ValueError("split must be a dict with lists 'kb' and 'test' (see split_ids)")
    kb_ids, test_ids = set(map(str, split["kb"])), set(map(str, split["test"]))
    kb: list[dict[str, Any]] = []
    test: list[dict[str, Any]] = []
    for task in tasks:
        tid = str(task.get("id"))
        if tid in kb_ids:
            kb.append(task)
        elif tid in test_ids:
            test.append(task)
    missing = (kb_ids | test_ids) - {str(t["id"]) for t in kb + test}
    if missing:
        raise ValueError(f"the split lists {len(missing)} id(s) that are not among the tasks "
                         f"(e.g. {sorted(missing)[0]!r}); was it made from another task file? "
                         "Make the split again from these tasks.")
    return write_tasks(kb, kb_path), write_tasks(test, test_path)
