"""The real reply points of a task file: every place where a real asker answered a real helper.

A task with ``agent_replies`` (the helpers' messages, in order) and ``followups`` (the asker's
later messages, in order) holds one point per followup: ``followups[i]`` is the asker's answer
to ``agent_replies[i]`` (``harness.tasks.stackexchange_threads.pair_turns`` builds them so, with
same-side messages merged and a trailing asker message dropped: ``len(followups) ==
len(agent_replies) - 1`` for the shipped #ubuntu threads; the last helper message has no real
answer and is no point). The history of point ``i`` is the question, then ``agent_replies[0]``,
``followups[0]``, ..., ``agent_replies[i]``: what the real asker had seen when it wrote
``followups[i]``.

**Facts at a point.** A task's ``facts`` are the asker's later messages cleaned
(``harness.tasks.ubuntu_irc.asker_facts``): given whole, they tell the simulated user what the
real asker is about to say. Each fact is traced to the first followup that holds it
(:func:`fact_origins`); ``facts="before"`` (the fair default) gives point ``i`` only the facts
of ``followups[:i]`` (already in its history) and those traced to no followup; ``facts="all"``
gives every fact, as a batch does.

**The split.** A thread is held out when the first 8 hex digits of
``sha256("simcheck-split-v1:" + task id)`` modulo 100 fall under :data:`HELDOUT_PERCENT`: a
deterministic draw by thread that no figure decided. :func:`split_digest` is the sha256 of the
held-out points' content, recorded in docs/simcheck.md before any figure on them was read.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from graphs.protocols import Message
from harness.tasks import Task, task_solution

SPLIT_SALT = "simcheck-split-v1:"
HELDOUT_PERCENT = 30
SPLITS = ("all", "tune", "heldout")
FACT_MODES = ("before", "all")


@dataclass(frozen=True)
class Point:
    """One real reply point: the asker's real reply ``real`` to the helper's message ``helper``.

    Attributes:
        id: ``<task id>#<index>``.
        task_id: the thread's task id (the cluster of every interval).
        index: ``i``: ``real`` is ``followups[i]``, ``helper`` is ``agent_replies[i]``.
        question: the task's question (turn 1).
        history: the question, the helpers' and the asker's messages up to and including ``helper``.
        helper: the helper's message this point answers.
        real: the real asker's reply.
        facts: the facts the simulated user is given at this point (see the module's text).
        withheld: the task's facts not given here (traced to ``followups[i:]``).
        all_facts: every fact of the task.
        solution: the thread's solution as a batch gives it (``harness.tasks.task_solution``).
        fix_known: whether ``solution`` is a labelled fix (the task's reference answer) rather than
            every helper message of the thread (``graphs.protocols.Problem.fix_known``).
        problem: the task's own problem statement, if it has one.
        split: ``tune`` or ``heldout``.
    """

    id: str
    task_id: str
    index: int
    question: str
    history: tuple[Message, ...]
    helper: str
    real: str
    facts: tuple[str, ...]
    withheld: tuple[str, ...]
    all_facts: tuple[str, ...]
    solution: str | None
    problem: str | None
    split: str
    fix_known: bool = True

    def known_text(self) -> str:
        """What the conversation has said before the reply: the question and every message of the history."""
        return "\n".join(m.content for m in self.history)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def fact_origins(facts: Sequence[str], followups: Sequence[str]) -> list[int | None]:
    """For each fact, the index of the first followup whose text holds it (case and spacing
    ignored), or None when no followup does (a fact written by hand, not an asker's message)."""
    texts = [_norm(f) for f in followups]
    return [next((i for i, t in enumerate(texts) if _norm(fact) and _norm(fact) in t), None) for fact in facts]


def split_of(task_id: str) -> str:
    """``heldout`` or ``tune``: the thread's deterministic draw (see the module's text)."""
    digest = hashlib.sha256((SPLIT_SALT + task_id).encode("utf-8")).hexdigest()
    return "heldout" if int(digest[:8], 16) % 100 < HELDOUT_PERCENT else "tune"


def task_points(task: Task, facts: str = "before") -> list[Point]:
    """The reply points of one task (none without ``agent_replies`` and ``followups``)."""
    if facts not in FACT_MODES:
        raise ValueError(f"facts mode {facts!r}: one of {', '.join(FACT_MODES)}")
    origins = fact_origins(task.facts, task.followups)
    solution = task_solution(task.reference_answer, task.agent_replies)
    split = split_of(task.id)
    history: list[Message] = [Message("user", task.question)]
    points = []
    for i, (helper, real) in enumerate(zip(task.agent_replies, task.followups)):
        history.append(Message("agent", helper))
        if facts == "all":
            given = tuple(task.facts)
        else:
            given = tuple(f for f, o in zip(task.facts, origins) if o is None or o < i)
        withheld = tuple(f for f in task.facts if f not in given)
        points.append(Point(f"{task.id}#{i}", task.id, i, task.question, tuple(history), helper, real,
                            given, withheld, tuple(task.facts), solution, task.problem, split,
                            bool((task.reference_answer or "").strip())))
        history.append(Message("user", real))
    return points


def real_points(tasks: Iterable[Task], facts: str = "before", split: str = "all",
                source: str = "the task file") -> list[Point]:
    """Every reply point of ``tasks`` in file order, those of ``split`` only.

    Raises:
        ValueError: no task has both ``agent_replies`` and ``followups`` (naming the fix), or an
            unknown split.
    """
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: one of {', '.join(SPLITS)}")
    tasks = list(tasks)
    points = [p for t in tasks for p in task_points(t, facts)]
    if not points:
        raise ValueError(
            f"{source} has no real thread: simcheck needs tasks with `agent_replies` (the helpers' messages) "
            "and `followups` (the asker's replies, followups[i] answering agent_replies[i]). Use "
            "--dataset ubuntu_irc_troubleshooting or ubuntu_irc, or build such tasks from #ubuntu threads "
            "with `deskbench import ubuntu-irc` (docs/simcheck.md).")
    return [p for p in points if split == "all" or p.split == split]


def split_digest(points: Sequence[Point]) -> str:
    """The sha256 of the points' content (id, helper message, real reply, facts), in id order:
    the fingerprint of a frozen part, recorded before its figures were read."""
    rows = [{"id": p.id, "helper": p.helper, "real": p.real, "facts": list(p.all_facts)}
            for p in sorted(points, key=lambda p: p.id)]
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


def point_record(point: Point) -> dict:
    """The point as plain data (for the cache and the JSON summary)."""
    out = asdict(point)
    out["history"] = [{"role": m.role, "content": m.content} for m in point.history]
    return out
