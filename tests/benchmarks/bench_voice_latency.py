"""Voice latency at the caller, before and after the streamed pipeline: end of the caller's
speech -> the agent's first audio, and its stages, over N caller turns each way.

    .venv/bin/python tests/benchmarks/bench_voice_latency.py [--turns 10] [--tts piper]
        [--base-url URL --model NAME [--api-key-env VAR]] [--first-chunk-words 4] [--endpoint-ms 0]

Without ``--base-url`` the agent is the embedded model, started as ``deskbench call simulate``
starts it (``harness.compose.Runtime``: the engine starts on the agent's first call). The caller
lines are the tasks' questions (``--dataset``, default the #ubuntu troubleshooting set) and two
follow-ups per task; each conversation keeps its own history, and both pipelines replay the
same caller lines in the same order (turn-based first, then streamed), after one untimed warm-up
turn, so both see the same prompt-cache situation.

- turn-based (``voice.streaming = false``): STT of the whole message + the agent's whole reply
  + TTS of the reply's first sentence (piper's first chunk);
- streamed (the default): the STT tail of the pause-split caller speech + the LLM's time to its
  first sentence (streamed) + that sentence's TTS.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
from time import perf_counter

import numpy as np

from graphs.protocols import Message, Problem
from harness.compose import Runtime
from harness.config import load_config
from harness.tasks.datasets import load_dataset
from harness.voice.call import PAUSE_S, SpeechLink
from harness.voice.chunked_stt import transcribe_chunks
from harness.voice.streaming import speak_streamed
from harness.voice.stt import Transcriber
from harness.voice.textclean import clean_for_speech
from harness.voice.tts import Speaker

FOLLOWUPS = ("I tried that, but it still happens. What should I check next?",
             "Okay, that did not change anything either. Is there anything else?")
STAGES = {"turn-based": ("stt_ms", "llm_ms", "tts_first_ms"),
          "streamed": ("stt_tail_ms", "llm_first_sentence_ms", "tts_first_chunk_ms")}


async def turn_based(agent, link: SpeechLink, problem, history, text) -> tuple[dict, str]:
    spoken = await link.speak_sentences(text)
    heard = await link.transcriber.atranscribe(spoken.samples, spoken.sample_rate)
    started = perf_counter()
    reply = await agent.respond(problem, [*history, Message("user", heard.text)])
    llm_ms = (perf_counter() - started) * 1000.0
    speech = await link.speaker.aspeak(clean_for_speech(reply.text or "") or "Okay.")
    row = {"stt_ms": heard.ms, "llm_ms": llm_ms, "tts_first_ms": speech.first_audio_ms}
    row["total_ms"] = sum(row.values())
    return row, reply.text or ""


async def streamed(agent, link: SpeechLink, problem, history, text, endpoint_ms) -> tuple[dict, str]:
    spoken = await link.speak_sentences(text)
    heard = await transcribe_chunks(link.transcriber, spoken.samples, spoken.sample_rate, PAUSE_S,
                                    endpoint_ms=endpoint_ms)
    out = await speak_streamed(agent, problem, [*history, Message("user", heard.text)], link.speaker,
                               link.first_chunk_words, stream=True)
    m = out.measures()
    row = {"endpoint_ms": endpoint_ms, "stt_tail_ms": heard.tail_ms,
           "llm_first_sentence_ms": m.get("llm_first_sentence_ms", out.respond_ms),
           "tts_first_chunk_ms": m.get("tts_first_chunk_ms", 0.0), "stt_chunks": len(heard.chunks),
           "llm_streamed": out.streamed, **_call_figures(out.reply)}
    row["total_ms"] = endpoint_ms + row["stt_tail_ms"] + row["llm_first_sentence_ms"] + row["tts_first_chunk_ms"]
    return row, out.reply.text or ""


def _call_figures(reply) -> dict:
    """The agent call's prompt tokens (evaluated and reused from the server's cache), generated
    tokens and time to its first token: where the LLM stage's time goes."""
    if not reply.calls:
        return {}
    c = reply.calls[-1]
    return {"prompt_evaluated": c.input_tokens - c.cached_tokens, "prompt_cached": c.cached_tokens,
            "generated": c.output_tokens, "ttft_ms": c.ttft_ms}


