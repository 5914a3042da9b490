"""NoisyToolBench with the team's own tool-using agent (``deskbench ntb run --agent
http|python|openai``): real local servers (FastAPI under uvicorn) play scripted agents through
``ntb run``'s whole code path, the judge role on the fake OpenAI-compatible endpoint, the real
API environment, simulated user (real embeddings), store and scorer."""
from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any, Callable

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from harness.adapters.openai_agent import chat_messages
from harness.cli.main import main
from harness.ntb.cases import load_case, load_cases
from harness.ntb.external_agent import text_kind
from harness.ntb.user import NO_INFO
from store import StoreReader
from tests.fake_openai_server import FakeOpenAIServer
from tests.test_ntb_loop import judge_approves

BY_QUERY = {c.query: c for c in load_cases()}
FINAL = "Here are the results you asked for."
LIMITATION = "I cannot do that with the tools I have."


class AgentServer:
    """A FastAPI app under uvicorn in a thread on a free loopback port; ``requests`` holds every
    JSON body it was sent, ``behave(body) -> dict | (status, dict)`` answers."""

    def __init__(self, behave: Callable[[dict], Any], path: str = "/agent"):
        self.behave, self.requests = behave, []
        app = FastAPI()

        @app.post(path)
        async def answer(request: Request):
            body = await request.json()
            self.requests.append(body)
            result = self.behave(body)
            status, payload = result if isinstance(result, tuple) else (200, result)
            return JSONResponse(payload, status_code=status)

        @app.get("/v1/models")
        async def models():
            return {"data": [{"id": "tool-bot"}]}

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}{path}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "AgentServer":
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the agent server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def ideal_agent(body: dict) -> dict:
    """The contract's scripted tool-using agent: asks the anticipated question first, then calls
    the expected APIs (all in one response), then answers from the results; IBTC: says it cannot."""
    case = BY_QUERY[body["messages"][0]["content"]]
    messages, results = body["messages"], body["tool_results"]
    if case.category == "IBTC":
        return {"reply": LIMITATION}
    if len(messages) == 1:
        return {"reply": case.question_to_ask}
    if not [r for r in results if r["after"] == len(messages)]:
        calls = [{"id": f"t{i}", "name": c["resolved_name"], "arguments": c["arguments"]}
                 for i, c in enumerate(case.expected_calls)]
        return {"reply": "Let me look that up.", "tool_calls": calls,
                "usage": {"input_tokens": 12, "output_tokens": 7}}
    return {"reply": FINAL}


def judge_flags(url: str) -> list[str]:
    return ["--role", f"judge.base_url={url}", "--role", "judge.model=judge-fake"]


@pytest.fixture
def judge():
    """The judge role's fake OpenAI-compatible endpoint (it approves every A2/A3 question)."""
    with FakeOpenAIServer(lambda role: judge_approves) as server:
        yield server


def ntb_run(tmp_path, judge, agent_flags: list[str], cases: list[str], *extra: str) -> int:
    """``deskbench ntb run`` on ``cases`` into ``tmp_path``'s store, the judge on ``judge``."""
    args = ["ntb", "run", "--store", str(tmp_path / "s.sqlite"), "--no-api-simulator", "--quiet",
            "--out", str(tmp_path / "out"), *agent_flags, *extra, *judge_flags(judge.base_url)]
    for c in cases:
        args += ["--case", c]
    return main(args)


def stored(tmp_path) -> tuple[StoreReader, dict, dict[str, dict], dict[str, list[dict]]]:
    """The store's reader, the run, and per case key its interaction and its steps."""
    reader = StoreReader(tmp_path / "s.sqlite")
    run = reader.runs()[0]
    rows = {i["task_id"]: i for i in reader.interactions(run["id"])}
    steps = {k: [json.loads(t["extra_json"]) for t in reader.turns(i["id"])] for k, i in rows.items()}
    return reader, run, rows, steps


def figures(reader: StoreReader, run_id: str) -> dict[str, dict]:
    return {s["figures"]["case"]: s["figures"] for s in reader.scores(run_id, "noisytoolbench")}


