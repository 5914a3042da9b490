"""The agent under test through its adapters (docs/agents.md): the contract validated with errors
that name the fault, retries on connection errors, timeouts, 429 and 5xx (Retry-After honoured)
and none on other 4xx or a malformed response, a real HTTP agent, Python callables and a compiled
LangGraph graph, and whole batches where the agent fails, ends the conversation or reports no usage."""
from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from graphs.protocols import AgentFailure, Message, Problem
from harness.adapters.contract import ContractError, build_request, parse_response
from harness.adapters.external import ExternalAgent, Sent
from harness.adapters.headers import expand_headers
from harness.adapters.http_agent import HttpAgent
from harness.adapters.python_agent import python_agent
from harness.compose import run_selfscore
from harness.config import ConfigError, load_config
from harness.models.retry import RetryPolicy
from harness.tasks.datasets import load_dataset
from store import StoreReader
from tests.agent_server import ScriptedAgent, serve
from tests.fakes import default_responder, fake_factory

PROBLEM = Problem("run-1:wifi", "My wifi drops.", None, None, persona="cooperative",
                  context={"run_id": "run-1", "task_id": "wifi", "trial": 1})
HISTORY = [Message("user", "My wifi drops."), Message("agent", "Which card?"), Message("user", "Intel AX200.")]


def policy(attempts: int = 3, waits: list | None = None) -> RetryPolicy:
    """No real waiting: the waits are recorded."""
    async def sleep(s):
        if waits is not None:
            waits.append(s)
    return RetryPolicy(max_attempts=attempts, base_s=0.5, jitter=False, sleep=sleep)


# -- the contract --------------------------------------------------------------------------------
def test_the_request_carries_the_conversation_and_its_metadata():
    req = build_request("c1", 2, HISTORY, {"run_id": "r", "task_id": "t", "trial": 1, "persona": "vague"})
    assert req["message"] == "Intel AX200." and req["turn"] == 2 and req["conversation_id"] == "c1"
    assert req["messages"] == [{"role": "user", "content": "My wifi drops."},
                               {"role": "assistant", "content": "Which card?"},
                               {"role": "user", "content": "Intel AX200."}]
    assert req["metadata"]["persona"] == "vague" and req["contract_version"] == "1"


@pytest.mark.parametrize("body,messages,end", [
    ("plain text", ["plain text"], False),
    ({"reply": "a"}, ["a"], False),
    ({"messages": [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}], "end": True},
     ["a", "b"], True),
])
def test_valid_responses(body, messages, end):
    r = parse_response(body)
    assert r.messages == messages and r.end is end and r.text == "\n\n".join(messages)


@pytest.mark.parametrize("body,named", [
    ({"text": "hi"}, '"reply"'),
    ({"reply": 3}, '"reply" must be a string'),
    ({"messages": "hi"}, '"messages" must be a list'),
    ({"messages": [{"role": "user", "content": "x"}]}, "role 'user'"),
    ({"reply": "a", "end": "yes"}, '"end"'),
    ({"reply": "a", "usage": {"input_tokens": -1}}, "usage.input_tokens"),
    ({"reply": "a", "trace": ["x"]}, '"trace" must be an object'),
    ([1, 2], "not an object"),
])
def test_malformed_responses_name_the_fault(body, named):
    with pytest.raises(ContractError, match=named.replace("(", r"\(").replace('"', '"')):
        parse_response(body)


def test_headers_read_the_environment_and_name_an_unset_variable():
    assert expand_headers({"Authorization": "Bearer ${BOT_TOKEN}"}, {"BOT_TOKEN": "s3"}) == {"Authorization": "Bearer s3"}
    with pytest.raises(ConfigError, match="BOT_TOKEN, which is not set"):
        expand_headers({"Authorization": "Bearer ${BOT_TOKEN}"}, {})


# -- retries, timeouts, failures -----------------------------------------------------------------
class Flaky(ExternalAgent):
    """An adapter whose attempts follow a script: exceptions raised, else a reply."""
    kind = "test"

    def __init__(self, script, **kw):
        super().__init__("flaky", **kw)
        self.script = list(script)

    async def send(self, request, problem):
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        if step == "slow":
            await asyncio.sleep(5)
        return Sent(parse_response(step))


