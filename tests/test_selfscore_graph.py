"""The real turn loop graph, driven by fake chat models for every role."""
import json

import pytest

from harness.compose import run_selfscore
from harness.config import load_config
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.fakes import default_responder, fake_factory


def make_config(tmp_path, scoring: dict | None = None, **run):
    # the graph's tests drive the confirmation solved-check's fake answers (solved at turn solve_at
    # when the user's message follows that many agent replies); the evidence check, the embedded
    # profile's default: tests/test_solved_evidence.py and tests/test_method_profiles.py
    return load_config(overrides={"store": str(tmp_path / "s.sqlite"), "scoring": scoring or {},
                                  "run": {"limit": 3, "max_turns": 4, "solved_check": "confirmation", **run}})


# the fake judges' fixed scores, as given: the rubric bounds would move a "still drops" report's 3
# to 5 (harness.selfscore.helpfulness_bounds; tested in tests/test_helpfulness_bounds.py)
NO_BOUNDS = {"helpfulness_bounds": False}


def run(tmp_path, tasks_file, responder=None, **run_opts):
    cfg = make_config(tmp_path, **run_opts)
    factory = fake_factory(responder or default_responder())
    run_id, progress = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=factory)
    return cfg, run_id, progress, StoreReader(cfg.store), factory


def test_stops_when_solved_and_stores_every_turn(tmp_path, tasks_file):
    cfg, run_id, progress, reader, _ = run(tmp_path, tasks_file, default_responder(solve_at=2))
    interactions = reader.interactions(run_id)
    assert [i["status"] for i in interactions] == ["completed"] * 3
    assert {i["stop_reason"] for i in interactions} == {"solved"}
    for i in interactions:
        turns = reader.turns(i["id"])
        assert [t["turn_index"] for t in turns] == [1, 2]
        assert turns[0]["user_message"] == i["question"]
        assert [t["solved"] for t in turns] == [0, 1]
    assert progress.done == 3 and progress.failed == 0


def test_stops_at_max_turns(tmp_path, tasks_file):
    cfg, run_id, _, reader, _ = run(tmp_path, tasks_file, default_responder(solve_at=None), max_turns=3)
    for i in reader.interactions(run_id):
        assert i["stop_reason"] == "max_turns"
        assert len(reader.turns(i["id"])) == 3


def test_scripted_user_ends_the_conversation(tmp_path, tasks_file):
    # the confirmation check: its fake questions say "not fixed" to the script's "Now it works"
    # (the evidence check would take those words as the user's confirmation and stop)
    cfg, run_id, _, reader, factory = run(tmp_path, tasks_file, default_responder(solve_at=None),
                                          user="scripted", max_turns=10)
    by_task = {i["task_id"]: i for i in reader.interactions(run_id)}
    assert by_task["wifi"]["stop_reason"] == "user_ended"
    assert len(reader.turns(by_task["wifi"]["id"])) == 4   # question + 3 scripted follow-ups
    assert len(reader.turns(by_task["dns"]["id"])) == 1
    assert reader.turns(by_task["wifi"]["id"])[1]["user_message"] == "It is an Intel AX200 card."
    assert "user" not in factory.models  # the scripted user never calls a model


def test_first_turn_rule_uses_the_initial_question_rubric(tmp_path, tasks_file):
    cfg, run_id, _, reader, _ = run(tmp_path, tasks_file, default_responder(
        solve_at=None, user_first=9, user_later=3), max_turns=3, scoring=NO_BOUNDS)
    for i in reader.interactions(run_id):
        assert [t["user_helpfulness"] for t in reader.turns(i["id"])] == [9, 3, 3]


def test_turn_figures_and_final_score_follow_the_paper(tmp_path, tasks_file):
    cfg, run_id, _, reader, _ = run(tmp_path, tasks_file, default_responder(
        solve_at=2, user_first=6, user_later=4, agent_score=8, complexity=(6, 4, 5)), scoring=NO_BOUNDS)
    i = reader.interactions(run_id)[0]
    turns = reader.turns(i["id"])
    assert [t["quality"] for t in turns] == [8 / 6, 8 / 4]
    f = reader.scores(run_id)[0]["figures"]
    wc = 0.5 * 6 + 0.4 * 4 + 0.1 * 5
    quality = 8 / ((6 + 4) / 2)
    assert f["weighted_complexity"] == pytest.approx(wc)
    assert f["quality"] == pytest.approx(quality)
    assert f["final_score"] == pytest.approx((wc + quality) / 2 * 10)
    assert f["solved"] is True and f["turns"] == 2


def test_every_judgment_keeps_raw_output_model_and_prompt_version(tmp_path, tasks_file):
    cfg, run_id, _, reader, _ = run(tmp_path, tasks_file)
    js = reader.judgments_for_run(run_id)
    kinds = {j["kind"] for j in js}
    assert kinds == {"complexity", "user_helpfulness", "agent_helpfulness", "solved"}
    for j in js:
        assert j["status"] == "ok" and j["model"] == "qwen2.5-coder-1.5b" and j["prompt_version"]
        raw = json.loads(j["raw_json"])
        if j["kind"] == "solved":  # the confirmation method: Yes/No tokens, none on turn 1
            parsed = json.loads(j["parsed_json"])
            assert parsed["method"] == "confirmation"
            assert raw == [] if j["turn_index"] == 1 else (len(raw) == 2 and set(raw) <= {"Yes", "No"})
        else:
            assert raw[0].startswith("{")
    score = reader.scores(run_id)[0]
    assert score["judge_model"] == "qwen2.5-coder-1.5b" and score["scorer_version"]
    assert score["prompt_version"] == reader.run(run_id)["prompt_version"]


def test_preprocessing_is_cached_across_runs(tmp_path, tasks_file):
    cfg, _, _, _, first = run(tmp_path, tasks_file)
    calls_first = first.models["extractor"].calls
    factory = fake_factory(default_responder())
    run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=factory)
    assert calls_first == 6  # summary + problem for each of 3 tasks
    assert factory.models["extractor"].calls == 0


def test_a_simulated_user_outlasting_the_human_agents_thread_ends_it_as_agent_ended(tmp_path):
    """``--agent human --user llm``: the real helpers' replies run out before the simulated
    user does; the conversation ends before a user message nobody would answer (it failed with
    "no scripted agent reply for turn 3" before)."""
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "ssh", "question": "ssh to localhost fails with roaming not allowed.",
                                "agent_replies": ["try ssh -vvv", "use ssh-copy-id"],
                                "reference_answer": "use ssh-copy-id"}) + "\n")
    cfg, run_id, progress, reader, _ = run(tmp_path, path, default_responder(solve_at=None),
                                           user="llm", agent="human", max_turns=6)
    [i] = reader.interactions(run_id)
    assert progress.failed == 0 and i["status"] == "completed" and i["stop_reason"] == "agent_ended"
    assert [t["agent_message"] for t in reader.turns(i["id"])] == ["try ssh -vvv", "use ssh-copy-id"]
