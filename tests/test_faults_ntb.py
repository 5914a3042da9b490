"""NoisyToolBench runs through the fault-injecting proxy: the same retries and circuit breaker
as SelfScore batches (real ChatOpenAI clients, real tool loop, store and scorer)."""
import asyncio

import pytest

from harness.compose import Runtime
from harness.config import load_config
from harness.models.circuit import CircuitOpenError
from harness.ntb.batch import arun_ntb
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fault_proxy import DEFAULT_MIX, FaultProxy
from tests.test_faults import assert_one_stored_failure_per_fault
from tests.test_ntb_loop import agent_script, ideal, judge_approves

CASES = ["IMKI/1", "IMR/2"]


def plan(query, step):
    """The ideal plan of whichever case the query belongs to."""
    from harness.ntb.cases import load_case
    for key in CASES:
        if load_case(key).query in query:
            return ideal(key)(query, step)
    raise AssertionError(f"unexpected query {query[:80]}")


@pytest.fixture
def upstream():
    responders = {"agent": agent_script(plan), "judge": judge_approves}
    with FakeOpenAIServer(lambda role: responders[role]) as server:
        yield server


def run_ntb(store, url, retry):
    cfg = load_config(overrides={
        "store": str(store), "run": {"concurrency": 2},
        "roles": {r: {"base_url": url, "model": f"{r}-fake", "timeout_s": 10} for r in ("agent", "judge")},
        "ntb": {"ids": CASES, "api_simulator": False, "protocol": "text"}, "retry": retry})
    with Runtime(cfg) as runtime:
        run_id, progress = asyncio.run(arun_ntb(runtime))
    reader = StoreReader(cfg.store)
    return reader, run_id, progress


def scores(reader, run_id):
    return {s["interaction_id"].split(":", 1)[1]: s["figures"] for s in reader.scores(run_id, "noisytoolbench")}


def steps(reader, run_id):
    return {i["task_id"]: [t["extra_json"] for t in reader.turns(i["id"])] for i in reader.interactions(run_id)}


def test_ntb_run_at_30_percent_faults_equals_a_fault_free_run(tmp_path, upstream):
    retry = {"max_attempts": 8, "base_s": 0.01, "max_s": 0.05}
    with FaultProxy(upstream.base_url, rate=0.0) as proxy:
        clean, clean_id, _ = run_ntb(tmp_path / "clean.sqlite", proxy.base_url, retry)
    no_timeouts = {k: v for k, v in DEFAULT_MIX.items() if k != "timeout"}  # covered in test_faults.py
    with FaultProxy(upstream.base_url, rate=0.3, seed=2, mix=no_timeouts) as proxy:
        reader, run_id, progress = run_ntb(tmp_path / "faulty.sqlite", proxy.base_url, retry)
    assert progress.failed == 0 and proxy.total_injected > 0
    assert steps(reader, run_id) == steps(clean, clean_id)
    assert scores(reader, run_id) == scores(clean, clean_id)
    failed = [c for i in reader.interactions(run_id) for c in reader.llm_calls(i["id"]) if c["error"]]
    assert_one_stored_failure_per_fault(failed, proxy)
    assert all(c["backoff_s"] is not None for c in failed)


def test_ntb_run_stops_on_an_open_circuit_and_resumes(tmp_path, upstream):
    retry = {"max_attempts": 2, "base_s": 0.01, "max_s": 0.02, "breaker_failures": 1}
    with FaultProxy(upstream.base_url, rate=1.0, mix={"503": 1}) as proxy:
        with pytest.raises(CircuitOpenError) as info:
            run_ntb(tmp_path / "s.sqlite", proxy.base_url, retry)
        run = StoreReader(tmp_path / "s.sqlite").run(info.value.run_id)
        assert run["status"] == "interrupted" and "agent-fake" in run["stop_detail"]
        proxy.rate = 0.0
        cfg = load_config(overrides={**StoreReader(tmp_path / "s.sqlite").run(run["id"])["config"]})
        with Runtime(cfg) as runtime:
            _, progress = asyncio.run(arun_ntb(runtime, resume=run["id"]))
    assert progress.failed == 0
    reader = StoreReader(tmp_path / "s.sqlite")
    assert reader.run(run["id"])["status"] == "completed" and len(scores(reader, run["id"])) == 2
