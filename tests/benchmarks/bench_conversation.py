"""What a SelfScore turn costs on the embedded model: deskbench's turn loop against a naive loop,
side by side in one run (a script, not a pytest test; minutes on 2 cores).

    .venv/bin/python -m tests.benchmarks.bench_conversation                 # 2 tasks x 3 turns
    .venv/bin/python -m tests.benchmarks.bench_conversation --tasks 1 --turns 2

Both loops play the same troubleshooting tasks (the default task set's first ones) for exactly
``--turns`` turns (no early stop on "solved"), two conversations at once, against the same
embedded llama.cpp server, with every judge on.

- **deskbench**: ``harness.selfscore.batch.arun_selfscore`` as a batch runs it (problem extraction,
  summary and complexity before turn 1; per turn the simulated user's outcome decision and
  reply with its checks, the agent, user and agent helpfulness, the solved-check). The figures
  come from the store's ``llm_calls`` rows.
- **naive**: the same steps written the plain way, in this file: one call per step, each with
  its own system prompt first and the whole conversation after it as text, one after another
  within a conversation. The figures come from the server's own usage counts.

Per turn it prints: seconds (wall time / turns), calls, prompt tokens the server evaluated,
prompt tokens it reused from its cache, generated tokens, and "new tokens" (the generated
tokens: what a perfect prefix cache would still have to read), and each figure's naive/deskbench
ratio. Then, for deskbench, the same per role and purpose, and how busy the server's slots were
(its ``/slots`` endpoint sampled every 0.2 s: the share of the wall time with at least one slot
busy, and the mean number busy). It exits 0: the figures are informative (targets:
docs/selfscore.md, issue 14).

    .venv/bin/python -m tests.benchmarks.bench_conversation --tasks 8 --turns 2 --skip-naive
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx

from harness.aids.profiles import resolve_profile
from harness.compose import Runtime
from harness.config import load_config
from harness.agents import prompts as agent_prompts
from harness.selfscore import prompts
from harness.selfscore.batch import arun_selfscore
from harness.tasks.datasets import Dataset, load_dataset
from store import StoreReader


class SlotSampler:
    """Samples the llama.cpp server's ``/slots`` endpoint while a loop runs."""

    def __init__(self, root_url: str, every_s: float = 0.2):
        self.url = root_url.rstrip("/") + "/slots"
        self.every_s = every_s
        self.busy: list[int] = []
        self.slots = 0

    async def run(self, stop: asyncio.Event) -> None:
        async with httpx.AsyncClient() as http:
            while not stop.is_set():
                try:
                    slots = (await http.get(self.url, timeout=5)).json()
                    self.slots = len(slots)
                    self.busy.append(sum(1 for s in slots if s.get("is_processing")))
                except (httpx.HTTPError, ValueError):
                    pass  # a sample lost to a busy server is left out, not counted idle
                try:
                    await asyncio.wait_for(stop.wait(), self.every_s)
                except asyncio.TimeoutError:
                    pass

    def figures(self) -> dict[str, float]:
        n = max(len(self.busy), 1)
        return {"samples": len(self.busy), "slots": self.slots,
                "any slot busy %": 100 * sum(1 for b in self.busy if b) / n,
                "mean slots busy": sum(self.busy) / n,
                "slot occupancy %": 100 * sum(self.busy) / (n * max(self.slots, 1))}


def _figures(calls: list[dict], turns: int, wall_s: float) -> dict[str, float]:
    evaluated = sum(c["input_tokens"] - c["cached_tokens"] for c in calls)
    generated = sum(c["output_tokens"] for c in calls)
    return {"s/turn": wall_s / turns, "calls/turn": len(calls) / turns,
            "evaluated/turn": evaluated / turns, "cached/turn": sum(c["cached_tokens"] for c in calls) / turns,
            "generated/turn": generated / turns, "evaluated/new": evaluated / max(generated, 1),
            "turns": turns, "wall s": wall_s}


