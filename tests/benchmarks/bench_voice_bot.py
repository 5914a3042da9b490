"""The caller's wait against a voice bot, measured at the caller, beside the harness's own voiced
agent in the same run: one embedded model serves the reference bot's agent (examples/voice_bot)
and deskbench's simulated caller and judges; the same tasks are called three ways with
`deskbench call simulate`:

- `plain`: the harness's own agent on the streamed pipeline (its `time_to_first_audio_ms`:
  end of the caller's speech -> the agent's first audio, on the simulated clock of measured compute);
- `twilio-ws` and `realtime-ws`: the reference bot, dialled in real time (`wait_ms`: end of the
  caller's speech -> the bot's first speech as played; it includes the bot's own endpointing).

    .venv/bin/python tests/benchmarks/bench_voice_bot.py [--limit 3] [--max-turns 2] [--caller interrupting]

Prints per condition: replies, caller wait p50/p95/max/mean (ms), barge-ins and yields, the WER
between the bot's transcript and the harness's STT (Realtime), how the calls ended.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from harness.config import DEFAULT_EMBEDDED_MODEL, load_config
from harness.models.engine import EngineManager, free_port
from store import StoreReader

REPO = Path(__file__).resolve().parents[2]
DESKBENCH = str(Path(sys.executable).with_name("deskbench"))
ROLES = ("user", "judge", "complexity", "extractor", "agent")


def start_bot(llm_url: str, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "examples.voice_bot", "--port", str(port), "--llm-url", llm_url,
                             "--max-tokens", "90"], cwd=REPO, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    for _ in range(360):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                return proc, f"ws://127.0.0.1:{port}"
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"the voice bot did not start:\n{log.read_text()[-2000:]}")


def simulate(tmp: Path, llm_url: str, name: str, args, *agent: str) -> dict:
    store = tmp / f"{name}.sqlite"
    roles = [f"--role={r}.base_url={llm_url}" for r in ROLES]
    cmd = [DESKBENCH, "call", "simulate", "--limit", str(args.limit), "--max-turns", str(args.max_turns),
           "--concurrency", "1", "--caller", args.caller, "--first-audio-timeout", "60", "--profile", "embedded",
           "--quiet", "--store", str(store), "--out", str(tmp / name), *roles, *agent]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    reader = StoreReader(store)
    run = reader.runs()[-1]
    waits, yields, barges, wers, stops = [], [], 0, [], {}
    for i in reader.interactions(run["id"]):
        stops[i["stop_reason"]] = stops.get(i["stop_reason"], 0) + 1
        for t in reader.turns(i["id"]):
            voice = (json.loads(t["extra_json"]).get("agent") or {}).get("voice") or {}
            wait = voice.get("wait_ms", voice.get("time_to_first_audio_ms"))
            if wait is not None:
                waits.append(wait)
            if voice.get("barge_in"):
                barges += 1
                if voice["barge_in"].get("yielded"):
                    yields.append(voice["barge_in"]["yield_ms"])
            if voice.get("transcript_wer") is not None:
                wers.append(voice["transcript_wer"])
    return {"name": name, "waits": waits, "barges": barges, "yields": yields, "wers": wers, "stops": stops,
            "wall_s": time.perf_counter() - started}


def spread(values) -> str:
    if not values:
        return "n/a | n/a | n/a | n/a"
    v = np.asarray(values, float)
    return " | ".join(f"{x:.0f}" for x in (np.percentile(v, 50), np.percentile(v, 95), v.max(), v.mean()))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=3)
    p.add_argument("--max-turns", type=int, default=2)
    p.add_argument("--caller", default="interrupting")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-voice-bot-"))
    with EngineManager(load_config().engine) as engine:
        llm_url = engine.base_url(DEFAULT_EMBEDDED_MODEL)
        results = [simulate(tmp, llm_url, "plain (harness's own, streamed)", args, "--agent", "plain")]
        bot, url = start_bot(llm_url, tmp / "bot.log")
        try:
            results.append(simulate(tmp, llm_url, "twilio-ws (reference bot)", args, "--agent", "twilio-ws",
                                    "--agent-url", url + "/twilio"))
            results.append(simulate(tmp, llm_url, "realtime-ws (reference bot)", args, "--agent", "realtime-ws",
                                    "--agent-url", url + "/realtime"))
        finally:
            bot.terminate()
            bot.wait(30)
    print(f"\n{args.limit} tasks x up to {args.max_turns} turns, caller {args.caller}, embedded model, this machine")
    print("| agent | replies | wait p50 | p95 | max | mean (ms) | barge-ins | yielded | yield p50 | p95 | max | mean (ms) "
          "| transcript WER | calls ended | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        wer = f"{np.mean(r['wers']):.3f} ({len(r['wers'])})" if r["wers"] else "n/a"
        print(f"| {r['name']} | {len(r['waits'])} | {spread(r['waits'])} | {r['barges']} | {len(r['yields'])} | "
              f"{spread(r['yields'])} | {wer} | {json.dumps(r['stops'])} | {r['wall_s']:.0f} |")
    print(f"\nstores and reports under {tmp}")


if __name__ == "__main__":
    main()
