"""Ubuntu IRC threads -> tasks: exact counts on the shipped file, one known thread, bad lines."""
import itertools
import json

from harness.datasets import load_dataset
from harness.stackexchange import write_tasks
from harness.ubuntu_irc import DEFAULT_PATH, import_ubuntu_irc, thread_to_task


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