async def test_a_5xx_then_a_reply_is_one_reply_with_its_failed_attempt_recorded():
    from harness.adapters.external import status_error
    waits = []
    agent = Flaky([status_error(503, "busy", 2.0), {"reply": "ok"}], policy=policy(waits=waits))
    reply = await agent.respond(PROBLEM, HISTORY)
    assert reply.text == "ok" and reply.extra["attempts"] == 2
    call = reply.calls[0]
    assert call.attempt == 2 and call.earlier_attempts[0].error.startswith("server_error: HTTP 503")
    assert waits == [2.0]  # the server's Retry-After, not the backoff


async def test_a_4xx_is_not_retried_and_fails_the_turn():
    from harness.adapters.external import status_error
    agent = Flaky([status_error(401, "bad token"), {"reply": "never"}], policy=policy())
    with pytest.raises(AgentFailure) as failure:
        await agent.respond(PROBLEM, HISTORY)
    assert failure.value.detail["status"] == 401 and failure.value.detail["attempts"] == 1
    assert "bad token" in failure.value.detail["body"] and failure.value.detail["turn"] == 2
    assert failure.value.detail["user_message"] == "Intel AX200."


async def test_a_malformed_response_is_not_retried_and_names_what_was_wrong():
    agent = Flaky([{"answer": "x"}, {"reply": "never"}], policy=policy())
    with pytest.raises(AgentFailure, match='malformed response: the response has no "reply"'):
        await agent.respond(PROBLEM, HISTORY)


async def test_a_slow_agent_times_out_on_every_attempt():
    agent = Flaky(["slow", "slow"], policy=policy(attempts=2), timeout_s=0.05)
    with pytest.raises(AgentFailure, match="no reply within 0.05 s") as failure:
        await agent.respond(PROBLEM, HISTORY)
    assert failure.value.detail["kind"] == "timeout" and len(failure.value.calls) == 2


# -- a real HTTP agent ---------------------------------------------------------------------------
async def test_http_agent_over_a_real_server_with_headers_usage_and_trace():
    bot = ScriptedAgent(failures=[(429, "slow down", "0"), (502, "gateway", None)])
    with serve(bot) as url:
        agent = HttpAgent(url, {"Authorization": "Bearer s3"}, "bot", policy=policy())
        reply = await agent.respond(PROBLEM, HISTORY)
        await agent.aclose()
    assert reply.text == "echo 2: Intel AX200." and reply.extra["attempts"] == 3
    assert reply.extra["usage"] == {"input_tokens": 10, "output_tokens": 5, "cost": 0.001}
    assert reply.extra["trace"]["tool_calls"][0]["name"] == "kb"
    assert bot.headers[-1]["authorization"] == "Bearer s3"
    assert bot.requests[-1]["metadata"] == {"run_id": "run-1", "task_id": "wifi", "trial": 1, "persona": "cooperative"}
    call = reply.calls[0]
    assert (call.input_tokens, call.output_tokens, call.cost, call.usage_reported) == (10, 5, 0.001, True)


async def test_http_agent_not_json_is_an_agent_error():
    from starlette.responses import PlainTextResponse
    with serve(ScriptedAgent(lambda req: PlainTextResponse("<html>oops</html>"))) as url:
        agent = HttpAgent(url, {}, "bot", policy=policy())
        with pytest.raises(AgentFailure, match="not JSON"):
            await agent.respond(PROBLEM, HISTORY)


# -- Python callables and LangGraph graphs -------------------------------------------------------
def sync_agent(request):
    """A sync callable agent: a string reply."""
    return f"sync {request['turn']}"


async def async_agent(request):
    """An async callable agent: the full response shape, no usage."""
    return {"messages": [{"role": "assistant", "content": "first"}, {"role": "assistant", "content": "second"}],
            "trace": {"retrieved": [{"id": "d1", "text": "t", "score": 0.9}]}}


NOT_CALLABLE = 42


