"""A team's own agent in the run report, the exports, the store browser and ``deskbench compare``:
two batches against a real local HTTP agent (tests/agent_server.py), fake judges and user. One
agent reports no usage, calls tools and retrieves passages, fails every turn of one task with a
503 and ends another conversation itself; the other reports its usage."""
from __future__ import annotations

import json
import re

import pytest
from starlette.responses import PlainTextResponse

from harness.compose import run_selfscore
from harness.config import load_config
from harness.study.agent_report import agent_figures
from harness.study.compare import compare
from harness.study.export import export_run
from harness.study.report import report_markdown
from harness.tasks.datasets import load_dataset
from store import CANNED_QUERIES, StoreReader
from tests.agent_server import ScriptedAgent, serve
from tests.fakes import default_responder, fake_factory

TRACE = {"tool_calls": [{"name": "kb_search", "arguments": {"q": "wifi"}, "result": "doc 7"},
                        {"name": "open_ticket", "arguments": {}, "result": "T-1"}],
         "retrieved": [{"id": "d7", "text": "Reload iwlwifi.", "score": 0.9}]}


def untidy_agent(request: dict):
    """disk: always 503; dns: answers and ends the conversation; wifi: two messages and a trace,
    no usage."""
    task = request["metadata"]["task_id"]
    if task == "disk":
        return PlainTextResponse("backend down for maintenance", 503)
    if task == "dns":
        return {"reply": "Set your DNS to 1.1.1.1. Goodbye.", "end": True}
    return {"messages": ["Which card is it?", "Try: sudo modprobe -r iwlwifi && sudo modprobe iwlwifi"],
            "trace": TRACE}


def tidy_agent(request: dict):
    """Answers every turn and reports its usage."""
    return {"reply": "Reload the driver.", "usage": {"input_tokens": 100, "output_tokens": 20, "cost": 0.002}}


def batch(tmp_path, tasks_file, url: str, name: str) -> str:
    cfg = load_config(overrides={
        "store": str(tmp_path / "s.sqlite"), "retry": {"base_s": 0.0, "max_attempts": 2},
        "agent": {"url": url, "name": name},
        "run": {"limit": 3, "max_turns": 2, "agent": "http", "solved_check": "confirmation"}})
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)),
                              chat_models=fake_factory(default_responder(solve_at=None)))
    return run_id


@pytest.fixture
def runs(tmp_path, tasks_file):
    with serve(ScriptedAgent(untidy_agent)) as url:
        untidy = batch(tmp_path, tasks_file, url, "untidybot")
    with serve(ScriptedAgent(tidy_agent)) as url:
        tidy = batch(tmp_path, tasks_file, url, "tidybot")
    return StoreReader(tmp_path / "s.sqlite"), untidy, tidy


def test_the_report_has_an_agent_under_test_section(runs):
    reader, untidy, tidy = runs
    f = agent_figures(reader, untidy)
    assert (f["adapter"], f["agent"], f["agent_error"], f["agent_ended"]) == ("http", "untidybot", 1, 1)
    assert f["usage"] == "not reported" and f["tool_calls_per_turn"] == 2.0  # over the 2 turns with a trace
    assert f["top_tools"] == {"kb_search": 2, "open_ticket": 2}
    assert f["failures"][0]["status"] == 503 and f["failures"][0]["kind"] == "server_error"
    assert f["latency_ms"]["n"] == 3 and f["latency_ms"]["p95"] <= f["latency_ms"]["max"]

    text = report_markdown(reader, untidy)
    section = text.split("## Agent under test", 1)[1].split("\n## ", 1)[0]
    assert "adapter `http`, agent `untidybot`" in section
    assert "(`agent_error`): 1" in section and "(`agent_ended`): 1" in section
    assert re.search(r"latency \(ms, 3 replies\): mean \d+, p50 \d+, p95 \d+, max \d+", section)
    assert "time to first token: not measured" in section
    assert "kb_search 2" in section and "retrieved passages per turn 1.00" in section
    assert "trace reported on 2/3 turns" in section
    assert "messages per turn: 1.67" in section
    assert "usage: not reported" in section and "| disk | 1 | server_error | 503 | 2 | backend down" in section
    assert "| total_cost | not reported |" in text
    assert "| agent | untidybot | 5 | not reported |" in text  # 3 replies + the 2 failed attempts

    tidy_text = report_markdown(reader, tidy)
    assert "usage (6/6 turns reported it): input tokens 600, output tokens 120, cost 0.0120" in tidy_text
    assert "(`agent_error`): 0" in tidy_text and "trace: not reported" in tidy_text


