"""Adapter-overhead benchmark of the agent under test (a script, not a pytest test).

Run from the repository root:

    .venv/bin/python -m tests.benchmarks.bench_adapters            # all figures
    .venv/bin/python -m tests.benchmarks.bench_adapters --quick    # fewer turns and conversations

A fake agent server runs in its own process (Starlette under uvicorn): ``POST /chat`` speaks the
agent contract, ``POST /v1/chat/completions`` and ``GET /v1/models`` an OpenAI-compatible
endpoint; each answers after ``--delay`` seconds (0: at once). Figures:

1. per turn, against an instant agent: the harness's time through each adapter (``http``,
   ``openai``, ``python`` callable, ``python`` LangGraph graph) and through the built-in plain
   agent (``PlainAgent`` on ``langchain-openai``) on the same fake endpoint: wall and CPU ms per
   turn, and the ratio to the plain agent;
2. turns/s of whole conversations (the real turn loop and store, instant fake user and judges,
   ``harness.selfscore.batch.StoreTurnSink``) against an HTTP agent that answers in 200 ms, at
   concurrency 1, 16 and 64 (ideal: proportional to concurrency, 5 turns/s per conversation).

It prints a table and exits 0: the figures are informative, not asserted.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from time import perf_counter, process_time

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphs.protocols import Message, Problem
from graphs.selfscore import build_selfscore_graph, initial_state, recursion_limit
from harness.models.retry import RetryPolicy
from harness.selfscore.scoring import turn_quality
from store import StoreWriter
from tests.benchmarks.bench_harness import FakeCost, FakeJudges, FakeUser, TimedSink

REPLY = "Try reloading the driver: sudo modprobe -r iwlwifi && sudo modprobe iwlwifi."


def serve(port: int, delay: float) -> None:
    """The fake agent server (``--serve PORT``), in this process until killed."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request):
        body = json.loads(await request.body())
        if delay:
            await asyncio.sleep(delay)
        return JSONResponse({"reply": REPLY, "usage": {"input_tokens": 50 * body["turn"], "output_tokens": 20}})

    async def completions(request):
        await request.body()
        if delay:
            await asyncio.sleep(delay)
        return JSONResponse({"id": "c", "object": "chat.completion", "created": 0, "model": "fake",
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": REPLY}}],
                             "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}})

    async def models(request):
        return JSONResponse({"object": "list", "data": [{"id": "fake", "object": "model"}]})

    app = Starlette(routes=[Route("/chat", chat, methods=["POST"]),
                            Route("/v1/chat/completions", completions, methods=["POST"]),
                            Route("/v1/models", models, methods=["GET"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error", access_log=False)


def start_server(delay: float) -> tuple[subprocess.Popen, str]:
    """The fake server in its own process; returns it and its base URL once it answers."""
    import httpx
    from tests.agent_server import free_port
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.benchmarks.bench_adapters", "--serve", str(port),
                             "--delay", str(delay)])
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(base + "/v1/models", timeout=1)
            return proc, base
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the fake agent server did not start")


def instant_callable(request):
    """An instant Python agent."""
    return {"reply": REPLY}


def _instant_graph():
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    g = StateGraph(MessagesState)
    g.add_node("answer", lambda state: {"messages": [AIMessage(REPLY)]})
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    return g.compile()


def agents(base: str) -> dict:
    """Each adapter, and the built-in plain agent, on the fake server."""
    from harness.adapters.graph_agent import GraphAgent
    from harness.adapters.http_agent import HttpAgent
    from harness.adapters.openai_agent import OpenAIChatAgent
    from harness.adapters.python_agent import PythonAgent
    from harness.agents.plain import PlainAgent
    from harness.config import ModelSpec
    from harness.models.llm import RoleClient, chat_model_for
    policy = RetryPolicy(max_attempts=1)
    spec = ModelSpec(base_url=base + "/v1", model="fake", max_tokens=320)
    return {
        "plain (built-in, langchain-openai)": PlainAgent(RoleClient("agent", spec, chat_model_for(spec, spec.base_url))),
        "http": HttpAgent(base + "/chat", {}, "bench", policy=policy),
        "openai": OpenAIChatAgent(base + "/v1", "fake", {}, "bench", policy=policy),
        "python callable": PythonAgent(instant_callable, "bench", policy=policy),
        "python LangGraph graph": GraphAgent(_instant_graph(), "bench", policy=policy),
    }


async def per_turn(agent, turns: int) -> tuple[float, float]:
    """Wall and CPU ms per ``respond`` over ``turns`` sequential turns (5 warm-up turns first)."""
    problem = Problem("bench:1", "My wifi drops.", None, None)
    history = [Message("user", "My wifi drops."), Message("agent", REPLY), Message("user", "Still drops.")]
    for _ in range(5):
        await agent.respond(problem, history)
    c0, t0 = process_time(), perf_counter()
    for _ in range(turns):
        await agent.respond(problem, history)
    return (perf_counter() - t0) * 1000 / turns, (process_time() - c0) * 1000 / turns


async def throughput(url: str, concurrency: int, turns: int, tmp: Path) -> tuple[float, float]:
    """Turns/s and harness CPU ms per turn of ``concurrency`` whole conversations at once."""
    from harness.adapters.http_agent import HttpAgent
    writer = StoreWriter(tmp / f"c{concurrency}.sqlite")
    agent = HttpAgent(url, {}, "bench", policy=RetryPolicy(max_attempts=1))
    graph = build_selfscore_graph(FakeUser(), agent, FakeJudges(), FakeCost(), TimedSink(writer), turn_quality)
    problems = [Problem(f"bench:{n}", "My wifi drops.", None, None) for n in range(concurrency)]
    await graph.ainvoke(initial_state(Problem("warm", "q", None, None), [], 1, 1), {"recursion_limit": 20})
    c0, t0 = process_time(), perf_counter()
    await asyncio.gather(*(graph.ainvoke(initial_state(p, [], 1, turns), {"recursion_limit": recursion_limit(turns)})
                           for p in problems))
    wall, cpu = perf_counter() - t0, process_time() - c0
    writer.close()
    n = concurrency * turns
    return n / wall, cpu * 1000 / n


def main(argv: list[str] | None = None) -> int:
    """Print the adapter figures (or ``--serve PORT``: be the fake server)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    p.add_argument("--delay", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve:
        serve(args.serve, args.delay)
        return 0
    turns = 100 if args.quick else 400
    proc, base = start_server(0.0)
    try:
        rows = {name: asyncio.run(per_turn(agent, turns)) for name, agent in agents(base).items()}
    finally:
        proc.kill()
    plain_wall, plain_cpu = rows["plain (built-in, langchain-openai)"]
    print(f"1. Harness time per turn against an instant agent ({turns} turns each, sequential)")
    print(f"   {'adapter':36} {'wall ms':>8} {'CPU ms':>8} {'wall / plain':>13} {'CPU / plain':>12}")
    for name, (wall, cpu) in rows.items():
        print(f"   {name:36} {wall:8.2f} {cpu:8.2f} {wall / plain_wall:13.2f} {cpu / plain_cpu:12.2f}")
    conv_turns = 5 if args.quick else 10
    proc, base = start_server(0.2)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            figures = {c: asyncio.run(throughput(base + "/chat", c, conv_turns, Path(tmp))) for c in (1, 16, 64)}
    finally:
        proc.kill()
    print(f"2. Whole conversations ({conv_turns} turns each) against an HTTP agent that answers in 200 ms")
    print(f"   {'concurrency':>11} {'turns/s':>8} {'ideal':>7} {'of ideal':>9} {'harness CPU ms/turn':>20}")
    for c, (rate, cpu) in figures.items():
        ideal = c / 0.2
        print(f"   {c:11d} {rate:8.1f} {ideal:7.1f} {rate / ideal:9.0%} {cpu:20.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
