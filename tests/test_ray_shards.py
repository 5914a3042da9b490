"""Sharded runs on a real local Ray instance (2 CPUs), every role on a real local
OpenAI-compatible HTTP server with deterministic answers: a sharded run merged back equals a
single-process run, and a shard whose worker is killed is retried and resumes from its store."""
import json
import os
import pickle
import signal
import threading

import pytest

ray = pytest.importorskip("ray")

from harness.cli.main import main  # noqa: E402
from harness.config import load_config  # noqa: E402
from harness.scale.ray_tasks import ShardIncomplete, ShardResult, run_on_ray  # noqa: E402
from harness.tasks.datasets import load_dataset  # noqa: E402
from store import StoreReader  # noqa: E402
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402
from tests.fakes import default_responder  # noqa: E402
from tests.test_cli import role_flags  # noqa: E402
from tests.test_resume_and_failures import figures, snapshot  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def single_run(tmp_path, tasks_file, url):
    store = tmp_path / "single.sqlite"
    assert main(["run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "3",
                 "--max-turns", "3", "--quiet", "--out", str(tmp_path / "single"), *role_flags(url)]) == 0
    reader = StoreReader(store)
    return reader, reader.runs()[0]["id"]


def test_ray_run_merged_equals_a_single_run_and_merging_again_changes_nothing(
        local_ray, tmp_path, tasks_file, capsys):
    with FakeOpenAIServer(default_responder(solve_at=None)) as server:
        single, single_id = single_run(tmp_path, tasks_file, server.base_url)
        store = tmp_path / "driver.sqlite"
        assert main(["ray", "run", "--store", str(store), "--dataset", str(tasks_file), "--limit", "3",
                     "--max-turns", "3", "--quiet", "--shards", "2", "--out", str(tmp_path / "out"),
                     *role_flags(server.base_url)]) == 0
    printed = capsys.readouterr()
    merged = StoreReader(store)
    run = merged.runs()[0]
    assert run["status"] == "completed" and run["n_completed"] == 3
    assert snapshot(merged, run["id"]) == snapshot(single, single_id)
    assert figures(merged, run["id"]) == figures(single, single_id)
    assert "Store:" in printed.out and "0 interaction(s) copied, 2 updated" in printed.err

    shards = sorted((tmp_path / "shards" / run["id"]).glob("shard-*.sqlite"))
    assert len(shards) == 2
    assert main(["ray", "merge", *map(str, shards), "--into", str(store)]) == 0
    assert "0 interaction(s) copied, 0 updated, 2 unchanged" in capsys.readouterr().out
    assert main(["rescore", "--store", str(store), run["id"]]) == 0
    assert "0 changed" in capsys.readouterr().out


def held_until(needle, gate, responders):
    """``responders``, but a prompt that mentions ``needle`` is answered only once ``gate`` is set."""
    def for_role(role):
        def respond(messages, body):
            if any(needle in str(m.content) for m in messages):
                gate.wait(120)
            return responders(role)(messages, body)
        return respond
    return for_role


def killer(seen, gate):
    """A progress callback that kills shard 0's worker once, when it finished one interaction
    (its second one is held at the endpoint until then), and then lets the endpoint answer."""
    killed = {}

    def on_progress(p):
        seen.append({k: dict(v) for k, v in p.shards.items()})
        first = p.shards.get(0, {})
        if not killed and first.get("done", 0) >= 1 and first.get("pid"):
            os.kill(first["pid"], signal.SIGKILL)  # shard 0 dies in its second interaction
            killed["pid"] = first["pid"]
            gate.set()
    on_progress.killed = killed
    return on_progress


