"""Task sets in deskbench's JSONL task format (docs/data-formats.md).

One JSON object per line (``.jsonl`` or ``.jsonl.gz``)::

    {"id": "q-1", "question": "My wifi drops every few minutes ...",
     "reference_answer": "...",            # optional, never shown to the agent
     "problem": "The router's DHCP lease is too short",   # optional: skips problem extraction
     "followups": ["It is Ubuntu 22.04", "..."],          # optional: script for --user scripted
     "facts": ["Ubuntu 22.04", "the error started after an update"],  # optional: what the asker knows
     "agent_replies": ["Try ...", "..."],                  # optional: a human agent's replies (--agent human)
     "metadata": {...}}                                     # optional, kept as is

Built-in sets are referred to by name (:data:`BUILTIN`): ``lfrqa_technology`` (Stack Exchange
questions with reference answers), ``ubuntu_irc`` (all 227 shipped #ubuntu IRC threads) and
``ubuntu_irc_troubleshooting`` (the curated multi-turn troubleshooting threads among them, with
the asker's later messages as ``facts``); the IRC files are written by
``harness/data/ubuntu_irc/build_tasks.py`` (see its ``SOURCE.md``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from harness.tasks.personas import PERSONAS
from harness.tasks.jsonl import JsonlError, read_jsonl

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
BUILTIN = {
    "lfrqa_technology": DATA_DIR / "lfrqa_technology" / "tasks.jsonl.gz",
    "ubuntu_irc": DATA_DIR / "ubuntu_irc" / "tasks.jsonl",
    "ubuntu_irc_troubleshooting": DATA_DIR / "ubuntu_irc" / "troubleshooting.jsonl",
}


SOLUTION_CHARS = 2500  # the part of a long thread's solution the extractor and the simulated user see


def task_solution(reference_answer: str | None, agent_replies: Sequence[str] = ()) -> str | None:
    """The solution of a task's thread: its reference answer (an accepted answer, an IRC
    thread's labelled fix), else the helpers' messages of a real thread (``agent_replies``,
    joined); at most :data:`SOLUTION_CHARS` characters, None when there is neither."""
    if (reference_answer or "").strip():
        return reference_answer.strip()[:SOLUTION_CHARS]
    text = "\n".join(r.strip() for r in agent_replies if r.strip())
    return text[:SOLUTION_CHARS] or None


class DatasetError(ValueError):
    """A task file that cannot be used; the message names the file, line and field."""


@dataclass
class Task:
    """One validated task of a task set; the fields are those of docs/data-formats.md."""

    id: str
    question: str
    reference_answer: str | None = None
    problem: str | None = None
    followups: list[str] = field(default_factory=list)
    agent_replies: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: facts of the asker's situation, revealed by the simulated user only when asked
    facts: list[str] = field(default_factory=list)
    #: the simulated user's behaviour on this task (``harness.config.PERSONAS``); None: the run's
    persona: str | None = None


@dataclass
class Dataset:
    """A loaded task set: its name, file, the file's SHA-256 as stored, and its tasks in file order."""

    name: str
    path: Path
    sha256: str
    tasks: list[Task]


def resolve(name_or_path: str) -> tuple[str, Path]:
    """The ``(name, path)`` of a built-in set's name or of a task file (named after its stem).

    Raises:
        DatasetError: neither a built-in set nor an existing file.
    """
    if name_or_path in BUILTIN:
        return name_or_path, BUILTIN[name_or_path]
    path = Path(name_or_path)
    if not path.exists():
        raise DatasetError(f"Dataset '{name_or_path}' is neither a built-in set "
                           f"({', '.join(BUILTIN)}) nor an existing file.")
    return path.stem.removesuffix(".jsonl"), path


def load_dataset(name_or_path: str) -> Dataset:
    """Load and validate a task set.

    Raises:
        DatasetError: empty file, wrong encoding, invalid JSON or fields, duplicate ids; up
            to 10 problems are listed with their line numbers.
    """
    name, path = resolve(name_or_path)
    try:
        parsed, problems, digest = read_jsonl(path)
    except JsonlError as exc:
        raise DatasetError(str(exc)) from exc
    tasks: list[Task] = []
    seen: set[str] = set()
    for lineno, obj in parsed:
        task, err = _task_from(obj)
        if err:
            problems.append(f"line {lineno}: {err}")
        elif task.id in seen:
            problems.append(f"line {lineno}: duplicate id {task.id!r}")
        else:
            seen.add(task.id)
            tasks.append(task)
    if problems:
        more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise DatasetError(f"{path}: {len(problems)} invalid task(s):\n  " + "\n  ".join(problems[:10])
                           + more + "\nSee docs/data-formats.md for the task format.")
    if not tasks:
        raise DatasetError(f"{path}: no tasks. Each line must be a JSON object with 'id' and 'question'.")
    return Dataset(name=name, path=path, sha256=digest, tasks=tasks)


def _task_from(obj: Any) -> tuple[Task | None, str | None]:
    if not isinstance(obj, dict):
        return None, "each line must be a JSON object"
    tid = obj.get("id")
    if isinstance(tid, int) and not isinstance(tid, bool):
        tid = str(tid)
    if not isinstance(tid, str) or not tid.strip():
        return None, "field 'id' must be a non-empty string"
    q = obj.get("question")
    if not isinstance(q, str) or not q.strip():
        return None, "field 'question' must be a non-empty string"
    for key in ("reference_answer", "problem"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            return None, f"field '{key}' must be a string"
    scripts = {}
    for key in ("followups", "agent_replies", "facts"):
        value = obj.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            return None, f"field '{key}' must be a list of strings"
        scripts[key] = value
    md = obj.get("metadata", {})
    if not isinstance(md, dict):
        return None, "field 'metadata' must be an object"
    persona = obj.get("persona")
    if persona is not None and persona not in PERSONAS:
        return None, f"field 'persona' must be one of {', '.join(PERSONAS)} (got {persona!r})"
    return Task(tid, q.strip(), obj.get("reference_answer"), obj.get("problem"),
                scripts["followups"], scripts["agent_replies"], md, scripts["facts"], persona), None
