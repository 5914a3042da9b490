"""A team's own agent under test, for real: the example help-desk agent of examples/helpdesk_agent
(a LangGraph graph with a chromadb knowledge-base tool, on an OpenAI-compatible model) started
the three ways a team would run it, each judged by a `deskbench run` subprocess of the installed
script: behind the agent contract (`--agent http`), as a compiled graph imported by deskbench
(`--agent python`) and behind an OpenAI-compatible facade (`--agent openai`). One conversation of
one turn each. Checked: what the user sees (exit status, the report) and what the store
keeps (the agent's adapter, trace, usage and latency on every turn; the run named after the agent).
Plus an agent URL that refuses connections: a one-line error, exit status 2, nothing stored.

One embedded llama.cpp server (started here) serves both the agent's own model calls and the
simulated user and judges (`--role ROLE.base_url`, with `--profile embedded`: the roles are the
embedded model, so its aids stay on). Slow (minutes); skip with -m 'not integration'."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from harness.config import DEFAULT_EMBEDDED_MODEL, load_config
from harness.models.engine import EngineManager, free_port
from store import StoreReader

REPO = Path(__file__).resolve().parents[2]
DESKBENCH = str(Path(sys.executable).with_name("deskbench"))
ARTIFACTS = Path(os.environ.get("DESKBENCH_TEST_ARTIFACTS", "test-artifacts"))
JUDGED_ROLES = ("user", "judge", "complexity", "extractor")


@pytest.fixture(scope="module")
def llm_url() -> Iterator[str]:
    """The embedded model's OpenAI-compatible URL, for the agent and for deskbench's judges."""
    with EngineManager(load_config().engine) as engine:
        yield engine.base_url(DEFAULT_EMBEDDED_MODEL)


@pytest.fixture(scope="module")
def agent_env(llm_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The example agent's environment: its model and one chromadb folder for the module."""
    return {**os.environ, "HELPDESK_LLM_URL": llm_url, "HELPDESK_MAX_TOKENS": "240",
            "HELPDESK_INDEX_DIR": str(tmp_path_factory.mktemp("helpdesk-index"))}


@contextmanager
def example_server(module: str, env: dict[str, str], log: Path) -> Iterator[str]:
    """``python -m MODULE --port N`` from the repository root, until ``GET /`` answers; yields
    ``http://127.0.0.1:N``."""
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", module, "--port", str(port)], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # the knowledge base is embedded first (about 30 s on 2 cores)
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"{module} exited {proc.returncode}:\n{log.read_text()[-3000:]}"
            try:
                if httpx.get(base + "/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail(f"{module} did not answer GET / in 300 s:\n{log.read_text()[-3000:]}")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            pytest.fail(f"{module} did not stop within 30 s of SIGTERM")


def deskbench_run(tmp_path: Path, llm_url: str, env: dict[str, str], *agent: str) -> tuple[str, StoreReader]:
    """``deskbench run`` of one conversation of one turn with ``agent``'s options (more turns are met
    by the adapters' fast tests); returns what it printed and the store, after checking it exited 0."""
    store = tmp_path / "s.sqlite"
    roles = [f"--role={r}.base_url={llm_url}" for r in JUDGED_ROLES]
    # --agent-timeout: on 2 busy cores a turn of the 1.5B beside the judges can pass the default 120 s
    cmd = [DESKBENCH, "run", "--limit", "1", "--max-turns", "1", "--concurrency", "1", "--quiet",
           "--agent-timeout", "400", "--profile", "embedded", "--store", str(store),
           "--out", str(tmp_path / "run"), *roles, *agent]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=REPO, env=env)
    assert proc.returncode == 0, f"deskbench run {' '.join(agent)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert "## Model calls per turn" in proc.stdout and "mean_final_score" in proc.stdout, proc.stdout[-2000:]
    return proc.stdout, StoreReader(store)


