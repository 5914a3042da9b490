"""Property-based tests (Hypothesis) for the importers and the readers of user files.

Whatever the input, an importer either returns well-formed tasks (that load back as a
dataset unchanged) or raises its own clear error type; it never crashes with anything else.
"""
import json
from itertools import groupby
from pathlib import Path
from tempfile import TemporaryDirectory
from xml.sax.saxutils import quoteattr

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.ntb.transcripts import read_ntb_transcripts
from harness.selfscore.transcripts import TranscriptError, read_transcripts
from harness.tasks.datasets import DatasetError, _task_from, load_dataset
from harness.tasks.jsonl import JsonlError
from harness.tasks.stackexchange import StackExchangeImportError, import_dump, write_tasks
from harness.tasks.stackexchange_text import html_to_text
from harness.tasks.stackexchange_threads import pair_turns
from harness.tasks.ubuntu_irc import import_ubuntu_irc, thread_to_task

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FILE_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=30)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
# Lines: arbitrary JSON, near-miss objects of each format, and raw garbage.
speaker = st.sampled_from(["asker", "helper", "other", ""]) | st.integers()
irc_message = st.fixed_dictionaries({"speaker": speaker, "text": st.text(max_size=40) | st.none()})
irc_thread = st.fixed_dictionaries({"thread_id": st.text(max_size=12) | st.integers(),
                                    "source_file": st.just("f.txt") | st.none(),
                                    "messages": st.lists(irc_message, max_size=6) | json_values})
raw_lines = st.text(max_size=60).filter(lambda s: "\n" not in s and "\r" not in s)


def _lines(values) -> list[str]:
    return [v if isinstance(v, str) and v.startswith("#raw") else json.dumps(v) for v in values]


def assert_valid_task(task: dict) -> None:
    """A task the dataset loader accepts as is (ids and text non-empty, scripts consistent)."""
    parsed, err = _task_from(json.loads(json.dumps(task)))
    assert err is None, (err, task)
    assert parsed.question.strip() and parsed.id.strip()
    assert all(isinstance(x, str) and x.strip() for x in parsed.followups + parsed.agent_replies)


# --- pair_turns and html_to_text ------------------------------------------------------------

@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["user", "agent"]), st.text(max_size=20)), max_size=12))
def test_pair_turns_merges_same_side_runs_and_drops_a_trailing_user_message(messages):
    runs = [(side, "\n\n".join(t for _, t in group))
            for side, group in groupby(((s, t.strip()) for s, t in messages if t.strip()), key=lambda m: m[0])]
    try:
        out = pair_turns(messages)
    except ValueError as exc:
        assert runs[0][0] == "agent" and "start with the user" in str(exc)
        return
    if runs and runs[-1][0] == "user":
        runs.pop()
    if len(runs) < 2:
        assert out is None
        return
    question, followups, replies = out
    assert len(followups) == len(replies) - 1
    assert [question, *followups] == [t for s, t in runs if s == "user"]
    assert replies == [t for s, t in runs if s == "agent"]


@SETTINGS
@given(st.text(max_size=300))
def test_html_to_text_never_crashes_and_leaves_no_block_tags(html):
    text = html_to_text(f"<p>{html}</p><pre>x</pre>")
    assert isinstance(text, str) and text == text.strip() and "\n\n\n" not in text
    assert not text.startswith("<p>") and text.endswith("x")


# --- #ubuntu IRC threads ----------------------------------------------------------------------

@SETTINGS
@given(irc_thread | json_values)
def test_thread_to_task_returns_a_valid_task_none_or_a_value_error(thread):
    try:
        task = thread_to_task(thread)
    except ValueError as exc:
        assert str(exc)
        return
    if task is not None:
        assert_valid_task(task)
        assert task["id"] == f"ubuntu-irc-{thread['thread_id']}"


@FILE_SETTINGS
@given(st.lists(irc_thread | json_values | raw_lines.map(lambda s: "#raw" + s), max_size=8))
def test_irc_import_of_any_file_gives_valid_tasks_that_round_trip(lines):
    with TemporaryDirectory() as d:
        src = Path(d) / "threads.jsonl"
        src.write_text("\n".join(_lines(lines)) + "\n", encoding="utf-8")
        result = import_ubuntu_irc(src)
        nonblank = sum(1 for line in _lines(lines) if line.strip())
        assert result.threads_seen == nonblank
        assert result.kept + sum(result.skipped.values()) == nonblank
        ids = [t["id"] for t in result.tasks]
        assert len(ids) == len(set(ids))
        for task in result.tasks:
            assert_valid_task(task)
        if result.tasks:
            out = Path(d) / "tasks.jsonl.gz"
            assert write_tasks(result.tasks, out) == len(result.tasks)
            loaded = load_dataset(str(out))
            assert [(t.id, t.question, t.followups, t.agent_replies) for t in loaded.tasks] == \
                [(t["id"], t["question"], t["followups"], t["agent_replies"]) for t in result.tasks]


@FILE_SETTINGS
@given(st.binary(max_size=200))
def test_irc_import_of_arbitrary_bytes_fails_only_with_a_file_error(data):
    with TemporaryDirectory() as d:
        src = Path(d) / "threads.jsonl"
        src.write_bytes(data)
        try:
            result = import_ubuntu_irc(src)
        except JsonlError as exc:
            assert str(src) in str(exc) and ("UTF-8" in str(exc) or "gzip" in str(exc))
            return
        for task in result.tasks:
            assert_valid_task(task)