def test_http_agent_asks_calls_and_answers_and_is_scored_as_a_built_in_agent(tmp_path, judge, capsys):
    with AgentServer(ideal_agent) as agent:
        assert ntb_run(tmp_path, judge, ["--agent", "http", "--agent-url", agent.url],
                       ["IMKI/2", "IwE/2", "IBTC/2"], "--concurrency", "2") == 0
        requests = list(agent.requests)
    reader, run, rows, steps = stored(tmp_path)
    assert run["name"] == f"127.0.0.1-{agent.port}_ntb_judge-fake"
    assert run["prompt_version"] == "ntb-external-1"
    assert [s["type"] for s in steps["IMKI/2"]] == ["ask", "call", "answer"]
    ask, call, answer = steps["IMKI/2"]
    case = load_case("IMKI/2")
    assert ask["matched"] and ask["reply"] == case.clarification and ask["text_rule"] == "question_mark"
    assert (call["name"], call["arguments"], call["tool_call_id"]) == ("hot_100_for_billboard", {"date": "2022-07-20"}, "t0")
    assert call["source"] == "recorded" and call["thought"] == "Let me look that up." and call["response"] == 2
    assert (answer["text"], answer["text_rule"], answer["agent_reply"]["adapter"]) == (FINAL, "statement", "http")
    # two calls in one response: two call steps, the second queued (no new request)
    assert [s["type"] for s in steps["IwE/2"]] == ["ask", "call", "call", "answer"]
    assert steps["IwE/2"][2]["queued"] and steps["IwE/2"][1]["queued_calls"][0]["id"] == "t1"
    assert [s["type"] for s in steps["IBTC/2"]] == ["answer"] and steps["IBTC/2"][0]["text"] == LIMITATION
    f = figures(reader, run["id"])
    assert (f["IMKI/2"]["A1"], f["IMKI/2"]["A2"], f["IMKI/2"]["A3"], f["IMKI/2"]["redundant_asking"],
            f["IMKI/2"]["steps"]) == (1, 1, 1, 0, 3)
    assert (f["IwE/2"]["A1"], f["IwE/2"]["A2"], f["IwE/2"]["A3"], f["IwE/2"]["steps"]) == (1, 1, 1, 4)
    assert (f["IBTC/2"]["A1"], f["IBTC/2"]["A2"], f["IBTC/2"]["steps"]) == (0, 1, 1)
    assert f["IMKI/2"]["agent_variant"] == "external:http" and f["IMKI/2"]["protocol"] == "external"
    assert all(r["stop_reason"] == "answered" for r in rows.values())
    # the requests: 3 for IMKI/2 (ask, call, answer), the case's tools, results where they happened
    imki = [r for r in requests if r["messages"][0]["content"] == case.query]
    assert len(imki) == 3 and len(requests) == 3 + 3 + 1
    first, second, third = imki
    assert [t["function"]["name"] for t in first["tools"]][:2] == ["billboard_global_excl_us_for_billboard",
                                                                  "hot_100_for_billboard"]
    assert first["tool_results"] == [] and first["turn"] == 1 and first["message"] == case.query
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["message"] == case.clarification and second["turn"] == 2
    result = third["tool_results"][0]
    assert set(result) == {"id", "name", "arguments", "result", "after", "response"}
    assert (result["id"], result["after"], result["response"]) == ("t0", 3, 2) and result["result"] == call["observation"]
    # one stable, opaque conversation id per case; the metadata names no category
    assert len({r["conversation_id"] for r in imki}) == 1 and "IMKI" not in json.dumps(first["metadata"])
    assert "IMKI" not in first["conversation_id"] and first["metadata"]["benchmark"] == "noisytoolbench"
    calls = [c for c in reader.llm_calls(rows["IMKI/2"]["id"]) if c["role"] == "agent"]
    assert [c["purpose"] for c in calls] == ["agent:http"] * 3 and calls[1]["input_tokens"] == 12
    assert "overall" in capsys.readouterr().out


def write_bot(tmp_path, monkeypatch) -> str:
    """A python agent module in ``tmp_path`` (the current folder); returns its name."""
    name = f"ntb_bot_{abs(hash(str(tmp_path)))}"
    (tmp_path / f"{name}.py").write_text('''
REQUESTS = []

def respond(request):
    REQUESTS.append(request)
    messages, results = request["messages"], request["tool_results"]
    if len(messages) == 1:
        return "What is your favourite colour?"
    if not results:
        return {"tool_calls": [{"id": "c1", "name": "hot_100_for_billboard",
                                "arguments": '{"date": "2020-01-01"}'}]}
    return {"reply": "Here is the chart. Anything else?", "end": True}
''')
    monkeypatch.chdir(tmp_path)
    return name


