"""Ubuntu IRC threads -> tasks: exact counts on the shipped file, one known thread, bad lines."""
import itertools
import json

import pytest

from harness.data.ubuntu_irc import build_tasks  # the committed builder script
from harness.tasks.datasets import load_dataset
from harness.tasks.stackexchange import write_tasks
from harness.tasks.ubuntu_irc import (DEFAULT_PATH, asker_facts, import_ubuntu_irc, is_chatter, strip_addressing,
                                thread_to_task, without_reposts)


def expected_turns(thread: dict) -> tuple[int, int] | None:
    """(followups, agent replies) of a thread, computed with groupby instead of pair_turns."""
    asker = thread["messages"][0]["speaker"]
    sides = [side for side, _ in itertools.groupby(m["speaker"] == asker for m in thread["messages"])]
    if sides[-1]:  # ends on the asker: that message is dropped
        sides.pop()
    agents = sides.count(False)
    return (sides.count(True) - 1, agents) if agents else None


def test_counts_on_the_shipped_file_match_an_independent_count():
    threads = [json.loads(line) for line in DEFAULT_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
    want = [expected_turns(t) for t in threads]
    r = import_ubuntu_irc()
    assert len(threads) == 227 and r.threads_seen == 227
    assert r.kept == sum(w is not None for w in want) == 227 and r.skipped == {}
    assert [t["id"] for t in r.tasks] == [f"ubuntu-irc-{t['thread_id']}" for t in threads]
    assert [(len(t["followups"]), len(t["agent_replies"])) for t in r.tasks] == want
    assert sum(len(t["followups"]) for t in r.tasks) == 806
    assert sum(len(t["agent_replies"]) for t in r.tasks) == 1033
    assert sum(len(t["agent_replies"]) == 1 for t in r.tasks) == 61


def test_a_known_thread():
    r = import_ubuntu_irc()
    task = next(t for t in r.tasks if t["id"] == "ubuntu-irc-2005-07-06_14#1005")
    assert task["question"] == "how can I get access to my NTFS files from ubuntu? (fresh newbie asking) :)"
    assert task["agent_replies"][0] == ("stig_, unfortunately for now it requires a bit of work\n\n"
                                        "a: you will only be able to read the ntfs files\n\n"
                                        "b) you wont be able to write to an ntfs partition")
    assert task["followups"] == ["I only need to read from it :)",
                                 "holycow: I think I made it it point 3... but dont know how I do that",
                                 "ok, thanks"]
    assert len(task["agent_replies"]) == 4 and task["agent_replies"][-1].endswith("\n\nok, thanks")
    assert task["metadata"] == {"source": "ubuntu_irc", "source_file": "2005-07-06_14.ascii.txt",
                                "thread_id": "2005-07-06_14#1005", "asker": "stig_",
                                "speakers": ["stig_", "holycow", "jonbusby", "AfroDude"], "licence": "CC BY 4.0"}
    first = r.tasks[0]  # ends on the asker's "hmmm hang on" / "may have solved this" / "brb": dropped
    assert first["followups"] == [] and first["agent_replies"] == ["okay, what site?"]


def test_tasks_load_as_a_dataset(tmp_path):
    out = tmp_path / "irc.jsonl"
    tasks = import_ubuntu_irc().tasks
    write_tasks(tasks, out)
    loaded = load_dataset(str(out)).tasks
    assert len(loaded) == 227 and loaded[1].agent_replies == tasks[1]["agent_replies"]


def test_bad_lines_and_silent_threads_are_skipped_and_counted(tmp_path):
    good = {"source_file": "f", "thread_id": "t1", "messages": [
        {"speaker": "a", "text": "help"}, {"speaker": "b", "text": "try x"}, {"speaker": "a", "text": "ok"}]}
    alone = {"source_file": "f", "thread_id": "t2", "messages": [
        {"speaker": "a", "text": "help"}, {"speaker": "a", "text": "anyone?"}]}
    lines = [json.dumps(good), "not json", json.dumps({"thread_id": "t3", "messages": []}),
             json.dumps(alone), json.dumps(good)]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n")
    r = import_ubuntu_irc(p)
    assert r.threads_seen == 5 and r.kept == 1
    assert r.skipped == {"malformed": 2, "no_helper_reply": 1, "duplicate_id": 1}
    assert any("line 2: not valid JSON" in x for x in r.problems)
    assert any("line 3: field 'source_file'" in x for x in r.problems)
    assert r.tasks[0]["followups"] == [] and r.tasks[0]["agent_replies"] == ["try x"]
    assert thread_to_task(alone) is None


# --------------------------------------------------------------------------------------------
# facts and the built-in task sets
# --------------------------------------------------------------------------------------------


def test_facts_drop_the_addressing_prefix_chatter_and_duplicates():
    thread = {"source_file": "f", "thread_id": "t", "messages": [
        {"speaker": "ann", "text": "my wifi drops every few minutes"},
        {"speaker": "bob_", "text": "ann: which card?"},
        {"speaker": "ann", "text": "bob: an Intel AX200"},
        {"speaker": "ann", "text": "Bob_, ok"},
        {"speaker": "ann", "text": "hmm hang on"},
        {"speaker": "bob_", "text": "try iwconfig wlan0 power off"},
        {"speaker": "ann", "text": "lol"},
        {"speaker": "ann", "text": "tar: Error is not recoverable"},
        {"speaker": "ann", "text": "bob - an intel ax200"},
        {"speaker": "ann", "text": "thanks bob :)"},
        {"speaker": "bob_", "text": "np"},
        {"speaker": "ann", "text": "brb"}]}
    task = thread_to_task(thread)
    assert task["followups"][0] == "bob: an Intel AX200\n\nBob_, ok\n\nhmm hang on"  # the replay is untouched
    assert task["facts"] == ["an Intel AX200", "tar: Error is not recoverable"]
    assert strip_addressing("zyko, wille: it hangs", ["zyko", "wille"]) == "it hangs"
    assert strip_addressing("wols_. that worked", ["wols_"]) == "that worked"
    assert strip_addressing("Depends: libc6", ["holycow"]) == "Depends: libc6"
    assert strip_addressing("bob-cat is broken", ["bob"]) == "bob-cat is broken"
    assert all(is_chatter(x) for x in ["ok", "thanks", "brb", "hmm hang on", "lol", "ok, thanks :)", "ok, got it"])
    assert not any(is_chatter(x) for x in ["no sound", "that worked", "it is an Intel card"])
    assert asker_facts(["ok\n\nok"], []) == []


def test_facts_of_the_shipped_threads():
    tasks = {t["id"]: t for t in import_ubuntu_irc().tasks}
    ntfs = tasks["ubuntu-irc-2005-07-06_14#1005"]
    assert ntfs["facts"] == ["I only need to read from it :)",
                             "I think I made it it point 3... but dont know how I do that"]
    assert "it works. Thanks" in tasks["ubuntu-irc-2005-07-06_14#1106"]["facts"]  # was "delire, it works. Thanks"
    # a nick seen only in another thread of the same log is an address too
    assert "Could you guide me with my above ssh query?" in tasks["ubuntu-irc-2015-03-18_05#1314"]["facts"]
    assert sum(bool(t["facts"]) for t in tasks.values()) <= sum(bool(t["followups"]) for t in tasks.values())
    assert all(not t["facts"] for t in tasks.values() if not t["followups"])


def test_the_builder_is_reproducible_and_matches_the_shipped_files():
    everything, subset = build_tasks.build()
    again_all, again_subset = build_tasks.build()
    lines = [json.dumps(t, ensure_ascii=False) for t in subset]
    assert lines == [json.dumps(t, ensure_ascii=False) for t in again_subset]
    assert [json.dumps(t, ensure_ascii=False) for t in everything] == [
        json.dumps(t, ensure_ascii=False) for t in again_all]
    assert build_tasks.TROUBLESHOOTING_PATH.read_text(encoding="utf-8").splitlines() == lines
    assert build_tasks.ALL_PATH.read_text(encoding="utf-8").splitlines() == [
        json.dumps(t, ensure_ascii=False) for t in everything]


def test_troubleshooting_tasks_pass_the_rules_and_the_review():
    tasks = load_dataset("ubuntu_irc_troubleshooting").tasks
    rejected, demo = build_tasks.read_review()
    pool = build_tasks.candidates(import_ubuntu_irc().tasks)
    assert len(tasks) == len(pool) - len(rejected) >= 24
    assert [t.metadata["thread_id"] for t in tasks[:build_tasks.DEMO_COUNT]] == demo
    for t in tasks:
        assert t.facts and t.agent_replies and t.followups, t.id
        assert t.metadata["source"] == "ubuntu_irc" and t.metadata["subset"] == "troubleshooting"
        assert t.metadata["thread_id"] not in rejected
        assert len(t.question) >= build_tasks.MIN_QUESTION_CHARS
    assert all(reason for reason in rejected.values())


def test_the_review_must_match_the_rules(tmp_path):
    review = tmp_path / "review.tsv"
    review.write_text("thread_id\tdecision\tnote\n2005-07-06_14#1000\treject\tnot a candidate\n")
    with pytest.raises(ValueError, match="not rule candidates"):
        build_tasks.build(review_path=review)
    review.write_text("thread_id\tdecision\tnote\n2014-06-18_13#1236\tkeep\t\n")
    with pytest.raises(ValueError, match="decision must be"):
        build_tasks.read_review(review)


def test_each_troubleshooting_thread_carries_its_labelled_fix_as_the_reference_answer():
    tasks = {t.metadata["thread_id"]: t for t in load_dataset("ubuntu_irc_troubleshooting").tasks}
    labels = build_tasks.read_fixes()
    assert set(labels) == set(tasks)
    for tid, t in tasks.items():
        assert t.metadata["fix_replies"] == list(labels[tid].replies)
        if labels[tid].replies:
            assert t.reference_answer == "\n\n".join(t.agent_replies[i].strip() for i in labels[tid].replies)
        else:  # no fix in the thread: its solution is all the helpers' messages (batch.thread_solution)
            assert t.reference_answer is None
    # the ssh thread's fix is the helper's ssh-copy-id, not its earlier `ssh -vvv` diagnostics
    ssh = tasks["2014-06-18_13#1236"]
    assert "ssh-copy-id" in ssh.reference_answer and "-vvv" not in ssh.reference_answer
    assert any("-vvv" in r for r in ssh.agent_replies)
    assert sum(bool(label.replies) for label in labels.values()) >= 20


def test_fix_labels_that_do_not_match_the_kept_threads_are_refused(tmp_path):
    header = "thread_id\tfix_replies\tconfirmed\tnote\n"
    fixes = tmp_path / "fixes.tsv"
    shipped = build_tasks.FIXES_PATH.read_text(encoding="utf-8").splitlines()
    fixes.write_text("\n".join(shipped[:-1]) + "\n")  # the last kept thread unlabelled
    with pytest.raises(ValueError, match="missing: 2016-06-08_07#1483"):
        build_tasks.build(fixes_path=fixes)
    fixes.write_text("\n".join(shipped) + "\n2005-07-06_14#1000\tnone\tno\tnot kept\n")
    with pytest.raises(ValueError, match="not kept: 2005-07-06_14#1000"):
        build_tasks.build(fixes_path=fixes)
    fixes.write_text("\n".join(line.replace("#1236\t3\t", "#1236\t30\t") for line in shipped) + "\n")
    with pytest.raises(ValueError, match="past its 4 agent replies"):
        build_tasks.build(fixes_path=fixes)
    for bad, match in (("x\t3;4\tno\tn", "fix_replies must be"), ("x\t3\tmaybe\tn", "confirmed must be"),
                       ("x\t3\tno\t", "the note must say"), ("x\t1\tno\tn\nx\t2\tno\tn", "listed twice")):
        fixes.write_text(header + bad + "\n")
        with pytest.raises(ValueError, match=match):
            build_tasks.read_fixes(fixes)


def test_a_message_naming_the_found_cause_is_not_a_fact():
    from harness.tasks.ubuntu_irc import asker_facts, reports_resolution
    facts = asker_facts(["bob: I get roaming not allowed\n\nbob: Ah ha. It was the formatting of my key",
                         "it still fails, the problem was the same before the install"], ["bob"])
    assert facts == ["I get roaming not allowed", "it still fails, the problem was the same before the install"]
    assert reports_resolution("15.10 Fixed it for me") and not reports_resolution("it was fine yesterday")


def test_the_askers_reposts_of_the_question_are_dropped():
    a, h = "asker", "helper"
    full = "Tried dpkg-reconfigure xserver-xorg without success. Yet startx works. What may it be?"
    msgs = [(a, "Tried dpkg-reconfigure xserver-xorg without success"), (a, full),
            (a, "After an update I lost gnome. What should I do?"), (a, full.upper() + "  "),
            (h, "reinstall gnome"), (a, full)]
    # the prefix and the exact repeat go; the rephrase stays; after a helper spoke nothing is looked at
    assert without_reposts(msgs) == [msgs[1], msgs[2], msgs[4], msgs[5]]
    short = [(a, "hi all"), (a, "hi all, my wifi is gone after the upgrade"), (h, "which card?")]
    assert without_reposts(short) == short  # a greeting before the question is not a repost


def test_no_shipped_question_opens_with_a_repost():
    def paragraphs(question):
        return [" ".join(p.lower().split()).rstrip(" .?!") for p in question.split("\n\n")]
    tasks = {t["id"]: t for t in import_ubuntu_irc().tasks}
    for task in tasks.values():
        ps = paragraphs(task["question"])
        assert len(set(ps)) == len(ps), task["id"]
    # the thread the demo opened with three copies of its question (2026-12-03)
    assert tasks["ubuntu-irc-2008-07-14_18#1118"]["question"] == (
        "hi.. I installed Hardy yesterday. Today I did software update and GUI stopped working. All I get now "
        "is text based login. Tried dpkg-reconfigure xserver-xorg withou success. Yet, if I type startx I get "
        "graphical interface. Whats may be the problem?\n\n"
        "After an update I lost gnome in my  hardy machine. All I get is text based login. What should I do?")
