"""Build the two built-in #ubuntu IRC task sets from the shipped threads.

    .venv/bin/python -m harness.data.ubuntu_irc.build_tasks            # write both files
    .venv/bin/python -m harness.data.ubuntu_irc.build_tasks --review   # print the rule candidates

* ``tasks.jsonl``: every thread of ``ubuntu_irc_test_threads.jsonl`` as a task
  (:func:`harness.tasks.ubuntu_irc.import_ubuntu_irc`), in file order.
* ``troubleshooting.jsonl``: the threads where a conversation needs several turns: the rules
  of :func:`rule_failures` keep the candidates, a hand review (``troubleshooting_review.tsv``)
  rejects some of them and names the demo tasks that go first. A second hand label
  (``troubleshooting_fixes.tsv``) names, per kept thread, the helper turn(s) that give the fix;
  their text becomes the task's ``reference_answer`` (the thread's solution), so the simulated
  user and the problem extraction compare with the fix, not with the helpers' questions and
  diagnostic steps (:func:`with_fix`).

The output is deterministic: same input files, same bytes (see SOURCE.md).
"""
from __future__ import annotations

import argparse
import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.tasks.stackexchange import write_tasks
from harness.tasks.ubuntu_irc import DEFAULT_PATH, import_ubuntu_irc

HERE = Path(__file__).parent
ALL_PATH = HERE / "tasks.jsonl"
TROUBLESHOOTING_PATH = HERE / "troubleshooting.jsonl"
REVIEW_PATH = HERE / "troubleshooting_review.tsv"
FIXES_PATH = HERE / "troubleshooting_fixes.tsv"
DEMO_COUNT = 5  # the first tasks of the subset, the ones a short demo run uses

# (a) the question states a problem on the asker's own machine, in a full sentence: it speaks
# in the first person or shows what the asker ran or got (a command, a path, "getting this error")
MIN_QUESTION_CHARS = 50
MIN_QUESTION_WORDS = 8
_OWN_MACHINE = re.compile(r"\b(i|i'm|im|i've|ive|i'd|my|me|mine|getting|gives|says)\b", re.I)
_SYMPTOM = re.compile(
    r"\b(error\w*|fail\w*|can'?t|cannot|couldn'?t|won'?t|wont|doesn'?t|doesnt|didn'?t|isn'?t|"
    r"not (?:work\w*|start\w*|load\w*|show\w*|find\w*|found|respond\w*|connect\w*|boot\w*|"
    r"detect\w*|ready)|no (?:sound|signal|network|internet|wireless|x|gui|output)|broken|broke|"
    r"crash\w*|freez\w*|frozen|hang\w*|stuck|problem\w*|issue\w*|trouble|malfunction\w*|"
    r"missing|disappear\w*|denied|unable|refus\w*|stops?|stopped|corrupt\w*|mess|messed|"
    r"slow\w*|lag\w*|404|wrong)\b", re.I)
# (b) a helper gives a command or a concrete step: a command line, a system path, or an
# imperative step ("try ...", "reinstall ...", "make sure ...") opening a sentence or softened
# ("just extract ...", "i'd reinstall ...", "either ... or run memtest")
_COMMAND = re.compile(
    r"(`[^`]+`|\b(?:sudo|apt-get|apt|aptitude|dpkg|modprobe|lsmod|lspci|lsusb|dmesg|fdisk|"
    r"mount|umount|chmod|chown|grub|update-grub|ifconfig|iwconfig|ping|tar|gksudo|nano|gedit|"
    r"service|systemctl|ls|cat|rm|mv|cp|ps|kill|fsck|blkid|xrandr|lshw|uname|killall|memtest)\b\s*\S|"
    r"(?<![\w.])/(?:etc|dev|usr|var|lib|boot|home|media|mnt|proc|tmp)/|\bxorg\.conf\b)", re.I)
_STEP = re.compile(
    r"(?:^|[:,.;!?]\s|\n|\b(?:just|then|first|perhaps|maybe|i'?d|either|or|and|please|"
    r"(?:you )?(?:can|could|should|need to|may want to|might want to))\s)"
    r"(?:try|run|type|install|reinstall|remove|purge|edit|check|open|use|add|boot|reboot|press|"
    r"go to|click|double click|select|unplug|plug|enable|disable|disconnect|look at|look for|"
    r"paste|pastebin|make sure|ensure|turn|extract|delete|change|set|uninstall|upgrade|update|"
    r"downgrade|rename|copy|format|read)\b", re.I)


