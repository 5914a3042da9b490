"""A Stack Exchange thread as read from a dump, the task it becomes, and the import's counts.

A :class:`Thread` is a kept question with its accepted answer and the comments on both;
:meth:`Thread.to_task` turns it into a deskbench task, its turns paired by :func:`pair_turns`
(which the #ubuntu IRC importer uses too). :class:`ImportResult` is what
:func:`harness.tasks.stackexchange.import_dump` returns.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from harness.tasks.stackexchange_text import comment_text

MAX_PROBLEMS = 10  # malformed rows described in ImportResult.problems; all are counted


def pair_turns(messages: Iterable[tuple[str, str]]) -> tuple[str, list[str], list[str]] | None:
    """Turn a conversation into deskbench's question, followups and agent replies.

    Consecutive messages of the same side are merged with a blank line; empty messages are
    ignored. A trailing user message is dropped (a turn needs an agent reply).

    Args:
        messages: ``(side, text)`` pairs in order, ``side`` being ``"user"`` or ``"agent"``;
            the first non-empty message must be the user's.

    Returns:
        ``(question, followups, agent_replies)`` with ``agent_replies[k]`` the agent message
        of turn ``k+1`` and ``followups[k]`` the user message of turn ``k+2`` (so
        ``len(followups) == len(agent_replies) - 1``), or None when no agent message follows
        the first user message.

    Raises:
        ValueError: a side other than ``user``/``agent``, or an agent message first.
    """
    merged: list[tuple[str, str]] = []
    for side, text in messages:
        if side not in ("user", "agent"):
            raise ValueError(f"side must be 'user' or 'agent', not {side!r}")
        text = text.strip()
        if not text:
            continue
        if merged and merged[-1][0] == side:
            merged[-1] = (side, merged[-1][1] + "\n\n" + text)
        else:
            merged.append((side, text))
    if merged and merged[0][0] != "user":
        raise ValueError("a conversation must start with the user's message")
    if merged and merged[-1][0] == "user":
        merged.pop()
    if len(merged) < 2:
        return None
    users = [text for side, text in merged if side == "user"]
    agents = [text for side, text in merged if side == "agent"]
    return users[0], users[1:], agents



@dataclass
class Comment:
    """A comment on the question or on its accepted answer."""

    id: int
    post_id: int
    creation_date: str
    text: str
    user_id: int | None
    user_name: str | None
    licence: str | None = None
    by_asker: bool = False


@dataclass
class Thread:
    """A kept question with its accepted answer and the comments on both, in order."""

    question_id: int
    answer_id: int
    title: str
    body: str
    tags: list[str]
    question_score: int
    answer_score: int
    answer: str
    asker_id: int | None
    asker_name: str | None
    answerer_id: int | None
    licences: list[str]
    comments: list[Comment] = field(default_factory=list)
    #: the asker's comments on the question's other answers (facts only, not the conversation)
    asker_answer_comments: list[Comment] = field(default_factory=list)

    def facts(self) -> list[str]:
        """The asker's own comments on the question and all its answers, by date, as text.

        A comment counts only when its ``UserId`` equals the question's ``OwnerUserId``; rows
        without either id are skipped (a display-name match is too weak for facts).
        """
        if self.asker_id is None:
            return []
        mine = [c for c in [*self.comments, *self.asker_answer_comments] if c.user_id == self.asker_id]
        mine.sort(key=lambda c: (c.creation_date, c.id))
        return [text for text in (comment_text(c.text) for c in mine) if text]

    def conversation(self) -> list[tuple[str, str]]:
        """``(side, text)`` messages: question, accepted answer, then each comment."""
        head = [("user", f"{self.title}\n\n{self.body}".strip()), ("agent", self.answer)]
        return head + [("user" if c.by_asker else "agent", c.text) for c in self.comments]

    def to_task(self, site: str) -> dict[str, Any]:
        """The deskbench task of this thread (docs/data-formats.md, plus ``agent_replies``)."""
        question, followups, agent_replies = pair_turns(self.conversation()) or ("", [], [])
        return {
            "id": f"{site}-{self.question_id}",
            "question": question,
            "reference_answer": self.answer,
            "followups": followups,
            "agent_replies": agent_replies,
            "facts": self.facts(),
            "metadata": {
                "source": "stackexchange", "site": site, "question_id": self.question_id,
                "answer_id": self.answer_id, "tags": self.tags,
                "question_score": self.question_score, "answer_score": self.answer_score,
                "comments": len(self.comments),
                "asker_comments": sum(c.by_asker for c in self.comments),
                "answer_by_asker": self.asker_id is not None and self.asker_id == self.answerer_id,
                "licence": "; ".join(self.licences) if self.licences else "CC BY-SA (Stack Exchange data dump)",
            },
        }


@dataclass
class ImportResult:
    """What :func:`import_dump` found.

    Attributes:
        site: the site name used in task ids.
        tasks: one task per kept question, by question id.
        threads: the same questions as :class:`Thread` (comments with ``by_asker``).
        questions_seen: well-formed question rows (``PostTypeId`` 1).
        answers_seen: well-formed answer rows (``PostTypeId`` 2).
        kept: questions turned into tasks.
        skipped: questions not kept, by reason: ``no_accepted_answer``,
            ``accepted_answer_missing`` (not in the dump, malformed, or not an answer to this
            question), ``answer_score_below_min``, ``empty_answer``.
        malformed: rows skipped because a required attribute is missing or not a number.
        malformed_by_file: the same, per file name.
        problems: the first few malformed rows, described.
        comments_seen: well-formed comment rows.
        comments_kept: comments attached to kept threads.
    """

    site: str
    tasks: list[dict[str, Any]] = field(default_factory=list)
    threads: list[Thread] = field(default_factory=list)
    questions_seen: int = 0
    answers_seen: int = 0
    kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    malformed: int = 0
    malformed_by_file: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    comments_seen: int = 0
    comments_kept: int = 0

    def skip(self, reason: str, n: int = 1) -> None:
        """Count ``n`` questions not kept for ``reason`` (nothing is recorded when ``n`` is 0)."""
        if n:
            self.skipped[reason] = self.skipped.get(reason, 0) + n

    def bad_row(self, file: str, row: int, what: str) -> None:
        """Count a malformed row of ``file``; the first :data:`MAX_PROBLEMS` are also described."""
        self.malformed += 1
        self.malformed_by_file[file] = self.malformed_by_file.get(file, 0) + 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{file} row {row}: {what}")

    def summary(self) -> str:
        """A short human-readable account of the import."""
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items())) or "none"
        text = (f"{self.site}: {self.questions_seen} questions, {self.answers_seen} answers, "
                f"{self.comments_seen} comments read; {self.kept} tasks kept; skipped: {skipped}; "
                f"{self.malformed} malformed row(s) skipped")
        return text + "".join(f"\n  {p}" for p in self.problems)
