"""Stack Exchange dump import: exact counts on a real dump, turns, HTML, bad files and rows."""
import gzip
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from harness.tasks.datasets import load_dataset
from harness.tasks.stackexchange import StackExchangeImportError, import_dump, site_name, write_tasks
from harness.tasks.stackexchange_text import html_to_text, parse_tags
from harness.tasks.stackexchange_threads import pair_turns

DUMP = Path(__file__).parent / "fixtures" / "stackexchange_conlang_meta"


def expected_counts(dump: Path, min_score: int) -> dict:
    """The figures the importer must find, from a plain full parse of the (small) files."""
    posts = [r.attrib for r in ET.parse(dump / "Posts.xml").getroot()]
    comments = [r.attrib for r in ET.parse(dump / "Comments.xml").getroot()]
    by_id = {p["Id"]: p for p in posts}
    questions = [p for p in posts if p["PostTypeId"] == "1"]
    kept, skipped = [], {}
    for q in questions:
        a = by_id.get(q.get("AcceptedAnswerId", ""))
        reason = ("no_accepted_answer" if "AcceptedAnswerId" not in q
                  else "accepted_answer_missing" if a is None
                  else "answer_score_below_min" if int(a["Score"]) < min_score else None)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            kept.append((int(q["Id"]), int(a["Id"])))
    kept_posts = {str(i) for pair in kept for i in pair}
    return {"questions": len(questions), "answers": sum(p["PostTypeId"] == "2" for p in posts),
            "kept": sorted(q for q, _ in kept), "skipped": skipped, "comments": len(comments),
            "comments_kept": sum(c["PostId"] in kept_posts for c in comments)}


@pytest.mark.parametrize("min_score", [0, 5, 100])
def test_counts_on_the_shipped_dump_match_a_full_parse(min_score):
    want = expected_counts(DUMP, min_score)
    got = import_dump(DUMP, site="conlang.meta", min_answer_score=min_score)
    assert (got.questions_seen, got.answers_seen, got.comments_seen) == (54, 115, 230)
    assert (want["questions"], want["answers"], want["comments"]) == (54, 115, 230)
    assert [t.question_id for t in got.threads] == want["kept"] and got.kept == len(want["kept"])
    assert got.skipped == want["skipped"] and got.malformed == 0 and not got.problems
    assert got.comments_kept == want["comments_kept"]
    assert got.questions_seen == got.kept + sum(got.skipped.values())
    assert [t["id"] for t in got.tasks] == [f"conlang.meta-{q}" for q in want["kept"]]


def test_known_counts_of_the_shipped_dump():
    assert import_dump(DUMP, min_answer_score=0).kept == 11   # every accepted answer scores >= 1
    r = import_dump(DUMP, min_answer_score=5)
    assert r.kept == 6 and r.skipped == {"no_accepted_answer": 43, "answer_score_below_min": 5}
    assert r.comments_kept == 23 and r.site == "stackexchange_conlang_meta"


def test_a_known_thread_becomes_the_right_task():
    r = import_dump(DUMP, site="conlang.meta", min_answer_score=1)
    task = next(t for t in r.tasks if t["id"] == "conlang.meta-63")
    assert task["question"].startswith("\u201cLanguage change\u201d and \u201cdiachronics\u201d tags\n\n"
                                       "In linguistics, diachrony refers to")
    assert task["reference_answer"].startswith("I think it would be best to distinguish these two tags")
    assert task["agent_replies"][0] == task["reference_answer"]
    assert task["followups"][1] == "Yea that sound good to me"
    assert task["agent_replies"][1] == ("@Adarain Those are both good options.\n\n@Adarain I updated this post, "
                                        "what do you think? If you like it then I'll update my tag wiki edits.")
    assert len(task["followups"]) == 3 and len(task["agent_replies"]) == 4  # last comment (asker's) dropped
    assert task["metadata"] == {
        "source": "stackexchange", "site": "conlang.meta", "question_id": 63, "answer_id": 64,
        "tags": ["discussion", "tags"], "question_score": 9, "answer_score": 4, "comments": 8,
        "asker_comments": 4, "answer_by_asker": False, "licence": "CC BY-SA 3.0"}
    thread = next(t for t in r.threads if t.question_id == 63)
    assert [c.id for c in thread.comments] == list(range(133, 141))
    assert [c.by_asker for c in thread.comments] == [True, False, False, True, False, True, False, True]