def rule_failures(task: dict[str, Any]) -> list[str]:
    """Why a task is not a troubleshooting candidate; empty when it passes every rule.

    Args:
        task: a task from :func:`harness.tasks.ubuntu_irc.import_ubuntu_irc`.

    Returns:
        Short names of the failed rules: ``short_question``, ``not_own_machine``,
        ``no_symptom``, ``no_concrete_step``, ``no_facts``.
    """
    question = task["question"]
    failures = []
    if len(question) < MIN_QUESTION_CHARS or len(question.split()) < MIN_QUESTION_WORDS:
        failures.append("short_question")
    if not (_OWN_MACHINE.search(question) or _COMMAND.search(question)):
        failures.append("not_own_machine")
    if not _SYMPTOM.search(question):
        failures.append("no_symptom")
    if not any(_COMMAND.search(r) or _STEP.search(r) for r in task["agent_replies"]):
        failures.append("no_concrete_step")
    if not task["facts"]:
        failures.append("no_facts")
    return failures


def read_review(path: Path = REVIEW_PATH) -> tuple[dict[str, str], list[str]]:
    """The hand review: ``({rejected thread id: reason}, [demo thread ids in order])``.

    The file is tab-separated with a header ``thread_id, decision, note``; ``decision`` is
    ``reject`` (the note is the reason) or ``demo`` (kept, and put first, in file order).

    Raises:
        ValueError: an unknown decision, a thread id listed twice, or a reject without a reason.
    """
    rejected: dict[str, str] = {}
    demo: list[str] = []
    with path.open(encoding="utf-8", newline="") as f:
        for lineno, row in enumerate(csv.DictReader(f, delimiter="\t"), 2):
            tid, decision, note = row["thread_id"].strip(), row["decision"].strip(), (row["note"] or "").strip()
            if tid in rejected or tid in demo:
                raise ValueError(f"{path}: line {lineno}: {tid} listed twice")
            if decision == "reject" and note:
                rejected[tid] = note
            elif decision == "demo":
                demo.append(tid)
            else:
                raise ValueError(f"{path}: line {lineno}: decision must be 'reject' (with a note) or 'demo'")
    return rejected, demo


@dataclass(frozen=True)
class FixLabel:
    """The hand label of one thread's fix.

    Attributes:
        replies: indices into the task's ``agent_replies`` that give the fix (empty: the
            thread holds no fix).
        confirmed: whether a later message of the asker confirms that it worked.
        note: what the fix is, and the evidence.
    """

    replies: tuple[int, ...]
    confirmed: bool
    note: str


def read_fixes(path: Path = FIXES_PATH) -> dict[str, FixLabel]:
    """The fix labels: ``{thread id: FixLabel}``.

    The file is tab-separated with a header ``thread_id, fix_replies, confirmed, note``;
    ``fix_replies`` is comma-separated indices into ``agent_replies`` or ``none``; ``confirmed``
    is ``yes`` or ``no``.

    Raises:
        ValueError: a thread listed twice, a malformed index list, ``confirmed`` neither yes nor
            no, or a label without a note.
    """
    labels: dict[str, FixLabel] = {}
    with path.open(encoding="utf-8", newline="") as f:
        for lineno, row in enumerate(csv.DictReader(f, delimiter="\t"), 2):
            tid, replies = row["thread_id"].strip(), (row["fix_replies"] or "").strip()
            confirmed, note = (row["confirmed"] or "").strip(), (row["note"] or "").strip()
            where = f"{path}: line {lineno}"
            if tid in labels:
                raise ValueError(f"{where}: {tid} listed twice")
            if not re.fullmatch(r"none|\d+(,\d+)*", replies):
                raise ValueError(f"{where}: fix_replies must be indices like '3' or '1,2', or 'none'")
            if confirmed not in ("yes", "no") or not note:
                raise ValueError(f"{where}: confirmed must be 'yes' or 'no', and the note must say what the fix is")
            indices = () if replies == "none" else tuple(int(i) for i in replies.split(","))
            labels[tid] = FixLabel(indices, confirmed == "yes", note)
    return labels


