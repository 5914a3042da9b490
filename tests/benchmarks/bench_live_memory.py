"""Memory held by paused live conversations, and what leaving memory when idle frees (a
script, not a pytest test).

Run from the repository root:

    .venv/bin/python -m tests.benchmarks.bench_live_memory                # 200 sessions x 4 turns
    .venv/bin/python -m tests.benchmarks.bench_live_memory --sessions 500 --turns 8

``--sessions`` free live sessions (mode ``user``) each get ``--turns`` messages through the real
turn loop (``harness.live.sessions.LiveSessions``) with the deterministic fake chat models, and are left
open, as people who close the tab leave them. Figures (``tracemalloc``): memory per paused
conversation, how many are held, what ``evict_idle`` frees once they are ``app.idle_minutes``
old, and the time one sweep takes; then the time of the first message after a conversation
left memory (rebuilt from the store) against one that stayed.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


async def send(live, session_id: str, text: str) -> float:
    t = time.perf_counter()
    async for _ in live.send(session_id, text):
        pass
    return time.perf_counter() - t


async def bench(n_sessions: int, n_turns: int, store: Path) -> None:
    from harness.compose import Runtime
    from harness.config import load_config
    from harness.live.sessions import LiveSessions
    from store import StoreReader, StoreWriter
    from tests.fakes import ScriptedChatModel, default_responder, fake_factory

    # the fake models keep every prompt for tests to inspect; here that would be counted as
    # the harness's memory, so they forget each prompt once answered
    recording = ScriptedChatModel._generate

    def forgetful(self, *args, **kwargs):
        try:
            return recording(self, *args, **kwargs)
        finally:
            self.prompts.clear()

    ScriptedChatModel._generate = forgetful
    cfg = load_config(overrides={"store": str(store), "app": {
        "max_turns": n_turns + 30, "messages_per_minute": 10_000, "idle_minutes": 30}})
    runtime = Runtime(cfg, fake_factory(default_responder(solve_at=None)))
    writer, reader = StoreWriter(cfg.store), StoreReader(cfg.store, must_exist=False)
    clock = Clock()
    live = LiveSessions(runtime, writer, reader, clock=clock)
    try:
        async def populate(n: int, tag: str) -> list[str]:
            ids = []
            for i in range(n):
                view = await live.start(mode="user", question=f"{tag} {i}: the wifi drops every few minutes.")
                for turn in range(n_turns):
                    await send(live, view.session_id, f"{tag} {i}, message {turn}: it still drops.")
                ids.append(view.session_id)
            return ids

        # warm up (graph compilation, imports) outside the measurements
        warm = await live.start(mode="user", question="warm-up question")
        await send(live, warm.session_id, "warm-up question")
        await live.end(warm.session_id)

        # 1. memory (tracemalloc slows allocation, so it is on for this part only)
        n_mem = min(n_sessions, 100)
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        await populate(n_mem, "Memory")
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
        in_memory = live.in_memory()
        clock.now += 31 * 60
        evicted = live.evict_idle()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        print(f"{n_mem} sessions x {n_turns} turns left open (fake models)")
        print(f"  paused conversations in memory: {in_memory}; memory held {held / 2**20:.1f} MiB "
              f"({held / max(in_memory, 1) / 1024:.0f} KiB per conversation)")
        print(f"  after evict_idle (31 min idle): {len(evicted)} left memory, {live.in_memory()} remain; "
              f"{after / 2**20:.1f} MiB held, {(held - after) / max(held, 1):.0%} freed")

        # 2. one sweep's time against the number of idle conversations (linear: ratio ~ 4)
        sweeps = {}
        for n in (max(n_sessions // 4, 1), n_sessions):
            ids = await populate(n, f"Sweep{n}")
            clock.now += 31 * 60
            t = time.perf_counter()
            assert len(live.evict_idle()) == n
            sweeps[n] = time.perf_counter() - t
        (small, s_small), (large, s_large) = sweeps.items()
        print(f"one sweep: {small} idle {s_small * 1000:.1f} ms, {large} idle {s_large * 1000:.1f} ms "
              f"(ratio {s_large / s_small:.1f} for {large / small:.0f}x the conversations; "
              f"{s_large / large * 1e6:.0f} us each)")

        # the first message after leaving memory (rebuilt from the store) vs a kept one
        kept = await live.start(mode="user", question="Kept problem: printer jams.")
        for turn in range(n_turns):
            await send(live, kept.session_id, f"Kept message {turn}.")
        sample = ids[: min(20, len(ids))]  # the last sweep's conversations, all out of memory
        rebuilt = [await send(live, sid, "And now?") for sid in sample]
        warm_sends = [await send(live, kept.session_id, f"Again {k}.") for k in range(len(sample))]
        print(f"first message after leaving memory: p50 {statistics.median(rebuilt) * 1000:.1f} ms; "
              f"a conversation kept in memory: p50 {statistics.median(warm_sends) * 1000:.1f} ms "
              f"(ratio {statistics.median(rebuilt) / statistics.median(warm_sends):.2f})")
    finally:
        writer.close()
        runtime.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--turns", type=int, default=4)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(bench(args.sessions, args.turns, Path(tmp) / "live.sqlite"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
