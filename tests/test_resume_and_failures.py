"""Crash and resume, failed judgments, rescore: the store stays the exact record."""
import json

import pytest

from harness.compose import run_selfscore
from harness.selfscore.figures import rescore_run
from harness.tasks.datasets import load_dataset
from store import StoreReader, StoreWriter
from tests.fakes import default_responder, fake_factory
from tests.test_selfscore_graph import make_config


class Crash(BaseException):
    """Stands in for a kill: not an Exception, so nothing in the harness catches it."""


def crash_on_call(monkeypatch, role_to_crash: str, nth: int):
    """Make the ``nth`` model call of a role raise :class:`Crash` (a simulated kill)."""
    from harness.models.llm import RoleClient
    original = RoleClient.complete
    count = {"n": 0}

    async def complete(self, messages, purpose, response_format=None):
        if self.role == role_to_crash:
            count["n"] += 1
            if count["n"] == nth:
                raise Crash()
        return await original(self, messages, purpose, response_format)
    monkeypatch.setattr(RoleClient, "complete", complete)
    return original


def snapshot(reader, run_id):
    turns = reader.turns_for_run(run_id)
    return {iid.split(":", 1)[1]: [(t["turn_index"], t["user_message"], t["agent_message"],
                                    t["user_helpfulness"], t["agent_helpfulness"], t["solved"])
                                   for t in ts] for iid, ts in turns.items()}


def figures(reader, run_id):
    return {s["interaction_id"].split(":", 1)[1]: {k: v for k, v in s["figures"].items()
                                                   if k not in ("interaction_id",)}
            for s in reader.scores(run_id)}


@pytest.mark.parametrize("crash_role,after", [("agent", 3), ("judge", 7), ("user", 2), ("complexity", 2)])
def test_resume_after_crash_equals_a_clean_run(tmp_path, tasks_file, crash_role, after, monkeypatch):
    responders = default_responder(solve_at=None)
    clean_cfg = make_config(tmp_path / "clean", max_turns=3, concurrency=1)
    clean_id, _ = run_selfscore(clean_cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(responders))

    cfg = make_config(tmp_path / "crash", max_turns=3, concurrency=1)
    original = crash_on_call(monkeypatch, crash_role, after)
    with pytest.raises(Crash):
        run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(responders))
    from harness.models.llm import RoleClient
    monkeypatch.setattr(RoleClient, "complete", original)
    reader = StoreReader(cfg.store)
    run = reader.runs()[0]
    assert run["status"] == "interrupted"
    stored_before = sum(len(v) for v in snapshot(reader, run["id"]).values())
    assert stored_before < 9

    run_id, progress = run_selfscore(cfg, resume=run["id"], chat_models=fake_factory(responders))
    assert run_id == run["id"] and progress.failed == 0
    reader = StoreReader(cfg.store)
    assert snapshot(reader, run_id) == snapshot(StoreReader(clean_cfg.store), clean_id)
    assert figures(reader, run_id) == figures(StoreReader(clean_cfg.store), clean_id)
    assert reader.run(run_id)["status"] == "completed"


def test_endpoint_error_fails_one_interaction_and_resume_finishes_it(tmp_path, tasks_file):
    base = default_responder(solve_at=2)

    def broken(role):
        inner = base(role)

        def respond(messages, kwargs):
            if role == "agent" and "disk" in str(messages[1].content):
                return ConnectionError("endpoint down")
            return inner(messages, kwargs)
        return respond
    cfg = make_config(tmp_path)
    run_id, progress = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(broken))
    reader = StoreReader(cfg.store)
    status = {i["task_id"]: (i["status"], i["error"]) for i in reader.interactions(run_id)}
    assert progress.failed == 1 and status["disk"][0] == "failed" and "endpoint down" in status["disk"][1]
    assert status["wifi"][0] == "completed" and reader.run(run_id)["status"] == "incomplete"
    run_selfscore(cfg, resume=run_id, chat_models=fake_factory(base))
    assert {i["status"] for i in StoreReader(cfg.store).interactions(run_id)} == {"completed"}


def test_failed_judgment_is_recorded_and_never_defaulted(tmp_path, tasks_file):
    base = default_responder(solve_at=None)

    def bad_agent_judge(role):
        inner = base(role)

        def respond(messages, kwargs):
            if role == "judge" and "the latest AGENT message is for solving" in str(messages[-1].content):
                return '{"reason": "x", "score": 42}'
            return inner(messages, kwargs)
        return respond
    cfg = make_config(tmp_path, max_turns=2, judge_retries=2)
    factory = fake_factory(bad_agent_judge)
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=factory)
    reader = StoreReader(cfg.store)
    js = [j for j in reader.judgments_for_run(run_id) if j["kind"] == "agent_helpfulness"]
    assert js and all(j["status"] == "failed" and j["score"] is None and j["attempts"] == 3 for j in js)
    assert all(len(json.loads(j["raw_json"])) == 3 and "less than or equal to 10" in j["error"] for j in js)
    for t in reader.turns_for_run(run_id).values():
        assert all(row["agent_helpfulness"] is None and row["quality"] is None for row in t)
    f = reader.scores(run_id)[0]["figures"]
    assert f["avg_agent_helpfulness"] is None and f["final_score"] is None
    assert f["failed_agent_judgments"] == 2


def test_rescore_from_store_equals_original_and_makes_no_calls(tmp_path, tasks_file):
    cfg = make_config(tmp_path, max_turns=3)
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)),
                              chat_models=fake_factory(default_responder(solve_at=3, user_later=3)))
    reader = StoreReader(cfg.store)
    original = figures(reader, run_id)
    rescored = rescore_run(reader, StoreWriter(cfg.store), run_id)
    assert {f["interaction_id"].split(":", 1)[1]: {k: v for k, v in f.items() if k != "interaction_id"}
            for f in rescored} == original
    # an opt-in formula is stored as a separate, named score row
    alt = rescore_run(reader, StoreWriter(cfg.store), run_id, formula="agent_only")
    assert all(f["formula"] == "agent_only" and f["quality"] == f["avg_agent_helpfulness"] for f in alt)


def test_turn_rows_are_never_duplicated(tmp_path, tasks_file):
    import sqlite3
    cfg = make_config(tmp_path, max_turns=2)
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    w = StoreWriter(cfg.store)
    iid = StoreReader(cfg.store).interactions(run_id)[0]["id"]
    with pytest.raises(sqlite3.IntegrityError):
        w.save_turn({"interaction_id": iid, "turn_index": 1}, [], [])
    assert len(StoreReader(cfg.store).turns(iid)) == 2
