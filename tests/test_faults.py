"""Batches through a flaky endpoint: the fault-injecting proxy (a real HTTP server) in front of
the fake OpenAI server, real ChatOpenAI clients, the real graph and store."""
import json

import pytest

from harness.cli.main import main
from harness.compose import run_selfscore
from harness.config import load_config
from harness.models.circuit import CircuitOpenError
from harness.study.report import report_markdown
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.fakes import default_responder
from tests.fault_proxy import FaultProxy
from tests.test_resume_and_failures import figures, snapshot

ROLES = ("agent", "user", "judge", "complexity", "extractor")
FAST_RETRY = {"max_attempts": 8, "base_s": 0.01, "max_s": 0.05}


def proxied_config(store, url, retry=None, **run):
    return load_config(overrides={
        "store": str(store),
        "roles": {r: {"base_url": url, "model": f"{r}-fake", "timeout_s": 2.0} for r in ROLES},
        "run": {"limit": 3, "max_turns": 3, "concurrency": 3, **run},
        # the fault mix was sized on the embedded profile's calls (the endpoint would make it paper)
        "scoring": {"profile": "embedded"},
        "retry": {**FAST_RETRY, **(retry or {})}})


@pytest.fixture
def upstream():
    with FakeOpenAIServer(default_responder(solve_at=None)) as server:
        yield server


@pytest.fixture
def clean(tmp_path, tasks_file, upstream):
    cfg = proxied_config(tmp_path / "clean.sqlite", upstream.base_url)
    run_id, progress = run_selfscore(cfg, load_dataset(str(tasks_file)))
    assert progress.failed == 0
    return StoreReader(cfg.store), run_id


STORED_KIND = {"timeout": "timeout", "429": "rate_limited", "500": "server_error", "502": "server_error",
               "503": "server_error", "truncated": "connection", "malformed": "malformed",
               "empty_choices": "empty", "empty_content": "empty"}


def assert_one_stored_failure_per_fault(failed_rows, proxy):
    """Each injected fault is one stored failed attempt of the matching kind. A loaded machine
    can add genuine client timeouts of its own: those are stored too, so timeouts are >=."""
    expected = {}
    for fault, n in proxy.injected.items():
        expected[STORED_KIND[fault]] = expected.get(STORED_KIND[fault], 0) + n
    stored = {}
    for c in failed_rows:
        kind = c["error"].split(":", 1)[0]
        stored[kind] = stored.get(kind, 0) + 1
    assert stored.pop("timeout", 0) >= expected.pop("timeout", 0)
    assert stored == expected


def test_batch_completes_at_30_percent_faults_with_the_scores_of_a_clean_run(tmp_path, tasks_file, upstream, clean):
    with FaultProxy(upstream.base_url, rate=0.3, seed=7, timeout_sleep_s=2.3) as proxy:
        cfg = proxied_config(tmp_path / "faulty.sqlite", proxy.base_url)
        run_id, progress = run_selfscore(cfg, load_dataset(str(tasks_file)))
    reader = StoreReader(cfg.store)
    assert progress.failed == 0 and reader.run(run_id)["status"] == "completed"
    assert snapshot(reader, run_id) == snapshot(*clean)
    assert figures(reader, run_id) == figures(*clean)

    # every injected fault is one stored failed attempt, and each was retried
    assert proxy.total_injected >= 15 and len(proxy.injected) >= 7, proxy.injected
    rows = [c for i in reader.interactions(run_id) for c in reader.llm_calls(i["id"])]
    failed = [c for c in rows if c["error"]]
    assert_one_stored_failure_per_fault(failed, proxy)
    assert sum(1 for c in rows if c["attempt"] > 1) == len(failed)
    for c in failed:
        assert c["backoff_s"] is not None
        if c["error"].startswith("rate_limited"):  # Retry-After: 1, capped at max_s
            assert c["retry_after_s"] == 1.0 and c["backoff_s"] == FAST_RETRY["max_s"]
        else:
            assert 0 <= c["backoff_s"] <= min(FAST_RETRY["max_s"], 0.01 * 2 ** (c["attempt"] - 1))
    kinds = {c["error"].split(":", 1)[0] for c in failed}
    assert {"rate_limited", "server_error", "malformed", "empty"} <= kinds
    # the report's model-call table counts them
    assert sum(c["errors"] for c in reader.llm_call_totals(run_id)) == len(failed)