def _tool_graph(checkpointer):
    def retrieve(state):
        call = {"name": "search_kb", "args": {"q": state["messages"][-1].content}, "id": "t1"}
        return {"messages": [AIMessage("", tool_calls=[call]), ToolMessage("kb says: reload iwlwifi", tool_call_id="t1")]}

    def answer(state):
        n = sum(1 for m in state["messages"] if m.type == "human")
        return {"messages": [AIMessage(f"reply {n}: reload iwlwifi",
                                       usage_metadata={"input_tokens": 7, "output_tokens": 3, "total_tokens": 10})]}
    return retrieve_then_answer(retrieve, answer, checkpointer)


def retrieve_then_answer(retrieve, answer, checkpointer):
    """A two-node agent graph, ``retrieve`` then ``answer``, over MessagesState."""
    g = StateGraph(MessagesState)
    g.add_node("retrieve", retrieve)
    g.add_node("answer", answer)
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer)


graph_with_memory = _tool_graph(MemorySaver())
graph_without_memory = _tool_graph(None)


async def test_python_callables_sync_and_async():
    sync = python_agent("tests.test_adapters:sync_agent", "s", policy=policy())
    assert (await sync.respond(PROBLEM, HISTORY)).text == "sync 2"
    reply = await python_agent("tests.test_adapters:async_agent", "a", policy=policy()).respond(PROBLEM, HISTORY)
    assert reply.extra["messages"] == ["first", "second"] and reply.text == "first\n\nsecond"
    assert reply.extra["usage"] == "not reported" and reply.calls[0].usage_reported is False


@pytest.mark.parametrize("graph", ["graph_with_memory", "graph_without_memory"])
async def test_a_langgraph_graph_turn_by_turn_with_its_trace_and_usage(graph):
    agent = python_agent(f"tests.test_adapters:{graph}", "g", policy=policy())
    problem = Problem(f"conv-{graph}", "q", None, None)
    first = await agent.respond(problem, HISTORY[:1])
    second = await agent.respond(problem, [*HISTORY[:1], Message("agent", first.text), Message("user", "again")])
    # the graph counts the human messages it holds: its memory, or the whole history sent
    assert (first.text, second.text) == ("reply 1: reload iwlwifi", "reply 2: reload iwlwifi")
    assert second.extra["trace"]["tool_calls"] == [{"name": "search_kb", "arguments": {"q": "again"},
                                                    "result": "kb says: reload iwlwifi"}]
    assert second.extra["usage"] == {"input_tokens": 7, "output_tokens": 3, "cost": None}


@pytest.mark.parametrize("target,named", [
    ("no_colon", "expected MODULE:ATTR"),
    ("no_such_module_xyz:agent", "does not import"),
    ("tests.test_adapters:missing", "has no attribute"),
    ("tests.test_adapters:NOT_CALLABLE", "neither a callable nor a compiled LangGraph graph"),
])
def test_bad_targets_name_the_problem_and_the_fix(target, named):
    with pytest.raises(ConfigError, match=named):
        python_agent(target, "x")


# -- whole batches -------------------------------------------------------------------------------
def batch_config(tmp_path, target, **run):
    return load_config(overrides={
        "store": str(tmp_path / "s.sqlite"), "retry": {"base_s": 0.0, "max_attempts": 2},
        "agent": {"target": target},
        "run": {"limit": 2, "max_turns": 2, "solved_check": "confirmation", "agent": "python", **run}})


FAIL_ON = {"disk"}


def failing_on_disk(request):
    """Fails every turn of the 'disk' task, answers the others (and ends after turn 2)."""
    if request["metadata"]["task_id"] in FAIL_ON:
        raise RuntimeError("backend down")
    return {"reply": "Try reloading the driver.", "end": request["turn"] >= 2}


