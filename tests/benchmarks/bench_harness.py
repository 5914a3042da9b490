"""Harness-overhead benchmark of the SelfScore turn loop (a script, not a pytest test).

Run from the repository root:

    .venv/bin/python -m tests.benchmarks.bench_harness            # all figures
    .venv/bin/python -m tests.benchmarks.bench_harness --quick    # 3 rounds
    .venv/bin/python tests/benchmarks/bench_harness.py            # the same (make bench)

It drives the real graph (``graphs.selfscore.build_selfscore_graph``) with fake collaborators
written straight against ``graphs.protocols`` (no langchain chat model), and records every turn
durably through the real ``harness.selfscore.batch.StoreTurnSink`` over a real ``store.StoreWriter`` on a
temporary SQLite file, the way a batch does. Figures:

1. harness ms/turn at 50 and 200 turns, instant collaborators (median of N rounds);
2. growth: mean ms/turn of the last 10 turns / first 10 turns of a 200-turn conversation;
3. memory of one 200-turn conversation (tracemalloc peak, and the RSS delta);
4. concurrency: 100 conversations x 10 turns x 4 sequential 50 ms waits a turn through the
   graph and ``asyncio.gather`` (ideal 2.0 s), and the same waits without LangGraph.

It prints a table with each figure, its target and pass/fail against the target, and always
exits 0: the figures are informative. Wall-clock figures are what the targets are about; the
CPU time of the process is printed next to them because on a shared or busy machine it is the
steadier figure (wall >> CPU means the benchmark was waiting for a core, not working).
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import tempfile
import tracemalloc
from pathlib import Path
from time import perf_counter, process_time
from typing import Sequence

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graphs.protocols import Judgment, LLMCall, Message, Problem, Reply
from graphs.selfscore import build_selfscore_graph, initial_state, recursion_limit
from harness.selfscore.batch import StoreTurnSink
from harness.selfscore.scoring import turn_quality
from store import StoreWriter

TARGET_MS_PER_TURN = 1.0
TARGET_GROWTH = 1.2
TARGET_EFFICIENCY = 0.95


# -- fake collaborators (graphs.protocols) -----------------------------------------------------
def _call(role: str, purpose: str) -> LLMCall:
    return LLMCall(role, purpose, "fake-model", input_tokens=120, output_tokens=40,
                   latency_ms=0.0, cost=0.0)


async def _wait(delay: float) -> None:
    if delay:
        await asyncio.sleep(delay)


class FakeUser:
    """Instant (or ``delay``-second) user; notes when each turn starts."""

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.starts: list[float] = []

    async def respond(self, problem: Problem, history: Sequence[Message], turn_index: int) -> Reply:
        self.starts.append(perf_counter())
        await _wait(self.delay)
        text = problem.question if turn_index == 1 else f"Follow-up {turn_index}: still broken."
        return Reply(text, [_call("user", "user_reply")])


class FakeAgent:
    def __init__(self, delay: float = 0.0):
        self.delay = delay

    async def respond(self, problem: Problem, history: Sequence[Message]) -> Reply:
        await _wait(self.delay)
        return Reply(f"Try step {len(history)}: restart the network manager.",
                     [_call("agent", "agent_reply")])


class FakeJudges:
    """Never solves, so a conversation always runs to ``max_turns``."""

    def __init__(self, delay: float = 0.0):
        self.delay = delay

    def _judgment(self, kind: str, value) -> Judgment:
        return Judgment(kind, "ok", value, "fake-judge", "bench", reason="fine",
                        raw=['{"score": 1}'], parsed={"score": value},
                        calls=[_call("judge", kind)])

    async def user_helpfulness(self, problem, history, first_turn) -> Judgment:
        await _wait(self.delay)
        return self._judgment("user_helpfulness", 6 if first_turn else 4)

    async def agent_helpfulness(self, problem, history) -> Judgment:
        await _wait(self.delay)
        return self._judgment("agent_helpfulness", 7)

    async def solved(self, problem, history) -> Judgment:
        await _wait(self.delay)
        return self._judgment("solved", False)


class FakeCost:
    def turn_cost(self, calls: Sequence[LLMCall]) -> float:
        return sum(c.cost for c in calls)


class TimedSink:
    """The real ``StoreTurnSink``; notes when each turn has been committed."""

    def __init__(self, writer: StoreWriter):
        self.inner = StoreTurnSink(writer)
        self.ends: list[float] = []

    def save_turn(self, *args) -> None:
        self.inner.save_turn(*args)
        self.ends.append(perf_counter())


def problem(n: int) -> Problem:
    return Problem(f"bench:{n}", "My laptop wifi drops every few minutes on Ubuntu 22.04.",
                   "wifi drops", "The wifi connection drops periodically.")


class Rig:
    """A graph over fresh fakes and a fresh store file."""

    def __init__(self, tmp: Path, name: str, delay: float = 0.0):
        self.writer = StoreWriter(tmp / f"{name}.sqlite")
        self.sink = TimedSink(self.writer)
        self.user, self.agent, self.judges = FakeUser(delay), FakeAgent(delay), FakeJudges(delay)
        self.graph = build_selfscore_graph(self.user, self.agent, self.judges, FakeCost(),
                                           self.sink, turn_quality)

    async def conversation(self, n: int, turns: int) -> dict:
        state = initial_state(problem(n), [], 1, turns)
        return await self.graph.ainvoke(state, {"recursion_limit": recursion_limit(turns)})

    def close(self) -> None:
        self.writer.close()


# -- figures -----------------------------------------------------------------------------------
def per_turn(tmp: Path, turns: int, rounds: int) -> tuple[float, float, float]:
    """Median wall ms/turn over ``rounds`` conversations, median CPU ms/turn, and the median
    growth (mean of the last 10 turns / mean of the first 10)."""
    ms, cpu, growth = [], [], []
    for r in range(rounds + 1):  # round 0 warms imports and caches up and is not counted
        rig = Rig(tmp, f"turns{turns}-{r}")
        gc.collect()
        c0, t0 = process_time(), perf_counter()
        final = asyncio.run(rig.conversation(r, turns))
        wall, used = perf_counter() - t0, process_time() - c0
        assert final["stop_reason"] == "max_turns" and len(rig.sink.ends) == turns
        if r:
            ms.append(wall * 1000 / turns)
            cpu.append(used * 1000 / turns)
            starts = rig.user.starts
            marks = starts[:turns] + [rig.sink.ends[-1]]   # turn i lasts starts[i+1]-starts[i]
            durs = [b - a for a, b in zip(marks, marks[1:])]
            if turns >= 20:
                growth.append(statistics.mean(durs[-10:]) / statistics.mean(durs[:10]))
        rig.close()
    return (statistics.median(ms), statistics.median(cpu),
            statistics.median(growth) if growth else float("nan"))


def rss_mb() -> float:
    """Current resident set size (Linux), else the peak one."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory(tmp: Path, turns: int = 200) -> tuple[float, float]:
    """tracemalloc peak (MB) of one ``turns``-turn conversation, and the RSS growth (MB) of
    another one run without tracemalloc (the final state is still held when measured)."""
    warm = Rig(tmp, "mem-warm")
    asyncio.run(warm.conversation(0, 5))
    warm.close()
    rig = Rig(tmp, "mem")
    gc.collect()
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    asyncio.run(rig.conversation(1, turns))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rig.close()
    rig = Rig(tmp, "mem-rss")
    gc.collect()
    rss0 = rss_mb()
    final = asyncio.run(rig.conversation(2, turns))
    rss1 = rss_mb()
    del final
    rig.close()
    return (peak - base) / 2**20, rss1 - rss0