# -- deskbench --------------------------------------------------------------------------------
async def deskbench_loop(runtime: Runtime, dataset: Dataset, sampler: SlotSampler | None = None
                         ) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """deskbench's figures, and the same per ``role/purpose``."""
    stop = asyncio.Event()
    sampling = asyncio.create_task(sampler.run(stop)) if sampler else None
    started = time.perf_counter()
    run_id, progress = await arun_selfscore(runtime, dataset)
    wall = time.perf_counter() - started
    stop.set()
    if sampling:
        await sampling
    reader = StoreReader(runtime.config.store)
    calls, turns = [], 0
    for i in reader.interactions(run_id):
        calls += [{"input_tokens": c["input_tokens"] or 0, "cached_tokens": c["cached_tokens"] or 0,
                   "output_tokens": c["output_tokens"] or 0, "seconds": (c["latency_ms"] or 0) / 1000,
                   "kind": f"{c['role']}/{c['purpose']}", "turn": c["turn_index"]}
                  for c in reader.llm_calls(i["id"])]
        turns += len(reader.turns(i["id"]))
    by_kind: dict[str, dict[str, float]] = {}
    for kind in sorted({c["kind"] for c in calls}):
        mine = [c for c in calls if c["kind"] == kind]
        by_kind[kind] = {**_figures(mine, turns, wall), "call s/turn": sum(c["seconds"] for c in mine) / turns}
    for index in sorted({c["turn"] for c in calls}, key=lambda t: -1 if t is None else t):
        mine = [c for c in calls if c["turn"] == index]
        by_kind[f"turn {'-' if index is None else index} (all roles)"] = {
            **_figures(mine, len(dataset.tasks), wall), "call s/turn": sum(c["seconds"] for c in mine) / len(dataset.tasks)}
    return _figures(calls, turns, wall), by_kind


# -- the naive loop ---------------------------------------------------------------------------
NAIVE_JUDGE_SYSTEM = "You are a strict judge of help-desk conversations. Answer with JSON only."


class Naive:
    """One plain chat-completions call per step, each with its own system prompt first."""

    def __init__(self, base_url: str, config):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.config = config
        self.calls: list[dict] = []

    async def call(self, http: httpx.AsyncClient, role: str, system: str, user: str | list[dict]) -> str:
        spec = self.config.role(role)
        messages = [{"role": "system", "content": system}]
        messages += user if isinstance(user, list) else [{"role": "user", "content": user}]
        r = await http.post(self.url, json={"model": spec.model, "messages": messages, "max_tokens": spec.max_tokens,
                                            "temperature": spec.temperature}, timeout=900)
        r.raise_for_status()
        body = r.json()
        usage = body.get("usage") or {}
        self.calls.append({"input_tokens": usage.get("prompt_tokens", 0),
                           "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
                           "output_tokens": usage.get("completion_tokens", 0)})
        return body["choices"][0]["message"]["content"] or ""

    async def conversation(self, http: httpx.AsyncClient, question: str, solution: str, turns: int) -> int:
        problem = await self.call(http, "extractor", "You extract problems.",
                                  f"State the underlying problem this solution fixes, in one sentence.\n"
                                  f"Question: {question}\nSolution: {solution[:2500]}")
        summary = await self.call(http, "extractor", prompts.SUMMARY_SYSTEM,
                                  f"Restate this question as one short request: {question}")
        await self.call(http, "complexity", NAIVE_JUDGE_SYSTEM,
                        f"Rate the complexity of this problem 1-10 on critical thinking, error "
                        f"handling and topic knowledge, as JSON with reasons: {summary}")
        history: list[tuple[str, str]] = [("USER", question)]
        for turn in range(1, turns + 1):
            if turn > 1:
                chat = [{"role": "assistant" if who == "USER" else "user", "content": text}
                        for who, text in history]
                history.append(("USER", await self.call(
                    http, "user", f"You are a person with this problem: {question}\nThe real cause "
                    f"(do not say it): {problem}\nReply to the help desk in 1-3 sentences.", chat)))
            text = "\n".join(f"{who}: {t}" for who, t in history)
            await self.call(http, "judge", NAIVE_JUDGE_SYSTEM,
                            f"Conversation:\n{text}\nRate the latest USER message's helpfulness 1-10 "
                            'as {"reason": str, "score": int}.')
            chat = [{"role": "user" if who == "USER" else "assistant", "content": t} for who, t in history]
            history.append(("AGENT", await self.call(
                http, "agent", agent_prompts.agent_system(self.config.run.agent_reply_sentences), chat)))
            text = "\n".join(f"{who}: {t}" for who, t in history)
            await self.call(http, "judge", NAIVE_JUDGE_SYSTEM,
                            f"Conversation:\n{text}\nRate the latest AGENT message's helpfulness 1-10 "
                            'as {"reason": str, "score": int}.')
            await self.call(http, "judge", NAIVE_JUDGE_SYSTEM,
                            f"Problem: {problem}\nConversation:\n{text}\nIs the problem solved? "
                            'Answer {"reason": str, "solved": bool}.')
        return turns