def pct(values, q) -> float:
    return float(np.percentile(np.asarray(values, float), q)) if values else float("nan")


async def run(args) -> None:
    overrides: dict = {"run": {"agent_reply_sentences": args.reply_sentences}} if args.reply_sentences else {}
    if args.base_url:
        overrides["roles"] = {"agent": {"base_url": args.base_url, "model": args.model,
                                        "api_key_env": args.api_key_env}}
    config = load_config(overrides=overrides)
    tasks = load_dataset(args.dataset).tasks
    lines: list[tuple[int, str]] = []
    for i, task in enumerate(tasks):
        for text in (task.question, *FOLLOWUPS):
            if len(lines) < args.turns:
                lines.append((i, text))
    started = perf_counter()
    speaker, transcriber = Speaker(args.tts), Transcriber(beam_size=1).load()
    link = SpeechLink(speaker, transcriber, first_chunk_words=args.first_chunk_words)
    speaker.speak("Warm up.")
    with Runtime(config) as runtime:
        agent = runtime.llm_agent("plain")
        spec = config.role("agent")
        print(f"agent {spec.model} at {spec.base_url or 'the embedded server'}; tts {speaker.engine}, "
              f"stt whisper-base int8 greedy; {len(lines)} caller turns each way")
        warm = Problem("warmup", "hello", None, None)
        await turn_based(agent, link, warm, [], "Hello, my wifi keeps dropping.")
        print(f"models and server ready in {perf_counter() - started:.1f} s")
        results: dict[str, list[dict]] = {}
        for mode in ("turn-based", "streamed"):
            histories: dict[int, list[Message]] = {}
            rows = []
            for n, (task_i, text) in enumerate(lines):
                task = tasks[task_i]
                problem = Problem(f"bench:{mode}:{task.id}", task.question, None, None)
                history = histories.setdefault(task_i, [])
                if mode == "turn-based":
                    row, reply = await turn_based(agent, link, problem, history, text)
                else:
                    row, reply = await streamed(agent, link, problem, history, text, args.endpoint_ms)
                history += [Message("user", text), Message("agent", reply)]
                rows.append(row)
                extra = ("" if "prompt_evaluated" not in row else
                         f"  (prompt {row['prompt_evaluated']} evaluated + {row['prompt_cached']} cached, "
                         f"first token {row['ttft_ms'] or 0:.0f} ms)")
                print(f"  {mode:<10} turn {n + 1:>2}: {row['total_ms']:>7.0f} ms  "
                      + "  ".join(f"{k} {row[k]:.0f}" for k in STAGES[mode]) + extra, flush=True)
            results[mode] = rows
    print()
    print(f"{'pipeline':<11} {'stage':<24} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
    for mode, rows in results.items():
        for stage in (*STAGES[mode], "total_ms"):
            vals = [r[stage] for r in rows]
            name = "end of speech -> audio" if stage == "total_ms" else stage
            print(f"{mode:<11} {name:<24} {pct(vals, 50):>8.0f} {pct(vals, 95):>8.0f} "
                  f"{statistics.mean(vals):>8.0f}")
    s = results["streamed"]
    print(f"\nstreamed: {sum(r['llm_streamed'] for r in s)}/{len(s)} replies streamed token by token, "
          f"{statistics.mean(r['stt_chunks'] for r in s):.1f} STT chunks per caller message; "
          f"p50 {pct([r['total_ms'] for r in s], 50):.0f} ms vs "
          f"{pct([r['total_ms'] for r in results['turn-based']], 50):.0f} ms turn-based")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=10, help="caller turns per pipeline (default 10)")
    ap.add_argument("--dataset", default="ubuntu_irc_troubleshooting")
    ap.add_argument("--tts", default="piper", choices=["piper", "espeak-ng"])
    ap.add_argument("--base-url", help="OpenAI-compatible endpoint of the agent (default: embedded model)")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="model name at --base-url")
    ap.add_argument("--api-key-env", help="environment variable with the endpoint's API key")
    ap.add_argument("--first-chunk-words", type=int, default=4, help="voice.first_chunk_words (0: sentences)")
    ap.add_argument("--endpoint-ms", type=float, default=0.0, help="voice.endpoint_ms added to the streamed total")
    ap.add_argument("--reply-sentences", type=int, help="run.agent_reply_sentences for the agent's prompt")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