def concurrency(tmp: Path, n: int, turns: int, delay: float) -> tuple[float, float, float, float]:
    """Wall and CPU seconds of ``n`` concurrent conversations through the graph, then the same
    without LangGraph."""
    rig = Rig(tmp, "conc-graph", delay)

    async def graph_run():
        finals = await asyncio.gather(*(rig.conversation(i, turns) for i in range(n)))
        assert all(f["stop_reason"] == "max_turns" for f in finals)

    gc.collect()
    c0, t0 = process_time(), perf_counter()
    asyncio.run(graph_run())
    with_graph, graph_cpu = perf_counter() - t0, process_time() - c0
    assert len(rig.sink.ends) == n * turns
    rig.close()

    bare = Rig(tmp, "conc-bare", delay)

    async def bare_conversation(i: int) -> None:
        """The same calls in the same order as the graph's nodes, and the same sink."""
        p, history = problem(i), []
        for turn in range(1, turns + 1):
            started = perf_counter()
            u = await bare.user.respond(p, history, turn)
            history = history + [Message("user", u.text)]
            ju = await bare.judges.user_helpfulness(p, history, turn == 1)
            a = await bare.agent.respond(p, history)
            history = history + [Message("agent", a.text)]
            ja, js = await asyncio.gather(bare.judges.agent_helpfulness(p, history),
                                          bare.judges.solved(p, history))
            judgments = [ju, ja, js]
            calls = [*u.calls, *a.calls, *(c for j in judgments for c in j.calls)]
            bare.sink.save_turn(p.interaction_id, turn, u, a, judgments,
                                turn_quality(ju.value, ja.value), FakeCost().turn_cost(calls),
                                (perf_counter() - started) * 1000)

    async def bare_run():
        await asyncio.gather(*(bare_conversation(i) for i in range(n)))

    gc.collect()
    c0, t0 = process_time(), perf_counter()
    asyncio.run(bare_run())
    without, bare_cpu = perf_counter() - t0, process_time() - c0
    assert len(bare.sink.ends) == n * turns
    bare.close()
    return with_graph, graph_cpu, without, bare_cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds per ms/turn figure (median)")
    ap.add_argument("--quick", action="store_true", help="3 rounds")
    ap.add_argument("--conversations", type=int, default=100)
    ap.add_argument("--conc-turns", type=int, default=10)
    ap.add_argument("--delay-ms", type=float, default=50.0)
    ap.add_argument("--only", choices=["turns", "memory", "concurrency"], action="append")
    args = ap.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    only = set(args.only or ["turns", "memory", "concurrency"])

    rows: list[tuple[str, str, str, str]] = []

    def row(name, value, target, ok):
        rows.append((name, value, target, "n/a" if ok is None else ("PASS" if ok else "FAIL")))

    with tempfile.TemporaryDirectory(prefix="deskbench-bench-") as d:
        tmp = Path(d)
        if "turns" in only:
            ms50, cpu50, _ = per_turn(tmp, 50, rounds)
            ms200, cpu200, growth = per_turn(tmp, 200, rounds)
            row("harness ms/turn, 50 turns", f"{ms50:.3f} (cpu {cpu50:.3f})",
                f"<= {TARGET_MS_PER_TURN}", ms50 <= TARGET_MS_PER_TURN)
            row("harness ms/turn, 200 turns", f"{ms200:.3f} (cpu {cpu200:.3f})",
                f"<= {TARGET_MS_PER_TURN}", ms200 <= TARGET_MS_PER_TURN)
            row("growth last10/first10, 200 turns", f"{growth:.2f}x", f"<= {TARGET_GROWTH}x",
                growth <= TARGET_GROWTH)
        if "memory" in only:
            peak, rss = memory(tmp)
            row("memory, 200-turn conv (tracemalloc peak)", f"{peak:.2f} MB", "-", None)
            row("memory, 200-turn conv (RSS growth)", f"{rss:.2f} MB", "-", None)
        if "concurrency" in only:
            delay = args.delay_ms / 1000
            ideal = args.conc_turns * 4 * delay
            with_graph, graph_cpu, bare, bare_cpu = concurrency(
                tmp, args.conversations, args.conc_turns, delay)
            label = f"{args.conversations}x{args.conc_turns}"
            row(f"concurrency {label}, LangGraph (wall s)",
                f"{with_graph:.3f} s (cpu {graph_cpu:.2f} s)", f"ideal {ideal:.1f} s", None)
            row(f"concurrency {label}, LangGraph efficiency", f"{ideal / with_graph:.3f}",
                f">= {TARGET_EFFICIENCY}", ideal / with_graph >= TARGET_EFFICIENCY)
            row(f"concurrency {label}, bare asyncio (wall s)",
                f"{bare:.3f} s (cpu {bare_cpu:.2f} s)", f"ideal {ideal:.1f} s", None)
            row(f"concurrency {label}, bare asyncio efficiency", f"{ideal / bare:.3f}",
                "(reference)", None)

    w = [max(len(r[i]) for r in rows + [("figure", "value", "target", "result")]) for i in range(4)]
    print(f"deskbench harness benchmark (Python {sys.version.split()[0]}, "
          f"{rounds} rounds, medians)")
    for r in [("figure", "value", "target", "result"), tuple("-" * x for x in w), *rows]:
        print("  ".join(c.ljust(x) for c, x in zip(r, w)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
