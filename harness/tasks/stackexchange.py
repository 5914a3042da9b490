"""Stack Exchange data dump -> deskbench tasks (and the human thread, for the human baseline).

A site's official dump (``superuser.com.7z`` etc., extracted) is a folder holding ``Posts.xml``
and ``Comments.xml``. Both are read streaming with :func:`xml.etree.ElementTree.iterparse`,
every row cleared once read, so a multi-GB dump is imported in bounded memory:

1. pass 1 over ``Posts.xml`` keeps integers only: ``{accepted answer id: question id}`` and
   ``{answer id: parent id}`` for answers scoring at least ``min_answer_score``;
2. pass 2 over ``Posts.xml`` keeps the text of the kept questions and their accepted answers;
3. one pass over ``Comments.xml`` keeps the comments on those posts.

A kept question becomes one task. Its conversation is the question (user turn 1), the accepted
answer (agent turn 1), then the comments on both posts by ``CreationDate`` then ``Id``: the
asker's comments are user messages, everyone else's agent messages (see
:func:`harness.tasks.stackexchange_threads.pair_turns`).
The task's ``facts`` are the asker's own comments (``UserId`` == the question's
``OwnerUserId``) on the question and on any of its answers, by date, tags stripped
(:func:`harness.tasks.stackexchange_text.comment_text`): what the real asker added later, for
the simulated user.

This module reads the dump (:func:`import_dump`) and writes task files (:func:`write_tasks`,
which the other importers and the split use too); the threads and the tasks they become are in
:mod:`harness.tasks.stackexchange_threads`, the cleaning of HTML in
:mod:`harness.tasks.stackexchange_text`.
"""
from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from harness.tasks.jsonl import atomic_write
from harness.tasks.stackexchange_text import html_to_text, parse_tags
from harness.tasks.stackexchange_threads import Comment, ImportResult, Thread

_SITE_SUFFIXES = (".stackexchange.com", ".com", ".net")


class StackExchangeImportError(ValueError):
    """A dump that cannot be read at all; the message names the file and how to fix it."""