def test_a_failing_agent_ends_only_its_conversation_and_resume_retries_exactly_those(tmp_path, tasks_file):
    cfg = batch_config(tmp_path, "tests.test_adapters:failing_on_disk")
    factory = fake_factory(default_responder(solve_at=None))
    run_id, progress = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=factory)
    reader = StoreReader(cfg.store)
    rows = {r["id"].split(":", 1)[1]: r for r in reader.interactions(run_id)}
    assert rows["wifi"]["stop_reason"] == "agent_ended" and rows["wifi"]["n_turns"] == 2
    assert rows["disk"]["stop_reason"] == "agent_error" and rows["disk"]["n_turns"] == 0
    detail = json.loads(rows["disk"]["error"])
    assert detail["turn"] == 1 and "backend down" in detail["error"] and detail["user_message"]
    assert progress.agent_errors == 1 and run_id.startswith("failing_on_disk_")
    calls = reader.db.execute("SELECT error FROM llm_calls WHERE interaction_id=? AND role='agent'",
                              [rows["disk"]["id"]]).fetchall()
    assert len(calls) == 1 and "backend down" in calls[0][0]  # RuntimeError: not retried

    FAIL_ON.clear()  # the backend is back: --resume gives the failed conversation its turns
    try:
        run_selfscore(cfg, None, resume=run_id, chat_models=factory)
    finally:
        FAIL_ON.add("disk")
    rows = {r["id"].split(":", 1)[1]: r for r in reader.interactions(run_id)}
    assert rows["disk"]["stop_reason"] == "agent_ended" and rows["disk"]["n_turns"] == 2
    assert rows["wifi"]["n_turns"] == 2  # not replayed
    turns = reader.turns(rows["disk"]["id"])
    assert turns[0]["input_tokens"] is None and turns[0]["cost"] is None  # usage not reported: NULL, never 0
    assert json.loads(turns[0]["extra_json"])["agent"]["usage"] == "not reported"


def test_an_agent_that_reports_usage_is_priced_and_its_run_stores_no_header_value(tmp_path, tasks_file, monkeypatch):
    monkeypatch.setenv("BOT_TOKEN", "secret-value")
    bot = ScriptedAgent()
    with serve(bot) as url:
        cfg = load_config(overrides={
            "store": str(tmp_path / "s.sqlite"), "retry": {"base_s": 0.0},
            "agent": {"url": url, "headers": ["Authorization=Bearer ${BOT_TOKEN}"], "name": "supportbot"},
            "run": {"limit": 1, "max_turns": 1, "solved_check": "confirmation", "agent": "http"}})
        run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    assert bot.headers[0]["authorization"] == "Bearer secret-value"
    reader = StoreReader(cfg.store)
    run = reader.run(run_id)
    assert run["name"].startswith("supportbot_") and "secret-value" not in json.dumps(run["config"])
    assert run["config"]["agent"]["headers"] == {"Authorization": "<not stored>"}
    assert run["models"]["agent"] == "supportbot (http)"  # not the agent role's model: it did not answer
    turn = reader.turns(f"{run_id}:wifi")[0]
    assert (turn["input_tokens"], turn["output_tokens"], turn["cost"]) == (10, 5, 0.001)
    agent = json.loads(turn["extra_json"])["agent"]
    assert agent["adapter"] == "http" and agent["trace"]["tool_calls"][0]["result"] == "doc 1"


def test_an_unreachable_agent_is_reported_before_anything_is_stored(tmp_path, tasks_file):
    from tests.agent_server import free_port
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                 "agent": {"url": f"http://127.0.0.1:{free_port()}/chat"},
                                 "run": {"limit": 1, "agent": "http"}})
    with pytest.raises(ConfigError, match="cannot reach the agent"):
        run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    assert StoreReader(cfg.store, must_exist=False).runs() == []


# -- the judges and the trace; re-judging a run of the team's agent ------------------------------
def traced_agent(request):
    """Replies with a tool call in its trace."""
    return {"reply": "Reload the driver.", "trace": {"tool_calls": [{"name": "search_kb", "arguments": {"q": "wifi"},
                                                                      "result": "KB-42: reload iwlwifi"}]}}


def _judge_prompts(factory) -> list[str]:
    return [str(p[-1].content) for p in factory.models["judge"].prompts]