def test_a_judgment_that_never_succeeds_is_failed_excluded_and_counted(tmp_path, tasks_file, upstream):
    def agent_judge_always_malformed(body):
        text = json.dumps(body["messages"])
        return "malformed" if "the latest AGENT message is for solving" in text else None

    with FaultProxy(upstream.base_url, rate=0.0, fault_for=agent_judge_always_malformed) as proxy:
        cfg = proxied_config(tmp_path / "s.sqlite", proxy.base_url, retry={"max_attempts": 2},
                             max_turns=2, judge_retries=1)
        run_id, progress = run_selfscore(cfg, load_dataset(str(tasks_file)))
    reader = StoreReader(cfg.store)
    assert progress.failed == 0
    js = [j for j in reader.judgments_for_run(run_id) if j["kind"] == "agent_helpfulness"]
    assert len(js) == 6 and all(j["status"] == "failed" and j["score"] is None for j in js)
    assert all("malformed" in j["error"] for j in js)
    # 6 judgments x 2 judge attempts x 2 HTTP attempts, each stored
    assert proxy.injected["malformed"] == 24
    failed_calls = [c for i in reader.interactions(run_id) for c in reader.llm_calls(i["id"]) if c["error"]]
    assert len(failed_calls) == 24
    scored = [s["figures"] for s in reader.scores(run_id)]
    assert all(f["avg_agent_helpfulness"] is None and f["final_score"] is None for f in scored)
    assert all(f["failed_agent_judgments"] == 2 and f["avg_user_helpfulness"] is not None for f in scored)
    report = report_markdown(reader, run_id)
    assert "| failed_judgments | 6 |" in report
    assert "6 failed judgment(s) excluded from every mean" in report and "agent_helpfulness 6" in report


def write_toml(path, retry):
    path.write_text("[retry]\n" + "".join(f"{k} = {v}\n" for k, v in retry.items()))
    return str(path)


def test_breaker_stops_a_run_when_the_endpoint_is_down_and_resume_finishes_it(tmp_path, tasks_file, upstream,
                                                                              clean, capsys):
    store = tmp_path / "s.sqlite"
    toml = write_toml(tmp_path / "c.toml", {"max_attempts": 2, "base_s": 0.01, "max_s": 0.02,
                                            "breaker_failures": 3})
    with FaultProxy(upstream.base_url, rate=0.0, mix={"503": 1}) as proxy:
        roles = [f for r in ROLES for f in ("--role", f"{r}.base_url={proxy.base_url}",
                                            "--role", f"{r}.model={r}-fake")]
        argv = ["run", "--config", toml, "--store", str(store), "--dataset", str(tasks_file), "--profile",
                "embedded", "--limit", "3", "--max-turns", "3", "--concurrency", "3", "--quiet", *roles]
        proxy.fault_for = lambda body: "503" if proxy.forwarded >= 12 else None  # down for good
        assert main(argv) == 4
        err = capsys.readouterr().err
        run = StoreReader(store).runs()[0]
        assert "stopped:" in err and proxy.base_url in " ".join(err.split()) and "--resume" in err
        assert run["status"] == "interrupted" and f"--resume {run['id']}" in run["stop_detail"]
        assert proxy.base_url in run["stop_detail"] and "3 calls in a row failed" in run["stop_detail"]
        requests_when_stopped = proxy.requests
        assert run["n_completed"] < 3
        # nothing half-written: stored turns are contiguous, every stored turn has its judgments
        reader = StoreReader(store)
        for turns in reader.turns_for_run(run["id"]).values():
            assert [t["turn_index"] for t in turns] == list(range(1, len(turns) + 1))
        kinds = {(j["interaction_id"], j["turn_index"]) for j in reader.judgments_for_run(run["id"])
                 if j["turn_index"] is not None}
        assert kinds == {(t["interaction_id"], t["turn_index"])
                         for ts in reader.turns_for_run(run["id"]).values() for t in ts}

        proxy.fault_for = None  # the endpoint is back
        assert main(["run", "--store", str(store), "--resume", run["id"], "--quiet"]) == 0
        assert proxy.requests > requests_when_stopped
    reader = StoreReader(store)
    assert reader.run(run["id"])["status"] == "completed"
    assert snapshot(reader, run["id"]) == snapshot(*clean)
    assert figures(reader, run["id"]) == figures(*clean)


def test_breaker_raises_from_the_python_api_too(tmp_path, tasks_file, upstream):
    with FaultProxy(upstream.base_url, rate=1.0, mix={"500": 1, "502": 1}) as proxy:
        cfg = proxied_config(tmp_path / "s.sqlite", proxy.base_url,
                             retry={"max_attempts": 2, "breaker_failures": 2})
        with pytest.raises(CircuitOpenError) as info:
            run_selfscore(cfg, load_dataset(str(tasks_file)))
    assert info.value.run_id and "extractor-fake" in str(info.value)
    reader = StoreReader(cfg.store)
    run = reader.run(info.value.run_id)
    assert run["status"] == "interrupted" and "--resume" in run["stop_detail"]
    interactions = reader.interactions(run["id"])
    # the call that failed before the breaker opened failed its interaction, attempts stored
    failed = [i for i in interactions if i["status"] == "failed"]
    assert len(failed) == 1 and "after 2 attempts" in failed[0]["error"]
    assert [c["attempt"] for c in reader.llm_calls(failed[0]["id"])] == [1, 2]
    assert {i["status"] for i in interactions} <= {"failed", "pending", "running"}