# --- Stack Exchange dumps -------------------------------------------------------------------

attr_value = st.integers(-5, 15).map(str) | st.text(max_size=12) | st.just("")
post_row = st.fixed_dictionaries(
    {"Id": st.integers(1, 8).map(str) | attr_value, "PostTypeId": st.sampled_from(["1", "2", "3", "x"])},
    optional={"ParentId": st.integers(1, 8).map(str) | attr_value, "AcceptedAnswerId": st.integers(1, 8).map(str),
              "Score": st.integers(-5, 200).map(str) | attr_value, "Title": st.text(max_size=15),
              "Body": st.text(max_size=40) | st.just("<p>Run <code>ls</code> &amp; see</p>"),
              "OwnerUserId": st.integers(1, 4).map(str) | attr_value, "Tags": st.just("|linux|boot|")})
comment_row = st.fixed_dictionaries(
    {"Id": st.integers(1, 50).map(str), "PostId": st.integers(1, 8).map(str) | attr_value},
    optional={"Text": st.text(max_size=30), "UserId": st.integers(1, 4).map(str) | attr_value,
              "CreationDate": st.just("2020-01-01T00:00:00.000") | attr_value})


def _xml_attr(value: str) -> str:
    cleaned = "".join(ch for ch in value if ch in "\t\n\r" or (" " <= ch <= "\ud7ff") or ("\ue000" <= ch <= "\ufffd"))
    return quoteattr(cleaned)


def _dump(folder: Path, posts: list[dict], comments: list[dict], garbage: bytes | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, root, rows in (("Posts.xml", "posts", posts), ("Comments.xml", "comments", comments)):
        body = "\n".join("<row " + " ".join(f"{k}={_xml_attr(v)}" for k, v in r.items()) + " />" for r in rows)
        data = f'<?xml version="1.0" encoding="utf-8"?>\n<{root}>\n{body}\n</{root}>\n'.encode()
        if garbage is not None and name == "Posts.xml":
            cut = len(garbage) % max(1, len(data))
            data = data[:cut] + garbage
        (folder / name).write_bytes(data)
    return folder


@FILE_SETTINGS
@given(st.lists(post_row, max_size=10), st.lists(comment_row, max_size=8), st.integers(0, 150))
def test_stackexchange_import_of_garbled_rows_gives_valid_tasks(posts, comments, min_score):
    with TemporaryDirectory() as d:
        result = import_dump(_dump(Path(d) / "x.stackexchange.com", posts, comments), min_answer_score=min_score)
        assert result.site == "x"
        ids = [t["id"] for t in result.tasks]
        assert len(ids) == len(set(ids)) and len(result.tasks) == result.kept
        for task in result.tasks:
            assert_valid_task(task)
            assert task["id"].startswith("x-") and task["reference_answer"]


@FILE_SETTINGS
@given(st.lists(post_row, max_size=4), st.binary(min_size=1, max_size=60))
def test_stackexchange_import_of_damaged_files_fails_only_with_its_own_error(posts, garbage):
    with TemporaryDirectory() as d:
        dump = _dump(Path(d) / "y.com", posts, [], garbage)
        try:
            result = import_dump(dump, min_answer_score=0)
        except StackExchangeImportError as exc:
            assert "Posts.xml" in str(exc)
            return
        for task in result.tasks:
            assert_valid_task(task)


# --- readers of user files: datasets, SelfScore and NoisyToolBench transcripts ---------------

any_lines = st.lists(json_values | raw_lines.map(lambda s: "#raw" + s)
                     | st.fixed_dictionaries({"id": json_values, "question": json_values}), max_size=6)


@FILE_SETTINGS
@given(any_lines)
def test_dataset_loader_fails_only_with_dataset_error(lines):
    with TemporaryDirectory() as d:
        path = Path(d) / "tasks.jsonl"
        path.write_text("\n".join(_lines(lines)) + "\n", encoding="utf-8")
        try:
            tasks = load_dataset(str(path)).tasks
        except DatasetError as exc:
            assert str(path) in str(exc) and ("line" in str(exc) or "no tasks" in str(exc))
            return
        assert tasks and all(t.id.strip() and t.question.strip() for t in tasks)


@FILE_SETTINGS
@given(any_lines | st.lists(st.fixed_dictionaries({"id": st.text(max_size=5), "turns": json_values},
                                                  optional={"question": json_values}), max_size=4))
def test_selfscore_transcript_reader_fails_only_with_transcript_error(lines):
    with TemporaryDirectory() as d:
        path = Path(d) / "t.jsonl"
        path.write_text("\n".join(_lines(lines)) + "\n", encoding="utf-8")
        try:
            rows = read_transcripts(path)
        except TranscriptError as exc:
            assert str(path) in str(exc)
            return
        assert all(isinstance(row, dict) for _, row in rows)


@FILE_SETTINGS
@given(any_lines | st.lists(st.fixed_dictionaries({"category": st.sampled_from(["IMKI", "IMR", "x"]),
                                                   "query_id": st.integers(0, 3) | json_values,
                                                   "steps": json_values}), max_size=4))
def test_ntb_transcript_reader_fails_only_with_transcript_error(lines):
    with TemporaryDirectory() as d:
        path = Path(d) / "t.jsonl"
        path.write_text("\n".join(_lines(lines)) + "\n", encoding="utf-8")
        try:
            items = read_ntb_transcripts(path)
        except TranscriptError as exc:
            assert str(path) in str(exc)
            return
        assert all(isinstance(steps, list) for _, steps in items)