def solution(task) -> str:
    """The thread's fix as the batch takes it: the reference answer, else the helpers' messages."""
    return (task.reference_answer or "\n".join(task.agent_replies)).strip()


async def naive_loop(runtime: Runtime, dataset: Dataset, turns: int) -> dict[str, float]:
    spec = runtime.config.role("agent")
    naive = Naive(spec.base_url or runtime.engine.base_url(spec.model), runtime.config)
    started = time.perf_counter()
    async with httpx.AsyncClient() as http:
        played = await asyncio.gather(*(naive.conversation(http, t.question, solution(t), turns)
                                        for t in dataset.tasks))
    return _figures(naive.calls, sum(played), time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--agent-reply-sentences", type=int, default=None,
                        help="run.agent_reply_sentences for both loops (default: the config's; 0: the paper's prompt)")
    parser.add_argument("--base-url", help="an already running server for every role (default: embedded)")
    parser.add_argument("--skip-naive", action="store_true", help="only deskbench's loop (e.g. a batch of 8)")
    parser.add_argument("--score-reading", choices=("sampled", "probabilities"), default="sampled",
                        help="scoring.score_reading for deskbench's judges (probabilities: no reasons)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        roles = {r: {"base_url": args.base_url} for r in ("agent", "user", "judge", "complexity", "extractor")} \
            if args.base_url else {}
        cfg = load_config(overrides={
            "store": str(Path(tmp) / "bench.sqlite"), "roles": roles,
            "scoring": {"score_reading": args.score_reading},
            "run": {"limit": args.tasks, "max_turns": args.turns, "concurrency": args.tasks,
                    "stop_on_solved": False,
                    **({} if args.agent_reply_sentences is None else {"agent_reply_sentences": args.agent_reply_sentences})}})
        full = load_dataset(cfg.run.dataset)
        dataset = Dataset(full.name, full.path, full.sha256, full.tasks[: args.tasks])
        with Runtime(cfg) as runtime:
            spec = cfg.role("agent")
            url = spec.base_url or runtime.engine.base_url(spec.model)
            sampler = SlotSampler(url.removesuffix("/").removesuffix("/v1"))
            ours, by_kind = asyncio.run(deskbench_loop(runtime, dataset, sampler))
            naive = None if args.skip_naive else asyncio.run(naive_loop(runtime, dataset, args.turns))
    reply_cap = resolve_profile(cfg).value("reply_cap")  # the setting, else the profile's
    print(f"\nOne SelfScore turn on {cfg.role('agent').model}, {args.tasks} tasks x {args.turns} turns, "
          f"{cfg.engine.threads} threads, {min(args.tasks, cfg.run.concurrency)} conversations at once, "
          f"{cfg.engine.parallel} slots, agent reply bound {reply_cap or 'none'} sentences, "
          f"scores {cfg.scoring.score_reading}\n")
    if naive:
        print("| figure | deskbench | naive | naive/deskbench |\n|---|---|---|---|")
        for key in ours:
            ratio = naive[key] / ours[key] if ours[key] else float("nan")
            print(f"| {key} | {ours[key]:.1f} | {naive[key]:.1f} | {ratio:.2f} |")
    else:
        print("| figure | deskbench |\n|---|---|")
        for key in ours:
            print(f"| {key} | {ours[key]:.1f} |")
    columns = ("calls/turn", "evaluated/turn", "cached/turn", "generated/turn", "call s/turn")
    print(f"\nPer role/purpose (per turn; call s: the calls' own seconds, overlapping), then per turn index "
          f"(per conversation; turn -: before turn 1)\n\n"
          f"| role/purpose | {' | '.join(columns)} |\n|---|{'---|' * len(columns)}")
    for kind, fig in by_kind.items():
        print(f"| {kind} | {' | '.join(f'{fig[c]:.1f}' for c in columns)} |")
    slots = sampler.figures()
    print("\nServer slots during deskbench's loop: " + ", ".join(f"{k} {v:.1f}" for k, v in slots.items()))
    print(json.dumps({"deskbench": ours, "naive": naive, "by_kind": by_kind, "slots": slots}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
