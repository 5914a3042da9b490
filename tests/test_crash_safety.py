"""Crash safety, proven by killing: a SelfScore batch SIGKILLed at random points many times and
resumed each time ends with every interaction complete exactly once, no turn lost or
duplicated, a sound store, and the scores of a clean run (deterministic fake models)."""
import json

import pytest

from harness.batch import run_selfscore
from harness.config import load_config
from harness.datasets import load_dataset
from store import StoreReader
from tests.crash_harness import ROLES, crash_and_resume, integrity
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.test_resume_and_failures import figures, snapshot

QUESTIONS = ["My laptop wifi drops every few minutes on Ubuntu 22.04.",
             "My disk is full but du shows only half used.",
             "Websites do not load but ping 8.8.8.8 works.",
             "The printer prints blank pages after a driver update.",
             "Bluetooth headphones connect but play no sound.",
             "Ssh asks for a password although my key is installed."]


@pytest.fixture
def six_tasks(tmp_path):
    path = tmp_path / "six.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "question": q}) + "\n" for i, q in enumerate(QUESTIONS)))
    return path


@pytest.fixture
def server():
    with FakeOpenAIServer(default_responder(solve_at=None)) as s:
        yield s


def clean_run(tmp_path, tasks, url, limit, max_turns):
    cfg = load_config(overrides={
        "store": str(tmp_path / "clean.sqlite"),
        "roles": {r: {"base_url": url, "model": f"{r}-fake"} for r in ROLES},
        "run": {"limit": limit, "max_turns": max_turns, "concurrency": 2}})
    run_id, progress = run_selfscore(cfg, load_dataset(str(tasks)))
    assert progress.failed == 0
    return StoreReader(cfg.store), run_id


def assert_exactly_once_and_equal_to_clean(store, run_id, clean, n_interactions):
    assert integrity(store) == "ok"
    reader = StoreReader(store)
    assert reader.run(run_id)["status"] == "completed"
    interactions = reader.interactions(run_id)
    assert len(interactions) == n_interactions and {i["status"] for i in interactions} == {"completed"}
    scores = reader.scores(run_id)
    assert sorted(s["interaction_id"] for s in scores) == sorted(i["id"] for i in interactions)
    for i in interactions:
        turns = reader.turns(i["id"])
        assert [t["turn_index"] for t in turns] == list(range(1, len(turns) + 1)) and i["n_turns"] == len(turns)
        per_turn = [j["turn_index"] for j in reader.judgments_for_run(run_id)
                    if j["interaction_id"] == i["id"] and j["turn_index"] is not None]
        assert sorted(per_turn) == sorted([t["turn_index"] for t in turns] * 3)  # 3 judgments a turn
        assert [j for j in reader.judgments_for_run(run_id)
                if j["interaction_id"] == i["id"] and j["kind"] == "complexity"].__len__() == 1
    assert snapshot(reader, run_id) == snapshot(*clean)
    assert figures(reader, run_id) == figures(*clean)


def test_fifteen_random_sigkills_and_resumes_equal_a_clean_run(tmp_path, six_tasks, server):
    clean = clean_run(tmp_path, six_tasks, server.base_url, limit=6, max_turns=5)
    store = tmp_path / "killed.sqlite"
    report = crash_and_resume(store, six_tasks, server, kills=15, seed=11, mode="fork",
                              limit=6, max_turns=5, concurrency=2, max_requests_before_kill=12)
    assert report.kills == 15 and report.final_rc == 0, report
    assert report.integrity == ["ok"] * 15
    assert_exactly_once_and_equal_to_clean(store, report.run_id, clean, 6)


def test_the_real_cli_process_killed_and_resumed(tmp_path, six_tasks, server):
    clean = clean_run(tmp_path, six_tasks, server.base_url, limit=2, max_turns=3)
    store = tmp_path / "killed.sqlite"
    report = crash_and_resume(store, six_tasks, server, kills=1, seed=5, mode="subprocess",
                              limit=2, max_turns=3, concurrency=2, max_requests_before_kill=15)
    assert report.kills == 1 and report.final_rc == 0 and report.integrity == ["ok"], report
    assert_exactly_once_and_equal_to_clean(store, report.run_id, clean, 2)