@pytest.mark.parametrize("max_retries", [2, 0])
def test_a_killed_shard_resumes_from_its_store(local_ray, tmp_path, tasks_file, max_retries, capsys):
    """With retries Ray re-runs the shard, which resumes; without, the run is left incomplete
    with what the shard stored, and ``ray run --resume`` finishes it."""
    responders = default_responder(solve_at=None)
    with FakeOpenAIServer(responders) as fast:
        single, single_id = single_run(tmp_path, tasks_file, fast.base_url)
        n_single = len(fast.requests)
    # the same answers; the 'disk' conversation (shard 0's second) waits for the kill
    gate = threading.Event()
    with FakeOpenAIServer(held_until("My disk is full", gate, responders)) as server:
        flags = {r: {"base_url": server.base_url, "model": f"{r}-fake"}
                 for r in ("agent", "user", "judge", "complexity", "extractor")}
        cfg = load_config(overrides={"store": str(tmp_path / "driver.sqlite"), "roles": flags,
                                     "scoring": {"profile": "embedded"},  # as role_flags says
                                     "run": {"limit": 3, "max_turns": 3, "concurrency": 1}})
        seen = []
        on_progress = killer(seen, gate)
        result = run_on_ray(cfg, "selfscore", 2, dataset=load_dataset(str(tasks_file)),
                            max_retries=max_retries, on_progress=on_progress, poll_s=0.1)
        killed = on_progress.killed
        assert killed, "shard 0 finished before it could be killed; the test did not test anything"
        merged = StoreReader(cfg.store)
        if max_retries:
            last = seen[-1]
            assert last[0]["attempts"] == 2 and last[0]["pid"] != killed["pid"] and last[1]["attempts"] == 1
            assert result.errors == [] and result.progress.done == 3
        else:
            assert result.progress.done == 2 and merged.run(result.run_id)["status"] == "incomplete"
            assert any("shard 0" in e for e in result.errors)
            assert len(merged.turns(result.shards[0].interaction_ids[0])) == 3  # kept from the dead shard
            assert main(["ray", "run", "--store", cfg.store, "--resume", result.run_id, "--quiet",
                         "--out", str(tmp_path / "out")]) == 0
            assert sorted(p.name for p in (tmp_path / "shards" / result.run_id).iterdir()
                          if not p.name.endswith(("-wal", "-shm"))) == [
                "shard-0.sqlite", "shard-0.sqlite.merged", "shard-1.sqlite.merged"]
            merged = StoreReader(cfg.store)
    assert merged.run(result.run_id)["status"] == "completed"
    assert snapshot(merged, result.run_id) == snapshot(single, single_id)
    assert figures(merged, result.run_id) == figures(single, single_id)
    # the interaction finished before the kill was not played again: at most the turn in flight was
    first_done = result.shards[0].interaction_ids[0]
    question = merged.interactions(result.run_id)[0]["question"]
    assert first_done.endswith(":wifi") and question.startswith("My laptop wifi")
    agent_calls = [r for r in server.requests if r["model"] == "agent-fake" and question in json.dumps(r["messages"])]
    assert len(agent_calls) == 3
    assert len(server.requests) < n_single + 8  # the shard did not start over


def test_shard_incomplete_carries_its_result_through_pickling():
    exc = ShardIncomplete("shard 1: 2 interaction(s) failed", ShardResult(1, "node", "/x", 3, 2, 9, b"db", 1.5))
    again = pickle.loads(pickle.dumps(exc))
    assert str(again) == str(exc) and again.result.data == b"db" and again.result.failed == 2


def test_ray_ntb_sharded_equals_one_process(local_ray, tmp_path, capsys):
    from harness.ntb.cases import load_cases
    from tests.test_ntb_loop import agent_script, ideal, judge_approves
    by_query = {c.query: c for c in load_cases()}

    def responders(role):
        if role == "agent":
            return lambda messages, body: agent_script(ideal(by_query[str(messages[1].content)].key))(messages, body)
        return judge_approves

    cases = ["--case", "IMKI/2", "--case", "IMR/2", "--case", "IBTC/2", "--case", "IwE/2"]
    with FakeOpenAIServer(responders) as server:
        flags = []
        for r in ("agent", "judge"):
            flags += ["--role", f"{r}.base_url={server.base_url}", "--role", f"{r}.model={r}-fake"]
        common = [*cases, "--protocol", "text", "--no-api-simulator", "--quiet", *flags]
        assert main(["ntb", "run", "--store", str(tmp_path / "one.sqlite"), *common]) == 0
        assert main(["ray", "ntb", "--store", str(tmp_path / "ray.sqlite"), "--shards", "2", *common]) == 0
    one, sharded = StoreReader(tmp_path / "one.sqlite"), StoreReader(tmp_path / "ray.sqlite")

    def by_case(reader):
        run_id = reader.runs()[0]["id"]
        return {s["interaction_id"].split(":", 1)[1]: {k: v for k, v in s["figures"].items()
                                                        if k != "interaction_id"}
                for s in reader.scores(run_id, "noisytoolbench")}
    assert len(by_case(sharded)) == 4 and by_case(sharded) == by_case(one)