def test_a_run_of_built_in_agents_has_no_such_section(tmp_path, tasks_file):
    cfg = load_config(overrides={"store": str(tmp_path / "p.sqlite"), "run": {"limit": 1, "max_turns": 1}})
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    reader = StoreReader(cfg.store)
    assert agent_figures(reader, run_id) is None
    assert "Agent under test" not in report_markdown(reader, run_id)


def test_the_exports_carry_the_agents_trace_usage_latency_and_messages(runs, tmp_path):
    reader, untidy, _ = runs
    export_run(reader, untidy, tmp_path / "out")
    turns = [json.loads(line) for line in (tmp_path / "out" / "turns.jsonl").read_text().splitlines()]
    wifi = next(t for t in turns if t["interaction_id"].endswith(":wifi"))
    assert wifi["agent_adapter"] == "http" and wifi["agent_name"] == "untidybot"
    assert wifi["agent_trace"] == TRACE and wifi["agent_usage"] == "not reported"
    assert wifi["agent_n_messages"] == 2 and wifi["agent_messages"][0] == "Which card is it?"
    assert wifi["agent_latency_ms"] > 0 and wifi["agent_attempts"] == 1
    assert wifi["input_tokens"] is None and wifi["cost"] is None  # not reported: null, never 0
    inter = {json.loads(line)["task_id"]: json.loads(line)
             for line in (tmp_path / "out" / "interactions.jsonl").read_text().splitlines()}
    detail = json.loads(inter["disk"]["agent_error"])
    assert detail["status"] == 503 and detail["turn"] == 1 and inter["wifi"]["agent_error"] is None
    assert inter["disk"]["stop_reason"] == "agent_error" and inter["wifi"]["cost"] is None
    assert (tmp_path / "out" / "interactions.csv").read_text().splitlines()[0].endswith("agent_error")


def test_the_canned_queries_show_agent_errors_and_tool_calls(runs):
    reader, untidy, tidy = runs
    errors = reader.db.execute(CANNED_QUERIES["agent_errors"]["sql"], {"run": untidy}).fetchall()
    cols = [d[0] for d in reader.db.execute(CANNED_QUERIES["agent_errors"]["sql"], {"run": untidy}).description]
    row = dict(zip(cols, errors[0]))
    assert len(errors) == 1 and (row["kind"], row["status"], row["turn"]) == ("server_error", 503, 1)
    assert row["body"] == "backend down for maintenance" and row["adapter"] == "http"
    assert reader.db.execute(CANNED_QUERIES["agent_errors"]["sql"], {"run": tidy}).fetchall() == []
    cursor = reader.db.execute(CANNED_QUERIES["agent_tool_calls"]["sql"], {"run": untidy})
    cols = [d[0] for d in cursor.description]
    rows = [dict(zip(cols, r)) for r in cursor.fetchall()]
    wifi = [r for r in rows if r["conversation"].endswith(":wifi")]
    assert len(rows) == 3 and len(wifi) == 2
    assert wifi[0]["tool_calls"] == 2 and wifi[0]["tools"] == "kb_search, open_ticket" and wifi[0]["retrieved"] == 1
    dns = next(r for r in rows if r["conversation"].endswith(":dns"))
    assert dns["tool_calls"] == 0 and dns["tools"] is None and dns["input_tokens"] is None


def test_compare_runs_of_team_agents_with_and_without_usage(runs, tmp_path):
    reader, untidy, tidy = runs
    path, summary = compare(reader, [untidy, tidy], tmp_path / "cmp")
    assert path.exists() and "untidybot" in summary and "tidybot" in summary


def test_a_rejudge_replays_unreported_usage_as_unreported(runs):
    from graphs.protocols import LLMCall
    from harness.selfscore.cost import AgentTurnCost
    from harness.selfscore.rejudge import replays
    reader, untidy, tidy = runs
    by_task = {r.key: r for r in replays(reader, reader.run(untidy))}
    calls = [LLMCall(**c) for c in by_task["wifi"].script["agent_calls"]]
    assert calls and not any(c.usage_reported for c in calls)
    config = load_config()
    assert AgentTurnCost(config.cost, config.role("agent")).turn_cost(calls[:1]) is None  # never 0
    tidy_calls = [LLMCall(**c) for c in replays(reader, reader.run(tidy))[0].script["agent_calls"]]
    assert all(c.usage_reported and c.input_tokens == 100 for c in tidy_calls)