def write_tasks(tasks: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write tasks as JSONL (gzipped when ``path`` ends in ``.gz``), atomically.

    The rows go to a temporary file beside ``path`` that is renamed over it at the end, so a
    reader never sees a half-written file and an interrupted write leaves ``path`` untouched.

    Args:
        tasks: task dicts (docs/data-formats.md).
        path: the output file; missing parent folders are created.

    Returns:
        The number of tasks written.
    """
    path = Path(path)
    count = 0
    with atomic_write(path, "wb") as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if path.suffix == ".gz" else raw
        for task in tasks:
            stream.write((json.dumps(task, ensure_ascii=False) + "\n").encode("utf-8"))
            count += 1
        if stream is not raw:
            stream.close()
    return count


# --------------------------------------------------------------------------------------------
# Streaming the dump
# --------------------------------------------------------------------------------------------

class _BadRow(ValueError):
    """A row with a missing or unparsable required attribute."""


class _CountingReader:
    """A binary file whose ``read`` reports how many bytes were read so far."""

    def __init__(self, f: BinaryIO, on_read: Callable[[int], None]):
        self.f, self.on_read, self.n = f, on_read, 0

    def read(self, size: int = -1) -> bytes:
        data = self.f.read(size)
        self.n += len(data)
        self.on_read(self.n)
        return data


def _rows(path: Path, root_tag: str,
          on_read: Callable[[int], None] | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(row number, attributes)`` of every ``<row>`` of ``path``, streaming;
    ``on_read(bytes read)`` as the file is read.

    Raises:
        StackExchangeImportError: the file is not well-formed XML or not a ``<root_tag>`` file.
    """
    try:
        with open(path, "rb") as raw:
            yield from _parse_rows(path, _CountingReader(raw, on_read) if on_read else raw, root_tag)
    except ET.ParseError as exc:
        line, column = exc.position
        raise StackExchangeImportError(
            f"{path}: not well-formed XML at line {line}, column {column} ({str(exc).split(':')[0]}). "
            "The file is truncated or damaged: download the site's dump again and re-extract it "
            "(e.g. `7z x superuser.com.7z`), then rerun the import.") from exc
    except OSError as exc:
        raise StackExchangeImportError(f"{path}: cannot be read ({exc.strerror or exc}).") from exc


def _parse_rows(path: Path, source, root_tag: str) -> Iterator[tuple[int, dict[str, str]]]:
    context = ET.iterparse(source, events=("start", "end"))
    root = None
    n = 0
    for event, elem in context:
        if root is None:
            root = elem
            if elem.tag != root_tag:
                raise StackExchangeImportError(
                    f"{path}: expected a <{root_tag}> file from a Stack Exchange data dump, "
                    f"found <{elem.tag}>. Check that the file is the dump's {path.name}.")
            continue
        if event == "end" and elem.tag == "row":
            n += 1
            yield n, dict(elem.attrib)
            elem.clear()
            root.clear()


def _int(row: dict[str, str], key: str, required: bool = True) -> int | None:
    value = row.get(key)
    if value is None or value == "":
        if required:
            raise _BadRow(f"missing {key}")
        return None
    try:
        return int(value)
    except ValueError:
        raise _BadRow(f"{key} {value!r} is not an integer") from None


def _text(row: dict[str, str], key: str) -> str:
    value = row.get(key)
    if value is None:
        raise _BadRow(f"missing {key}")
    return value


def _post(row: dict[str, str]) -> tuple[int, int, dict[str, Any]]:
    """``(id, type, fields)`` of a post row; fields only for questions and answers."""
    pid, ptype = _int(row, "Id"), _int(row, "PostTypeId")
    if ptype == 1:
        title = _text(row, "Title").strip()
        if not title:
            raise _BadRow("empty Title")
        return pid, ptype, {"score": _int(row, "Score"), "body": _text(row, "Body"), "title": title,
                            "accepted": _int(row, "AcceptedAnswerId", required=False),
                            "owner": _int(row, "OwnerUserId", required=False)}
    if ptype == 2:
        return pid, ptype, {"score": _int(row, "Score"), "body": _text(row, "Body"),
                            "parent": _int(row, "ParentId"),
                            "owner": _int(row, "OwnerUserId", required=False)}
    return pid, ptype, {}


def site_name(dump_dir: str | Path) -> str:
    """The default site name of a dump folder: ``superuser.com`` -> ``superuser``."""
    name = Path(dump_dir).resolve().name.lower()
    for suffix in _SITE_SUFFIXES:
        if name.endswith(suffix) and name != suffix:
            return name[: -len(suffix)]
    return name


def _dump_file(dump_dir: Path, name: str) -> Path:
    path = dump_dir / name
    if not path.is_file():
        raise StackExchangeImportError(
            f"{dump_dir}: no {name}. Point the import at the folder extracted from a site's dump "
            f"archive (e.g. `7z x superuser.com.7z -osuperuser.com`); it holds Posts.xml and Comments.xml.")
    return path


def import_dump(dump_dir: str | Path, *, site: str | None = None, min_answer_score: int = 100,
                on_progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Import the questions of a Stack Exchange dump whose accepted answer scores high enough.

    Args:
        dump_dir: the extracted dump folder (``Posts.xml``, ``Comments.xml``).
        site: the site name used in task ids (``<site>-<question id>``); default: the folder
            name without ``.stackexchange.com``/``.com``/``.net``.
        min_answer_score: keep a question only if its accepted answer's ``Score`` is at least
            this (the paper: 100).
        on_progress: ``(bytes read, bytes to read)`` over the three passes (Posts.xml twice,
            Comments.xml once), as the files are read.

    Returns:
        The tasks, threads and counts (see :class:`ImportResult`). Malformed rows are skipped
        and counted, never fatal.

    Raises:
        StackExchangeImportError: a file is missing, unreadable, or not well-formed XML (a
            truncated download); the message names the file, line and column.
    """
    dump_dir = Path(dump_dir)
    posts_path = _dump_file(dump_dir, "Posts.xml")
    comments_path = _dump_file(dump_dir, "Comments.xml")
    result = ImportResult(site=site or site_name(dump_dir))
    passes = _Passes(on_progress, [posts_path, posts_path, comments_path])
    keep, unkept = _select(posts_path, min_answer_score, result, passes.next())
    questions, answers, other_answers = _collect_posts(posts_path, keep, unkept, result, passes.next())
    askers = {qid: q["owner"] for qid, q in questions.items() if q["owner"] is not None}
    comments, asker_answer_comments = _collect_comments(comments_path, keep, other_answers, askers,
                                                        result, passes.next())
    passes.finish()
    for qid in sorted(keep):
        q, a = questions.get(qid), answers.get(keep[qid])
        if q is None or a is None:  # a row that changed between the passes (file rewritten)
            result.skip("accepted_answer_missing")
        elif not a["text"]:
            result.skip("empty_answer")
        else:
            thread = _thread(qid, keep[qid], q, a, comments[qid])
            thread.asker_answer_comments = asker_answer_comments.get(qid, [])
            result.threads.append(thread)
            result.tasks.append(thread.to_task(result.site))
            result.comments_kept += len(thread.comments)
    result.kept = len(result.threads)
    return result


class _Passes:
    """The bytes read over several passes over files, as one ``on_progress(done, total)``."""

    def __init__(self, on_progress: Callable[[int, int], None] | None, files: list[Path]):
        self.on_progress = on_progress
        self.sizes = [f.stat().st_size for f in files]
        self.total, self.before, self.k = sum(self.sizes), 0, 0

    def next(self) -> Callable[[int], None] | None:
        """The ``on_read`` of the next pass."""
        if self.on_progress is None:
            return None
        if self.k:
            self.before += self.sizes[self.k - 1]
        self.k += 1
        before, report = self.before, self.on_progress
        return lambda n: report(min(before + n, self.total), self.total)

    def finish(self) -> None:
        if self.on_progress:
            self.on_progress(self.total, self.total)


def _select(posts_path: Path, min_answer_score: int, result: ImportResult,
            on_read: Callable[[int], None] | None = None) -> tuple[dict[int, int], dict[int, int]]:
    """Pass 1 (integers only): ``({kept question: accepted answer}, {other accepted answer: question})``.

    Counts questions, answers, malformed rows and questions without an accepted answer.
    """
    accepted: dict[int, int] = {}   # accepted answer id -> question id
    good: dict[int, int] = {}       # answer id -> parent id, for answers scoring >= min
    for n, row in _rows(posts_path, "posts", on_read):
        try:
            pid, ptype, post = _post(row)
        except _BadRow as exc:
            result.bad_row(posts_path.name, n, f"(Id={row.get('Id')}) {exc}")
            continue
        if ptype == 1:
            result.questions_seen += 1
            if post["accepted"] is None:
                result.skip("no_accepted_answer")
            else:
                accepted[post["accepted"]] = pid
        elif ptype == 2:
            result.answers_seen += 1
            if post["score"] >= min_answer_score:
                good[pid] = post["parent"]
    keep = {qid: aid for aid, qid in accepted.items() if good.get(aid) == qid}
    return keep, {aid: qid for aid, qid in accepted.items() if qid not in keep}


def _collect_posts(posts_path: Path, keep: dict[int, int], unkept: dict[int, int],
                   result: ImportResult, on_read: Callable[[int], None] | None = None
                   ) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]], dict[int, int]]:
    """Pass 2: the fields of the kept questions and answers, by id, and
    ``{other answer id: question id}`` for the kept questions' other answers (integers only:
    the asker's comments on them become facts).

    Also counts why the other accepted answers were not kept: present (so scoring below the
    minimum) or not (missing, malformed, or not an answer to that question).
    """
    kept_answers = {aid: qid for qid, aid in keep.items()}
    questions: dict[int, dict[str, Any]] = {}
    answers: dict[int, dict[str, Any]] = {}
    other_answers: dict[int, int] = {}
    below_min = 0
    for _, row in _rows(posts_path, "posts", on_read):
        try:
            pid, ptype, post = _post(row)
        except _BadRow:
            continue  # counted in pass 1
        if ptype == 1 and pid in keep:
            questions[pid] = {"title": post["title"], "body": html_to_text(post["body"]),
                              "tags": parse_tags(row.get("Tags")), "score": post["score"],
                              "owner": post["owner"], "owner_name": row.get("OwnerDisplayName"),
                              "licence": row.get("ContentLicense")}
        elif ptype == 2 and kept_answers.get(pid) == post["parent"]:
            answers[pid] = {"text": html_to_text(post["body"]), "score": post["score"],
                            "owner": post["owner"], "licence": row.get("ContentLicense")}
        elif ptype == 2 and unkept.get(pid) == post["parent"]:
            below_min += 1
        elif ptype == 2 and post["parent"] in keep:
            other_answers[pid] = post["parent"]
    result.skip("answer_score_below_min", below_min)
    result.skip("accepted_answer_missing", len(unkept) - below_min)
    return questions, answers, other_answers


def _collect_comments(comments_path: Path, keep: dict[int, int], other_answers: dict[int, int],
                      askers: dict[int, int], result: ImportResult,
                      on_read: Callable[[int], None] | None = None
                      ) -> tuple[dict[int, list[Comment]], dict[int, list[Comment]]]:
    """By question id: the comments on each kept question and its accepted answer, and the
    asker's own comments (``askers``: question id -> owner id) on its other answers."""
    post_to_question = {**{qid: qid for qid in keep}, **{aid: qid for qid, aid in keep.items()}}
    comments: dict[int, list[Comment]] = {qid: [] for qid in keep}
    asker_answer_comments: dict[int, list[Comment]] = {}
    for n, row in _rows(comments_path, "comments", on_read):
        try:
            cid, post_id, created = _int(row, "Id"), _int(row, "PostId"), _text(row, "CreationDate")
            text, user_id = _text(row, "Text"), _int(row, "UserId", required=False)
        except _BadRow as exc:
            result.bad_row(comments_path.name, n, f"(Id={row.get('Id')}) {exc}")
            continue
        result.comments_seen += 1
        qid = post_to_question.get(post_id)
        if qid is not None:
            comments[qid].append(Comment(cid, post_id, created, text.strip(), user_id,
                                         row.get("UserDisplayName"), row.get("ContentLicense")))
        elif user_id is not None and user_id == askers.get(other_answers.get(post_id, -1)):
            # only the asker's: other people's comments on other answers are never used
            asker_answer_comments.setdefault(other_answers[post_id], []).append(
                Comment(cid, post_id, created, text.strip(), user_id, row.get("UserDisplayName"),
                        row.get("ContentLicense"), by_asker=True))
    return comments, asker_answer_comments


def _thread(qid: int, aid: int, q: dict[str, Any], a: dict[str, Any], comments: list[Comment]) -> Thread:
    """Assemble a thread: order the comments and mark the asker's."""
    comments.sort(key=lambda c: (c.creation_date, c.id))
    for c in comments:
        if q["owner"] is not None:
            c.by_asker = c.user_id == q["owner"]
        else:  # the asker's account was deleted: the dump keeps only display names
            c.by_asker = c.user_id is None and bool(q["owner_name"]) and c.user_name == q["owner_name"]
    licences = sorted({x for x in (q["licence"], a["licence"], *(c.licence for c in comments)) if x})
    return Thread(question_id=qid, answer_id=aid, title=q["title"], body=q["body"], tags=q["tags"],
                  question_score=q["score"], answer_score=a["score"], answer=a["text"],
                  asker_id=q["owner"], asker_name=q["owner_name"], answerer_id=a["owner"],
                  licences=licences, comments=comments)