def with_fix(task: dict[str, Any], label: FixLabel) -> dict[str, Any]:
    """The task with its labelled fix: ``reference_answer`` the fix turns' text (joined by a
    blank line), ``metadata.fix_replies`` and ``metadata.fix_confirmed``; a thread without a
    fix keeps no reference answer (its solution is then all the helpers' messages).

    Raises:
        ValueError: an index past the task's ``agent_replies``.
    """
    replies = task["agent_replies"]
    bad = [i for i in label.replies if i >= len(replies)]
    if bad:
        raise ValueError(f"{FIXES_PATH.name}: {task['metadata']['thread_id']}: fix_replies {bad} "
                         f"past its {len(replies)} agent replies")
    head = {"id": task["id"], "question": task["question"]}
    if label.replies:  # right after the question, as in the task format's documentation
        head["reference_answer"] = "\n\n".join(replies[i].strip() for i in label.replies)
    return {**head, **{k: v for k, v in task.items() if k not in head},
            "metadata": {**task["metadata"], "fix_replies": list(label.replies), "fix_confirmed": label.confirmed}}


def candidates(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tasks that pass every rule of :func:`rule_failures`, in file order."""
    return [t for t in tasks if not rule_failures(t)]


def troubleshooting(tasks: list[dict[str, Any]], review_path: Path = REVIEW_PATH,
                    fixes_path: Path = FIXES_PATH) -> list[dict[str, Any]]:
    """The curated subset: rule candidates minus the review's rejects, demo tasks first, each
    with its labelled fix (:func:`with_fix`).

    Raises:
        ValueError: the review names a thread that is not a candidate (the rules changed
            since the review), or not exactly :data:`DEMO_COUNT` demo tasks; the fix labels
            miss a kept thread or name one that is not kept.
    """
    pool = {t["metadata"]["thread_id"]: t for t in candidates(tasks)}
    rejected, demo = read_review(review_path)
    stale = [tid for tid in [*rejected, *demo] if tid not in pool]
    if stale:
        raise ValueError(f"{review_path}: not rule candidates (review again): {', '.join(stale)}")
    if len(demo) != DEMO_COUNT:
        raise ValueError(f"{review_path}: {len(demo)} demo tasks, want {DEMO_COUNT}")
    rest = [tid for tid in pool if tid not in rejected and tid not in demo]
    kept = [*demo, *rest]
    fixes = read_fixes(fixes_path)
    unlabelled, extra = [t for t in kept if t not in fixes], [t for t in fixes if t not in kept]
    if unlabelled or extra:
        raise ValueError(f"{fixes_path}: label every kept thread's fix, and only those "
                         f"(missing: {', '.join(unlabelled) or '-'}; not kept: {', '.join(extra) or '-'})")
    return [with_fix({**pool[tid], "metadata": {**pool[tid]["metadata"], "subset": "troubleshooting"}},
                     fixes[tid]) for tid in kept]


def build(threads_path: Path = DEFAULT_PATH, review_path: Path = REVIEW_PATH,
          fixes_path: Path = FIXES_PATH) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both task sets, in memory: ``(all tasks, troubleshooting tasks)``.

    Args:
        threads_path: the shipped threads file.
        review_path: the hand review of the rule candidates.
        fixes_path: the hand labels of each kept thread's fix.

    Raises:
        ValueError: a bad review file (see :func:`troubleshooting`) or a thread file that
            does not import cleanly (every shipped thread must become a task).
    """
    result = import_ubuntu_irc(threads_path)
    if result.skipped:
        raise ValueError(result.summary())
    return result.tasks, troubleshooting(result.tasks, review_path, fixes_path)


def print_candidates(tasks: list[dict[str, Any]]) -> None:
    """Print every rule candidate's whole thread, for the hand review."""
    for t in candidates(tasks):
        print(f"===== {t['metadata']['thread_id']}\nQ: {t['question']}")
        for k, reply in enumerate(t["agent_replies"]):
            print(f"A{k + 1}: {reply}")
            if k < len(t["followups"]):
                print(f"U{k + 2}: {t['followups'][k]}")
        print(f"FACTS: {t['facts']}\n")


def main() -> None:
    """Write both files (or, with ``--review``, print the candidates) and the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--review", action="store_true", help="print the rule candidates, write nothing")
    args = parser.parse_args()
    if args.review:
        print_candidates(import_ubuntu_irc().tasks)
        return
    everything, subset = build()
    write_tasks(everything, ALL_PATH)
    write_tasks(subset, TROUBLESHOOTING_PATH)
    rejected, _ = read_review()
    print(f"{ALL_PATH.name}: {len(everything)} tasks; rule candidates {len(candidates(everything))}, "
          f"rejected in review {len(rejected)}; {TROUBLESHOOTING_PATH.name}: {len(subset)} tasks")


if __name__ == "__main__":
    main()