def test_python_agent_an_unmatched_question_and_end(tmp_path, judge, monkeypatch):
    name = write_bot(tmp_path, monkeypatch)
    try:
        assert ntb_run(tmp_path, judge, ["--agent", "python", "--agent-target", f"{name}:respond"], ["IMKI/2"]) == 0
        requests = sys.modules[name].REQUESTS
    finally:
        sys.modules.pop(name, None)
    reader, run, rows, steps = stored(tmp_path)
    assert run["name"] == "respond_ntb_judge-fake"
    ask, call, answer = steps["IMKI/2"]
    assert ask["type"] == "ask" and not ask["matched"] and ask["reply"] == NO_INFO
    assert (call["arguments"], call["tool_call_id"]) == ({"date": "2020-01-01"}, "c1")
    assert answer["type"] == "answer" and answer["text_rule"] == "end"  # "end": true wins over the "?"
    f = figures(reader, run["id"])["IMKI/2"]
    assert (f["A1"], f["A2"], f["A3"], f["redundant_asking"], f["steps"]) == (0, 0, 0, 1, 3)
    assert requests[1]["messages"][-1] == {"role": "user", "content": NO_INFO}
    turns = reader.turns(rows["IMKI/2"]["id"])
    assert turns[0]["input_tokens"] is None  # the agent reported no usage: not 0


def test_malformed_response_ends_that_case_with_agent_error_and_resume_retries_it(tmp_path, judge, capsys):
    imki, iwe = load_case("IMKI/2"), load_case("IwE/2")

    def broken(body):
        first = body["messages"][0]["content"]
        if first == imki.query:
            return {"answer": "no reply key"}  # malformed at the first step
        if first == iwe.query and len(body["messages"]) > 1:
            return {"reply": 42}  # malformed after its question
        return ideal_agent(body)

    with AgentServer(broken) as agent:
        flags = ["--agent", "http", "--agent-url", agent.url]
        assert ntb_run(tmp_path, judge, flags, ["IMKI/2", "IwE/2", "IBTC/2"]) == 0
        printed = capsys.readouterr().out
        reader, run, rows, steps = stored(tmp_path)
        assert {k: r["stop_reason"] for k, r in rows.items()} == {
            "IMKI/2": "agent_error", "IwE/2": "agent_error", "IBTC/2": "answered"}
        assert all(r["status"] == "completed" for r in rows.values())
        error = json.loads(rows["IMKI/2"]["error"])
        assert error["kind"] == "malformed" and "keys given: answer" in error["error"]
        assert "agent errors: 2 case(s)" in printed and "IwE/2: agent" in printed
        assert steps["IMKI/2"] == [] and [s["type"] for s in steps["IwE/2"]] == ["ask"]
        failed = [c for c in reader.llm_calls(rows["IwE/2"]["id"]) if c["error"]]
        assert len(failed) == 1 and failed[0]["turn_index"] == 2 and failed[0]["error"].startswith("malformed")
        f = figures(reader, run["id"])
        assert "IMKI/2" not in f  # nothing to score
        assert (f["IwE/2"]["A1"], f["IwE/2"]["A2"], f["IwE/2"]["A3"]) == (1, 0, 0)
        assert f["IwE/2"]["stop_reason"] == "agent_error"
        # the agent is fixed: --resume gives exactly the failed cases their step again
        agent.behave = ideal_agent
        before = len(agent.requests)
        assert ntb_run(tmp_path, judge, ["--resume", run["id"]], []) == 0
        assert len(agent.requests) - before == 3 + 2  # IMKI/2 from the start, IwE/2 from its call
    reader, run, rows, steps = stored(tmp_path)
    assert all(r["stop_reason"] == "answered" and r["error"] is None for r in rows.values())
    assert [s["type"] for s in steps["IwE/2"]] == ["ask", "call", "call", "answer"]
    f = figures(reader, run["id"])
    assert (f["IMKI/2"]["A1"], f["IMKI/2"]["A2"], f["IMKI/2"]["A3"]) == (1, 1, 1)
    assert (f["IwE/2"]["A1"], f["IwE/2"]["A2"], f["IwE/2"]["A3"]) == (1, 1, 1)


def openai_tool_bot(body: dict) -> dict:
    """An OpenAI-compatible endpoint playing the ideal agent with native tool calls."""
    messages = body["messages"]
    case = BY_QUERY[messages[0]["content"]]
    if messages[-1]["role"] == "tool":
        message = {"role": "assistant", "content": FINAL}
    elif len(messages) == 1:
        message = {"role": "assistant", "content": case.question_to_ask}
    else:
        call = case.expected_calls[0]
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": call["resolved_name"], "arguments": json.dumps(call["arguments"])}}]}
    return {"id": "x", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 5}}


