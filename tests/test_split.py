"""Seeded knowledge-base / test split of a task pool."""
import json
import random

import pytest

from harness.tasks.datasets import load_dataset
from harness.tasks.split import split_ids, write_split

IDS = [f"site-{i}" for i in range(101)]


def test_reproducible_whatever_the_input_order():
    a = split_ids(IDS, seed=7)
    shuffled = IDS[:]
    random.Random(1).shuffle(shuffled)
    assert split_ids(shuffled, seed=7) == a
    assert split_ids(IDS, seed=8) != a
    assert json.loads(json.dumps(a)) == a and (a["seed"], a["fraction"]) == (7, 0.5)


@pytest.mark.parametrize("fraction,n_kb", [(0.5, 50), (0.3, 30), (0.0, 0), (1.0, 101)])
def test_disjoint_covering_and_sized(fraction, n_kb):
    s = split_ids(IDS, seed=3, fraction=fraction)
    assert len(s["kb"]) == n_kb and len(s["test"]) == len(IDS) - n_kb
    assert not set(s["kb"]) & set(s["test"]) and sorted(s["kb"] + s["test"]) == sorted(IDS)
    assert s["kb"] == sorted(s["kb"]) and s["test"] == sorted(s["test"])


def test_bad_arguments():
    with pytest.raises(ValueError, match="fraction must be between 0 and 1"):
        split_ids(IDS, fraction=1.5)
    with pytest.raises(ValueError, match="duplicate task id"):
        split_ids(["a", "b", "a"])
    assert split_ids([]) == {"seed": 0, "fraction": 0.5, "kb": [], "test": []}


def test_write_split(tmp_path):
    tasks = [{"id": i, "question": f"q {i}"} for i in IDS]
    s = split_ids(IDS, seed=1)
    assert write_split(tasks, s, tmp_path / "kb.jsonl", tmp_path / "test.jsonl.gz") == (50, 51)
    kb, test = load_dataset(str(tmp_path / "kb.jsonl")), load_dataset(str(tmp_path / "test.jsonl.gz"))
    assert sorted(t.id for t in kb.tasks) == s["kb"] and sorted(t.id for t in test.tasks) == s["test"]
    with pytest.raises(ValueError, match="not among the tasks"):
        write_split(tasks[:10], s, tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    with pytest.raises(ValueError, match="lists 'kb' and 'test'"):
        write_split(tasks, {"kb": []}, tmp_path / "a.jsonl", tmp_path / "b.jsonl")