@pytest.mark.parametrize("sees", [False, True])
def test_the_judges_see_the_trace_only_when_asked_and_every_score_says_so(tmp_path, tasks_file, sees):
    cfg = batch_config(tmp_path, "tests.test_adapters:traced_agent", limit=1, max_turns=1)
    cfg.agent.judge_sees_trace = sees
    factory = fake_factory(default_responder())
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=factory)
    agent_prompts = [p for p in _judge_prompts(factory) if "the latest AGENT message is for solving" in p]
    assert agent_prompts and all(("KB-42: reload iwlwifi" in p) is sees for p in agent_prompts)
    user_prompts = [str(p[-1].content) for p in factory.models["user"].prompts]
    assert not any("KB-42" in p for p in user_prompts)  # the simulated user never sees the trace
    reader = StoreReader(cfg.store)
    assert reader.run(run_id)["profile"]["judge_sees_trace"] is sees
    assert all(s["profile"] is not None for s in reader.scores(run_id))


def test_rejudging_a_run_of_the_teams_agent_calls_no_agent_and_keeps_its_name_and_trace(tmp_path, tasks_file):
    from harness.compose import Runtime
    from harness.selfscore.batch import SelfScoreBatch
    from harness.selfscore.rejudge import create_rejudge_run, rejudge_config, replays
    from store import StoreWriter
    cfg = batch_config(tmp_path, "tests.test_adapters:traced_agent", limit=1, max_turns=1)
    run_id, _ = run_selfscore(cfg, load_dataset(str(tasks_file)), chat_models=fake_factory(default_responder()))
    reader = StoreReader(cfg.store)
    source = reader.run(run_id)
    todo = replays(reader, source)
    config = rejudge_config(source, {}, 0, 1)
    config.agent.target = "no_such_module_xyz:agent"  # were the agent built or called, this would fail

    async def rejudge(runtime):
        batch = SelfScoreBatch(runtime, StoreWriter(cfg.store), StoreReader(cfg.store))
        new_id = create_rejudge_run(batch, source, todo)
        await batch.run(new_id)
        return new_id
    with Runtime(config, fake_factory(default_responder())) as runtime:
        new_id = asyncio.run(rejudge(runtime))
    new_run = reader.run(new_id)
    assert new_run["name"].startswith("traced_agent_") and new_run["config"]["run"]["agent"] == "replay"
    turn = reader.turns(reader.interactions(new_id)[0]["id"])[0]
    assert turn["agent_message"] == "Reload the driver."
    assert json.loads(turn["extra_json"])["agent"]["trace"]["tool_calls"][0]["name"] == "search_kb"


def header_checking_agent(request):
    """Stands in for an agent behind auth: the shard must have been given the header's value."""
    import os
    assert os.environ.get("SHARD_TOKEN") == "t0k", "the shard did not get the environment"
    if request["metadata"]["task_id"] in FAIL_ON:
        raise RuntimeError("backend down")
    return {"reply": "Try reloading the driver.", "end": True}


def test_shards_of_a_run_get_the_headers_it_never_stored_and_a_re_plan_retries_agent_errors(
        tmp_path, tasks_file, monkeypatch):
    from harness.scale.shards import create_run, plan_shards, run_shard
    from store.merge import copy_interactions
    monkeypatch.setenv("SHARD_TOKEN", "t0k")
    cfg = batch_config(tmp_path, "tests.test_adapters:header_checking_agent")
    cfg.agent.headers = {"X-Token": "${SHARD_TOKEN}"}
    factory = fake_factory(default_responder(solve_at=None))
    run_id = create_run(cfg, "selfscore", load_dataset(str(tasks_file)))

    def sharded_pass():
        specs = plan_shards(cfg.store, run_id, 2, tmp_path / f"shards-{len(list(tmp_path.glob('shards-*')))}",
                            "selfscore", cfg.agent.headers)
        for spec in specs:
            assert dict(spec.agent_headers) == {"X-Token": "${SHARD_TOKEN}"}
            run_shard(spec, spec.path, chat_models=factory)
            copy_interactions(spec.path, cfg.store, run_id)
        return specs
    sharded_pass()
    rows = {r["id"].split(":", 1)[1]: r for r in StoreReader(cfg.store).interactions(run_id)}
    assert rows["disk"]["stop_reason"] == "agent_error" and rows["wifi"]["stop_reason"] == "agent_ended"
    FAIL_ON.clear()
    try:
        specs = sharded_pass()
    finally:
        FAIL_ON.add("disk")
    assert [list(s.interaction_ids) for s in specs] == [[rows["disk"]["id"]]]  # exactly the failed one
    rows = {r["id"].split(":", 1)[1]: r for r in StoreReader(cfg.store).interactions(run_id)}
    assert rows["disk"]["stop_reason"] == "agent_ended" and rows["disk"]["n_turns"] == 1