def test_openai_agent_uses_native_tool_calls(tmp_path, judge):
    with AgentServer(openai_tool_bot, path="/v1/chat/completions") as bot:
        base = f"http://127.0.0.1:{bot.port}/v1"
        assert ntb_run(tmp_path, judge, ["--agent", "openai", "--agent-url", base], ["IMKI/2"]) == 0
        requests = list(bot.requests)
    reader, run, rows, steps = stored(tmp_path)
    assert run["name"] == "tool-bot_ntb_judge-fake"  # the model the endpoint's /models named
    assert [s["type"] for s in steps["IMKI/2"]] == ["ask", "call", "answer"]
    f = figures(reader, run["id"])["IMKI/2"]
    assert (f["A1"], f["A2"], f["A3"]) == (1, 1, 1)
    assert requests[0]["tools"][1]["function"]["name"] == "hot_100_for_billboard"
    last = requests[2]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "tool"]
    assert last[3]["tool_calls"][0]["function"] == {"name": "hot_100_for_billboard",
                                                    "arguments": json.dumps({"date": "2022-07-20"})}
    assert last[4]["tool_call_id"] == "call_a" and last[4]["content"] == steps["IMKI/2"][1]["observation"]


@pytest.mark.parametrize("text,end,expected", [
    ("Which date do you mean?", False, ("ask", "question_mark")),
    ('Which date do you mean? "', False, ("ask", "question_mark")),
    ("**Which date?**", False, ("ask", "question_mark")),
    ("Question: please give the date.", False, ("ask", "question_prefix")),
    ("Here is the chart.", False, ("answer", "statement")),
    ("Is that all? Here is the chart.", False, ("answer", "statement")),
    ("Here is the chart. Anything else?", True, ("answer", "end")),
    ("", False, ("answer", "statement")),
])
def test_text_kind(text, end, expected):
    assert text_kind(text, end) == expected


def test_chat_messages_put_tool_calls_where_they_happened():
    request = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "which?"},
                            {"role": "user", "content": "this"}],
               "tool_results": [{"id": "a", "name": "f", "arguments": {"x": 1}, "result": "r1", "after": 1, "response": 1},
                                {"id": "b", "name": "g", "arguments": {}, "result": "r2", "after": 3, "response": 3},
                                {"id": "c", "name": "g", "arguments": {}, "result": "r3", "after": 3, "response": 3},
                                {"id": "d", "name": "h", "arguments": {}, "result": "r4", "after": 3, "response": 4}]}
    out = chat_messages(request)
    assert [(m["role"], len(m.get("tool_calls") or [])) for m in out] == [
        ("user", 0), ("assistant", 1), ("tool", 0), ("assistant", 0), ("user", 0),
        ("assistant", 2), ("tool", 0), ("tool", 0), ("assistant", 1), ("tool", 0)]
    assert out[1]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"x": 1}'}
    assert chat_messages({"messages": request["messages"]}) == request["messages"]


def test_ntb_run_refuses_what_cannot_play(tmp_path, capsys):
    store = str(tmp_path / "s.sqlite")
    assert main(["ntb", "run", "--store", store, "--agent", "http", "--agent-url", "http://127.0.0.1:9/x",
                 "--agent-variant", "awn"]) == 2
    assert "--agent-variant set the built-in agent" in " ".join(capsys.readouterr().err.split())


def test_a_compiled_graph_cannot_play_and_nothing_is_stored(tmp_path, judge, monkeypatch, capsys):
    name = f"ntb_graph_{abs(hash(str(tmp_path)))}"
    (tmp_path / f"{name}.py").write_text('''
from langgraph.graph import END, START, MessagesState, StateGraph

def node(state):
    return {"messages": []}

builder = StateGraph(MessagesState)
builder.add_node("node", node)
builder.add_edge(START, "node")
builder.add_edge("node", END)
graph = builder.compile()
''')
    monkeypatch.chdir(tmp_path)
    try:
        assert ntb_run(tmp_path, judge, ["--agent", "python", "--agent-target", f"{name}:graph"], ["IMKI/2"]) == 2
    finally:
        sys.modules.pop(name, None)
    assert "compiled LangGraph graph, which calls its own tools" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "s.sqlite").exists() or not StoreReader(tmp_path / "s.sqlite").runs()