def test_every_task_is_valid_and_has_consistent_turns(tmp_path):
    r = import_dump(DUMP, site="conlang.meta", min_answer_score=0)
    for task, thread in zip(r.tasks, r.threads):
        assert len(task["followups"]) == len(task["agent_replies"]) - 1
        assert task["agent_replies"][0].startswith(task["reference_answer"])
        asker = sum(c.by_asker for c in thread.comments)
        assert len(task["followups"]) <= asker
    assert next(t for t in r.tasks if t["id"] == "conlang.meta-127")["metadata"]["answer_by_asker"]
    out = tmp_path / "se.jsonl.gz"
    assert write_tasks(r.tasks, out) == 11
    ds = load_dataset(str(out))
    assert [t.id for t in ds.tasks] == [t["id"] for t in r.tasks]
    assert ds.tasks[4].followups == r.tasks[4]["followups"]
    assert ds.tasks[4].agent_replies == r.tasks[4]["agent_replies"]


def _copy_dump(tmp_path: Path) -> Path:
    dump = tmp_path / "superuser.com"
    dump.mkdir()
    for name in ("Posts.xml", "Comments.xml"):
        shutil.copy(DUMP / name, dump / name)
    return dump


@pytest.mark.parametrize("name", ["Posts.xml", "Comments.xml"])
def test_truncated_file_names_file_line_column_and_fix(tmp_path, name):
    dump = _copy_dump(tmp_path)
    data = (dump / name).read_bytes()
    (dump / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(StackExchangeImportError) as info:
        import_dump(dump, min_answer_score=0)
    msg = str(info.value)
    assert name in msg and "not well-formed XML at line" in msg and "column" in msg
    assert "download the site's dump again and re-extract it" in msg


def test_missing_file_and_wrong_file(tmp_path):
    dump = _copy_dump(tmp_path)
    (dump / "Comments.xml").unlink()
    with pytest.raises(StackExchangeImportError, match="no Comments.xml"):
        import_dump(dump)
    (dump / "Comments.xml").write_text('<?xml version="1.0" encoding="utf-8"?>\n<users>\n</users>\n')
    with pytest.raises(StackExchangeImportError, match="expected a <comments> file"):
        import_dump(dump)


def test_malformed_rows_are_skipped_and_counted(tmp_path):
    dump = _copy_dump(tmp_path)
    posts = (dump / "Posts.xml").read_text(encoding="utf-8-sig")
    needle = '<row Id="2" PostTypeId="2" ParentId="1" CreationDate="2018-02-06T20:25:42.850" Score="22"'
    assert posts.count(needle) == 1
    (dump / "Posts.xml").write_text(posts.replace(needle, needle.replace('Score="22"', 'Score="lots"')))
    comments = (dump / "Comments.xml").read_text(encoding="utf-8-sig")
    (dump / "Comments.xml").write_text(comments.replace('<row Id="2" PostId="3"', '<row Id="2" PostId="x3"'))
    r = import_dump(dump, min_answer_score=0)
    assert r.site == "superuser" and r.malformed == 2
    assert r.malformed_by_file == {"Posts.xml": 1, "Comments.xml": 1}
    assert any("Posts.xml row 2" in p and "Score 'lots' is not an integer" in p for p in r.problems)
    assert any("Comments.xml row 1" in p and "PostId 'x3'" in p for p in r.problems)
    assert r.answers_seen == 114 and r.comments_seen == 229 and r.kept == 10
    assert r.skipped["accepted_answer_missing"] == 1  # question 1 lost its accepted answer
    assert "superuser-1" not in {t["id"] for t in r.tasks}


def _write_dump(folder: Path, posts: list[dict], comments: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, root, rows in (("Posts.xml", "posts", posts), ("Comments.xml", "comments", comments)):
        lines = ["<row " + " ".join(f"{k}={quoteattr(str(v))}" for k, v in r.items()) + " />" for r in rows]
        (folder / name).write_text(f'\ufeff<?xml version="1.0" encoding="utf-8"?>\n<{root}>\n'
                                   + "\n".join(lines) + f"\n</{root}>\n", encoding="utf-8")
    return folder


def test_new_tag_form_deleted_asker_comment_order_and_unsorted_rows(tmp_path):
    posts = [  # the answer comes before its question: the importer must not rely on row order
        {"Id": 11, "PostTypeId": 2, "ParentId": 10, "Score": 3, "Body": "<p>Run <code>fsck</code>.</p>",
         "OwnerUserId": 7},
        {"Id": 10, "PostTypeId": 1, "AcceptedAnswerId": 11, "Score": 2, "Title": "Disk & boot",
         "Body": "<p>It fails.</p>", "Tags": "|linux|boot|", "OwnerDisplayName": "gone"},
        {"Id": 12, "PostTypeId": 1, "Score": 1, "Title": "No answer", "Body": "<p>x</p>"},
        {"Id": 13, "PostTypeId": 1, "AcceptedAnswerId": 99, "Score": 1, "Title": "Deleted answer", "Body": "x"},
        {"Id": 14, "PostTypeId": 1, "Score": 1, "Body": "no title"},
    ]
    comments = [
        {"Id": 5, "PostId": 11, "Text": "Still fails", "CreationDate": "2020-01-02T00:00:00.000", "UserDisplayName": "gone"},
        {"Id": 3, "PostId": 11, "Text": "Which disk?", "CreationDate": "2020-01-02T00:00:00.000", "UserId": 7},
        {"Id": 4, "PostId": 10, "Text": "Try -y", "CreationDate": "2020-01-03T00:00:00.000", "UserId": 7},
        {"Id": 6, "PostId": 10, "Text": "Works now", "CreationDate": "2020-01-04T00:00:00.000", "UserDisplayName": "gone"},
        {"Id": 8, "PostId": 12, "Text": "elsewhere", "CreationDate": "2020-01-01T00:00:00.000", "UserId": 2},
    ]
    r = import_dump(_write_dump(tmp_path / "unix.stackexchange.com", posts, comments), min_answer_score=1)
    assert r.site == "unix" and site_name("x/askubuntu.com") == "askubuntu"
    assert r.questions_seen == 3 and r.malformed == 1 and "missing Title" in r.problems[0]
    assert r.skipped == {"no_accepted_answer": 1, "accepted_answer_missing": 1}
    (task,) = r.tasks
    assert task["id"] == "unix-10" and task["question"] == "Disk & boot\n\nIt fails."
    assert task["metadata"]["tags"] == ["linux", "boot"]
    assert task["agent_replies"] == ["Run fsck.\n\nWhich disk?", "Try -y"]
    assert task["followups"] == ["Still fails"]  # "Works now" is a trailing user message
    assert r.comments_kept == 4
    assert import_dump(tmp_path / "unix.stackexchange.com", min_answer_score=4).skipped == {
        "no_accepted_answer": 1, "accepted_answer_missing": 1, "answer_score_below_min": 1}


def test_html_to_text():
    html = ("<h1>Title</h1><p>One &amp; two&nbsp;&lt;x&gt;<br>next   line</p>"
            "<pre><code>def f():\n    return 1\n</code></pre>"
            "<ul><li>first</li><li>second <a href=\"https://ex.com/a\">link</a></li></ul>"
            "<p><img src=\"i.png\" alt=\"shot\"><script>evil()</script>end</p>")
    assert html_to_text(html) == ("Title\n\nOne & two <x>\nnext line\n\ndef f():\n    return 1\n\n"
                                  "first\nsecond link (https://ex.com/a)\n\n[image: shot]end")
    assert html_to_text("") == ""


def test_parse_tags_both_forms():
    assert parse_tags("<a><b-c>") == ["a", "b-c"] and parse_tags("|a|b-c|") == ["a", "b-c"]
    assert parse_tags(None) == [] and parse_tags("") == []


def test_pair_turns():
    msgs = [("user", "Q"), ("user", "more"), ("agent", "A1"), ("agent", "A1b"), ("user", "U2"),
            ("agent", "A2"), ("user", "thanks")]
    assert pair_turns(msgs) == ("Q\n\nmore", ["U2"], ["A1\n\nA1b", "A2"])
    assert pair_turns([("user", "Q"), ("user", "x")]) is None
    assert pair_turns([("user", "Q"), ("agent", " ")]) is None
    with pytest.raises(ValueError, match="start with the user"):
        pair_turns([("agent", "hi"), ("user", "Q")])


def test_write_tasks_is_atomic(tmp_path):
    out = tmp_path / "t.jsonl"
    assert write_tasks([{"id": "a", "question": "q"}], out) == 1
    with pytest.raises(TypeError):
        write_tasks([{"id": "b", "question": "q"}, {"id": "c", "question": object()}], out)
    assert json.loads(out.read_text()) == {"id": "a", "question": "q"}
    assert [p.name for p in tmp_path.iterdir()] == ["t.jsonl"]
    write_tasks([{"id": "é", "question": "q"}], tmp_path / "t.jsonl.gz")
    assert json.loads(gzip.decompress((tmp_path / "t.jsonl.gz").read_bytes()))["id"] == "é"


def test_import_with_no_qualifying_question_writes_nothing_and_says_lower_min_score(tmp_path, capsys):
    from harness.cli.main import main

    out = tmp_path / "tasks.jsonl"
    assert main(["import", "stackexchange", str(DUMP), "--min-score", "100000", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "lower --min-score (now 100000)" in " ".join((captured.out + captured.err).split())
    assert not out.exists()


def test_asker_comments_on_the_question_and_all_its_answers_become_facts():
    posts = [r.attrib for r in ET.parse(DUMP / "Posts.xml").getroot()]
    comments = [r.attrib for r in ET.parse(DUMP / "Comments.xml").getroot()]
    r = import_dump(DUMP, site="conlang.meta", min_answer_score=0)
    for task in r.tasks:
        qid = task["metadata"]["question_id"]
        q = next(p for p in posts if p["Id"] == str(qid))
        thread_posts = {str(qid)} | {p["Id"] for p in posts if p.get("ParentId") == str(qid)}
        mine = sorted((c for c in comments if c["PostId"] in thread_posts and "UserId" in c
                       and c["UserId"] == q.get("OwnerUserId")), key=lambda c: (c["CreationDate"], int(c["Id"])))
        assert task["facts"] == [" ".join(c["Text"].split()) for c in mine], qid
    facts = {t["id"]: t["facts"] for t in r.tasks}
    # question 73: the asker also commented on two answers that are not the accepted one
    assert len(facts["conlang.meta-73"]) == 5 and facts["conlang.meta-73"][0] == (
        "Okay, but what do we do with the ones we get in the meantime? Leave open or close?")
    assert facts["conlang.meta-63"][1] == "Yea that sound good to me" and len(facts["conlang.meta-63"]) == 4
    assert facts["conlang.meta-1"] == [] and sum(map(bool, facts.values())) == 6
    assert r.comments_kept == expected_counts(DUMP, 0)["comments_kept"]  # the conversation is unchanged


def test_facts_need_owner_ids_and_lose_their_html(tmp_path):
    posts = [
        {"Id": 10, "PostTypeId": 1, "AcceptedAnswerId": 11, "Score": 2, "Title": "Boot fails",
         "Body": "<p>It fails.</p>", "OwnerUserId": 5},
        {"Id": 11, "PostTypeId": 2, "ParentId": 10, "Score": 3, "Body": "<p>Run fsck.</p>", "OwnerUserId": 7},
        {"Id": 12, "PostTypeId": 2, "ParentId": 10, "Score": 0, "Body": "<p>Reinstall.</p>", "OwnerUserId": 8},
        {"Id": 20, "PostTypeId": 1, "AcceptedAnswerId": 21, "Score": 2, "Title": "Deleted asker",
         "Body": "<p>x</p>", "OwnerDisplayName": "gone"},
        {"Id": 21, "PostTypeId": 2, "ParentId": 20, "Score": 3, "Body": "<p>y</p>", "OwnerUserId": 7},
    ]
    comments = [
        {"Id": 1, "PostId": 12, "Text": "It is <code>ext4</code> &amp; on  /dev/sda1", "UserId": 5,
         "CreationDate": "2020-01-03T00:00:00.000"},
        {"Id": 2, "PostId": 10, "Text": "Ubuntu 20.04, <username> is mine", "UserId": 5,
         "CreationDate": "2020-01-01T00:00:00.000"},
        {"Id": 3, "PostId": 11, "Text": "Which disk?", "UserId": 7, "CreationDate": "2020-01-02T00:00:00.000"},
        {"Id": 4, "PostId": 12, "Text": "not the asker", "UserId": 8, "CreationDate": "2020-01-04T00:00:00.000"},
        {"Id": 5, "PostId": 11, "Text": "no user id", "UserDisplayName": "someone",
         "CreationDate": "2020-01-05T00:00:00.000"},
        {"Id": 6, "PostId": 20, "Text": "by the deleted asker", "UserDisplayName": "gone",
         "CreationDate": "2020-01-01T00:00:00.000"},
    ]
    r = import_dump(_write_dump(tmp_path / "unix.stackexchange.com", posts, comments), min_answer_score=1)
    tasks = {t["id"]: t for t in r.tasks}
    assert tasks["unix-10"]["facts"] == ["Ubuntu 20.04, <username> is mine", "It is ext4 & on /dev/sda1"]
    assert tasks["unix-20"]["facts"] == []  # no OwnerUserId: display names are not enough
    assert tasks["unix-20"]["followups"] == [] and r.comments_kept == 4
    out = tmp_path / "t.jsonl"
    write_tasks(r.tasks, out)
    assert load_dataset(str(out)).tasks[0].facts == tasks["unix-10"]["facts"]