# -- bad input, the way a user meets it: one line, exit 2, nothing stored ------------------------
@pytest.mark.parametrize("argv,named", [
    (["--agent", "python", "--agent-target", "no_such_module_xyz:agent"], "does not import"),
    (["--agent", "python", "--agent-target", "tests.test_adapters:NOT_CALLABLE"], "neither a callable"),
    (["--agent", "http"], "--agent http needs agent.url: pass --agent-url URL"),
    (["--agent", "http", "--agent-url", "http://127.0.0.1:{port}/chat", "--agent-header",
      "Authorization=Bearer ${UNSET_BOT_TOKEN_XYZ}"], "UNSET_BOT_TOKEN_XYZ, which is not set"),
    (["--agent", "http", "--agent-url", "http://127.0.0.1:{port}/chat"], "cannot reach the agent"),
])
def test_deskbench_run_refuses_a_bad_agent_in_one_line(tmp_path, argv, named):
    import subprocess
    import sys
    from pathlib import Path
    from tests.agent_server import free_port
    port = free_port()
    argv = [a.replace("{port}", str(port)) for a in argv]
    store = tmp_path / "s.sqlite"
    exe = Path(sys.executable).with_name("deskbench")
    import os
    proc = subprocess.run([str(exe), "run", "--store", str(store), "--limit", "1", "--quiet", *argv],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parent.parent,
                          env={**os.environ, "COLUMNS": "400"})  # a wide terminal: the message is one line
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error:") and named in lines[-1], proc.stderr
    assert not store.exists() or StoreReader(store).runs() == []


def test_the_live_app_refuses_an_unreachable_agent_before_it_listens(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    from tests.agent_server import free_port
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "app.py", "--store", str(tmp_path / "s.sqlite"), "--port", "0",
                           "--agent", "http", "--agent-url", f"http://127.0.0.1:{free_port()}/chat"],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 2 and "cannot reach the agent" in proc.stderr and "Start it, or fix the URL" in proc.stderr


def _slow_once_graph():
    """retrieve, then an answer that hangs on its first call (a turn cut off by the timeout)."""
    calls = {"n": 0}

    def retrieve(state):
        call = {"name": "search_kb", "args": {"q": "x"}, "id": f"t{len(state['messages'])}"}
        return {"messages": [AIMessage("", tool_calls=[call]), ToolMessage("kb", tool_call_id=call["id"])]}

    async def answer(state):
        calls["n"] += 1
        if calls["n"] == 1:
            await asyncio.sleep(5)
        humans = [m for m in state["messages"] if m.type == "human"]
        return {"messages": [AIMessage(f"reply to {len(humans)} human message(s)")]}
    return retrieve_then_answer(retrieve, answer, MemorySaver())


async def test_a_graph_turn_cut_off_by_the_timeout_is_retried_on_a_reset_thread_and_run_metadata_is_safe():
    from harness.adapters.graph_agent import GraphAgent
    graph = _slow_once_graph()
    agent = GraphAgent(graph, "g", policy=policy(), timeout_s=0.5)
    problem = Problem("conv-timeout", "q", None, None, context={"run_id": "r1", "task_id": "t", "trial": 1})
    first = await agent.respond(problem, HISTORY[:1])
    assert first.extra["attempts"] == 2 and first.text == "reply to 1 human message(s)"  # not 2: no duplicate
    # turn 2 (same run_id in the metadata each turn): the graph answers the new message, not turn 1 again
    second = await agent.respond(problem, [*HISTORY[:1], Message("agent", first.text), Message("user", "again")])
    assert second.text == "reply to 2 human message(s)"
    held = (await graph.aget_state({"configurable": {"thread_id": "conv-timeout"}})).values["messages"]
    assert [m.content for m in held if m.type == "human"] == ["My wifi drops.", "again"]
