"""Ubuntu IRC support threads -> deskbench tasks (and the human thread, for the human baseline).

The shipped file ``harness/data/ubuntu_irc/ubuntu_irc_test_threads.jsonl`` holds 227 real
#ubuntu conversations (see its ``SOURCE.md``), one per line::

    {"source_file": "2005-07-06_14.ascii.txt", "thread_id": "2005-07-06_14#1005",
     "messages": [{"line": 1005, "time": "02:02", "speaker": "stig_", "text": "..."}, ...]}

The asker is the first message's speaker: the asker's messages are user messages, everyone
else's are agent (helper) messages. Turns are built with
:func:`harness.stackexchange.pair_turns` (same-side messages merged, a trailing user message
dropped).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.jsonl import read_jsonl
from harness.stackexchange import MAX_PROBLEMS, pair_turns

DEFAULT_PATH = Path(__file__).parent / "data" / "ubuntu_irc" / "ubuntu_irc_test_threads.jsonl"
LICENCE = "CC BY 4.0"


@dataclass
class IrcImportResult:
    """What :func:`import_ubuntu_irc` found.

    Attributes:
        tasks: one task per kept thread, in file order.
        threads_seen: non-blank lines of the file.
        kept: threads turned into tasks.
        skipped: threads not kept, by reason: ``malformed`` (not JSON or missing fields) and
            ``no_helper_reply`` (nobody but the asker speaks after the asker's first message),
            ``duplicate_id`` (a ``thread_id`` seen on an earlier line).
        problems: the first few malformed lines, described.
    """

    tasks: list[dict[str, Any]] = field(default_factory=list)
    threads_seen: int = 0
    kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def skip(self, reason: str, problem: str | None = None) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if problem and len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)

    def summary(self) -> str:
        """A short human-readable account of the import."""
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items())) or "none"
        return (f"ubuntu-irc: {self.threads_seen} threads read; {self.kept} tasks kept; skipped: {skipped}"
                + "".join(f"\n  {p}" for p in self.problems))


def _messages(thread: Any) -> list[tuple[str, str]]:
    """``(speaker, text)`` of a thread's messages; ValueError names what is malformed."""
    if not isinstance(thread, dict):
        raise ValueError("each line must be a JSON object")
    for key in ("thread_id", "source_file"):
        if not isinstance(thread.get(key), str) or not thread[key].strip():
            raise ValueError(f"field '{key}' must be a non-empty string")
    messages = thread.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("field 'messages' must be a non-empty list")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("speaker"), str) or not isinstance(m.get("text"), str):
            raise ValueError(f"messages[{i}] must have string 'speaker' and 'text'")
        out.append((m["speaker"], m["text"]))
    return out


def thread_to_task(thread: dict[str, Any]) -> dict[str, Any] | None:
    """The deskbench task of one thread (docs/data-formats.md, plus ``agent_replies``).

    Args:
        thread: one line of the threads file, parsed.

    Returns:
        The task, or None when no helper replies after the asker's first message.

    Raises:
        ValueError: the thread lacks ``thread_id``, ``source_file`` or well-formed messages.
    """
    messages = _messages(thread)
    asker = messages[0][0]
    turns = pair_turns(("user" if speaker == asker else "agent", text) for speaker, text in messages)
    if turns is None:
        return None
    question, followups, agent_replies = turns
    speakers = list(dict.fromkeys(speaker for speaker, _ in messages))
    return {
        "id": f"ubuntu-irc-{thread['thread_id']}",
        "question": question,
        "followups": followups,
        "agent_replies": agent_replies,
        "metadata": {"source": "ubuntu_irc", "source_file": thread["source_file"],
                     "thread_id": thread["thread_id"], "asker": asker, "speakers": speakers,
                     "licence": LICENCE},
    }


def import_ubuntu_irc(path: str | Path = DEFAULT_PATH) -> IrcImportResult:
    """Turn a file of IRC threads into tasks; bad lines are skipped and counted.

    Args:
        path: the threads JSONL file (default: the shipped #ubuntu file).

    Returns:
        The tasks and counts (see :class:`IrcImportResult`).

    Raises:
        harness.jsonl.JsonlError: the file is missing, a corrupt gzip, or not UTF-8.
    """
    rows, bad_json, _ = read_jsonl(Path(path))
    result = IrcImportResult(threads_seen=len(rows) + len(bad_json))
    seen: set[str] = set()
    for problem in bad_json:
        result.skip("malformed", f"{path}: {problem}")
    for lineno, thread in rows:
        try:
            task = thread_to_task(thread)
        except ValueError as exc:
            result.skip("malformed", f"{path}: line {lineno}: {exc}")
            continue
        if task is None:
            result.skip("no_helper_reply")
        elif task["id"] in seen:
            result.skip("duplicate_id", f"{path}: line {lineno}: duplicate thread_id {thread['thread_id']!r}")
        else:
            seen.add(task["id"])
            result.tasks.append(task)
    result.kept = len(result.tasks)
    return result
