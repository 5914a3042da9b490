"""Ubuntu IRC support threads -> deskbench tasks (and the human thread, for the human baseline).

The shipped file ``harness/data/ubuntu_irc/ubuntu_irc_test_threads.jsonl`` holds 227 real
#ubuntu conversations (see its ``SOURCE.md``), one per line::

    {"source_file": "2005-07-06_14.ascii.txt", "thread_id": "2005-07-06_14#1005",
     "messages": [{"line": 1005, "time": "02:02", "speaker": "stig_", "text": "..."}, ...]}

The asker is the first message's speaker: the asker's messages are user messages, everyone
else's are agent (helper) messages. Turns are built with
:func:`harness.tasks.stackexchange_threads.pair_turns` (same-side messages merged, a trailing
user message dropped). Before that, the asker's reposts of the question are dropped (:func:`without_reposts`):
on IRC an unanswered question is pasted again, often whole, sometimes with a sentence added,
and the simulated user would otherwise open with the same question two or three times.

A task also carries ``facts``: the asker's later messages (the text of ``followups``), one per
IRC message, cleaned for the simulated user (:func:`asker_facts`): an addressing prefix naming
another speaker ("holycow: ...") is removed, pure chatter ("ok", "thanks", "brb") and
duplicates are dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.tasks.jsonl import read_jsonl
from harness.tasks.stackexchange_threads import MAX_PROBLEMS, pair_turns

DEFAULT_PATH = Path(__file__).resolve().parent.parent / "data" / "ubuntu_irc" / "ubuntu_irc_test_threads.jsonl"
LICENCE = "CC BY 4.0"

# How IRC users address someone: "nick: text", "nick, text", "nick> text", "nick - text",
# "nick. text"; "-" and "." only before a space ("foo-bar", "wols.org" are words, not addresses)
_ADDRESS_SEPARATORS = ":,>-."
_SPACED_SEPARATORS = "-."
# Words that carry nothing about the asker's situation: a message made only of these (and
# nicks, punctuation, emoticons) is chatter ("ok", "thanks", "brb", "hmm hang on", "lol").
_CHATTER = frozenset("""
    ok okay k kk oki okey alright allright thanks thank thanx thx ty tnx cheers you u all again
    much very lot brb bbl back afk hmm hmmm hmmmm hm mm hang on wait sec second moment min minute
    one a lol heh hehe haha rofl lmao yes yeah yep yup yea ya no nope nah sure cool great nice
    neat awesome ah oh ahh ooh aha um uh err erm sorry np hi hello hey ping anyone there here
    right well so and then now too please pls plz i i'll ill will let lemme me try see gonna
    that it this got gotcha d p o xd
""".split())
_WORD = re.compile(r"[a-z0-9']+")


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
        """Count a thread not kept for ``reason``; describe it in ``problems`` (the first few only)."""
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


def strip_addressing(text: str, nicks: Iterable[str]) -> str:
    """``text`` without leading addressing prefixes that name one of ``nicks``.

    Only known nicks are stripped, so pasted output such as ``tar: Error ...`` or
    ``Depends: libc6`` (itself a fact) stays whole. Several prefixes in a row
    (``zyko, wille: ...``) are all removed; case and trailing ``_`` of a nick are ignored.

    Args:
        text: one IRC message.
        nicks: the speakers that may be addressed.

    Returns:
        The message without the prefixes, stripped of surrounding whitespace.
    """
    known = sorted({n.lower().rstrip("_`") for n in nicks if n.strip("_`")}, key=len, reverse=True)
    text = text.strip()
    while True:
        for nick in known:
            rest = text[len(nick):].lstrip("_` ")
            if (text[:len(nick)].lower() == nick and rest[:1] in tuple(_ADDRESS_SEPARATORS)
                    and (rest[0] not in _SPACED_SEPARATORS or rest[1:2].isspace())):
                text = rest[1:].strip()
                break
        else:
            return text


REPOST_MIN_WORDS = 4


def _repost_key(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(" .?!")


def without_reposts(messages: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The messages without the asker's reposts of the question.

    Only the asker's opening messages (before anyone else speaks) are looked at: one that
    repeats an earlier one, or that a later one repeats with more added (the later one starts
    with it, and it has at least :data:`REPOST_MIN_WORDS` words: "hi" before "hi, my wifi ..."
    is a greeting, not a question), is dropped; the fullest copy stays, where the later one
    stood. Case, spacing and closing punctuation are ignored. A rephrased question is not a
    repost and stays.

    Args:
        messages: ``(speaker, text)`` in thread order; the first speaker is the asker.

    Returns:
        The same messages, reposts left out.
    """
    asker = messages[0][0]
    opening = next((i for i, (speaker, _) in enumerate(messages) if speaker != asker), len(messages))
    keys = [_repost_key(text) for _, text in messages[:opening]]
    dropped = {i for i, key in enumerate(keys)
               if key in keys[:i] or (len(key.split()) >= REPOST_MIN_WORDS and any(
                   later != key and later.startswith(key) for later in keys[i + 1:]))}
    return [m for i, m in enumerate(messages) if i not in dropped]


