"""Embedded model speed: tokens/s of the llama.cpp server, one stream and parallel streams.

    .venv/bin/python tests/benchmarks/bench_model.py [--threads 2] [--parallel 4] [--model qwen2.5-coder-1.5b] [--long]

``--long``: a prompt of about 370 tokens (a conversation's length) and no prompt cache, so the
prompt speed is what a judge call pays; ``DESKBENCH_LLAMA_SERVER=/path/to/gguf-server`` compares
another build of the server (scripts/cpu-build-flags.sh).

Starts the embedded server exactly as the harness does (harness.models.engine), sends the same
help-desk prompt with a bounded output, and prints prompt and generation speed as llama.cpp
reports them (``timings``), plus the aggregate generation rate with N concurrent requests.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path
from time import perf_counter

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx

from harness.config import DEFAULT_EMBEDDED_MODEL, EngineConfig
from harness.models.engine import EngineManager

PROMPT = ("My Ubuntu 22.04 laptop loses its wifi connection every few minutes, and only a reboot "
          "brings it back. The card is an Intel AX200. What should I try first?")


LONG = 6  # --long: the question this many times over, as a conversation of that length


async def one(client: httpx.AsyncClient, url: str, max_tokens: int, i: int, long: bool = False) -> dict:
    text = "\n".join(f"Message {n}: {PROMPT}" for n in range(LONG)) if long else PROMPT
    r = await client.post(url + "/chat/completions", json={
        "model": "x", "temperature": 0.0, "seed": i, "max_tokens": max_tokens, "cache_prompt": not long,
        "messages": [{"role": "system", "content": f"You are a help-desk agent #{i}."},
                     {"role": "user", "content": text}]}, timeout=600)
    r.raise_for_status()
    return r.json()


async def measure(url: str, streams: int, max_tokens: int, long: bool = False) -> tuple[float, list[dict]]:
    async with httpx.AsyncClient() as client:
        started = perf_counter()
        replies = await asyncio.gather(*(one(client, url, max_tokens, i, long) for i in range(streams)))
        return perf_counter() - started, replies


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=DEFAULT_EMBEDDED_MODEL)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--long", action="store_true", help="a conversation-length prompt, never cached")
    args = ap.parse_args()
    with EngineManager(EngineConfig(threads=args.threads, parallel=args.parallel)) as engine:
        started = perf_counter()
        url = engine.base_url(args.model)
        print(f"model {args.model}, threads {args.threads}, slots {args.parallel}; "
              f"server ready in {perf_counter() - started:.1f} s")
        asyncio.run(measure(url, 1, 8))  # warm-up
        for streams in sorted({1, args.parallel}):
            wall, replies = asyncio.run(measure(url, streams, args.max_tokens, args.long))
            gen = sum(r["usage"]["completion_tokens"] for r in replies)
            t = [r.get("timings", {}) for r in replies]
            pp = statistics.median(x.get("prompt_per_second", 0.0) for x in t)
            tg = statistics.median(x.get("predicted_per_second", 0.0) for x in t)
            prompt_n = statistics.median(x.get("prompt_n", 0) for x in t)
            print(f"{streams} stream(s): {gen} tokens in {wall:.1f} s = {gen / wall:.1f} tokens/s aggregate; "
                  f"per stream: prompt {pp:.0f} tok/s ({prompt_n:.0f} tokens), generation {tg:.1f} tok/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
