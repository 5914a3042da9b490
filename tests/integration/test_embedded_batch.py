"""The real embedded llama.cpp server and Qwen2.5-Coder-1.5B: a small batch and Ctrl-C
(the judges' sanity sets: test_embedded_conversations.py). Slow (minutes); skip with ``-m 'not integration'``."""
import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness.compose import Runtime, run_selfscore
from harness.config import load_config
from harness.selfscore.figures import rescore_run
from harness.selfscore.scoring import score_interaction
from harness.tasks.datasets import load_dataset
from store import StoreReader, StoreWriter

ARTIFACTS = Path(os.environ.get("DESKBENCH_TEST_ARTIFACTS", "test-artifacts"))


def children_of(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_two_problem_two_turn_batch_stores_consistent_figures(tmp_path):
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                 "run": {"limit": 2, "max_turns": 2, "concurrency": 2}})
    with Runtime(cfg) as runtime:
        from harness.selfscore.batch import arun_selfscore
        run_id, progress = asyncio.run(arun_selfscore(runtime, load_dataset("lfrqa_technology")))
        server = runtime.engine.servers["qwen2.5-coder-1.5b"]
        proc, url = server.process, server.base_url
    assert proc.poll() is not None, "the embedded server must stop when the runtime closes"
    with pytest.raises(httpx.HTTPError):
        httpx.get(url.removesuffix("/v1") + "/health", timeout=2)

    reader = StoreReader(cfg.store)
    interactions = reader.interactions(run_id)
    assert progress.failed == 0 and [i["status"] for i in interactions] == ["completed"] * 2
    judgments = reader.judgments_for_run(run_id)
    for i in interactions:
        assert i["summary"] and i["problem_statement"]
        turns = reader.turns(i["id"])
        assert 1 <= len(turns) <= 2 and i["n_turns"] == len(turns)
        assert i["stop_reason"] == ("solved" if turns[-1]["solved"] else "max_turns")
        assert turns[0]["user_message"] == i["question"]
        for t in turns:
            assert t["agent_message"].strip() and t["output_tokens"] > 0 and t["input_tokens"] > 0
            mine = {j["kind"]: j for j in judgments
                    if j["interaction_id"] == i["id"] and j["turn_index"] == t["turn_index"]}
            assert set(mine) == {"user_helpfulness", "agent_helpfulness", "solved"}
            for kind in ("user_helpfulness", "agent_helpfulness"):
                j = mine[kind]
                assert j["model"] == "qwen2.5-coder-1.5b" and json.loads(j["raw_json"])
                assert t[kind] == (j["score"] if j["status"] == "ok" else None)
                assert t[kind] is None or 1 <= t[kind] <= 10
            if t["user_helpfulness"] and t["agent_helpfulness"]:
                assert t["quality"] == pytest.approx(t["agent_helpfulness"] / t["user_helpfulness"])
        stored = next(s["figures"] for s in reader.scores(run_id) if s["interaction_id"] == i["id"])
        assert stored == {**score_interaction(reader.complexity(i["id"]), turns, i["stop_reason"]),
                          "interaction_id": i["id"], "task_id": i["task_id"], "trial": 1,
                          "persona": "cooperative"}
    calls = reader.llm_call_totals(run_id)
    assert {c["role"] for c in calls} >= {"agent", "user", "judge", "complexity", "extractor"} - \
        ({"user"} if all(i["n_turns"] == 1 for i in interactions) else set())
    before = {s["interaction_id"]: s["figures"] for s in reader.scores(run_id)}
    after = {f["interaction_id"]: f for f in rescore_run(reader, StoreWriter(cfg.store), run_id)}
    assert after == before


def interrupt_after_first_turn(store: Path) -> tuple[subprocess.Popen, list[int], str, dict]:
    """Start a real batch, send SIGINT once its first turn is stored; returns the process, the
    server pids, its stderr and what the store said when the signal was sent."""
    cmd = [sys.executable, "-m", "harness.cli", "run", "--store", str(store), "--limit", "2",
           "--max-turns", "2", "--concurrency", "1", "--quiet"]
    # Ctrl-C as from a terminal: a test session started in the background by a non-interactive
    # shell (`make test &`, nohup) inherits SIGINT ignored, and so would the CLI, which then
    # rightly runs on; this made the test fail twice here. The child gets the default back.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600
    servers: list[int] = []
    seen: dict = {}
    while time.monotonic() < deadline and proc.poll() is None:
        servers = servers or children_of(proc.pid)
        if store.exists():
            with sqlite3.connect(store) as db:
                try:
                    turns = db.execute("SELECT COUNT(*) FROM turns").fetchone()[0]
                    if turns >= 1:
                        seen = {"turns": turns, "interactions": db.execute(
                            "SELECT status, COUNT(*) FROM interactions GROUP BY status").fetchall()}
                        break
                except sqlite3.OperationalError:
                    pass
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    assert servers, "the embedded server should be a child of the CLI"
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = proc.communicate(timeout=60)
    seen["exit_after_s"] = round(time.monotonic() - sent, 1)
    seen["stdout_tail"], seen["stderr_tail"] = out[-600:], err[-600:]
    return proc, servers, err, seen


def test_ctrl_c_stops_the_server_keeps_turns_and_the_run_resumes(tmp_path):
    store = tmp_path / "s.sqlite"
    proc, servers, err, seen = interrupt_after_first_turn(store)
    assert proc.returncode == 130 and "resume" in err, seen
    time.sleep(1)
    assert not any(alive(p) for p in servers), "Ctrl-C must stop the embedded server"

    reader = StoreReader(store)
    run = reader.runs()[0]
    assert run["status"] == "interrupted"
    kept = {i["id"]: [(t["turn_index"], t["agent_message"]) for t in reader.turns(i["id"])]
            for i in reader.interactions(run["id"])}
    assert sum(len(v) for v in kept.values()) >= 1
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", "--store", str(store),
                           "--resume", run["id"], "--quiet"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    reader = StoreReader(store)
    assert reader.run(run["id"])["status"] == "completed"
    for iid, turns in kept.items():
        now = [(t["turn_index"], t["agent_message"]) for t in reader.turns(iid)]
        assert now[: len(turns)] == turns  # stored turns were neither redone nor duplicated
        assert [t[0] for t in now] == list(range(1, len(now) + 1))