def is_chatter(text: str, nicks: Iterable[str] = ()) -> bool:
    """Whether a message says nothing about the asker's situation ("ok", "thanks", "brb", "lol").

    Args:
        text: one message, addressing prefix already removed.
        nicks: speakers' names, which count as chatter too ("thanks holycow").

    Returns:
        True when every word is a filler word or a nick (or there are no words at all).
    """
    names = {n.lower().rstrip("_`") for n in nicks}
    return all(w in _CHATTER or w.rstrip("_`") in names for w in _WORD.findall(text.lower()))


# a message where the asker reports what the cause or the fix turned out to be ("Ah ha. It was
# the formatting of my public key in authorized_keys"): the simulated user must not know it
_RESOLUTION = re.compile(
    r"\b(?:a+h+ ?ha+|turned out|turns out|the (?:problem|issue|cause|culprit) was(?! the same)|"
    r"was the (?:problem|issue|cause|culprit)|(?:that|this) (?:fixed|solved) it|fixed it|solved it|"
    r"got it working)\b|(?:^|[.!]\s+)it was (?:the|my|a|an) ", re.I)


def reports_resolution(text: str) -> bool:
    """Whether a message says what the cause or the fix turned out to be."""
    return bool(_RESOLUTION.search(text))


def asker_facts(followups: Iterable[str], nicks: Iterable[str]) -> list[str]:
    """The asker's later messages as facts for the simulated user.

    Args:
        followups: the task's followups; each is one or more IRC messages joined by a blank
            line (:func:`pair_turns`), and an IRC message never holds a line break, so each
            line is one message.
        nicks: the speakers whose names may open a message as an address.

    Returns:
        One fact per message, addressing prefix removed, chatter, duplicates
        (case-insensitive) and reports of the found cause or fix (:func:`reports_resolution`)
        dropped, in thread order.
    """
    nicks = list(nicks)
    facts: list[str] = []
    seen: set[str] = set()
    for followup in followups:
        for line in followup.splitlines():
            fact = strip_addressing(line, nicks)
            key = " ".join(fact.lower().split())
            if fact and key not in seen and not is_chatter(fact, nicks) and not reports_resolution(fact):
                seen.add(key)
                facts.append(fact)
    return facts


def thread_to_task(thread: dict[str, Any], nicks: Iterable[str] = ()) -> dict[str, Any] | None:
    """The deskbench task of one thread (docs/data-formats.md, plus ``agent_replies``).

    Args:
        thread: one line of the threads file, parsed.
        nicks: more nicks that may open the asker's messages as an address (e.g. everyone
            seen in the same log), besides the thread's own speakers; used for ``facts``.

    Returns:
        The task, or None when no helper replies after the asker's first message.

    Raises:
        ValueError: the thread lacks ``thread_id``, ``source_file`` or well-formed messages.
    """
    messages = without_reposts(_messages(thread))
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
        "facts": asker_facts(followups, [n for n in [*speakers, *nicks] if n != asker]),
        "metadata": {"source": "ubuntu_irc", "source_file": thread["source_file"],
                     "thread_id": thread["thread_id"], "asker": asker, "speakers": speakers,
                     "licence": LICENCE},
    }


def import_ubuntu_irc(path: str | Path = DEFAULT_PATH,
                      on_progress: Callable[[int, int], None] | None = None) -> IrcImportResult:
    """Turn a file of IRC threads into tasks; bad lines are skipped and counted.

    Args:
        path: the threads JSONL file (default: the shipped #ubuntu file).
        on_progress: ``(threads done, threads)`` as it goes, last with every thread done.

    Returns:
        The tasks and counts (see :class:`IrcImportResult`).

    Raises:
        harness.tasks.jsonl.JsonlError: the file is missing, a corrupt gzip, or not UTF-8.
    """
    rows, bad_json, _ = read_jsonl(Path(path))
    result = IrcImportResult(threads_seen=len(rows) + len(bad_json))
    seen: set[str] = set()
    nicks = _nicks_by_log(thread for _, thread in rows)
    for problem in bad_json:
        result.skip("malformed", f"{path}: {problem}")
    for done, (lineno, thread) in enumerate(rows):
        if on_progress:
            on_progress(done, len(rows))
        try:
            task = thread_to_task(thread, nicks.get(_log_of(thread), ()))
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
    if on_progress:
        on_progress(len(rows), len(rows))
    result.kept = len(result.tasks)
    return result


def _log_of(thread: Any) -> str | None:
    """The log file a thread comes from, or None for a malformed line."""
    log = thread.get("source_file") if isinstance(thread, dict) else None
    return log if isinstance(log, str) else None


def _nicks_by_log(threads: Iterable[Any]) -> dict[str, set[str]]:
    """Every speaker of each log file: askers often address a helper of a neighbouring thread."""
    nicks: dict[str, set[str]] = {}
    for thread in threads:
        log = _log_of(thread)
        messages = thread.get("messages") if log is not None else None
        for m in messages if isinstance(messages, list) else ():
            if isinstance(m, dict) and isinstance(m.get("speaker"), str):
                nicks.setdefault(log, set()).add(m["speaker"])
    return nicks