def stored_conversation(reader: StoreReader, kind: str, name: str) -> list[dict]:
    """The run's one conversation, checked the same way for every adapter; returns each turn's
    messages and the ``agent`` part of its ``extra_json`` (also written to the test artifacts)."""
    (run,) = reader.runs()
    assert run["status"] == "completed" and run["name"].startswith(name + "_"), run
    (interaction,) = reader.interactions(run["id"])
    assert interaction["status"] == "completed", interaction
    assert interaction["stop_reason"] in ("solved", "max_turns"), interaction  # not agent_error
    turns = reader.turns(interaction["id"])
    assert len(turns) == 1
    conversation = []
    for t in turns:
        agent = json.loads(t["extra_json"])["agent"]
        assert agent["adapter"] == kind and agent["agent"] == name and agent["attempts"] == 1, agent
        assert t["agent_message"].strip() and agent["messages"] == [t["agent_message"]]
        assert agent["latency_ms"] > 0 and t["latency_ms"] > 0
        assert agent["usage"]["input_tokens"] > 0 and agent["usage"]["output_tokens"] > 0, agent["usage"]
        assert t["input_tokens"] == agent["usage"]["input_tokens"] and t["output_tokens"] > 0
        conversation.append({"turn": t["turn_index"], "user": t["user_message"], "agent": t["agent_message"],
                             "agent_helpfulness": t["agent_helpfulness"], "solved": t["solved"], "extra": agent})
    calls = [c for c in reader.llm_calls(interaction["id"]) if c["role"] == "agent"]
    assert [(c["purpose"], c["model"], c["error"]) for c in calls] == [(f"agent:{kind}", name, None)] * len(turns)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"team_agent_{kind}.json").write_text(json.dumps(
        {"run": run["name"], "task": interaction["task_id"], "stop_reason": interaction["stop_reason"],
         "turns": conversation}, indent=2, ensure_ascii=False))
    return conversation


def assert_searched_the_kb(turn: dict) -> None:
    """The turn's trace holds the ``search_kb`` call with the passages it returned."""
    (call,) = turn["extra"]["trace"]["tool_calls"]
    assert call["name"] == "search_kb" and turn["user"][:100] in call["arguments"]["query"], call
    passages = json.loads(call["result"])
    assert passages and all(p["id"] and p["text"] and -1 <= p["score"] <= 1 for p in passages), passages


def test_contract_server_under_deskbench(tmp_path, llm_url, agent_env):
    with example_server("examples.helpdesk_agent.contract_server", agent_env, tmp_path / "server.log") as base:
        printed, reader = deskbench_run(tmp_path, llm_url, os.environ.copy(), "--agent", "http",
                                        "--agent-url", base + "/chat", "--agent-name", "helpdesk-agent")
    conversation = stored_conversation(reader, "http", "helpdesk-agent")
    for turn in conversation:
        assert_searched_the_kb(turn)
        retrieved = turn["extra"]["trace"]["retrieved"]
        assert [p["id"] for p in retrieved] == [p["id"] for p in json.loads(
            turn["extra"]["trace"]["tool_calls"][0]["result"])]
    assert "helpdesk-agent_" in printed


def test_compiled_graph_under_deskbench(tmp_path, llm_url, agent_env):
    # the graph runs inside deskbench: its settings come from deskbench's environment
    printed, reader = deskbench_run(tmp_path, llm_url, agent_env, "--agent", "python",
                                    "--agent-target", "examples.helpdesk_agent.graph:graph")
    for turn in stored_conversation(reader, "python", "graph"):
        assert_searched_the_kb(turn)
    assert "graph_" in printed


def test_openai_facade_under_deskbench(tmp_path, llm_url, agent_env):
    with example_server("examples.helpdesk_agent.openai_facade", agent_env, tmp_path / "server.log") as base:
        printed, reader = deskbench_run(tmp_path, llm_url, os.environ.copy(), "--agent", "openai",
                                        "--agent-url", base + "/v1")  # the model: the first of /v1/models
    for turn in stored_conversation(reader, "openai", "helpdesk-agent"):
        assert turn["extra"]["trace"] is None  # an OpenAI endpoint is evaluated as it is: no trace
    assert "helpdesk-agent_" in printed


def test_an_agent_that_refuses_connections_stops_the_run_before_anything_is_stored(tmp_path):
    port = free_port()  # free: nothing listens there
    store = tmp_path / "s.sqlite"
    proc = subprocess.run([DESKBENCH, "run", "--agent", "http", "--agent-url", f"http://127.0.0.1:{port}/chat",
                           "--limit", "1", "--max-turns", "1", "--store", str(store), "--quiet"],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={**os.environ, "COLUMNS": "1000"})  # rich wraps at 80 columns without a terminal
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("error:")]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"127.0.0.1:{port}/chat: cannot reach the agent" in errors[0] and "Connection refused" in errors[0]
    assert not store.exists() or StoreReader(store).runs() == []
